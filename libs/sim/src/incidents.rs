//! Incidents a hall sees, injected into a simulated game, and the alerts each is expected to raise.
//!
//! An [`Incident`] happens at the start of the turn of the ply it names, before that ply's move:
//! the time it takes runs on the clock as it would in the hall (the mover's, or the opponent's
//! while the clock is wrongly switched), and the move follows as scripted. What the arbiter is
//! expected to be told is an [`ExpectedAlert`]: a pure description mirroring the game service's
//! alert kinds by name, so that this crate needs nothing of the game aggregate.
//!
//! Spec syntax (`FromStr` / `Display`): `KIND@ply=N[:NAME=VALUE]...`, e.g.
//! `press-without-move@ply=7`, `irregular-placement@ply=9:for=8s`, `offline@ply=5:for=20s`,
//! `battery-low@ply=3:percent=15`, `lost-observations@ply=11:count=2`, `flag-fall@ply=30`,
//! `threefold-claim@ply=12`.
//!
//! A flag fall and a threefold claim end what the board shows of the game: the score's later
//! moves are not played, so no incident may come after them.

use std::{collections::HashSet, fmt, str::FromStr};

use boardcast_schema::device::v1::{ClockRun, DeviceState, DeviceStatus, observation::Kind};
use shakmaty::{Bitboard, Board, Chess, Color, EnPassantMode, Move, Piece, Position, Role, Square};

use crate::{ScriptStep, hand_steps, lifted, placed, placement_of, run_for};

/// How long a placement may stay unmatched before the game service reports it: boardcast-
/// inference's quiet period. An irregular placement shown for longer is an alert.
pub const QUIET_PERIOD_MS: u64 = 5_000;
/// A battery at or below this is low for the game service.
pub const LOW_BATTERY_PERCENT: u32 = 20;

const DEFAULT_IRREGULAR_MS: u64 = 8_000;
const DEFAULT_OFFLINE_MS: u64 = 20_000;
const DEFAULT_BATTERY_PERCENT: u32 = 15;
const DEFAULT_LOST: u32 = 2;
/// The plies a threefold claim's repetition takes: the position before it stands again after
/// four, and the seventh leaves the other player the move that makes it stand a third time.
const REPETITION_PLIES: u32 = 7;

/// Something that happens before the move of `ply` (plies count from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incident {
    /// The player to move presses the clock without moving; 2.5 s later the opponent presses it
    /// back, and the player then makes the move and presses (Article 7.5.4).
    PressWithoutMove { ply: u32 },
    /// The player to move puts the piece the move moves on a square it cannot reach (the nearest
    /// such empty square), leaves it there for `for_ms` while the clock reports every second,
    /// puts it back and then makes the move. That put-down made no move: no touch-move breach.
    IrregularPlacement { ply: u32, for_ms: u64 },
    /// The player to move lifts another of their pieces that has a legal move, holds it for two
    /// seconds, puts it back on its square and then makes the move (not a capture): a possible
    /// touch-move breach (Article 4.3.1; 4.3.a before 2014) for the arbiter to rule on.
    TouchedPiece { ply: u32 },
    /// The board reports itself disconnected, and connected again `for_ms` later; the player to
    /// move thinks meanwhile.
    BoardOffline { ply: u32, for_ms: u64 },
    /// The board reports its battery at `percent` (a report without a connection state).
    BatteryLow { ply: u32, percent: u32 },
    /// The last `count` observations of the move's hand (the piece placed, then the lifts before
    /// it; never the whole placement after it or the clock press) are numbered but never
    /// published. Lost from the end, what remains still reads as the move was made (a king's
    /// lift lost before castling would read as the rook touched first).
    LostObservations { ply: u32, count: u32 },
    /// The player to move thinks until their time is out: the clock counts down to zero and
    /// shows their flag (Article 6.9). The game ends there.
    FlagFall { ply: u32 },
    /// The players move a piece each out and back until the player to move can claim a draw by
    /// threefold repetition with the move that would repeat the position a third time (Article
    /// 9.2.1.1), seven plies; that player then stops the clock to call the arbiter (6.12.2).
    /// The game waits there for the arbiter's ruling.
    ThreefoldClaim { ply: u32 },
}

/// The alert kinds of the game service's alerts (`boardcast_game::alerts::AlertKind`) that
/// incidents raise, with the same stable names. The simulator says what it expects without
/// the game's types, so that the expectation does not follow the code it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpectedAlertKind {
    IllegalMove,
    PressInDoubt,
    IrregularPlacement,
    PossibleTouchMoveBreach,
    BoardNotResponding,
    BatteryLow,
    ObservationsMissing,
    FlagFall,
    ThreefoldClaimAvailable,
}

impl ExpectedAlertKind {
    /// The stable name of the game service's alert kind (`AlertKind::name`).
    pub fn name(self) -> &'static str {
        match self {
            ExpectedAlertKind::IllegalMove => "illegal_move",
            ExpectedAlertKind::PressInDoubt => "press_in_doubt",
            ExpectedAlertKind::IrregularPlacement => "irregular_placement",
            ExpectedAlertKind::PossibleTouchMoveBreach => "touch_move",
            ExpectedAlertKind::BoardNotResponding => "board_not_responding",
            ExpectedAlertKind::BatteryLow => "battery_low",
            ExpectedAlertKind::ObservationsMissing => "observations_missing",
            ExpectedAlertKind::FlagFall => "flag_fall",
            ExpectedAlertKind::ThreefoldClaimAvailable => "threefold_available",
        }
    }
}

/// An alert an incident is expected to raise, at the ply the alert names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExpectedAlert {
    pub kind: ExpectedAlertKind,
    pub ply: u32,
}

impl Incident {
    pub fn ply(&self) -> u32 {
        match *self {
            Incident::PressWithoutMove { ply }
            | Incident::IrregularPlacement { ply, .. }
            | Incident::TouchedPiece { ply }
            | Incident::BoardOffline { ply, .. }
            | Incident::BatteryLow { ply, .. }
            | Incident::LostObservations { ply, .. }
            | Incident::FlagFall { ply }
            | Incident::ThreefoldClaim { ply } => ply,
        }
    }

    /// Whether the game ends with the incident (see the module's documentation).
    pub fn ends_the_game(&self) -> bool {
        matches!(
            self,
            Incident::FlagFall { .. } | Incident::ThreefoldClaim { .. }
        )
    }

    /// The kind's name in the spec syntax.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Incident::PressWithoutMove { .. } => "press-without-move",
            Incident::IrregularPlacement { .. } => "irregular-placement",
            Incident::TouchedPiece { .. } => "touched-piece",
            Incident::BoardOffline { .. } => "offline",
            Incident::BatteryLow { .. } => "battery-low",
            Incident::LostObservations { .. } => "lost-observations",
            Incident::FlagFall { .. } => "flag-fall",
            Incident::ThreefoldClaim { .. } => "threefold-claim",
        }
    }

    /// What the game service is expected to raise for this incident, each alert once: a press
    /// without a move is held in doubt and then settled as an illegal move by the mover's press
    /// on the move; a misplaced piece is an irregular placement only when shown for longer than
    /// the quiet period, and never a touch-move breach (it is put where no legal move goes:
    /// that made no move, decision 0037); a battery above the low level
    /// raises nothing; a flag fall names the ply the flagged player did not make; a threefold
    /// claim becomes available after the seventh ply of the repetition.
    pub fn expected_alerts(&self) -> Vec<ExpectedAlert> {
        use ExpectedAlertKind as K;
        let ply = match *self {
            Incident::ThreefoldClaim { ply } => {
                ply.saturating_sub(1).saturating_add(REPETITION_PLIES)
            }
            _ => self.ply(),
        };
        let kinds: &[K] = match *self {
            Incident::PressWithoutMove { .. } => &[K::PressInDoubt, K::IllegalMove],
            Incident::IrregularPlacement { for_ms, .. } if for_ms > QUIET_PERIOD_MS => {
                &[K::IrregularPlacement]
            }
            Incident::IrregularPlacement { .. } => &[],
            Incident::TouchedPiece { .. } => &[K::PossibleTouchMoveBreach],
            Incident::BoardOffline { .. } => &[K::BoardNotResponding],
            Incident::BatteryLow { percent, .. } if percent <= LOW_BATTERY_PERCENT => {
                &[K::BatteryLow]
            }
            Incident::BatteryLow { .. } => &[],
            Incident::LostObservations { .. } => &[K::ObservationsMissing],
            Incident::FlagFall { .. } => &[K::FlagFall],
            Incident::ThreefoldClaim { .. } => &[K::ThreefoldClaimAvailable],
        };
        kinds
            .iter()
            .map(|&kind| ExpectedAlert { kind, ply })
            .collect()
    }

    /// Whether the incident can happen in a game of `plies` plies, among `all` the game's
    /// incidents.
    pub fn check(&self, plies: usize, all: &[Incident]) -> Result<(), String> {
        let ply = self.ply();
        if ply == 0 || ply as usize > plies {
            return Err(format!("ply {ply} is not in the game (plies 1 to {plies})"));
        }
        match *self {
            Incident::IrregularPlacement { for_ms: 0, .. }
            | Incident::BoardOffline { for_ms: 0, .. } => {
                Err("for must be more than 0 ms".to_owned())
            }
            Incident::BatteryLow { percent, .. } if percent > 100 => {
                Err(format!("percent must be 0 to 100, got {percent}"))
            }
            Incident::BatteryLow { .. }
                if all
                    .iter()
                    .filter(|i| matches!(i, Incident::BatteryLow { .. }))
                    .count()
                    > 1 =>
            {
                Err("one battery report per game: a battery once low stays low".to_owned())
            }
            Incident::LostObservations { count: 0, .. } => {
                Err("count must be at least 1".to_owned())
            }
            // Nothing after the game ended, and it ends once: among the incidents that end
            // it at or before this ply, this one itself is counted once (by value, so that a
            // caller may pass a copy).
            _ => {
                let mut ends = all
                    .iter()
                    .filter(|other| other.ends_the_game() && other.ply() <= ply);
                let mut itself_seen = !self.ends_the_game();
                let other_end = ends.find(|other| {
                    if !itself_seen && **other == *self {
                        itself_seen = true;
                        return false;
                    }
                    true
                });
                match other_end {
                    Some(end) => Err(format!(
                        "the game ends at {end}: nothing happens on the board after it"
                    )),
                    None => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for Incident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@ply={}", self.kind_name(), self.ply())?;
        match *self {
            Incident::PressWithoutMove { .. } | Incident::TouchedPiece { .. } => Ok(()),
            Incident::IrregularPlacement { for_ms, .. } | Incident::BoardOffline { for_ms, .. } => {
                write!(f, ":for={for_ms}ms")
            }
            Incident::BatteryLow { percent, .. } => write!(f, ":percent={percent}"),
            Incident::LostObservations { count, .. } => write!(f, ":count={count}"),
            Incident::FlagFall { .. } | Incident::ThreefoldClaim { .. } => Ok(()),
        }
    }
}

impl FromStr for Incident {
    type Err = String;

    /// `KIND@ply=N[:NAME=VALUE]...`; see the module's documentation.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let syntax = || {
            format!(
                "incident {spec:?}: expected KIND@ply=N[:NAME=VALUE]..., KIND one of \
                 press-without-move, irregular-placement[:for=DURATION], touched-piece, \
                 offline[:for=DURATION], battery-low[:percent=P], lost-observations[:count=N], \
                 flag-fall, threefold-claim"
            )
        };
        let (kind, rest) = spec.trim().split_once('@').ok_or_else(syntax)?;
        let mut fields = rest.split(':');
        let ply = match fields.next().and_then(|f| f.split_once('=')) {
            Some(("ply", n)) => n
                .parse::<u32>()
                .map_err(|_| format!("{}: bad ply {n:?}", syntax()))?,
            _ => return Err(syntax()),
        };
        let mut params: Vec<(&str, &str)> = Vec::new();
        for field in fields {
            let (name, value) = field.split_once('=').ok_or_else(syntax)?;
            if params.iter().any(|(n, _)| *n == name) {
                return Err(format!("incident {spec:?}: {name} given twice"));
            }
            params.push((name, value));
        }
        let allowed: &[&str] = match kind {
            "irregular-placement" | "offline" => &["for"],
            "battery-low" => &["percent"],
            "lost-observations" => &["count"],
            _ => &[],
        };
        if let Some((name, _)) = params.iter().find(|(n, _)| !allowed.contains(n)) {
            return Err(format!("incident {spec:?}: {kind} takes no {name}"));
        }
        let param = |name: &str| params.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let number = |name: &str, default: u32| match param(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<u32>()
                .map_err(|_| format!("incident {spec:?}: bad {name} {v:?}")),
        };
        let for_ms = |default: u64| match param("for") {
            None => Ok(default),
            Some(v) => duration_ms(v).ok_or_else(|| {
                format!("incident {spec:?}: bad duration {v:?} (e.g. 8000, 8000ms or 8s)")
            }),
        };
        Ok(match kind {
            "press-without-move" => Incident::PressWithoutMove { ply },
            "touched-piece" => Incident::TouchedPiece { ply },
            "irregular-placement" => Incident::IrregularPlacement {
                ply,
                for_ms: for_ms(DEFAULT_IRREGULAR_MS)?,
            },
            "offline" => Incident::BoardOffline {
                ply,
                for_ms: for_ms(DEFAULT_OFFLINE_MS)?,
            },
            "battery-low" => Incident::BatteryLow {
                ply,
                percent: number("percent", DEFAULT_BATTERY_PERCENT)?,
            },
            "lost-observations" => Incident::LostObservations {
                ply,
                count: number("count", DEFAULT_LOST)?,
            },
            "flag-fall" => Incident::FlagFall { ply },
            "threefold-claim" => Incident::ThreefoldClaim { ply },
            _ => return Err(format!("{}: unknown kind {kind:?}", syntax())),
        })
    }
}

/// `8000`, `8000ms` or `8s` in milliseconds.
fn duration_ms(text: &str) -> Option<u64> {
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().ok()
    } else if let Some(s) = text.strip_suffix('s') {
        s.parse::<u64>().ok()?.checked_mul(1_000)
    } else {
        text.parse().ok()
    }
}

/// The mover's turn an incident happens in.
pub(crate) struct Turn<'a> {
    pub pos: &'a Chess,
    pub mv: &'a Move,
    /// Every placement the game has shown so far.
    pub history: &'a [Board],
    /// The clock's reading of (White, Black) remaining times with `running` running.
    pub reading: &'a dyn Fn([u64; 2], ClockRun) -> Kind,
    /// What the press completing a side's next move but `n` adds to its clock (`n` = 0: the move
    /// of this turn for the mover, the next one for the opponent).
    pub press_adds: &'a dyn Fn(Color, u32) -> u64,
}

/// The script as it goes on: the time, both clocks (White, Black) and the steps so far.
pub(crate) struct Timeline<'a> {
    pub now: u64,
    pub clocks: [u64; 2],
    pub steps: &'a mut Vec<ScriptStep>,
}

impl Timeline<'_> {
    /// `ms` pass with `side`'s clock running.
    fn pass(&mut self, ms: u64, side: Color) {
        self.now += ms;
        let clock = &mut self.clocks[usize::from(side == Color::Black)];
        *clock = clock.saturating_sub(ms);
    }

    fn push(&mut self, kind: Kind) {
        self.steps.push(ScriptStep {
            at_ms: self.now,
            kind,
            lost: false,
        });
    }
}

impl Incident {
    /// Plays the incident at the start of the turn (lost observations are the move's own and
    /// are marked where the move is scripted).
    pub(crate) fn play(&self, turn: &Turn, line: &mut Timeline) -> Result<(), String> {
        let mover = turn.pos.turn();
        let reading =
            |line: &Timeline, running: Color| (turn.reading)(line.clocks, run_for(running));
        match *self {
            Incident::PressWithoutMove { .. }
            | Incident::IrregularPlacement { .. }
            | Incident::TouchedPiece { .. }
                if ends_game(turn) =>
            {
                return Err(
                    "the move mates or stalemates: no press follows to settle a press \
                            without a move, and touches before it are not weighed"
                        .to_owned(),
                );
            }
            Incident::PressWithoutMove { .. } => {
                line.pass(1_500, mover);
                line.push(reading(line, !mover));
                line.pass(2_500, !mover);
                line.push(reading(line, mover));
            }
            Incident::IrregularPlacement { for_ms, .. } => {
                let (from, piece) = moving_piece(turn.pos, turn.mv)
                    .ok_or("the move moves no piece on the board")?;
                let to = irregular_square(turn.pos, from, piece, turn.history)
                    .ok_or("no square to misplace the moving piece on")?;
                let mut shown = turn.pos.board().clone();
                shown.discard_piece_at(from);
                shown.set_piece_at(to, piece);
                line.pass(300, mover);
                line.push(lifted(from, piece));
                line.pass(200, mover);
                line.push(placed(to, piece));
                line.pass(200, mover);
                line.push(placement_of(&shown));
                // The clock reports once a second: time passing for the board's quiet period.
                let mut waited = 0;
                while waited + 1_000 < for_ms {
                    line.pass(1_000, mover);
                    waited += 1_000;
                    line.push(reading(line, mover));
                }
                line.pass(for_ms - waited, mover);
                line.push(lifted(to, piece));
                line.pass(200, mover);
                line.push(placed(from, piece));
                line.pass(200, mover);
                line.push(placement_of(turn.pos.board()));
            }
            Incident::TouchedPiece { .. } => {
                if turn.mv.is_capture() {
                    return Err("the move captures: a touch before it is weighed with the \
                                captured piece's (Article 4.3.3); pick a quiet move"
                        .to_owned());
                }
                // A board back at the start placement after play is read as set up for a new
                // game when it is left and shown again.
                let after_play = turn.pos.fullmoves().get() > 1 || turn.pos.turn() == Color::Black;
                if after_play && turn.pos.board() == Chess::default().board() {
                    return Err("the board shows the start position: pick another ply".to_owned());
                }
                let (square, piece) = other_movable_piece(turn.pos, turn.mv)
                    .ok_or("the player to move has no other piece with a legal move")?;
                let mut held = turn.pos.board().clone();
                held.discard_piece_at(square);
                line.pass(300, mover);
                line.push(lifted(square, piece));
                line.pass(200, mover);
                line.push(placement_of(&held));
                line.pass(1_800, mover);
                line.push(placed(square, piece));
                line.pass(200, mover);
                line.push(placement_of(turn.pos.board()));
            }
            Incident::BoardOffline { for_ms, .. } => {
                line.pass(500, mover);
                line.push(status(DeviceState::Disconnected, None));
                line.pass(for_ms, mover);
                line.push(status(DeviceState::Connected, None));
                line.pass(500, mover);
            }
            Incident::BatteryLow { percent, .. } => {
                line.push(status(DeviceState::Unspecified, Some(percent)));
            }
            Incident::LostObservations { .. } => {}
            Incident::FlagFall { .. } => {
                let left = line.clocks[usize::from(mover == Color::Black)];
                line.pass(left, mover);
                let mut shown = reading(line, mover);
                if let Kind::Clock(clock) = &mut shown {
                    // The display at zero shows the flag, whichever side the gateway reads it as.
                    clock.white_flag = clock.white_remaining_ms == 0;
                    clock.black_flag = clock.black_remaining_ms == 0;
                }
                line.push(shown);
            }
            Incident::ThreefoldClaim { .. } => {
                let out_and_back = out_and_back(turn.pos)
                    .ok_or("no piece of either side can go out and back to repeat the position")?;
                let mut pos = turn.pos.clone();
                let mut moves_ahead = [0u32; 2];
                for mv in out_and_back.iter().cycle().take(REPETITION_PLIES as usize) {
                    let mover = pos.turn();
                    let side = usize::from(mover == Color::Black);
                    line.pass(1_000, mover);
                    for kind in hand_steps(&pos, mv) {
                        line.push(kind);
                        line.pass(100, mover);
                    }
                    pos.play_unchecked(*mv);
                    line.push(placement_of(pos.board()));
                    line.pass(700, mover);
                    let added = (turn.press_adds)(mover, moves_ahead[side]);
                    moves_ahead[side] += 1;
                    line.clocks[side] = line.clocks[side].saturating_add(added);
                    line.push(reading(line, pos.turn()));
                }
                // The claimant stops the clock and calls the arbiter.
                line.pass(1_500, pos.turn());
                line.push((turn.reading)(line.clocks, ClockRun::Stopped));
            }
        }
        Ok(())
    }
}

/// A move each, out and back, after which the position is as before in every respect the
/// repetition rules weigh (Article 9.2.3): the pieces, the side to move, castling and en
/// passant rights. A knight or a bishop first, as players repeat.
fn out_and_back(pos: &Chess) -> Option<[Move; 4]> {
    let same = |a: &Chess, b: &Chess| {
        a.board() == b.board()
            && a.turn() == b.turn()
            && a.castles().castling_rights() == b.castles().castling_rights()
            && a.ep_square(EnPassantMode::Legal) == b.ep_square(EnPassantMode::Legal)
    };
    let quiet = |p: &Chess| {
        let mut moves: Vec<Move> = p
            .legal_moves()
            .into_iter()
            .filter(|m| {
                matches!(m, Move::Normal { role, capture: None, promotion: None, .. }
                    if *role != Role::Pawn)
            })
            .collect();
        moves.sort_by_key(|m| {
            [
                Role::Knight,
                Role::Bishop,
                Role::Queen,
                Role::Rook,
                Role::King,
            ]
            .iter()
            .position(|r| *r == m.role())
        });
        moves
    };
    let back = |mv: &Move| match *mv {
        Move::Normal { role, from, to, .. } => Move::Normal {
            role,
            from: to,
            capture: None,
            to: from,
            promotion: None,
        },
        other => other,
    };
    let after = |p: &Chess, mv: Move| {
        let mut p = p.clone();
        p.play_unchecked(mv);
        p
    };
    for out in quiet(pos) {
        let first = after(pos, out);
        for reply in quiet(&first) {
            let second = after(&first, reply);
            let (out_back, reply_back) = (back(&out), back(&reply));
            if !second.is_legal(out_back) {
                continue;
            }
            let third = after(&second, out_back);
            if third.is_legal(reply_back) && same(&after(&third, reply_back), pos) {
                return Some([out, reply, out_back, reply_back]);
            }
        }
    }
    None
}

/// Whether the turn's move mates or stalemates: nobody presses the clock after it.
fn ends_game(turn: &Turn) -> bool {
    let mut after = turn.pos.clone();
    after.play_unchecked(*turn.mv);
    after.is_checkmate() || after.is_stalemate()
}

fn status(state: DeviceState, battery_percent: Option<u32>) -> Kind {
    Kind::Status(DeviceStatus {
        state: state as i32,
        battery_percent,
        ..Default::default()
    })
}

/// A piece of the player to move that `mv` does not move (a castling rook neither) and that
/// has a legal move (the first by square), and where it stands.
fn other_movable_piece(pos: &Chess, mv: &Move) -> Option<(Square, Piece)> {
    let moved = |sq: Square| match *mv {
        Move::Castle { king, rook } => sq == king || sq == rook,
        _ => mv.from() == Some(sq),
    };
    let mut squares: Vec<Square> = pos
        .legal_moves()
        .iter()
        .filter_map(|m| m.from())
        .filter(|&sq| !moved(sq))
        .collect();
    squares.sort_by_key(|&sq| u32::from(sq));
    let square = *squares.first()?;
    Some((square, pos.board().piece_at(square)?))
}

/// The piece the move moves, and where it stands.
fn moving_piece(pos: &Chess, mv: &Move) -> Option<(Square, Piece)> {
    let color = pos.turn();
    let (from, role) = match *mv {
        Move::Normal { role, from, .. } => (from, role),
        Move::EnPassant { from, .. } => (from, Role::Pawn),
        Move::Castle { king, .. } => (king, Role::King),
        Move::Put { .. } => return None,
    };
    Some((from, Piece { color, role }))
}

/// The nearest empty square for `piece` (standing on `from`) where the placement it makes is no
/// position of the game so far and none the mover reaches in two moves of their own (move
/// inference looks up to four plies ahead), so that nothing can take it for moves. A king is
/// kept off the centre squares (the players' result signal).
fn irregular_square(pos: &Chess, from: Square, piece: Piece, history: &[Board]) -> Option<Square> {
    let reachable = own_placements_within_two_moves(pos);
    let centre = [Square::D4, Square::E4, Square::D5, Square::E5];
    let mut empty: Vec<Square> = (!pos.board().occupied()).into_iter().collect();
    empty.sort_by_key(|sq| (sq.distance(from), u32::from(*sq)));
    empty.into_iter().find(|&to| {
        let mut board = pos.board().clone();
        board.discard_piece_at(from);
        board.set_piece_at(to, piece);
        let result_signal = piece.role == Role::King && centre.contains(&to);
        !(result_signal
            || history.contains(&board)
            || reachable.contains(&own_placement(&board, piece.color)))
    })
}

/// Where `color`'s pieces stand, role by role.
fn own_placement(board: &Board, color: Color) -> [Bitboard; 6] {
    Role::ALL.map(|role| board.by_piece(Piece { color, role }))
}

/// The placements of the mover's pieces after one move, or after two with any opponent's move
/// in between.
fn own_placements_within_two_moves(pos: &Chess) -> HashSet<[Bitboard; 6]> {
    let mover = pos.turn();
    let mut seen = HashSet::new();
    for first in pos.legal_moves() {
        let mut after_first = pos.clone();
        after_first.play_unchecked(first);
        seen.insert(own_placement(after_first.board(), mover));
        for reply in after_first.legal_moves() {
            let mut after_reply = after_first.clone();
            after_reply.play_unchecked(reply);
            for second in after_reply.legal_moves() {
                let mut after_second = after_reply.clone();
                after_second.play_unchecked(second);
                seen.insert(own_placement(after_second.board(), mover));
            }
        }
    }
    seen
}
