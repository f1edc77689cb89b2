//! Move notation: SAN (English and national piece letters), ICCF numeric notation and the spoken
//! announcement used with visually impaired players.
//!
//! * **SAN** ([`write_san`], [`read_san`]) is the PGN form: English letters, `O-O`, `e8=Q`, `+`, `#`.
//! * **National scoresheet notation** ([`write_national`], [`read_national`]) follows Article 8
//!   and Appendix C: the language's piece letters (king, queen, rook, bishop, knight — English
//!   `K Q R B N`, Czech `K D V S J`, Polish `K H W G S`, German `K D T L S`, French `R D T F C`),
//!   castling `0-0` / `0-0-0` and promotion without `=` (`d8Q`, Czech `d8D`).
//! * **ICCF numeric notation** ([`write_iccf`], [`read_iccf`]): file digit then rank digit per
//!   square (a1 = 11, h8 = 88), from-square then to-square (`5254` = e2–e4), a fifth digit for a
//!   promotion (1 = queen, 2 = rook, 3 = bishop, 4 = knight), castling as the king's move
//!   (`5171`, `5131`, `5878`, `5838`).
//! * **Spoken announcement** ([`announce`], 2009 Appendix E), see its documentation.

use std::{fmt, str::FromStr};

use shakmaty::{
    CastlingSide, Chess, File, Move, Position, Rank, Role, Square,
    san::{San, SanPlus, Suffix},
};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotationError {
    #[error("`{0}` is not a known notation language (en, cs, pl, de, fr)")]
    UnknownLanguage(String),
    #[error("`{0}` is not algebraic notation")]
    SanSyntax(String),
    #[error("`{text}` is not a legal move here: {reason}")]
    IllegalSan { text: String, reason: String },
    #[error(
        "`{0}` is not ICCF numeric notation: four digits 1-8 (from and to square), and a fifth \
         (1 = queen, 2 = rook, 3 = bishop, 4 = knight) for a promotion"
    )]
    IccfSyntax(String),
    #[error("ICCF move `{0}` is not legal in this position")]
    IllegalIccf(String),
    #[error("ICCF move `{0}` promotes a pawn and needs a fifth digit (1 = Q, 2 = R, 3 = B, 4 = N)")]
    MissingPromotion(String),
}

/// A language of piece letters for written moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    English,
    Czech,
    Polish,
    German,
    French,
}

impl Language {
    pub const ALL: [Language; 5] = [
        Language::English,
        Language::Czech,
        Language::Polish,
        Language::German,
        Language::French,
    ];

    /// Letters for king, queen, rook, bishop, knight.
    const fn letters(self) -> [char; 5] {
        match self {
            Language::English => ['K', 'Q', 'R', 'B', 'N'],
            Language::Czech => ['K', 'D', 'V', 'S', 'J'],
            Language::Polish => ['K', 'H', 'W', 'G', 'S'],
            Language::German => ['K', 'D', 'T', 'L', 'S'],
            Language::French => ['R', 'D', 'T', 'F', 'C'],
        }
    }

    /// The letter of a piece; pawns have none.
    pub const fn piece_letter(self, role: Role) -> Option<char> {
        let [k, q, r, b, n] = self.letters();
        match role {
            Role::King => Some(k),
            Role::Queen => Some(q),
            Role::Rook => Some(r),
            Role::Bishop => Some(b),
            Role::Knight => Some(n),
            Role::Pawn => None,
        }
    }

    /// The piece a letter stands for in this language.
    pub fn role_of_letter(self, letter: char) -> Option<Role> {
        [
            Role::King,
            Role::Queen,
            Role::Rook,
            Role::Bishop,
            Role::Knight,
        ]
        .into_iter()
        .find(|role| self.piece_letter(*role) == Some(letter))
    }

    /// ISO 639-1 code.
    pub const fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::Czech => "cs",
            Language::Polish => "pl",
            Language::German => "de",
            Language::French => "fr",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Language {
    type Err = NotationError;

    /// Accepts the ISO code or the English name, in any case (`cz` is taken for Czech too).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "en" | "english" => Ok(Language::English),
            "cs" | "cz" | "czech" => Ok(Language::Czech),
            "pl" | "polish" => Ok(Language::Polish),
            "de" | "german" => Ok(Language::German),
            "fr" | "french" => Ok(Language::French),
            _ => Err(NotationError::UnknownLanguage(s.to_owned())),
        }
    }
}

/// SAN of a legal move, with `+` or `#`.
pub fn write_san(pos: &Chess, m: Move) -> String {
    SanPlus::from_move(pos.clone(), m).to_string()
}

/// Parses SAN (a `+`/`#` suffix is accepted and not checked) into a legal move.
pub fn read_san(pos: &Chess, text: &str) -> Result<Move, NotationError> {
    let san: SanPlus = text
        .trim()
        .parse()
        .map_err(|_| NotationError::SanSyntax(text.to_owned()))?;
    san.san.to_move(pos).map_err(|e| NotationError::IllegalSan {
        text: text.to_owned(),
        reason: e.to_string(),
    })
}

/// The move as written on a scoresheet in `language` (see the module documentation).
pub fn write_national(pos: &Chess, m: Move, language: Language) -> String {
    let san_plus = SanPlus::from_move(pos.clone(), m);
    let mut out = String::new();
    match san_plus.san {
        San::Castle(CastlingSide::KingSide) => out.push_str("0-0"),
        San::Castle(CastlingSide::QueenSide) => out.push_str("0-0-0"),
        San::Normal {
            role,
            file,
            rank,
            capture,
            to,
            promotion,
        } => {
            out.extend(language.piece_letter(role));
            out.extend(file.map(File::char));
            out.extend(rank.map(Rank::char));
            if capture {
                out.push('x');
            }
            out.push_str(&to.to_string());
            out.extend(promotion.and_then(|r| language.piece_letter(r)));
        }
        // Not produced for standard chess moves; fall back to the English form.
        other @ (San::Put { .. } | San::Null) => out.push_str(&other.to_string()),
    }
    match san_plus.suffix {
        Some(Suffix::Check) => out.push('+'),
        Some(Suffix::Checkmate) => out.push('#'),
        None => {}
    }
    out
}

/// Parses a scoresheet move in `language`: its piece letters, `0-0`/`O-O`, promotion with or
/// without `=`, `++` for mate and a trailing `e.p.` are accepted.
pub fn read_national(pos: &Chess, text: &str, language: Language) -> Result<Move, NotationError> {
    let trimmed = text.trim();
    let trimmed = trimmed.strip_suffix("e.p.").unwrap_or(trimmed).trim_end();
    let trimmed = trimmed.trim_end_matches(['+', '#']);
    let english: String = if trimmed.starts_with(['0', 'O']) {
        trimmed.replace('0', "O")
    } else {
        let mut out = String::with_capacity(trimmed.len() + 1);
        for (i, ch) in trimmed.chars().enumerate() {
            if ch.is_ascii_uppercase() {
                let role = language
                    .role_of_letter(ch)
                    .ok_or_else(|| NotationError::SanSyntax(text.to_owned()))?;
                let english = Language::English
                    .piece_letter(role)
                    .ok_or_else(|| NotationError::SanSyntax(text.to_owned()))?;
                // A letter after the destination square is a promotion piece.
                if i > 0 && !out.ends_with('=') {
                    out.push('=');
                }
                out.push(english);
            } else {
                out.push(ch);
            }
        }
        out
    };
    read_san(pos, &english).map_err(|e| match e {
        NotationError::SanSyntax(_) => NotationError::SanSyntax(text.to_owned()),
        NotationError::IllegalSan { reason, .. } => NotationError::IllegalSan {
            text: text.to_owned(),
            reason,
        },
        other => other,
    })
}

fn iccf_square(sq: Square) -> [char; 2] {
    let digit = |n: u32| char::from_digit(n + 1, 10).unwrap_or('?');
    [digit(sq.file().to_u32()), digit(sq.rank().to_u32())]
}

/// Where the king lands when castling (standard chess and Chess960 alike).
fn king_destination(m: Move) -> Square {
    match m {
        Move::Castle { king, rook } => {
            let side = if rook.file() > king.file() {
                CastlingSide::KingSide
            } else {
                CastlingSide::QueenSide
            };
            Square::from_coords(side.king_to_file(), king.rank())
        }
        other => other.to(),
    }
}

/// ICCF numeric notation of a move, e.g. `5254`, `67682`, `5171`.
pub fn write_iccf(m: Move) -> String {
    let mut out = String::with_capacity(5);
    if let Some(from) = m.from() {
        out.extend(iccf_square(from));
    }
    out.extend(iccf_square(king_destination(m)));
    if let Some(role) = m.promotion() {
        out.push(match role {
            Role::Queen => '1',
            Role::Rook => '2',
            Role::Bishop => '3',
            _ => '4',
        });
    }
    out
}

/// Parses ICCF numeric notation against a position. Castling is the king's move to its
/// destination square; the king moved onto its own castling rook (the ICCF server's Chess960
/// form) is read as castling too.
pub fn read_iccf(pos: &Chess, text: &str) -> Result<Move, NotationError> {
    let syntax = || NotationError::IccfSyntax(text.to_owned());
    let trimmed = text.trim();
    let digits: Vec<u32> = trimmed
        .chars()
        .map(|c| c.to_digit(10).filter(|d| (1..=8).contains(d)))
        .collect::<Option<_>>()
        .ok_or_else(syntax)?;
    let square =
        |file: u32, rank: u32| Square::from_coords(File::new(file - 1), Rank::new(rank - 1));
    let (from, to, promotion) = match digits[..] {
        [ff, fr, tf, tr] => (square(ff, fr), square(tf, tr), None),
        [ff, fr, tf, tr, p] => {
            let role = match p {
                1 => Role::Queen,
                2 => Role::Rook,
                3 => Role::Bishop,
                4 => Role::Knight,
                _ => return Err(syntax()),
            };
            (square(ff, fr), square(tf, tr), Some(role))
        }
        _ => return Err(syntax()),
    };
    let legal = pos.legal_moves();
    let candidates: Vec<Move> = legal
        .iter()
        .copied()
        .filter(|m| {
            m.from() == Some(from)
                && match m {
                    Move::Castle { rook, .. } => king_destination(*m) == to || *rook == to,
                    _ => m.to() == to,
                }
        })
        .collect();
    // In Chess960 an ordinary king step can land on the castling destination; the ordinary move
    // wins and castling is then entered as the king onto its rook.
    let ordinary = candidates
        .iter()
        .copied()
        .find(|m| !m.is_castle() && m.promotion() == promotion);
    if let Some(m) = ordinary {
        return Ok(m);
    }
    if promotion.is_none() && candidates.iter().any(|m| m.is_promotion()) {
        return Err(NotationError::MissingPromotion(text.to_owned()));
    }
    candidates
        .into_iter()
        .find(|m| m.is_castle() && promotion.is_none())
        .ok_or_else(|| NotationError::IllegalIccf(text.to_owned()))
}

/// The spoken form of a move (2009 Appendix E), words separated by single spaces:
///
/// * castling: `Kurze Rochade` (king side) or `Lange Rochade` (queen side);
/// * otherwise: piece name (`Koenig`, `Dame`, `Turm`, `Laeufer`, `Springer`, `Bauer`), from-square,
///   `schlaegt` if the move captures, to-square, then `en passant` for an en passant capture and
///   `wird Dame` / `wird Turm` / `wird Laeufer` / `wird Springer` for a promotion. A square is
///   its phonetic file (`Anna Bella Cesar David Eva Felix Gustav Hector`) and its German rank
///   number (`eins zwei drei vier fuenf sechs sieben acht`);
/// * finally `Schach` when the move gives check, `Matt` when it mates.
///
/// Examples: `Springer Gustav eins Felix drei`, `Bauer Eva fuenf schlaegt David sechs en passant`,
/// `Bauer Anna sieben Anna acht wird Dame Schach`, `Dame Hector fuenf schlaegt Felix sieben Matt`.
pub fn announce(pos: &Chess, m: Move) -> String {
    let mut words: Vec<&str> = Vec::new();
    match m {
        Move::Castle { king, rook } => words.push(if rook.file() > king.file() {
            "Kurze Rochade"
        } else {
            "Lange Rochade"
        }),
        _ => {
            words.push(piece_word(m.role()));
            if let Some(from) = m.from() {
                words.extend(square_words(from));
            }
            if m.is_capture() {
                words.push("schlaegt");
            }
            words.extend(square_words(m.to()));
            if m.is_en_passant() {
                words.push("en passant");
            }
            if let Some(role) = m.promotion() {
                words.push("wird");
                words.push(piece_word(role));
            }
        }
    }
    let mut after = pos.clone();
    after.play_unchecked(m);
    if after.is_checkmate() {
        words.push("Matt");
    } else if after.is_check() {
        words.push("Schach");
    }
    words.join(" ")
}

fn piece_word(role: Role) -> &'static str {
    match role {
        Role::King => "Koenig",
        Role::Queen => "Dame",
        Role::Rook => "Turm",
        Role::Bishop => "Laeufer",
        Role::Knight => "Springer",
        Role::Pawn => "Bauer",
    }
}

fn square_words(sq: Square) -> [&'static str; 2] {
    const FILES: [&str; 8] = [
        "Anna", "Bella", "Cesar", "David", "Eva", "Felix", "Gustav", "Hector",
    ];
    const RANKS: [&str; 8] = [
        "eins", "zwei", "drei", "vier", "fuenf", "sechs", "sieben", "acht",
    ];
    [FILES[sq.file().to_usize()], RANKS[sq.rank().to_usize()]]
}
