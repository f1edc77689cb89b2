//! A round's record file checked and replayed: the same states as the live games, and every
//! kind of tampering found and named.

mod common;

use boardcast_appeal::{At, ProblemKind, RecordFile, replay, verify};
use boardcast_game::events::{GameEvent, GameEventRecord, game_event::Kind};
use boardcast_game::signing::{RecordSigner, TrustedKeys};
use boardcast_game::{Game, NewEvent};
use prost::Message as _;

fn trusted() -> TrustedKeys {
    TrustedKeys::new([common::hall_signer().public_key().clone()])
}

fn round(boards: u32) -> (Vec<common::PlayedGame>, RecordFile) {
    let (played, bytes) = common::round_file(boards, &common::hall_signer());
    (played, RecordFile::read(bytes.as_slice()).expect("reads"))
}

fn kinds(file: &RecordFile, keys: &TrustedKeys) -> Vec<(ProblemKind, Option<u64>)> {
    verify(file, keys)
        .problems
        .iter()
        .map(|p| (p.kind, p.game_seq))
        .collect()
}

#[test]
fn a_round_replays_to_the_live_states_and_verifies() {
    let (played, file) = round(3);
    assert_eq!(file.games.len(), 3);
    let report = verify(&file, &trusted());
    assert!(report.passed(), "{:?}", report.problems);
    assert!(
        report.decisions_reproduced > 100,
        "{}",
        report.decisions_reproduced
    );
    for live in &played {
        let exported = file.game(live.game.game_id()).expect("in the file");
        let replayed = replay(exported, &trusted(), None).expect("replays");
        assert_eq!(replayed.game.to_state(), live.game.to_state());
        assert_eq!(replayed.steps.len(), live.stored.len());
        // The press without a move, its penalty and the arbiter's actions are on the timeline.
        let words: Vec<String> = replayed.steps.iter().map(|s| s.entry().words).collect();
        assert!(
            replayed
                .steps
                .iter()
                .any(|s| s.entry().kind == "illegal_move" || s.entry().words.contains("llegal")),
            "{words:?}"
        );
        assert!(
            replayed
                .steps
                .iter()
                .any(|s| s.entry().actor == "IA Jane Arbiter")
        );
        assert!(replayed.steps.iter().any(|s| s.entry().raises_alert));
    }
}

#[test]
fn a_moment_gives_the_position_clocks_and_claims_then() {
    let (played, file) = round(1);
    let live = &played[0];
    let exported = &file.games[0];
    let ten = replay(exported, &trusted(), Some(At::Seq(40))).expect("replays");
    assert_eq!(ten.game.last_game_seq(), 40);
    let moment = ten.moment();
    // The same as folding the first 40 stored records by hand.
    let mut by_hand =
        Game::from_first_record(&GameEventRecord::decode(live.stored[0].as_slice()).unwrap())
            .unwrap();
    for bytes in &live.stored[1..40] {
        by_hand
            .apply(&GameEventRecord::decode(bytes.as_slice()).unwrap())
            .unwrap();
    }
    assert_eq!(moment.fen, boardcast_game::fen(by_hand.position()));
    assert_eq!(moment.completed_plies, by_hand.completed_moves().len());
    assert!(moment.repetition_count >= 1);
    // By time: after the last record at or before the 40th's time.
    let at40 = ten.steps.last().unwrap().event.recorded_unix_ms;
    let by_time = replay(exported, &trusted(), Some(At::Time(at40))).expect("replays");
    assert!(by_time.game.last_game_seq() >= 40);
    assert_eq!(by_time.steps.last().unwrap().event.recorded_unix_ms, at40);
}

/// Decodes the records of game 0, lets `change` alter them, and writes them back.
fn tamper(
    file: &RecordFile,
    change: impl FnOnce(&mut Vec<boardcast_schema::appeal::v1::ExportedRecord>),
) -> RecordFile {
    let mut file = file.clone();
    change(&mut file.games[0].records);
    // Read back from bytes, as a verifier would.
    let mut bytes = Vec::new();
    file.write(&mut bytes).unwrap();
    RecordFile::read(bytes.as_slice()).unwrap()
}

#[test]
fn every_kind_of_tampering_is_found_and_named() {
    let (_, file) = round(2);
    let keys = trusted();
    assert!(verify(&file, &keys).passed());

    // One byte flipped inside record 20's event.
    let flipped = tamper(&file, |r| {
        let mut record = GameEventRecord::decode(r[19].payload.as_slice()).unwrap();
        let last = record.event.len() - 1;
        record.event[last] ^= 0x01;
        r[19].payload = record.encode_to_vec();
    });
    assert_eq!(
        kinds(&flipped, &keys).first(),
        Some(&(ProblemKind::Altered, Some(20)))
    );

    // Record 20 dropped.
    let dropped = tamper(&file, |r| {
        r.remove(19);
    });
    let found = kinds(&dropped, &keys);
    assert_eq!(
        found.first(),
        Some(&(ProblemKind::Missing, Some(21))),
        "{found:?}"
    );

    // Records 20 and 21 swapped.
    let swapped = tamper(&file, |r| r.swap(19, 20));
    assert_eq!(
        kinds(&swapped, &keys).first(),
        Some(&(ProblemKind::Reordered, Some(21)))
    );

    // A record appended that continues the chain but is not signed, then one signed by another
    // key: an annotation nobody made.
    let game_id = file.games[0].game_id.clone();
    let forged = |signer: Option<&RecordSigner>| {
        tamper(&file, |r| {
            let records: Vec<GameEventRecord> = r
                .iter()
                .map(|e| GameEventRecord::decode(e.payload.as_slice()).unwrap())
                .collect();
            let mut game = Game::from_first_record(&records[0]).unwrap();
            for record in &records[1..] {
                game.apply(record).unwrap();
            }
            let event = NewEvent {
                kind: Kind::Arbiter(boardcast_game::events::ArbiterAction {
                    action: Some(boardcast_game::events::arbiter_action::Action::Annotation(
                        boardcast_game::events::Annotation {
                            text: "claim upheld".into(),
                        },
                    )),
                    ..Default::default()
                }),
                provenance: Default::default(),
            };
            let mut extra = Game::record(Some(&game), &game_id, vec![event], 1);
            if let Some(s) = signer {
                s.sign(&mut extra[0]);
            }
            let mut last = r.last().unwrap().clone();
            last.payload = extra[0].encode_to_vec();
            last.stream_seq += 1000;
            r.push(last);
        })
    };
    let n = file.games[0].records.len() as u64 + 1;
    assert_eq!(
        kinds(&forged(None), &keys).first(),
        Some(&(ProblemKind::Inserted, Some(n))),
        "unsigned after signed"
    );
    let intruder = RecordSigner::from_seed([9; 32]);
    assert_eq!(
        kinds(&forged(Some(&intruder)), &keys).first(),
        Some(&(ProblemKind::UnknownKey, Some(n)))
    );

    // The whole file re-signed with another key whose public key replaces the hall's in the
    // file: the records verify with the file's key, but that key is not the trusted one.
    let resigned = {
        let mut f = file.clone();
        for game in &mut f.games {
            for r in &mut game.records {
                let mut record = GameEventRecord::decode(r.payload.as_slice()).unwrap();
                intruder.sign(&mut record);
                r.payload = record.encode_to_vec();
            }
        }
        f.header.keys[0].public_key = intruder.public_key().to_text();
        f
    };
    assert_eq!(
        kinds(&resigned, &keys).first(),
        Some(&(ProblemKind::UnknownKey, Some(1)))
    );
    // A signature swapped for garbage naming the right key.
    let bad = tamper(&file, |r| {
        let mut record = GameEventRecord::decode(r[4].payload.as_slice()).unwrap();
        record.signature[0] ^= 0xff;
        r[4].payload = record.encode_to_vec();
    });
    assert_eq!(
        kinds(&bad, &keys).first(),
        Some(&(ProblemKind::BadSignature, Some(5)))
    );
    // A signature removed, the key it names kept: a bad signature, not an unsigned record.
    let stripped = tamper(&file, |r| {
        let mut record = GameEventRecord::decode(r[4].payload.as_slice()).unwrap();
        record.signature.clear();
        r[4].payload = record.encode_to_vec();
    });
    assert_eq!(
        kinds(&stripped, &keys).first(),
        Some(&(ProblemKind::BadSignature, Some(5)))
    );
    // The last record dropped: the file's end tells (and the decision it belonged to may be
    // incomplete).
    let cut = tamper(&file, |r| {
        r.pop();
    });
    let found = kinds(&cut, &keys);
    assert!(
        found.iter().any(|k| k.0 == ProblemKind::Missing),
        "{found:?}"
    );
}

/// Writes `events` over `records` as a service holding the key would: chained anew from the
/// genesis hash and each signed.
fn rechain_and_sign(
    records: &mut [boardcast_schema::appeal::v1::ExportedRecord],
    events: &[GameEvent],
    signer: &RecordSigner,
) {
    let mut prev = boardcast_game::GENESIS_HASH;
    for (r, e) in records.iter_mut().zip(events) {
        let bytes = e.encode_to_vec();
        let hash = boardcast_game::chain_hash(&prev, &bytes);
        let mut record = GameEventRecord {
            event: bytes,
            prev_hash: prev.to_vec(),
            hash: hash.to_vec(),
            chain_version: 1,
            ..Default::default()
        };
        signer.sign(&mut record);
        r.payload = record.encode_to_vec();
        prev = hash;
    }
}

#[test]
fn a_recorded_meaning_that_the_rules_do_not_give_is_not_reproduced() {
    let (_, file) = round(1);
    let signer = common::hall_signer();
    // Re-chain and re-sign the game with one completed move's SAN changed, as a service with
    // the key but wrong rules (or a forger with the key) would: the chain and signatures hold,
    // deciding again does not.
    let mut f = file.clone();
    let records: Vec<GameEventRecord> = f.games[0]
        .records
        .iter()
        .map(|r| GameEventRecord::decode(r.payload.as_slice()).unwrap())
        .collect();
    let mut events: Vec<GameEvent> = records
        .iter()
        .map(|r| GameEvent::decode(r.event.as_slice()).unwrap())
        .collect();
    let target = events
        .iter()
        .position(|e| matches!(&e.kind, Some(Kind::MoveCompleted(m)) if m.ply == 3))
        .expect("a third move");
    if let Some(Kind::MoveCompleted(m)) = &mut events[target].kind {
        m.san.push('!');
    }
    rechain_and_sign(&mut f.games[0].records, &events, &signer);
    f.end = None;
    let report = verify(&f, &trusted());
    let first = report.problems.first().expect("a problem");
    assert_eq!(first.kind, ProblemKind::NotReproduced, "{first}");
    assert!(first.game_seq.unwrap() <= target as u64 + 1);
}

#[test]
fn a_log_written_before_signing_replays_marked_unsigned_and_does_not_verify() {
    let (_, file) = round(1);
    let mut legacy = file.clone();
    for r in &mut legacy.games[0].records {
        let mut record = GameEventRecord::decode(r.payload.as_slice()).unwrap();
        record.signature.clear();
        record.key_id.clear();
        r.payload = record.encode_to_vec();
    }
    let replayed =
        replay(&legacy.games[0], &trusted().accepting_unsigned(true), None).expect("replays");
    assert!(replayed.steps.iter().all(|s| s.unsigned));
    assert_eq!(
        replayed.game.unsigned_records(),
        legacy.games[0].records.len() as u64
    );
    // A reader that does not accept logs from before signing refuses it, and says so.
    let refused = replay(&legacy.games[0], &trusted(), None)
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("not signed"), "{refused}");
    let found = kinds(&legacy, &trusted());
    assert_eq!(
        found.first().map(|k| k.0),
        Some(ProblemKind::Unsigned),
        "{found:?}"
    );
}

#[test]
fn a_key_rotated_mid_game_verifies_while_both_keys_are_trusted() {
    let (_, file) = round(1);
    let old = common::hall_signer();
    let new = RecordSigner::from_seed([43; 32]);
    // The records from the 100th on signed with the new key, as after a rotation.
    let mut rotated = file.clone();
    for r in rotated.games[0].records.iter_mut().skip(99) {
        let mut record = GameEventRecord::decode(r.payload.as_slice()).unwrap();
        new.sign(&mut record);
        r.payload = record.encode_to_vec();
    }
    let both = TrustedKeys::new([old.public_key().clone(), new.public_key().clone()]);
    let report = verify(&rotated, &both);
    assert!(report.passed(), "{:?}", report.problems.first());
    assert_eq!(report.signed_by.len(), 2);
    // The old key dropped from the trusted keys: its records are no longer accepted.
    let only_new = TrustedKeys::new([new.public_key().clone()]);
    assert_eq!(
        kinds(&rotated, &only_new).first(),
        Some(&(ProblemKind::UnknownKey, Some(1)))
    );
    let refused = replay(&rotated.games[0], &only_new, None)
        .err()
        .expect("without its start the game cannot be replayed");
    assert!(
        refused.to_string().contains("not among the trusted keys"),
        "{refused}"
    );
}

/// Another file given in place of a record file is named as such, not as a damaged one; a record
/// file cut short after its header is still read as far as it goes.
#[test]
fn another_kind_of_file_is_not_a_record_file() {
    use boardcast_appeal::FileError;
    for other in [
        &b"[Event \"London Chess Classic 2016\"]\n\n1. e4 e5 *\n"[..],
        b"012 Hall Open 2026\n001    1 m    GM Carlsen\n",
        b"",
        &[0xff; 12],
    ] {
        assert!(
            matches!(RecordFile::read(other), Err(FileError::NotARecordFile)),
            "{:?}",
            String::from_utf8_lossy(other)
        );
    }
    let (_, bytes) = common::round_file(1, &common::hall_signer());
    let whole = RecordFile::read(bytes.as_slice()).expect("reads");
    let header_only = {
        let mut out = Vec::new();
        RecordFile {
            games: Vec::new(),
            end: None,
            ..whole
        }
        .write(&mut out)
        .expect("writes");
        out
    };
    let cut = &bytes[..header_only.len() + 5];
    assert!(
        matches!(
            RecordFile::read(cut),
            Err(FileError::Malformed { item: 1, .. })
        ),
        "cut short after the header: damaged, at its second item"
    );
}

/// A game set up by a newer boardcast (an interpretation this one does not know) is not decided
/// again with this one's rules, which could call honest records not reproduced: verification
/// says which version it needs; its chain and signatures are still checked and it still folds.
#[test]
fn a_game_of_a_newer_interpretation_is_named_not_decided_again() {
    let (_, file) = round(1);
    let signer = common::hall_signer();
    let mut f = file.clone();
    let mut events: Vec<GameEvent> = f.games[0]
        .records
        .iter()
        .map(|r| {
            let record = GameEventRecord::decode(r.payload.as_slice()).unwrap();
            GameEvent::decode(record.event.as_slice()).unwrap()
        })
        .collect();
    let newer = boardcast_game::CURRENT_INTERPRETATION + 1;
    let Some(Kind::Started(info)) = &mut events[0].kind else {
        panic!("the game's first record starts it");
    };
    info.interpretation = newer;
    rechain_and_sign(&mut f.games[0].records, &events, &signer);
    // The file's end lists the game's last hash as it was: left out (the file reads as cut short).
    f.end = None;
    let report = verify(&f, &trusted());
    let problems: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.kind != ProblemKind::Truncated)
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let problem = problems[0];
    assert_eq!(problem.kind, ProblemKind::NotReproduced);
    assert!(
        problem
            .detail
            .contains(&format!("newer boardcast (interpretation {newer}")),
        "{problem}"
    );
    assert_eq!(report.decisions_reproduced, 0);
    // Its replay folds by this version's rules, and says so wherever it is read.
    let replayed = replay(&f.games[0], &trusted(), None).expect("replays");
    let cautions = replayed.cautions();
    assert_eq!(cautions.len(), 1, "{cautions:?}");
    assert!(
        cautions[0].contains(&format!(
            "newer boardcast, which reads the boards' observations by its interpretation {newer}"
        )),
        "{cautions:?}"
    );
    assert_eq!(replayed.moment().cautions, cautions);
    let page = boardcast_appeal::html::replay_page(std::slice::from_ref(&replayed), "");
    assert!(page.contains(&cautions[0]), "the page shows it");
}
