//! Reading and writing PGN game scores.
//!
//! The reader keeps what boardcast needs from a score: the tags, the mainline moves in SAN with
//! their `[%clk]` and `[%emt]` annotations and other comment text, and the result. Variations are
//! skipped. Legality is checked against the position, so a game that reads is a legal game.

use std::{io, ops::ControlFlow};

use pgn_reader::{KnownOutcome, Outcome, RawComment, RawTag, Reader, SanPlus, Visitor};
use shakmaty::{CastlingMode, Chess, Position, fen::Fen, san::San};

/// One mainline move of a game score.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
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

/// Reads every game of a PGN text, checking each move's legality.
pub fn read_games(pgn: &str) -> Result<Vec<PgnGame>, PgnError> {
    let mut reader = Reader::new(io::Cursor::new(pgn.as_bytes()));
    let mut games = Vec::new();
    let mut collector = Collector;
    while let Some(game) = reader.read_game(&mut collector)? {
        games.push(game);
    }
    for (index, game) in games.iter().enumerate() {
        check_legal(index + 1, game)?;
    }
    Ok(games)
}

fn check_legal(number: usize, game: &PgnGame) -> Result<(), PgnError> {
    let mut pos = game.start_position().map_err(|e| match e {
        PgnError::InvalidFen { fen, reason, .. } => PgnError::InvalidFen {
            game: number,
            fen,
            reason,
        },
        other => other,
    })?;
    for mv in &game.moves {
        let illegal = |pos: &Chess| PgnError::IllegalMove {
            game: number,
            players: game.players(),
            ply_text: move_number_text(pos),
            san: mv.san.clone(),
            fen: Fen::from_position(pos, shakmaty::EnPassantMode::Legal).to_string(),
        };
        let san: SanPlus = mv.san.parse().map_err(|_| illegal(&pos))?;
        let m = san.san.to_move(&pos).map_err(|_| illegal(&pos))?;
        pos.play_unchecked(m);
    }
    Ok(())
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
    type Movetext = PgnGame;
    type Output = PgnGame;

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
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "*".to_owned());
        ControlFlow::Continue(PgnGame {
            tags,
            moves: Vec::new(),
            result,
        })
    }

    fn san(&mut self, game: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        game.moves.push(PgnMove {
            san: san_plus.to_string(),
            clock_ms: None,
            elapsed_ms: None,
            comment: None,
        });
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        game: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        if let Some(last) = game.moves.last_mut() {
            let text = String::from_utf8_lossy(comment.as_bytes());
            let parsed = parse_comment(&text);
            last.clock_ms = last.clock_ms.or(parsed.clock_ms);
            last.elapsed_ms = last.elapsed_ms.or(parsed.elapsed_ms);
            if let Some(rest) = parsed.text {
                last.comment = Some(match last.comment.take() {
                    Some(before) => format!("{before} {rest}"),
                    None => rest,
                });
            }
        }
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, game: &mut Self::Movetext, outcome: Outcome) -> ControlFlow<Self::Output> {
        game.result = match outcome {
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
        total_s = total_s.checked_mul(60)?.checked_add(part.parse::<u64>().ok()?)?;
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

/// Writes a game score: the tags (Seven Tag Roster first), then the movetext wrapped at 80
/// columns with `[%clk]` after each move that has a clock time.
pub fn write_game(game: &PgnGame) -> String {
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
            commands.push(format!("[%emt {}]", format_clock(emt)));
        }
        if let Some(text) = &mv.comment {
            commands.push(text.replace('}', ")"));
        }
        if !commands.is_empty() {
            tokens.push(format!("{{{}}}", commands.join(" ")));
        }
    }
    tokens.push(game.result.clone());

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

fn escape_tag(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
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
