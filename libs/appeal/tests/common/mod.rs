//! Games played as the game service plays them — simulated boards decided by the aggregate,
//! every record signed — written to a game record file as `boardcast export` writes it.

#![allow(dead_code)]

use boardcast_appeal::RecordFileWriter;
use boardcast_game::device::{Observation, SourceKind};
use boardcast_game::events::{
    AdjustClocks, Annotation, ArbiterAction, GameStarted, PenaltyDecision, Player, TimeControl,
    TimePeriod, arbiter_action::Action,
};
use boardcast_game::signing::RecordSigner;
use boardcast_game::{Game, NewEvent, ObservationOutcome};
use boardcast_rules::pgn::{PgnGame, read_games};
use boardcast_schema::appeal::v1::RecordFileHeader;
use boardcast_schema::game::v1::SigningKeyInfo;
use boardcast_sim::{Incident, ScriptOptions, script};
use prost::Message as _;

pub const START_MS: i64 = 1_790_000_000_000;

/// The London Chess Classic 2016 games.
pub fn reference_games() -> Vec<PgnGame> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    ))
    .expect("the reference games");
    read_games(&text).expect("they parse")
}

pub fn hall_signer() -> RecordSigner {
    RecordSigner::from_seed([42; 32])
}

/// One game's log as stored: (stream sequence, payload).
pub struct PlayedGame {
    pub game: Game,
    pub stored: Vec<Vec<u8>>,
}

fn record(
    game: &mut Option<Game>,
    id: &str,
    stored: &mut Vec<Vec<u8>>,
    events: Vec<NewEvent>,
    at: i64,
    signer: &RecordSigner,
) {
    for r in Game::record_signed(game.as_ref(), id, events, at, signer) {
        match game {
            Some(g) => g.apply(&r).expect("own records apply"),
            None => *game = Some(Game::from_first_record(&r).expect("first record")),
        }
        stored.push(r.encode_to_vec());
    }
}

/// Arbiter actions the plan takes when the game has a number of completed moves, made from the
/// game as it then stands (e.g. the penalties of the illegal moves recorded so far).
pub type Rulings = fn(&Game) -> Vec<ArbiterAction>;

/// How a simulated game goes: its laws and time control, the incidents on its board and the
/// arbiter's rulings.
pub struct Plan {
    pub edition: &'static str,
    pub periods: Vec<TimePeriod>,
    pub options: ScriptOptions,
    /// The game's moves after which the board stops (all of them when `None`).
    pub plies: Option<usize>,
    /// Each ruling once, after the first observation that leaves at least that many completed
    /// moves.
    pub rulings: Vec<(usize, Rulings)>,
    /// Observations (device_seq) that arrive but cannot be decided: dead-lettered, a hole in the
    /// board's record.
    pub unusable: Vec<u64>,
}

/// An arbiter action with no alerts resolved.
pub fn action(action: Action) -> ArbiterAction {
    ArbiterAction {
        action: Some(action),
        ..Default::default()
    }
}

/// The plan of [`play`]: a press without a move at ply 5 (penalty confirmed by an arbiter), an
/// arbiter's clock correction and note at ply 11.
fn appeal_plan() -> Plan {
    Plan {
        edition: "fide-2023",
        periods: vec![TimePeriod {
            base_ms: 7_200_000,
            increment_ms: 30_000,
            ..Default::default()
        }],
        options: ScriptOptions {
            increment_ms: 30_000,
            incidents: vec![Incident::PressWithoutMove { ply: 5 }],
            ..Default::default()
        },
        plies: None,
        rulings: vec![(10, |game| {
            let penalties = game.illegal_moves().iter().map(|e| {
                action(Action::Penalty(PenaltyDecision {
                    illegal_move_game_seq: e.game_seq,
                    confirmed: true,
                    note: "press without a move".into(),
                }))
            });
            penalties
                .chain([
                    action(Action::Clocks(AdjustClocks {
                        white_added_ms: 60_000,
                        reason: "clock set wrongly".into(),
                        ..Default::default()
                    })),
                    action(Action::Annotation(Annotation {
                        text: "players warned about noise".into(),
                    })),
                ])
                .collect()
        })],
        unusable: Vec::new(),
    }
}

/// Plays `pgn` on board `board` of round 1 with a press without a move at ply 5 (penalty
/// confirmed by an arbiter), an arbiter's clock correction and note at ply 11.
pub fn play(pgn: &PgnGame, board: u32, signer: &RecordSigner) -> PlayedGame {
    play_plan(pgn, board, &appeal_plan(), signer)
}

/// Plays `pgn` on board `board` of round 1 as `plan` says, every decision recorded as the game
/// service records it (observations lost on the way recorded as missing when the next arrives).
pub fn play_plan(pgn: &PgnGame, board: u32, plan: &Plan, signer: &RecordSigner) -> PlayedGame {
    let info = GameStarted {
        tournament_id: "appeal".into(),
        round: 1,
        board_number: board,
        board_id: format!("hall-{board}"),
        white: Some(Player {
            name: pgn.tag("White").unwrap_or("White").to_owned(),
            ..Default::default()
        }),
        black: Some(Player {
            name: pgn.tag("Black").unwrap_or("Black").to_owned(),
            ..Default::default()
        }),
        time_control: Some(TimeControl {
            periods: plan.periods.clone(),
        }),
        edition: plan.edition.into(),
        event_name: "Appeal test".into(),
        ..Default::default()
    };
    let (id, started) = Game::decide_start(&info, "operator", "pair-1").expect("valid game");
    let mut game = None;
    let mut stored = Vec::new();
    record(&mut game, &id, &mut stored, vec![started], START_MS, signer);
    let mut pgn = pgn.clone();
    if let Some(plies) = plan.plies {
        pgn.moves.truncate(plies);
    }
    let steps = script(&pgn, &plan.options).expect("scripts");
    let mut ruled = vec![false; plan.rulings.len()];
    let mut seen = 0;
    for (i, step) in steps.into_iter().enumerate() {
        let device_seq = i as u64 + 1;
        if step.lost {
            continue;
        }
        let at = START_MS + step.at_ms as i64;
        let obs = Observation {
            board_id: info.board_id.clone(),
            device_seq,
            device_time_unix_ms: at,
            receive_time_unix_ms: at,
            source: SourceKind::Simulator as i32,
            kind: Some(step.kind),
        };
        // As the service does: a gap after the last observation seen or accounted for (one that
        // was seen but changed nothing is no gap).
        let current = game.as_ref().expect("started");
        let known = seen.max(current.board_seq_accounted());
        if device_seq > known + 1 {
            let missing = current.decide_missing_observations(known + 1, device_seq - 1, &obs);
            record(&mut game, &id, &mut stored, missing, at, signer);
        }
        seen = device_seq;
        let current = game.as_ref().expect("started");
        if plan.unusable.contains(&device_seq) {
            let hole = current.decide_unusable_observation(
                device_seq,
                at,
                "the record is larger than the server's max_payload",
            );
            record(&mut game, &id, &mut stored, hole, at, signer);
        } else if let Ok(ObservationOutcome::Events(events)) = current.decide_observation(&obs) {
            record(&mut game, &id, &mut stored, events, at, signer);
        }
        for (done, (moves, rulings)) in ruled.iter_mut().zip(&plan.rulings) {
            let current = game.as_ref().expect("started");
            if *done || current.completed_moves().len() < *moves {
                continue;
            }
            *done = true;
            for action in rulings(current) {
                let current = game.as_ref().expect("started");
                let request_id = format!("act-{board}-{}", stored.len());
                if let Ok(events) = current.decide_arbiter(&action, "IA Jane Arbiter", &request_id)
                {
                    record(&mut game, &id, &mut stored, events, at + 1, signer);
                }
            }
        }
    }
    PlayedGame {
        game: game.expect("started"),
        stored,
    }
}

/// A round of `boards` games written to a record file, records interleaved as in the stream.
pub fn round_file(boards: u32, signer: &RecordSigner) -> (Vec<PlayedGame>, Vec<u8>) {
    let games = reference_games();
    let played: Vec<PlayedGame> = (1..=boards)
        .map(|b| play(&games[(b as usize - 1) % games.len()], b, signer))
        .collect();
    let bytes = write_round(&played, signer, "tournament appeal round 1");
    (played, bytes)
}

/// `played` written to a record file, records interleaved as in the stream.
pub fn write_round(played: &[PlayedGame], signer: &RecordSigner, scope: &str) -> Vec<u8> {
    let header = RecordFileHeader {
        scope: scope.into(),
        source: "test".into(),
        keys: vec![SigningKeyInfo {
            key_id: signer.public_key().key_id().to_owned(),
            public_key: signer.public_key().to_text(),
            fingerprint: signer.public_key().fingerprint(),
        }],
        ..Default::default()
    };
    let mut writer = RecordFileWriter::new(Vec::new(), header).expect("writes");
    let longest = played.iter().map(|p| p.stored.len()).max().unwrap_or(0);
    let mut stream_seq = 0;
    for i in 0..longest {
        for p in played {
            if let Some(payload) = p.stored.get(i) {
                stream_seq += 1;
                writer
                    .record(p.game.game_id(), stream_seq, payload.clone())
                    .expect("writes");
            }
        }
    }
    writer.finish().expect("writes")
}
