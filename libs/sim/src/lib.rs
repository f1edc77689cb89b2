//! Simulated boards and clocks.
//!
//! Turns a game score into the observations a board and clock produce while the game is played:
//! pieces lifted and placed, the placement after each move, the clock press, and at the end the
//! players' result signal. Pure: the script is a list of observations with their offsets from the
//! start of the game; a runner elsewhere assigns sequence numbers and real times and sends them.
//! Incidents ([`Incident`]) can be injected at given plies, each with the alerts it should raise.

pub mod dgt;
pub mod hall;
pub mod incidents;

pub use hall::HallBehaviour;
pub use incidents::{ExpectedAlert, ExpectedAlertKind, Incident};

use boardcast_rules::pgn::PgnGame;
use boardcast_schema::device::v1::{
    BoardPlacement, ClockDisplay, ClockReading, ClockRun, PieceLifted, PiecePlaced,
    observation::Kind,
};
use boardcast_schema::pieces::device_piece;
use shakmaty::{Chess, Color, Move, Piece, Position, Role, Square, san::SanPlus};

/// One observation of the script, `at_ms` after the game started.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptStep {
    pub at_ms: u64,
    pub kind: Kind,
    /// Lost on the way ([`Incident::LostObservations`]): the runner gives it its number but
    /// never publishes it.
    pub lost: bool,
}

#[derive(Debug, Clone)]
pub struct ScriptOptions {
    /// Both clocks at the start.
    pub initial_clock_ms: u64,
    /// Increment added to the mover's clock after each move of the first period.
    pub increment_ms: u64,
    /// The moves of the first period (0: the whole game).
    pub first_period_moves: u32,
    /// The time control's periods after the first, in order.
    pub later_periods: Vec<LaterPeriod>,
    /// Thinking time per move when the score has no `[%clk]` to derive it from.
    pub default_think_ms: u64,
    /// How the clock stands and how its gateway was told it stands.
    pub clock: ClockSetup,
    /// Incidents injected into the game, each before its ply's move.
    pub incidents: Vec<Incident>,
    /// A running clock's reading this often between the presses, as DGT clocks send one every
    /// second; `None`: readings at the presses only.
    pub clock_reports_every_ms: Option<u64>,
    /// Players' hands as a hall's boards see them ([`HallBehaviour`]), drawn from this seed;
    /// `None`: every move made cleanly, each piece lifted and set down once.
    pub hall: Option<(HallBehaviour, u64)>,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions {
            initial_clock_ms: 2 * 60 * 60 * 1000,
            increment_ms: 0,
            first_period_moves: 0,
            later_periods: Vec::new(),
            default_think_ms: 10_000,
            clock: ClockSetup::default(),
            incidents: Vec::new(),
            clock_reports_every_ms: None,
            hall: None,
        }
    }
}

/// A period of the time control after the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaterPeriod {
    /// Its moves (0: the rest of the game).
    pub moves: u32,
    /// Added to the clock by the move completing the period before.
    pub base_ms: u64,
    /// Added by each press of its moves.
    pub increment_ms: u64,
}

impl ScriptOptions {
    /// What the press completing a player's `own_move`-th move adds to their clock: the
    /// increment of the period the move is in and, when it completes that period, the next
    /// period's time (Article 6.3 and the time control's terms).
    pub fn added_by_press(&self, own_move: u32) -> u64 {
        let first = LaterPeriod {
            moves: self.first_period_moves,
            base_ms: self.initial_clock_ms,
            increment_ms: self.increment_ms,
        };
        let periods: Vec<LaterPeriod> = std::iter::once(first)
            .chain(self.later_periods.iter().copied())
            .collect();
        let mut last_move_before = 0u32;
        for (i, period) in periods.iter().enumerate() {
            if period.moves == 0 {
                return period.increment_ms;
            }
            let last_move = last_move_before.saturating_add(period.moves);
            if own_move <= last_move {
                let next_base = match periods.get(i + 1) {
                    Some(next) if own_move == last_move => next.base_ms,
                    _ => 0,
                };
                return period.increment_ms.saturating_add(next_base);
            }
            last_move_before = last_move;
        }
        // Past the last period's moves: its terms go on.
        periods.last().map_or(0, |p| p.increment_ms)
    }
}

/// Where White's time is on the clock, and where the board's gateway takes it to be: halls put
/// clocks on either side, and an arbiter may turn one round during a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSetup {
    /// The display showing White's time when the game starts.
    pub white_display: ClockDisplay,
    /// The display the gateway reads as White's (its `--white-clock`).
    pub gateway_white_display: ClockDisplay,
    /// Before this ply's move the arbiter stops the clock, turns it round, sets each player's
    /// time on the display now in front of them and starts it again.
    pub turned_before_ply: Option<u32>,
}

impl Default for ClockSetup {
    fn default() -> Self {
        ClockSetup {
            white_display: ClockDisplay::Left,
            gateway_white_display: ClockDisplay::Left,
            turned_before_ply: None,
        }
    }
}

impl ClockSetup {
    /// White's time on the right, the gateway left at its default (left).
    pub fn white_on_right() -> ClockSetup {
        ClockSetup {
            white_display: ClockDisplay::Right,
            ..ClockSetup::default()
        }
    }

    /// The reading the gateway makes of the clock while White's time is on `white_display`:
    /// the physical displays labelled by the gateway's setting.
    pub fn reading(
        &self,
        white_display: ClockDisplay,
        white_ms: u64,
        black_ms: u64,
        running: ClockRun,
    ) -> ClockReading {
        let swapped = white_display != self.gateway_white_display;
        let (white_ms, black_ms, running) = if swapped {
            let running = match running {
                ClockRun::White => ClockRun::Black,
                ClockRun::Black => ClockRun::White,
                other => other,
            };
            (black_ms, white_ms, running)
        } else {
            (white_ms, black_ms, running)
        };
        ClockReading {
            white_remaining_ms: white_ms,
            black_remaining_ms: black_ms,
            running: running as i32,
            white_flag: false,
            black_flag: false,
            white_display: self.gateway_white_display as i32,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("game {players}: move {index} `{san}` cannot be played: {reason}")]
    BadMove {
        players: String,
        index: usize,
        san: String,
        reason: String,
    },
    #[error("game {players}: {reason}")]
    BadGame { players: String, reason: String },
    #[error("game {players}: incident {incident}: {reason}")]
    BadIncident {
        players: String,
        incident: String,
        reason: String,
    },
}

fn run_for(color: Color) -> ClockRun {
    match color {
        Color::White => ClockRun::White,
        Color::Black => ClockRun::Black,
    }
}

fn lifted(square: Square, piece: Piece) -> Kind {
    Kind::Lifted(PieceLifted {
        square: u32::from(square),
        piece: device_piece(piece) as i32,
    })
}

fn placed(square: Square, piece: Piece) -> Kind {
    Kind::Placed(PiecePlaced {
        square: u32::from(square),
        piece: device_piece(piece) as i32,
    })
}

fn placement_of(board: &shakmaty::Board) -> Kind {
    Kind::Placement(BoardPlacement {
        placement: board.board_fen().to_string(),
    })
}

/// The lifts and placements a player makes for a move, in a usual order: the moving piece up,
/// a captured piece off, the piece down; castling king first.
fn hand_steps(pos: &Chess, mv: &Move) -> Vec<Kind> {
    let mover = pos.turn();
    match *mv {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => {
            let mut steps = vec![lifted(from, Piece { color: mover, role })];
            if let Some(captured) = capture {
                steps.push(lifted(
                    to,
                    Piece {
                        color: !mover,
                        role: captured,
                    },
                ));
            }
            steps.push(placed(
                to,
                Piece {
                    color: mover,
                    role: promotion.unwrap_or(role),
                },
            ));
            steps
        }
        Move::EnPassant { from, to } => {
            let captured_square = Square::from_coords(to.file(), from.rank());
            vec![
                lifted(
                    from,
                    Piece {
                        color: mover,
                        role: Role::Pawn,
                    },
                ),
                placed(
                    to,
                    Piece {
                        color: mover,
                        role: Role::Pawn,
                    },
                ),
                lifted(
                    captured_square,
                    Piece {
                        color: !mover,
                        role: Role::Pawn,
                    },
                ),
            ]
        }
        Move::Castle { king, rook } => {
            let side = mv
                .castling_side()
                .unwrap_or(shakmaty::CastlingSide::KingSide);
            let king_to = side.king_to(mover);
            let rook_to = side.rook_to(mover);
            vec![
                lifted(
                    king,
                    Piece {
                        color: mover,
                        role: Role::King,
                    },
                ),
                placed(
                    king_to,
                    Piece {
                        color: mover,
                        role: Role::King,
                    },
                ),
                lifted(
                    rook,
                    Piece {
                        color: mover,
                        role: Role::Rook,
                    },
                ),
                placed(
                    rook_to,
                    Piece {
                        color: mover,
                        role: Role::Rook,
                    },
                ),
            ]
        }
        Move::Put { role, to } => vec![placed(to, Piece { color: mover, role })],
    }
}

/// Where the players put the kings to signal a result, and the pieces they move out of the way.
fn result_signal_steps(pos: &Chess, result: &str) -> Option<Vec<Kind>> {
    use Square::{D4, D5, E4, E5};
    let pairs: &[(Square, Square)] = match result {
        "1-0" => &[(E4, D5), (D5, E4)],
        "0-1" => &[(D4, E5), (E5, D4)],
        "1/2-1/2" => &[(E4, E5), (D4, D5), (E4, D4), (D5, E5)],
        _ => return None,
    };
    let board = pos.board();
    let white_king = board.king_of(Color::White)?;
    let black_king = board.king_of(Color::Black)?;
    let free = |sq: Square| board.piece_at(sq).is_none() || sq == white_king || sq == black_king;
    let (w_to, b_to) = pairs
        .iter()
        .copied()
        .find(|(w, b)| free(*w) && free(*b))
        .unwrap_or(pairs[0]);
    let mut steps = Vec::new();
    let mut board = board.clone();
    for target in [w_to, b_to] {
        if let Some(piece) = board.piece_at(target)
            && piece.role != Role::King
        {
            steps.push(lifted(target, piece));
            board.discard_piece_at(target);
        }
    }
    let wk = Piece {
        color: Color::White,
        role: Role::King,
    };
    let bk = Piece {
        color: Color::Black,
        role: Role::King,
    };
    steps.push(lifted(white_king, wk));
    board.discard_piece_at(white_king);
    steps.push(lifted(black_king, bk));
    board.discard_piece_at(black_king);
    steps.push(placed(w_to, wk));
    board.set_piece_at(w_to, wk);
    steps.push(placed(b_to, bk));
    board.set_piece_at(b_to, bk);
    steps.push(placement_of(&board));
    Some(steps)
}

/// The observations of one game, from the set-up position to the result signal, with the
/// options' incidents injected.
pub fn script(game: &PgnGame, options: &ScriptOptions) -> Result<Vec<ScriptStep>, SimError> {
    script_in_hall(game, options).map(|(steps, _)| steps)
}

/// [`script`], with the plies into which [`ScriptOptions::hall`] played a real touch-move breach.
pub fn script_in_hall(
    game: &PgnGame,
    options: &ScriptOptions,
) -> Result<(Vec<ScriptStep>, Vec<u32>), SimError> {
    use rand::SeedableRng as _;
    let mut hall = options
        .hall
        .map(|(behaviour, seed)| (behaviour, rand_chacha::ChaCha8Rng::seed_from_u64(seed)));
    let mut breaches = Vec::new();
    let players = game.players();
    for incident in &options.incidents {
        incident
            .check(game.moves.len(), &options.incidents)
            .map_err(|reason| SimError::BadIncident {
                players: players.clone(),
                incident: incident.to_string(),
                reason,
            })?;
    }
    let mut pos = game.start_position().map_err(|e| SimError::BadGame {
        players: players.clone(),
        reason: e.to_string(),
    })?;
    let mut steps = Vec::new();
    let mut now: u64 = 0;
    let mut clocks = [options.initial_clock_ms; 2]; // [white, black]
    // Time incidents took from each clock, which the score's `[%clk]` times do not know of.
    let mut incident_ms = [0u64; 2];
    // Every placement shown so far, kept only when incidents need it.
    let mut history = Vec::new();
    // Each player's moves so far, for what their presses add.
    let mut own_moves = [0u32; 2];
    // A flag fall or a threefold claim ended the game before the score did.
    let mut game_ended_by_incident = false;
    let step = |at_ms: u64, kind: Kind| ScriptStep {
        at_ms,
        kind,
        lost: false,
    };
    steps.push(step(now, placement_of(pos.board())));
    let setup = options.clock;
    let mut white_display = setup.white_display;
    let clock = |white_display, clocks: [u64; 2], running| {
        Kind::Clock(setup.reading(white_display, clocks[0], clocks[1], running))
    };
    steps.push(step(now, clock(white_display, clocks, run_for(pos.turn()))));
    for (index, pgn_move) in game.moves.iter().enumerate() {
        let ply = index as u32 + 1;
        let bad = |reason: String| SimError::BadMove {
            players: players.clone(),
            index: index + 1,
            san: pgn_move.san.clone(),
            reason,
        };
        let san: SanPlus = pgn_move.san.parse().map_err(|e| bad(format!("{e}")))?;
        let mv = san.san.to_move(&pos).map_err(|e| bad(format!("{e}")))?;
        let mover = pos.turn();
        let side = usize::from(mover == Color::Black);
        own_moves[side] = own_moves[side].saturating_add(1);
        let added = options.added_by_press(own_moves[side]);
        let mut clock_after = match pgn_move.clock_ms {
            Some(ms) => ms.saturating_sub(incident_ms[side]),
            None => clocks[side]
                .saturating_sub(options.default_think_ms)
                .saturating_add(added),
        };
        // Thinking time is what the clock lost before the press added the increment (and the
        // next period's time). A score whose clock times follow another time control can show
        // more than that; fall back to a short pause then.
        let think_ms = clocks[side]
            .saturating_add(added)
            .checked_sub(clock_after)
            .filter(|t| *t >= 1_000)
            .unwrap_or(1_000);
        if setup.turned_before_ply == Some(ply) {
            // Stopped, turned round with each time set on the display now in front of its
            // player, started again: the time it takes is not on anyone's clock.
            steps.push(step(
                now + 100,
                clock(white_display, clocks, ClockRun::Stopped),
            ));
            white_display = match white_display {
                ClockDisplay::Left => ClockDisplay::Right,
                _ => ClockDisplay::Left,
            };
            steps.push(step(
                now + 200,
                clock(white_display, clocks, ClockRun::Stopped),
            ));
            steps.push(step(
                now + 300,
                clock(white_display, clocks, run_for(mover)),
            ));
            now += 300;
        }
        let mut lost = 0;
        if !options.incidents.is_empty() {
            history.push(pos.board().clone());
            let reading = |clocks: [u64; 2], running| clock(white_display, clocks, running);
            let turn = incidents::Turn {
                pos: &pos,
                mv: &mv,
                history: &history,
                reading: &reading,
                // The mover's count already holds this turn's move; the opponent's next is one on.
                press_adds: &|color: Color, moves_ahead: u32| {
                    let own = own_moves[usize::from(color == Color::Black)];
                    let next = if color == mover {
                        own
                    } else {
                        own.saturating_add(1)
                    };
                    options.added_by_press(next.saturating_add(moves_ahead))
                },
            };
            let mut line = incidents::Timeline {
                now,
                clocks,
                steps: &mut steps,
            };
            for incident in options.incidents.iter().filter(|i| i.ply() == ply) {
                incident
                    .play(&turn, &mut line)
                    .map_err(|reason| SimError::BadIncident {
                        players: players.clone(),
                        incident: incident.to_string(),
                        reason,
                    })?;
                if let Incident::LostObservations { count, .. } = incident {
                    lost += *count as usize;
                }
            }
            if options
                .incidents
                .iter()
                .any(|i| i.ply() == ply && i.ends_the_game())
            {
                game_ended_by_incident = true;
                break;
            }
            // The time the incidents took is gone from the clocks for good.
            for (i, was) in clocks.into_iter().enumerate() {
                incident_ms[i] += was.saturating_sub(line.clocks[i]);
            }
            clock_after =
                clock_after.saturating_sub(clocks[side].saturating_sub(line.clocks[side]));
            (now, clocks) = (line.now, line.clocks);
        }
        if let Some((behaviour, rng)) = hall.as_mut() {
            if lost > 0 {
                return Err(SimError::BadIncident {
                    players: players.clone(),
                    incident: format!("lost-observations@ply={ply}"),
                    reason: "observations lost and a hall's hands are not played together"
                        .to_owned(),
                });
            }
            let hand = hall::hand(&pos, &mv, behaviour, rng);
            breaches.extend(hand.breach.then_some(ply));
            let duration = hand.steps.last().map_or(0, |(at, _)| *at);
            // The hand ends in time for the press the score's clock gives, when it fits.
            let press_at = now + think_ms;
            let start = press_at
                .saturating_sub(duration + hand.press_after_ms)
                .max(now + 100);
            for (at, kind) in hand.steps {
                steps.push(step(start + at, kind));
            }
            pos.play_unchecked(mv);
            now = press_at.max(start + duration + 150);
            clocks[side] = clock_after;
            if !(pos.is_checkmate() || pos.is_stalemate()) {
                steps.push(step(now, clock(white_display, clocks, run_for(pos.turn()))));
            }
            continue;
        }
        let hand = hand_steps(&pos, &mv);
        let hand_len = hand.len();
        if lost > hand_len {
            return Err(SimError::BadIncident {
                players: players.clone(),
                incident: format!("lost-observations@ply={ply}:count={lost}"),
                reason: format!(
                    "the move {} is seen in {} observations before the whole placement; more \
                     cannot be lost without losing the move",
                    pgn_move.san, hand_len
                ),
            });
        }
        let hand_start = now + think_ms.saturating_sub(200 * hand.len() as u64 + 400);
        for (i, kind) in hand.into_iter().enumerate() {
            steps.push(ScriptStep {
                at_ms: hand_start + 100 * i as u64,
                kind,
                lost: i + lost >= hand_len,
            });
        }
        pos.play_unchecked(mv);
        steps.push(step(now + think_ms - 200, placement_of(pos.board())));
        now += think_ms;
        clocks[side] = clock_after;
        // A mating or stalemating move ends the game; nobody presses the clock after it.
        if !(pos.is_checkmate() || pos.is_stalemate()) {
            steps.push(step(now, clock(white_display, clocks, run_for(pos.turn()))));
        }
    }
    if !(game_ended_by_incident || pos.is_checkmate() || pos.is_stalemate())
        && let Some(signal) = result_signal_steps(&pos, &game.result)
    {
        now += 3_000;
        for (i, kind) in signal.into_iter().enumerate() {
            steps.push(step(now + 150 * i as u64, kind));
        }
    }
    let steps = match options.clock_reports_every_ms {
        Some(every) if every > 0 => with_clock_reports(steps, every),
        _ => steps,
    };
    Ok((steps, breaches))
}

/// The steps with a reading of the running clock every `every_ms` after each reading, up to the
/// next reading: the running side's time goes down, the other's stands.
fn with_clock_reports(steps: Vec<ScriptStep>, every_ms: u64) -> Vec<ScriptStep> {
    let mut out = Vec::with_capacity(steps.len());
    let mut running: Option<(u64, ClockReading)> = None;
    let mut steps = steps.into_iter().peekable();
    while let Some(step) = steps.next() {
        if let Kind::Clock(reading) = &step.kind {
            running = matches!(reading.running(), ClockRun::White | ClockRun::Black)
                .then(|| (step.at_ms, *reading));
        }
        out.push(step);
        let Some((read_at, reading)) = &running else {
            continue;
        };
        // Up to the next step; none after the script's last.
        let Some(until) = steps.peek().map(|next| next.at_ms) else {
            break;
        };
        let mut at = out.last().map_or(*read_at, |s| s.at_ms);
        loop {
            let elapsed = ((at - read_at) / every_ms)
                .saturating_mul(every_ms)
                .saturating_add(every_ms);
            let due = read_at.saturating_add(elapsed);
            if due >= until {
                break;
            }
            let mut tick = *reading;
            let remaining = match tick.running() {
                ClockRun::White => &mut tick.white_remaining_ms,
                _ => &mut tick.black_remaining_ms,
            };
            *remaining = remaining.saturating_sub(elapsed);
            out.push(ScriptStep {
                at_ms: due,
                kind: Kind::Clock(tick),
                lost: false,
            });
            at = due;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use boardcast_rules::pgn::read_games;

    #[test]
    fn every_london_game_scripts_with_one_press_per_move() {
        let text = include_str!("../../../data/london-classic-2016.pgn");
        let games = read_games(text).expect("london file reads");
        assert_eq!(games.len(), 45);
        for game in &games {
            let steps = script(game, &ScriptOptions::default()).expect("scripts");
            let presses = steps
                .iter()
                .filter(|s| matches!(s.kind, Kind::Clock(_)))
                .count();
            // One reading at the start, one press per move except one that mates or stalemates.
            let mut pos = game.start_position().expect("start position");
            for m in &game.moves {
                let mv = boardcast_rules::pgn::parse_san(&pos, &m.san).expect("legal");
                pos.play_unchecked(mv);
            }
            let mated = pos.is_checkmate() || pos.is_stalemate();
            assert_eq!(
                presses,
                game.moves.len() + 1 - usize::from(mated),
                "{}",
                game.players()
            );
            assert!(
                steps.windows(2).all(|w| w[0].at_ms <= w[1].at_ms),
                "time goes forward"
            );
        }
    }

    #[test]
    fn a_running_clock_reports_every_second_between_presses() {
        let games = read_games("[Result \"*\"]\n\n1. e4 e5 2. Nf3 *").expect("reads");
        let options = ScriptOptions {
            default_think_ms: 10_000,
            clock_reports_every_ms: Some(1_000),
            ..ScriptOptions::default()
        };
        let plain = script(&games[0], &ScriptOptions::default()).expect("scripts");
        let steps = script(&games[0], &options).expect("scripts");
        let readings: Vec<(u64, ClockReading)> = steps
            .iter()
            .filter_map(|s| match &s.kind {
                Kind::Clock(r) => Some((s.at_ms, *r)),
                _ => None,
            })
            .collect();
        // Three presses and the start's reading, 10 s apart: 9 reports after each but the last.
        assert_eq!(readings.len(), 4 + 3 * 9);
        assert_eq!(
            steps.len() - readings.len(),
            plain.len() - 4,
            "the rest is as without reports"
        );
        assert!(steps.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        // While White thinks over the first move, White's time goes down a second a second.
        let (start_at, start) = &readings[0];
        let (at, report) = &readings[3];
        assert_eq!(at - start_at, 3_000);
        assert_eq!(report.running(), ClockRun::White);
        assert_eq!(report.white_remaining_ms, start.white_remaining_ms - 3_000);
        assert_eq!(report.black_remaining_ms, start.black_remaining_ms);
    }

    #[test]
    fn mate_is_not_followed_by_a_press_or_a_signal() {
        let games = read_games("[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1").expect("reads");
        let steps = script(&games[0], &ScriptOptions::default()).expect("scripts");
        assert!(matches!(
            steps.last().map(|s| &s.kind),
            Some(Kind::Placement(_))
        ));
        let presses = steps
            .iter()
            .filter(|s| matches!(s.kind, Kind::Clock(_)))
            .count();
        assert_eq!(presses, 1 + 3);
    }
}
