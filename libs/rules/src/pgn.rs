//! Reading and writing PGN game scores.
//!
//! The reader keeps what boardcast needs from a score: the tags, the mainline moves in SAN with
//! their `[%clk]` and `[%emt]` annotations and other comment text, and the result. Variations are
//! skipped. Legality is checked against the position, so a game that reads is a legal game.
//!
//! Two ways to read. [`read_pgn`] is for files from elsewhere (a broadcast's PGN, a tournament's
//! games): it reads every game it can, keeps each game's legal moves and says where and why a
//! score stopped being legal (a DGT board's result signal recorded as king moves is named as
//! such), and never stops at a bad game. [`read_games`] and [`read_annotated_games`] are for
//! scores this system wrote: the first problem is an error.
//!
//! Annotations after a move, as written and read back:
//!
//! * `[%clk h:mm:ss]` — the mover's remaining time, whole seconds;
//! * `[%emt h:mm:ss]` — the time spent on the move, with `.fff` when not whole seconds;
//! * a draw offer (recorded `(=)` on the FIDE scoresheet, Article 8) is the token `(=)` inside the
//!   move's comment, `{(=)}` — written bare, `(=)` would open a variation in PGN;
//! * an arbiter's decision is a comment of its own, `{Arbiter: ...}`, one per note.
//!
//! For example `12. Nf3 {[%clk 1:29:56] [%emt 0:00:04.5] (=)} {Arbiter: clock set to 1:30:00}`.
//! [`read_annotated_games`] and [`write_annotated_game`] carry draw offers and arbiter notes as
//! [`MoveNotes`]; [`read_games`] leaves them in [`PgnMove::comment`] as text. Free comment text
//! is therefore read back as such unless it starts with `Arbiter:` or contains the word `(=)`.

use std::{fmt, io, ops::ControlFlow};

use pgn_reader::{KnownOutcome, Outcome, RawComment, RawTag, Reader, SanPlus, Visitor};
use serde::Serialize;
use shakmaty::{CastlingMode, Chess, Piece, Position, Role, fen::Fen, san::San};

use crate::result_signal::{ResultSignal, kings_signal};

/// One mainline move of a game score.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgnMove {
    /// The move in standard algebraic notation, with check or mate suffix.
    pub san: String,
    /// The mover's remaining time after the move (`[%clk h:mm:ss]`), in milliseconds.
    pub clock_ms: Option<u64>,
    /// The time spent on the move (`[%emt h:mm:ss]`), in milliseconds.
    pub elapsed_ms: Option<u64>,
    /// Comment text after the move, without the `[%...]` commands.
    pub comment: Option<String>,
}

/// A game score: tags in their order of appearance, mainline moves and the result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgnGame {
    pub tags: Vec<(String, String)>,
    pub moves: Vec<PgnMove>,
    /// `1-0`, `0-1`, `1/2-1/2`, `*`, or one of the Result tag's only scores
    /// ([`TAG_ONLY_RESULTS`]).
    pub result: String,
}

/// Scoresheet annotations of one move beyond clock times and free comments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveNotes {
    /// The mover offered a draw with this move (`(=)` on the scoresheet).
    pub draw_offer: bool,
    /// Arbiter's decisions recorded at this move, each written as `{Arbiter: ...}`.
    pub arbiter_notes: Vec<String>,
}

/// A game score with the [`MoveNotes`] of each move: `notes[i]` belongs to `game.moves[i]`
/// (missing entries mean no notes). The comments of `game.moves` hold the remaining free text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnnotatedGame {
    pub game: PgnGame,
    pub notes: Vec<MoveNotes>,
}

impl From<PgnGame> for AnnotatedGame {
    fn from(game: PgnGame) -> Self {
        AnnotatedGame {
            game,
            notes: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PgnError {
    #[error("reading PGN: {0}")]
    Io(#[from] io::Error),
    #[error("game {game} ({players}): move {ply_text} `{san}` is not legal in the position {fen}")]
    IllegalMove {
        game: usize,
        players: String,
        ply_text: String,
        san: String,
        fen: String,
    },
    #[error("game {game}: invalid FEN tag `{fen}`: {reason}")]
    InvalidFen {
        game: usize,
        fen: String,
        reason: String,
    },
}

impl PgnGame {
    /// The value of a tag, if present.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The start position: the `FEN` tag if there is one, otherwise the standard position.
    pub fn start_position(&self) -> Result<Chess, PgnError> {
        match self.tag("FEN") {
            None => Ok(Chess::default()),
            Some(fen) => {
                let invalid = |reason: String| PgnError::InvalidFen {
                    game: 0,
                    fen: fen.to_owned(),
                    reason,
                };
                let parsed: Fen = fen.parse().map_err(|e| invalid(format!("{e}")))?;
                let mode = if self.tag("Variant").is_some_and(|v| v.contains("960")) {
                    CastlingMode::Chess960
                } else {
                    CastlingMode::Standard
                };
                parsed
                    .into_position(mode)
                    .map_err(|e| invalid(format!("{e}")))
            }
        }
    }

    /// `White - Black` for messages.
    pub fn players(&self) -> String {
        format!(
            "{} - {}",
            self.tag("White").unwrap_or("?"),
            self.tag("Black").unwrap_or("?")
        )
    }
}

/// A PGN file read for everything it holds (see [`read_pgn`]).
#[derive(Debug, Default)]
pub struct PgnFile {
    /// Every game that could be read, in the file's order, each with its legal moves.
    pub games: Vec<ReadGame>,
    /// What could not be read: games whose start position is no position, text that is no PGN.
    pub problems: Vec<FileProblem>,
}

/// One game of a [`PgnFile`].
#[derive(Debug)]
pub struct ReadGame {
    /// Its place among the file's games (1 for the first).
    pub number: usize,
    pub game: AnnotatedGame,
    /// Where its score stopped being legal, when it did: the moves from there on are dropped.
    pub stopped: Option<ScoreStop>,
}

/// Where and why a game's score stopped being legal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScoreStop {
    /// The first move dropped, numbered as in the score: `41.` or `41...`.
    pub move_number: String,
    /// That move as written.
    pub san: String,
    /// The moves (plies) kept before it.
    pub kept_plies: usize,
    /// The position it was played in.
    pub fen: String,
    /// Every move dropped, as written.
    pub dropped: Vec<String>,
    pub reason: StopReason,
}

/// Why a score stopped being legal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// The dropped moves put both kings on the centre squares: a DGT board's result signal
    /// recorded as king moves, not moves of the game.
    KingsInCentre { signal: ResultSignal },
    /// A move that is not legal in its position (and what follows it).
    IllegalMove,
}

impl fmt::Display for ScoreStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dropped = self.dropped.join(" ");
        let kept = match self.kept_plies {
            1 => "1 ply".to_owned(),
            n => format!("{n} plies"),
        };
        match self.reason {
            StopReason::KingsInCentre { signal } => write!(
                f,
                "the score stops after {kept}: {} {dropped} puts both kings on the centre \
                 squares, a DGT board's result signal ({}), not moves of the game",
                self.move_number,
                signal.pgn_result()
            ),
            StopReason::IllegalMove => write!(
                f,
                "the score stops after {kept}: {} {} is not legal in the position {}; {} \
                 move(s) dropped ({dropped})",
                self.move_number,
                self.san,
                self.fen,
                self.dropped.len()
            ),
        }
    }
}

/// What of a PGN file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileProblem {
    #[error("game {number} ({players}) is left out: its FEN tag `{fen}` is no position: {reason}")]
    InvalidFen {
        number: usize,
        players: String,
        fen: String,
        reason: String,
    },
    #[error("after game {after_game}, text that is no PGN was skipped: {reason}")]
    Unreadable { after_game: usize, reason: String },
}

/// Errors in a row after which the rest of a file is taken to be no PGN at all.
const MAX_UNREADABLE_IN_A_ROW: usize = 16;

/// Reads every game of a PGN file from elsewhere: each game keeps its moves up to the first one
/// that is not legal, and says where and why it stopped ([`ReadGame::stopped`]); a game that
/// cannot be read at all, or text that is no PGN, is listed in [`PgnFile::problems`] and the
/// games after it are read all the same.
pub fn read_pgn(pgn: &str) -> PgnFile {
    let (collected, mut problems) = collect(pgn);
    let mut games = Vec::with_capacity(collected.len());
    for (index, mut collected) in collected.into_iter().enumerate() {
        let number = index + 1;
        let stopped = match keep_legal(&mut collected) {
            Ok(stopped) => stopped,
            Err(reason) => {
                problems.push(FileProblem::InvalidFen {
                    number,
                    players: collected.game.players(),
                    fen: collected.game.tag("FEN").unwrap_or_default().to_owned(),
                    reason,
                });
                continue;
            }
        };
        games.push(ReadGame {
            number,
            game: annotate(collected),
            stopped,
        });
    }
    PgnFile { games, problems }
}

/// Every game the reader could read, and what it could not.
fn collect(pgn: &str) -> (Vec<Collected>, Vec<FileProblem>) {
    let mut reader = Reader::new(io::Cursor::new(pgn.as_bytes()));
    let mut games = Vec::new();
    let mut problems = Vec::new();
    let mut errors_in_a_row = 0;
    loop {
        match reader.read_game(&mut Collector) {
            Ok(Some(game)) => {
                games.push(game);
                errors_in_a_row = 0;
            }
            Ok(None) => break,
            Err(e) => {
                problems.push(FileProblem::Unreadable {
                    after_game: games.len(),
                    reason: e.to_string(),
                });
                errors_in_a_row += 1;
                if errors_in_a_row >= MAX_UNREADABLE_IN_A_ROW {
                    break;
                }
            }
        }
    }
    (games, problems)
}

/// Cuts the score at its first move that is not legal, and says why it stopped there. `Err`
/// when the game has no start position (a FEN tag that is no position).
fn keep_legal(collected: &mut Collected) -> Result<Option<ScoreStop>, String> {
    let mut pos = collected.game.start_position().map_err(|e| match e {
        PgnError::InvalidFen { reason, .. } => reason,
        other => other.to_string(),
    })?;
    let moves = &collected.game.moves;
    let mut positions = Vec::with_capacity(moves.len());
    let mut first_illegal = None;
    for (ply, mv) in moves.iter().enumerate() {
        match parse_san(&pos, &mv.san) {
            Some(m) => {
                positions.push(pos.clone());
                pos.play_unchecked(m);
            }
            None => {
                first_illegal = Some(ply);
                break;
            }
        }
    }
    let Some(mut cut) = first_illegal else {
        return Ok(None);
    };
    // A file that ends a game both players lost with "0-0" in movetext too (as some broadcasts'
    // files do) has it read as castling: as the last move, where no castling is legal, it is
    // the result (a legal final castle stays a move).
    if cut + 1 == moves.len()
        && moves[cut].san == "O-O"
        && collected.game.result == BOTH_LOST
        && !collected.outcome_seen
    {
        collected.game.moves.truncate(cut);
        collected.comments.truncate(cut);
        return Ok(None);
    }
    let mut signal = signal_of(&pos, &moves[cut..]);
    // A king walking legally onto a centre square just before: the signal's first half.
    if signal.is_some()
        && let Some(previous) = cut.checked_sub(1)
        && is_king_move_to_centre(&moves[previous].san)
        && let Some(before) = signal_of(&positions[previous], &moves[previous..])
    {
        cut = previous;
        pos = positions[previous].clone();
        signal = Some(before);
    }
    let stop = ScoreStop {
        move_number: move_number_text(&pos),
        san: moves[cut].san.clone(),
        kept_plies: cut,
        fen: Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string(),
        dropped: moves[cut..].iter().map(|m| m.san.clone()).collect(),
        reason: match signal {
            Some(signal) => StopReason::KingsInCentre { signal },
            None => StopReason::IllegalMove,
        },
    };
    collected.game.moves.truncate(cut);
    collected.comments.truncate(cut);
    Ok(Some(stop))
}

/// The result signalled when `tail` is king moves (at most four, the sides taking turns from
/// `pos`) that leave both kings on the centre squares, moved as pieces are put down, not as
/// kings may move.
fn signal_of(pos: &Chess, tail: &[PgnMove]) -> Option<ResultSignal> {
    if tail.is_empty() || tail.len() > 4 {
        return None;
    }
    let mut board = pos.board().clone();
    let mut turn = pos.turn();
    for mv in tail {
        let to = king_destination(&mv.san)?;
        let from = board.king_of(turn)?;
        board.discard_piece_at(from);
        board.set_piece_at(
            to,
            Piece {
                color: turn,
                role: Role::King,
            },
        );
        turn = !turn;
    }
    kings_signal(&board)
}

/// Where a king move (not castling) goes.
fn king_destination(san: &str) -> Option<shakmaty::Square> {
    match san.parse::<SanPlus>().ok()?.san {
        San::Normal {
            role: Role::King,
            to,
            ..
        } => Some(to),
        _ => None,
    }
}

fn is_king_move_to_centre(san: &str) -> bool {
    king_destination(san).is_some_and(|to| crate::result_signal::CENTRE.contains(&to))
}

/// Reads every game of a PGN text, checking each move's legality. Draw offers and arbiter notes
/// stay in the comment text; [`read_annotated_games`] separates them.
pub fn read_games(pgn: &str) -> Result<Vec<PgnGame>, PgnError> {
    Ok(read_collected(pgn)?
        .into_iter()
        .map(|mut collected| {
            for (mv, pieces) in collected.game.moves.iter_mut().zip(&collected.comments) {
                if !pieces.is_empty() {
                    mv.comment = Some(pieces.join(" "));
                }
            }
            collected.game
        })
        .collect())
}

/// Reads every game of a PGN text with the draw offers and arbiter notes of each move.
pub fn read_annotated_games(pgn: &str) -> Result<Vec<AnnotatedGame>, PgnError> {
    Ok(read_collected(pgn)?.into_iter().map(annotate).collect())
}

/// A game with its comments split into free text, draw offers and arbiter notes.
fn annotate(mut collected: Collected) -> AnnotatedGame {
    let mut notes = Vec::with_capacity(collected.game.moves.len());
    for (mv, pieces) in collected.game.moves.iter_mut().zip(&collected.comments) {
        let mut note = MoveNotes::default();
        let mut free = Vec::new();
        for piece in pieces {
            if let Some(text) = piece.strip_prefix(ARBITER_PREFIX) {
                note.arbiter_notes.push(text.trim().to_owned());
            } else {
                let (offer, rest) = take_draw_offer(piece);
                note.draw_offer |= offer;
                if !rest.is_empty() {
                    free.push(rest);
                }
            }
        }
        mv.comment = (!free.is_empty()).then(|| free.join(" "));
        notes.push(note);
    }
    AnnotatedGame {
        game: collected.game,
        notes,
    }
}

/// Every game of the text, or the first problem: a score that stops being legal, a FEN tag that
/// is no position, text that is no PGN.
fn read_collected(pgn: &str) -> Result<Vec<Collected>, PgnError> {
    let (mut games, problems) = collect(pgn);
    if let Some(FileProblem::Unreadable { reason, .. }) = problems.into_iter().next() {
        return Err(PgnError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            reason,
        )));
    }
    for (index, collected) in games.iter_mut().enumerate() {
        let game = index + 1;
        match keep_legal(collected) {
            Ok(None) => {}
            Ok(Some(stop)) => {
                return Err(PgnError::IllegalMove {
                    game,
                    players: collected.game.players(),
                    ply_text: stop.move_number,
                    san: stop.san,
                    fen: stop.fen,
                });
            }
            Err(reason) => {
                return Err(PgnError::InvalidFen {
                    game,
                    fen: collected.game.tag("FEN").unwrap_or_default().to_owned(),
                    reason,
                });
            }
        }
    }
    Ok(games)
}

const DRAW_OFFER: &str = "(=)";
const ARBITER_PREFIX: &str = "Arbiter:";

/// Removes the draw offer tokens from comment text; says whether there was one.
fn take_draw_offer(text: &str) -> (bool, String) {
    let mut offer = false;
    let rest: Vec<&str> = text
        .split_whitespace()
        .filter(|word| {
            let is_offer = *word == DRAW_OFFER;
            offer |= is_offer;
            !is_offer
        })
        .collect();
    (offer, rest.join(" "))
}

/// A game as read, with the free text of each comment after each move kept apart.
struct Collected {
    game: PgnGame,
    comments: Vec<Vec<String>>,
    /// The movetext ended with a result token.
    outcome_seen: bool,
}

fn move_number_text(pos: &Chess) -> String {
    let n = pos.fullmoves();
    match pos.turn() {
        shakmaty::Color::White => format!("{n}."),
        shakmaty::Color::Black => format!("{n}..."),
    }
}

struct Collector;

impl Visitor for Collector {
    type Tags = Vec<(String, String)>;
    type Movetext = Collected;
    type Output = Collected;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(Vec::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        tags.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(&value.decode()).into_owned(),
        ));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let result = tags
            .iter()
            .find(|(n, _)| n == "Result")
            .map(|(_, v)| result_spelt_as_pgn(v).to_owned())
            .unwrap_or_else(|| "*".to_owned());
        ControlFlow::Continue(Collected {
            game: PgnGame {
                tags,
                moves: Vec::new(),
                result,
            },
            comments: Vec::new(),
            outcome_seen: false,
        })
    }

    fn san(&mut self, game: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        game.game.moves.push(PgnMove {
            san: san_plus.to_string(),
            ..PgnMove::default()
        });
        game.comments.push(Vec::new());
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        game: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        if let (Some(last), Some(pieces)) = (game.game.moves.last_mut(), game.comments.last_mut()) {
            let text = String::from_utf8_lossy(comment.as_bytes());
            let parsed = parse_comment(&text);
            last.clock_ms = last.clock_ms.or(parsed.clock_ms);
            last.elapsed_ms = last.elapsed_ms.or(parsed.elapsed_ms);
            pieces.extend(parsed.text);
        }
        ControlFlow::Continue(())
    }

    fn outcome(
        &mut self,
        game: &mut Self::Movetext,
        outcome: Outcome,
    ) -> ControlFlow<Self::Output> {
        game.outcome_seen = true;
        // A score only the tag can carry stands: movetext has no token for it, and what a
        // reader finds there is `*` or a misreading ("0-1/2" reads as "0-1").
        if TAG_ONLY_RESULTS.contains(&game.game.result.as_str()) {
            return ControlFlow::Continue(());
        }
        game.game.result = match outcome {
            Outcome::Known(KnownOutcome::Decisive { winner }) => {
                if winner.is_white() { "1-0" } else { "0-1" }.to_owned()
            }
            Outcome::Known(KnownOutcome::Draw) => "1/2-1/2".to_owned(),
            Outcome::Unknown => "*".to_owned(),
        };
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, game: Self::Movetext) -> Self::Output {
        game
    }
}

struct ParsedComment {
    clock_ms: Option<u64>,
    elapsed_ms: Option<u64>,
    text: Option<String>,
}

/// Splits a comment into its `[%clk]` / `[%emt]` commands and the remaining text.
fn parse_comment(text: &str) -> ParsedComment {
    let mut out = ParsedComment {
        clock_ms: None,
        elapsed_ms: None,
        text: None,
    };
    let mut rest = String::new();
    let mut s = text;
    while let Some(start) = s.find("[%") {
        rest.push_str(&s[..start]);
        let Some(len) = s[start..].find(']') else {
            rest.push_str(&s[start..]);
            s = "";
            break;
        };
        let command = &s[start + 2..start + len];
        let mut parts = command.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("clk"), Some(v)) => out.clock_ms = parse_duration_ms(v),
            (Some("emt"), Some(v)) => out.elapsed_ms = parse_duration_ms(v),
            _ => {}
        }
        s = &s[start + len + 1..];
    }
    rest.push_str(s);
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    if !rest.is_empty() {
        out.text = Some(rest);
    }
    out
}

/// Parses `h:mm:ss`, `m:ss` or `h:mm:ss.f` into milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let mut total_s: u64 = 0;
    let parts: Vec<&str> = whole.split(':').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    for part in parts {
        total_s = total_s
            .checked_mul(60)?
            .checked_add(part.parse::<u64>().ok()?)?;
    }
    let mut ms = total_s.checked_mul(1000)?;
    if let Some(f) = fraction {
        let digits: String = f.chars().take(3).collect();
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let scale = 10u64.pow(3 - digits.len() as u32);
        ms += digits.parse::<u64>().ok()? * scale;
    }
    Some(ms)
}

/// Formats milliseconds as `h:mm:ss` (whole seconds, rounded down), as `[%clk]` wants.
pub fn format_clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Formats milliseconds as `h:mm:ss`, with `.fff` (trailing zeros dropped) when there is a
/// fraction of a second — exact for [`parse_duration_ms`].
pub fn format_duration(ms: u64) -> String {
    let whole = format_clock(ms);
    match ms % 1000 {
        0 => whole,
        fraction => format!("{whole}.{}", format!("{fraction:03}").trim_end_matches('0')),
    }
}

/// Writes a game score: the tags (Seven Tag Roster first), then the movetext wrapped at 80
/// columns with the move annotations described in the module documentation.
pub fn write_game(game: &PgnGame) -> String {
    write_with_notes(game, &[])
}

/// Writes a game score with its draw offers and arbiter notes.
pub fn write_annotated_game(annotated: &AnnotatedGame) -> String {
    write_with_notes(&annotated.game, &annotated.notes)
}

fn write_with_notes(game: &PgnGame, notes: &[MoveNotes]) -> String {
    const ROSTER: [&str; 7] = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];
    let mut out = String::new();
    for name in ROSTER {
        let value = if name == "Result" {
            game.result.as_str()
        } else {
            game.tag(name).unwrap_or("?")
        };
        out.push_str(&format!("[{name} \"{}\"]\n", escape_tag(value)));
    }
    for (name, value) in &game.tags {
        if !ROSTER.contains(&name.as_str()) {
            out.push_str(&format!("[{name} \"{}\"]\n", escape_tag(value)));
        }
    }
    out.push('\n');

    let mut tokens = Vec::new();
    let black_first = game
        .start_position()
        .map(|p| p.turn().is_black())
        .unwrap_or(false);
    let first_number = game
        .start_position()
        .map(|p| p.fullmoves().get())
        .unwrap_or(1);
    for (i, mv) in game.moves.iter().enumerate() {
        let ply = i + usize::from(black_first);
        let number = first_number as usize + ply / 2;
        if ply % 2 == 0 {
            tokens.push(format!("{number}."));
        } else if i == 0 {
            tokens.push(format!("{number}..."));
        }
        tokens.push(mv.san.clone());
        let mut commands = Vec::new();
        if let Some(clk) = mv.clock_ms {
            commands.push(format!("[%clk {}]", format_clock(clk)));
        }
        if let Some(emt) = mv.elapsed_ms {
            commands.push(format!("[%emt {}]", format_duration(emt)));
        }
        let note = notes.get(i);
        if note.is_some_and(|n| n.draw_offer) {
            commands.push(DRAW_OFFER.to_owned());
        }
        if let Some(text) = &mv.comment {
            commands.push(comment_text(text));
        }
        if !commands.is_empty() {
            tokens.push(format!("{{{}}}", commands.join(" ")));
        }
        for text in note.iter().flat_map(|n| &n.arbiter_notes) {
            // An arbiter's words are no commands: `[%clk …]` in a note would be read as the
            // move's clock (lichess reads commands anywhere in a comment).
            let words = comment_text(text).replace("[%", "[ %");
            tokens.push(format!("{{{ARBITER_PREFIX} {words}}}"));
        }
    }
    tokens.push(movetext_termination(&game.result).to_owned());

    let mut line = String::new();
    for token in tokens {
        // Comments may contain spaces; wrapping happens between tokens only.
        if !line.is_empty() && line.len() + 1 + token.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push_str("\n\n");
    out
}

/// Both players lost (a double forfeit).
pub const BOTH_LOST: &str = "0-0";
/// White scores a draw and Black loses (Black lost for a breach of the rules against a White
/// who cannot checkmate by any series of legal moves).
pub const WHITE_HALF_BLACK_ZERO: &str = "1/2-0";
/// White loses and Black scores a draw.
pub const WHITE_ZERO_BLACK_HALF: &str = "0-1/2";
/// The scores PGN has no result token for, which lichess and the pairing programs read in the
/// Result tag; the movetext of such a game ends with `*` (in movetext "0-0" reads as castling).
pub const TAG_ONLY_RESULTS: [&str; 3] = [BOTH_LOST, WHITE_HALF_BLACK_ZERO, WHITE_ZERO_BLACK_HALF];

/// A Result tag's score as PGN spells it: files from scoresheets or other programs write a half
/// point as "½".
fn result_spelt_as_pgn(tag: &str) -> &str {
    match tag.trim() {
        "½-½" => "1/2-1/2",
        "½-0" => WHITE_HALF_BLACK_ZERO,
        "0-½" => WHITE_ZERO_BLACK_HALF,
        other => other,
    }
}

/// How the movetext ends for `result`: as the tag says, except that a score only the tag can
/// carry ends with `*`.
fn movetext_termination(result: &str) -> &str {
    if TAG_ONLY_RESULTS.contains(&result) {
        "*"
    } else {
        result
    }
}

/// Comment text that cannot end the comment early, nor the game: braces become parentheses,
/// and line breaks and other control characters spaces (an arbiter's note is free text; a blank
/// line followed by `[` is where readers such as lichess split a file into games).
fn comment_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '{' => '(',
            '}' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// A tag value as PGN's string token allows it: quotes and backslashes escaped, and no line
/// break or other control character (a value comes from registration data; a line break would
/// end the tag and let the rest be read as tags or moves of its own).
fn escape_tag(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// SAN of a move in a position, with `+` or `#`.
pub fn san_plus(pos: &Chess, m: &shakmaty::Move) -> String {
    SanPlus::from_move(pos.clone(), *m).to_string()
}

/// Parses SAN in a position.
pub fn parse_san(pos: &Chess, text: &str) -> Option<shakmaty::Move> {
    text.parse::<San>().ok()?.to_move(pos).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_game_both_players_lost_reads_as_such_however_its_movetext_ends() {
        let games = read_games(
            "[Result \"0-0\"]\n\n*\n\n\
             [Result \"0-0\"]\n\n0-0\n\n\
             [Result \"0-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 0-0\n\n\
             [Result \"0-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O *\n",
        )
        .expect("reads");
        let read: Vec<(usize, &str)> = games
            .iter()
            .map(|g| (g.moves.len(), g.result.as_str()))
            .collect();
        // White has castled: the last "0-0" is the result. A castle that ends the score is a
        // move (one that is legal there cannot be told from the result, and stays a move).
        assert_eq!(read, [(0, "0-0"), (0, "0-0"), (10, "0-0"), (7, "0-0")]);
        // Written, it reads back the same.
        let again = read_games(&write_game(&games[2])).expect("reads");
        assert_eq!(
            (again[0].moves.len(), again[0].result.as_str()),
            (10, "0-0")
        );
    }

    #[test]
    fn a_half_point_for_one_player_only_reads_and_writes_in_the_tag() {
        let games = read_games(
            "[Result \"1/2-0\"]\n\n1. e4 e5 *\n\n\
             [Result \"0-½\"]\n\n1. d4 *\n\n\
             [Result \"½-0\"]\n\n1. e4 e5 2. Nf3 1/2-0\n\n\
             [Result \"0-1/2\"]\n\n1. c4 0-1/2\n",
        )
        .expect("reads");
        let read: Vec<(usize, &str)> = games
            .iter()
            .map(|g| (g.moves.len(), g.result.as_str()))
            .collect();
        assert_eq!(
            read,
            [(2, "1/2-0"), (1, "0-1/2"), (3, "1/2-0"), (1, "0-1/2")]
        );
        let written = write_game(&games[0]);
        assert!(written.contains("[Result \"1/2-0\"]"), "{written}");
        assert!(written.trim_end().ends_with("1. e4 e5 *"), "{written}");
        let again = read_games(&written).expect("reads");
        assert_eq!(
            (again[0].moves.len(), again[0].result.as_str()),
            (2, "1/2-0")
        );
    }

    #[test]
    fn a_tag_value_with_quotes_and_line_breaks_stays_one_tag() {
        let mut game = read_games("[Result \"*\"]\n\n1. e4 *\n")
            .expect("reads")
            .remove(0);
        let name = "Smith\"]\n\n[White \"Forged\"]\r\n1. d4 \\ *";
        game.tags.push(("White".into(), name.into()));
        game.tags.push(("Black".into(), "Jones".into()));
        let text = write_game(&game);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("[White ")).count(),
            1,
            "{text}"
        );
        let games = read_games(&text).expect("reads back");
        assert_eq!(games.len(), 1, "{text}");
        assert_eq!(
            games[0].tag("White"),
            Some("Smith\"]  [White \"Forged\"]  1. d4 \\ *"),
            "the name, its line breaks as spaces"
        );
        assert_eq!(games[0].tag("Black"), Some("Jones"));
        assert_eq!(games[0].moves.len(), 1);
        assert_eq!(games[0].moves[0].san, "e4");
    }

    #[test]
    fn a_comment_with_braces_and_blank_lines_stays_one_comment_of_one_game() {
        let mut game = read_games("[Result \"*\"]\n\n1. e4 e5 *\n")
            .expect("reads")
            .remove(0);
        game.moves[0].comment = Some("seen }\n\n[Event \"Forged\"]\r\n1. d4 {".into());
        let text = write_game(&game);
        assert!(!text.contains("\n\n["), "{text}");
        let games = read_games(&text).expect("reads back");
        assert_eq!(games.len(), 1, "{text}");
        assert_eq!(
            games[0].moves[0].comment.as_deref(),
            Some("seen ) [Event \"Forged\"] 1. d4 (")
        );
        assert_eq!(games[0].moves.len(), 2);
    }

    #[test]
    fn clock_comments_are_parsed_and_written_back() {
        let text = "[Event \"T\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"0-1\"]\n\n1. f3 {[%clk 1:59:56]} e5 {[%clk 1:59:51] good} 2. g4 {[%clk 0:05:00.5]} Qh4# 0-1\n";
        let games = read_games(text).expect("reads");
        assert_eq!(games.len(), 1);
        let g = &games[0];
        assert_eq!(g.moves.len(), 4);
        assert_eq!(g.moves[0].clock_ms, Some(7_196_000));
        assert_eq!(g.moves[1].comment.as_deref(), Some("good"));
        assert_eq!(g.moves[2].clock_ms, Some(300_500));
        assert_eq!(g.moves[3].san, "Qh4#");
        assert_eq!(g.result, "0-1");
        let again = read_games(&write_game(g)).expect("reads back");
        assert_eq!(again[0].moves.len(), 4);
        assert_eq!(again[0].moves[0].clock_ms, Some(7_196_000));
        assert_eq!(again[0].result, "0-1");
    }

    #[test]
    fn illegal_move_is_reported_with_its_place() {
        let err = read_games("1. e4 e5 2. Ke3 *").expect_err("illegal");
        let msg = err.to_string();
        assert!(msg.contains("2.") && msg.contains("Ke3"), "{msg}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1:00:00"), Some(3_600_000));
        assert_eq!(parse_duration_ms("0:59"), Some(59_000));
        assert_eq!(parse_duration_ms("x"), None);
        assert_eq!(format_clock(3_599_999), "0:59:59");
    }
}
