//! Records exported from a live hall by an earlier version replay to the same states forever:
//! the edition and every rule choice are in the log, so a newer version of the rules must never
//! change how an old log replays.
//!
//! Each `fixtures/NAME.bcrec` (a `boardcast export` of a round played on the real services, with
//! irregularities, a claim and rulings) comes with the key it was signed with
//! (`NAME.trusted-keys`) and what replaying it gave when it was made (`NAME.expected.json`: each
//! game's final state as encoded bytes, and its timeline). `BOARDCAST_BLESS=1` writes the
//! expectation of a fixture that has none — only for a new fixture, never to make a changed replay
//! pass. Fixtures made later hold more of the fold (alert states, positions, illegal moves); each
//! is compared on what its expectation holds.

mod common;

use std::path::{Path, PathBuf};

use boardcast_appeal::{RecordFile, replay, verify};
use boardcast_game::alerts::{AlertStatus, GameAlerts};
use boardcast_game::display::DisplayGame;
use boardcast_game::events::{GameEventRecord, arbiter_action::Action, game_event::Kind};
use boardcast_game::signing::{RecordSigner, TrustedKeys};
use boardcast_game::timeline::FoldedGame;
use boardcast_game::{Game, NewEvent};
use prost::Message as _;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn replayed(file: &RecordFile, keys: &TrustedKeys) -> Value {
    let games: Vec<Value> = file
        .games
        .iter()
        .map(|g| {
            let r = replay(g, keys, None).expect("the fixture replays");
            let game = &r.game;
            let state = game.to_state().encode_to_vec();
            json!({
                "game_id": g.game_id,
                "state": state.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "result": game.result_token(),
                "fen": boardcast_game::fen(game.position()),
                "timeline": r.steps.iter().map(|s| format!("{} {} {} {}", s.entry().game_seq, s.entry().kind, s.entry().actor, s.entry().words)).collect::<Vec<_>>(),
                "alerts": r.alerts.iter().map(|a| format!("{} {:?} {}", a.raised_at, a.kind, a.summary)).collect::<Vec<_>>(),
                // Fixtures made later also hold the rest of what a fold decides.
                "alert_states": r.alerts.iter().map(|a| format!("{:?}", a)).collect::<Vec<_>>(),
                "positions": r.steps.iter().map(|s| format!("{} {} {} {}", s.event.game_seq, s.fen, s.last_move, serde_json::to_string(&s.clocks).expect("json"))).collect::<Vec<_>>(),
                "illegal_moves": game.illegal_moves().iter().map(|e| format!("{} {:?} {} {} {} {}", e.game_seq, e.decided, e.completed_moves, e.event.offender_count, e.event.opponent_bonus_ms, e.event.result_if_confirmed)).collect::<Vec<_>>(),
                "illegal_tally": format!("{:?}", game.illegal_tally()),
                "arbiter_notes": game.arbiter_notes(),
                "draw_offers": game.draw_offers(),
                "board": format!("{:?}", game.board_status()),
                "moment": r.moment(),
            })
        })
        .collect();
    json!({ "games": games })
}

/// `now` restricted to what `expected` holds: a fixture is held to what was recorded when it
/// was made, older ones to fewer facts.
fn as_expected(now: &Value, expected: &Value) -> Value {
    match (now, expected) {
        (Value::Object(now), Value::Object(expected)) => Value::Object(
            now.iter()
                .filter(|(key, _)| expected.contains_key(*key))
                .map(|(key, value)| (key.clone(), as_expected(value, &expected[key])))
                .collect(),
        ),
        (Value::Array(now), Value::Array(expected)) if now.len() == expected.len() => Value::Array(
            now.iter()
                .zip(expected)
                .map(|(value, expected)| as_expected(value, expected))
                .collect(),
        ),
        _ => now.clone(),
    }
}

#[test]
fn exported_hall_records_replay_to_the_same_states_forever() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("a fixture").path();
        if path.extension().and_then(|e| e.to_str()) != Some("bcrec") {
            continue;
        }
        let file = RecordFile::read(std::fs::File::open(&path).expect("opens")).expect("reads");
        let keys = TrustedKeys::parse(
            &std::fs::read_to_string(path.with_extension("trusted-keys")).expect("its key"),
        )
        .expect("a key");
        let report = verify(&file, &keys);
        assert!(report.passed(), "{}: {:?}", path.display(), report.problems);
        assert!(report.decisions_reproduced > 0);
        let now = replayed(&file, &keys);
        let expected_path = path.with_extension("expected.json");
        if std::env::var_os("BOARDCAST_BLESS").is_some() && !expected_path.exists() {
            std::fs::write(
                &expected_path,
                serde_json::to_string_pretty(&now).expect("json"),
            )
            .expect("writes");
        }
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(&expected_path).expect("the expected replay"),
        )
        .expect("json");
        assert_eq!(
            as_expected(&now, &expected),
            expected,
            "{} replays differently",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 0, "no fixture found");
}

/// Writes `fixtures/simulated-round-meanings-in-words.bcrec`: a round played through the aggregate
/// with the records whose meaning the log long carried as words (sides, penalties, kinds of
/// illegal move, claim verdicts, touch-move breaches, irregularity causes), made by the last
/// version that wrote them so. Run with `--ignored` once, when the fixture is made, then bless
/// its expectation; from then on the fixture, not this code, is what later versions are held to.
#[test]
#[ignore = "writes a fixture; run by hand when a new one is made"]
fn write_simulated_round_fixture() {
    let signer = common::hall_signer();
    let games = common::reference_games();
    let played: Vec<common::PlayedGame> = simulated::plans()
        .iter()
        .enumerate()
        .map(|(i, plan)| common::play_plan(&games[i % games.len()], i as u32 + 1, plan, &signer))
        .collect();
    let bytes = common::write_round(&played, &signer, "simulated round with rulings");
    std::fs::write(
        fixtures().join("simulated-round-meanings-in-words.bcrec"),
        bytes,
    )
    .expect("writes");
    std::fs::write(
        fixtures().join("simulated-round-meanings-in-words.trusted-keys"),
        format!(
            "# Public keys whose signatures on game log records are trusted.\n{}\n",
            signer.public_key().to_text()
        ),
    )
    .expect("writes");
}

mod simulated {
    //! The boards of the simulated fixture round: each with its edition, incidents and rulings.

    use boardcast_game::Game;
    use boardcast_game::events::{
        AdjustClocks, AlertAcknowledgement, Annotation, ArbiterAction, ClaimKind, ClaimRuling,
        DeclareResult, DrawAgreed, GameResult, PenaltyDecision, RestorePosition, SideAction,
        TimePeriod, arbiter_action::Action,
    };
    use boardcast_sim::{ClockSetup, Incident, ScriptOptions};
    use shakmaty::{Color, Position, san::San};

    use crate::common::{Plan, action};

    fn side_to_move(game: &Game) -> String {
        match game.turn() {
            Color::White => "white".into(),
            Color::Black => "black".into(),
        }
    }

    fn penalties(game: &Game, confirmed: bool) -> Vec<ArbiterAction> {
        game.illegal_moves()
            .iter()
            .filter(|e| e.decided.is_none())
            .map(|e| {
                action(Action::Penalty(PenaltyDecision {
                    illegal_move_game_seq: e.game_seq,
                    confirmed,
                    note: if confirmed {
                        "seen on video"
                    } else {
                        "the board was late"
                    }
                    .into(),
                }))
            })
            .collect()
    }

    fn claim(game: &Game, kind: ClaimKind, with_move: bool, upheld: bool) -> ArbiterAction {
        let intended_move = if with_move {
            let pos = game.position();
            pos.legal_moves()
                .first()
                .map(|m| San::from_move(pos, *m).to_string())
                .unwrap_or_default()
        } else {
            String::new()
        };
        action(Action::Claim(ClaimRuling {
            claimant: side_to_move(game),
            kind: kind as i32,
            intended_move,
            claimant_remaining_ms: 600_000,
            upheld,
            note: "scoresheets checked".into(),
            ..Default::default()
        }))
    }

    fn classical(edition: &'static str) -> Plan {
        Plan {
            edition,
            periods: vec![TimePeriod {
                base_ms: 5_400_000,
                increment_ms: 30_000,
                ..Default::default()
            }],
            options: ScriptOptions {
                increment_ms: 30_000,
                ..Default::default()
            },
            plies: Some(44),
            rulings: Vec::new(),
            unusable: Vec::new(),
        }
    }

    pub fn plans() -> Vec<Plan> {
        let mut board_1 = classical("fide-2023");
        board_1.options.incidents = vec![
            Incident::PressWithoutMove { ply: 5 },
            Incident::IrregularPlacement {
                ply: 9,
                for_ms: 8_000,
            },
            Incident::BoardOffline {
                ply: 15,
                for_ms: 20_000,
            },
            Incident::BatteryLow {
                ply: 20,
                percent: 15,
            },
        ];
        board_1.rulings = vec![
            (12, |game| {
                let mut acts = penalties(game, true);
                acts.extend(game.illegal_moves().iter().map(|e| {
                    action(Action::Acknowledgement(AlertAcknowledgement {
                        alert_game_seq: e.game_seq,
                        note: "looking at it".into(),
                    }))
                }));
                acts
            }),
            (24, |game| {
                vec![
                    action(Action::DrawOffer(SideAction {
                        side: side_to_move(game),
                        ..Default::default()
                    })),
                    action(Action::Clocks(AdjustClocks {
                        black_added_ms: 30_000,
                        reason: "disturbed by a phone".into(),
                        ..Default::default()
                    })),
                    action(Action::Annotation(Annotation {
                        text: "spectator removed".into(),
                    })),
                ]
            }),
            (30, |game| {
                vec![claim(game, ClaimKind::Threefold, false, false)]
            }),
            (44, |game| {
                vec![action(Action::Resignation(SideAction {
                    side: side_to_move(game),
                    ..Default::default()
                }))]
            }),
        ];

        let mut board_2 = classical("fide-2018");
        board_2.periods = vec![
            TimePeriod {
                moves: 40,
                base_ms: 5_400_000,
                increment_ms: 30_000,
                ..Default::default()
            },
            TimePeriod {
                base_ms: 1_800_000,
                increment_ms: 30_000,
                ..Default::default()
            },
        ];
        board_2.options.incidents = vec![
            Incident::PressWithoutMove { ply: 8 },
            Incident::LostObservations { ply: 12, count: 2 },
        ];
        board_2.unusable = vec![100];
        board_2.rulings = vec![
            (10, |game| penalties(game, false)),
            (26, |game| {
                vec![claim(game, ClaimKind::FiftyMoves, true, false)]
            }),
            (30, |_| {
                vec![
                    action(Action::Restore(RestorePosition {
                        ply: 28,
                        reason: "pieces knocked over".into(),
                        white_remaining_ms: Some(4_000_000),
                        black_remaining_ms: Some(3_900_000),
                    })),
                    action(Action::DrawAgreed(DrawAgreed {})),
                ]
            }),
        ];

        let mut board_3 = classical("fide-2023");
        board_3.periods = vec![TimePeriod {
            base_ms: 900_000,
            increment_ms: 10_000,
            ..Default::default()
        }];
        board_3.options.increment_ms = 10_000;
        board_3.options.initial_clock_ms = 900_000;
        board_3.options.incidents = vec![
            Incident::PressWithoutMove { ply: 3 },
            Incident::PressWithoutMove { ply: 7 },
        ];
        board_3.rulings = vec![(10, |game| {
            let mut acts = penalties(game, true);
            acts.push(action(Action::Annotation(Annotation {
                text: "second illegal move: game lost".into(),
            })));
            acts
        })];

        let mut board_4 = classical("fide-2014");
        board_4.options.clock = ClockSetup::white_on_right();
        board_4.options.incidents = vec![Incident::IrregularPlacement {
            ply: 6,
            for_ms: 8_000,
        }];
        board_4.rulings = vec![
            (14, |game| {
                vec![claim(game, ClaimKind::Threefold, true, false)]
            }),
            (20, |_| {
                vec![action(Action::Result(DeclareResult {
                    result: GameResult::WhiteWins as i32,
                    reason: "mobile phone rang".into(),
                    article: "11.3.2.1".into(),
                }))]
            }),
        ];

        let mut board_5 = classical("fide-2005");
        board_5.options.incidents = vec![Incident::PressWithoutMove { ply: 4 }];
        board_5.rulings = vec![
            (6, |game| penalties(game, true)),
            (16, |game| {
                vec![claim(game, ClaimKind::FiftyMoves, false, false)]
            }),
            (20, |game| {
                vec![action(Action::Resignation(SideAction {
                    side: side_to_move(game),
                    ..Default::default()
                }))]
            }),
        ];

        vec![board_1, board_2, board_3, board_4, board_5]
    }
}

/// Every word a log stores for people — kinds, penalties, causes, sides, verdicts, reasons,
/// notes, details — replaced by other words: what the game folds to must not change (the fold
/// reads typed terms only), so rewording a message in a later version cannot change how a log
/// replays.
#[test]
fn rewording_every_message_changes_no_fold() {
    let signer = common::hall_signer();
    let games = common::reference_games();
    for (i, plan) in simulated::plans().iter().enumerate() {
        let played = common::play_plan(&games[i % games.len()], i as u32 + 1, plan, &signer);
        let records: Vec<GameEventRecord> = played
            .stored
            .iter()
            .map(|bytes| GameEventRecord::decode(bytes.as_slice()).expect("a record"))
            .collect();
        let reworded = reworded(&records, &signer);
        let (original, reworded) = (folded(&records), folded(&reworded));
        assert_eq!(original.len(), reworded.len());
        for (seq, (original, reworded)) in original.iter().zip(&reworded).enumerate() {
            assert_eq!(
                original,
                reworded,
                "board {}, record {}: the fold changed with the words",
                i + 1,
                seq + 1
            );
        }
        assert!(original.len() > 50, "the game has its records");
    }
}

/// The game's records with every stored word replaced, chained and signed again.
fn reworded(records: &[GameEventRecord], signer: &RecordSigner) -> Vec<GameEventRecord> {
    let mut game: Option<Game> = None;
    let mut out = Vec::new();
    for record in records {
        let event = Game::open_record(record).expect("opens");
        let mut kind = event.kind.clone().expect("a kind");
        reword(&mut kind);
        let new = NewEvent {
            kind,
            provenance: event.provenance.clone().unwrap_or_default(),
        };
        for r in Game::record_signed(
            game.as_ref(),
            &event.game_id,
            vec![new],
            event.recorded_unix_ms,
            signer,
        ) {
            match game.as_mut() {
                Some(g) => g.apply(&r).expect("the reworded record folds"),
                None => game = Some(Game::from_first_record(&r).expect("folds")),
            }
            out.push(r);
        }
    }
    out
}

fn reword(kind: &mut Kind) {
    let other = |words: &mut String| {
        if !words.is_empty() {
            *words = format!("reworded {}", words.len());
        }
    };
    match kind {
        Kind::IllegalMove(m) => {
            other(&mut m.offender);
            other(&mut m.kind);
            other(&mut m.proposed_penalty);
        }
        Kind::Irregularity(i) => other(&mut i.cause),
        Kind::TouchMove(t) => other(&mut t.breach),
        Kind::ClockAlert(a) => {
            other(&mut a.side);
            other(&mut a.reason);
        }
        Kind::ClaimJudged(j) => {
            other(&mut j.verdict_from_log);
            other(&mut j.explanation);
        }
        Kind::Ended(e) => other(&mut e.detail),
        Kind::SetupMismatch(m) => {
            other(&mut m.expected);
            other(&mut m.seen);
            other(&mut m.fix);
        }
        Kind::BoardStatus(b) => other(&mut b.detail),
        Kind::ObservationsMissing(m) => other(&mut m.unusable_reason),
        Kind::Arbiter(a) => match a.action.as_mut() {
            Some(Action::DrawOffer(who) | Action::Resignation(who)) => other(&mut who.side),
            Some(Action::Claim(c)) => {
                other(&mut c.claimant);
                other(&mut c.note);
            }
            Some(Action::Penalty(p)) => other(&mut p.note),
            Some(Action::Restore(r)) => other(&mut r.reason),
            Some(Action::Clocks(c)) => other(&mut c.reason),
            Some(Action::Result(r)) => other(&mut r.reason),
            Some(Action::Resume(r)) => other(&mut r.reason),
            Some(Action::Annotation(a)) => other(&mut a.text),
            Some(Action::Acknowledgement(a)) => other(&mut a.note),
            Some(Action::Move(_) | Action::DrawAgreed(_)) | None => {}
        },
        _ => {}
    }
}

/// What a game folds to after each record, leaving out words: the state the API serves, the
/// illegal moves with their decisions, the clocks, the alerts with what they rest on and how
/// they stand, the broadcast's view.
fn folded(records: &[GameEventRecord]) -> Vec<String> {
    let mut states = Vec::new();
    let mut folded: Option<FoldedGame> = None;
    let mut alerts = GameAlerts::new();
    let mut display: Option<DisplayGame> = None;
    for record in records {
        let opened = Game::open(record.clone()).expect("opens");
        match folded.as_mut() {
            Some(f) => {
                f.apply(&opened).expect("folds");
            }
            None => folded = Some(FoldedGame::start(&opened).expect("folds").0),
        }
        let f = folded.as_ref().expect("folded");
        let game = &f.game;
        alerts.fold(opened.event(), game);
        match display.as_mut() {
            Some(d) => d.evolve(opened.event()).expect("shows"),
            None => display = Some(DisplayGame::start(opened.event()).expect("shows")),
        }
        let d = display.as_ref().expect("shown");
        let alert_states: Vec<String> = alerts
            .alerts()
            .iter()
            .map(|a| {
                let status = match &a.status {
                    AlertStatus::New => "new".to_owned(),
                    AlertStatus::Acknowledged { game_seq, .. } => format!("seen {game_seq}"),
                    AlertStatus::Resolved { game_seq, .. } => format!("resolved {game_seq}"),
                };
                format!(
                    "{} {:?} {} {} {:?} {status}",
                    a.raised_at, a.kind, a.ply, a.article, a.rests_on
                )
            })
            .collect();
        // The state carries some records as they are: their words are not what it folded to.
        let mut state = game.to_state();
        state.chain_head.clear();
        for missing in &mut state.missing_observations {
            missing.unusable_reason = (!missing.unusable_reason.is_empty()).to_string();
        }
        for mismatch in &mut state.setup_mismatches {
            (mismatch.expected, mismatch.seen, mismatch.fix) = Default::default();
        }
        states.push(format!(
            "{:?} | {:?} | {:?} | {:?} | {:?} | {} {} {} {:?} {:?} | {:?}",
            state,
            game.illegal_moves()
                .iter()
                .map(|e| (e.game_seq, e.decided, e.completed_moves))
                .collect::<Vec<_>>(),
            game.illegal_tally(),
            f.clocks,
            alert_states,
            game.draw_offers().len(),
            game.arbiter_notes().len(),
            game.result_token(),
            game.board_status(),
            game.repetition().repetition_count(),
            (d.fen(), d.result_token(), d.white_to_move()),
        ));
    }
    states
}
