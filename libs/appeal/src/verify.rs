//! `--verify`: is the file the complete, unaltered record the game service wrote? Checks each
//! game's sequence, hash chain and signatures, folds it with the aggregate, and decides every
//! observation and arbiter action again on the state before it: the recorded meaning must be
//! what this version of the rules decides (the log records the edition and interpretation, so
//! that holds across versions). Every problem names the game, the record and what is wrong.

use std::collections::BTreeSet;

use boardcast_game::events::{GameEvent, GameEventRecord, game_event::Kind};
use boardcast_game::signing::{Authenticity, SignatureError, TrustedKeys};
use boardcast_game::{
    CURRENT_INTERPRETATION, GENESIS_HASH, Game, NewEvent, ObservationOutcome, OpenedRecord, terms,
};
use prost::Message as _;

use crate::file::{ExportedGame, RecordFile};
use crate::parallel::map_on_every_core;

/// What is wrong with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Its bytes were changed: undecodable, or its content does not match its hash.
    Altered,
    /// Records of the game's log are not in the file.
    Missing,
    /// A record that is not part of the game's log as written (it does not continue the chain,
    /// repeats a sequence number, or belongs to another game).
    Inserted,
    /// The game's records are not in the order of its log.
    Reordered,
    /// Carries no signature.
    Unsigned,
    /// Signed by a key that is not trusted.
    UnknownKey,
    /// Its signature does not verify with the key it names.
    BadSignature,
    /// It cannot follow what came before (the aggregate refuses to fold it).
    Inconsistent,
    /// The recorded meaning of an observation or action is not what deciding it again gives.
    NotReproduced,
    /// The file was cut short or its end does not match its records.
    Truncated,
}

impl ProblemKind {
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Altered => "altered",
            ProblemKind::Missing => "missing",
            ProblemKind::Inserted => "inserted",
            ProblemKind::Reordered => "reordered",
            ProblemKind::Unsigned => "unsigned",
            ProblemKind::UnknownKey => "signed by an unknown key",
            ProblemKind::BadSignature => "bad signature",
            ProblemKind::Inconsistent => "inconsistent",
            ProblemKind::NotReproduced => "not reproduced",
            ProblemKind::Truncated => "truncated",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub game_id: String,
    /// The record's place among the game's records in the file (from 1); 0 for the file.
    pub position: usize,
    /// The record's own sequence number when it could be read.
    pub game_seq: Option<u64>,
    /// Its sequence in the JetStream stream it was exported from.
    pub stream_seq: u64,
    pub kind: ProblemKind,
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "game {}", self.game_id)?;
        match self.game_seq {
            Some(seq) => write!(f, ", record {seq}")?,
            None if self.position > 0 => write!(f, ", the file's record #{}", self.position)?,
            None => {}
        }
        if self.stream_seq > 0 {
            write!(f, " (stream sequence {})", self.stream_seq)?;
        }
        write!(f, ": {} — {}", self.kind.name(), self.detail)
    }
}

/// The outcome of checking a whole file.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Verification {
    pub games: usize,
    pub records: u64,
    /// Records decided again and found to mean what they say.
    pub decisions_reproduced: u64,
    /// The keys that signed the records (key ids).
    pub signed_by: BTreeSet<String>,
    pub problems: Vec<Problem>,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks every game of `file` against `trusted`, the games spread over the machine's cores
/// (each game is checked on its own; the problems come in the file's order of games).
pub fn verify(file: &RecordFile, trusted: &TrustedKeys) -> Verification {
    let parts = map_on_every_core(
        &file.games,
        |game| {
            let mut part = Verification {
                records: game.records.len() as u64,
                ..Default::default()
            };
            verify_game(game, trusted, &mut part);
            part
        },
        |game| Verification {
            problems: vec![Problem {
                game_id: game.game_id.clone(),
                position: 0,
                game_seq: None,
                stream_seq: 0,
                kind: ProblemKind::Inconsistent,
                detail: "checking it failed unexpectedly (a bug in this version): it is not \
                         verified"
                    .into(),
            }],
            ..Default::default()
        },
    );
    let mut report = Verification {
        games: file.games.len(),
        ..Default::default()
    };
    for part in parts {
        report.records += part.records;
        report.decisions_reproduced += part.decisions_reproduced;
        report.signed_by.extend(part.signed_by);
        report.problems.extend(part.problems);
    }
    check_end(file, &mut report);
    report
}

fn verify_game(exported: &ExportedGame, trusted: &TrustedKeys, report: &mut Verification) {
    let game_id = exported.game_id.as_str();
    let problem =
        |position: usize, game_seq: Option<u64>, stream_seq, kind, detail: String| Problem {
            game_id: game_id.to_owned(),
            position,
            game_seq,
            stream_seq,
            kind,
            detail,
        };
    let mut decoded: Vec<Option<GameEventRecord>> = exported
        .records
        .iter()
        .map(|r| GameEventRecord::decode(r.payload.as_slice()).ok())
        .collect();
    // Sequence numbers as the file has them, to tell a reordered record from a missing one.
    let seqs: Vec<Option<u64>> = decoded
        .iter()
        .map(|record| {
            let record = record.as_ref()?;
            GameEvent::decode(record.event.as_slice())
                .ok()
                .map(|e| e.game_seq)
        })
        .collect();
    // Every signature checked at once; only when one fails is each checked on its own, to
    // name it.
    let signatures_hold = trusted.batch_verifies(&decoded.iter().flatten().collect::<Vec<_>>());
    let legacy = trusted.clone().accepting_unsigned(true);
    // Whether a record before was signed: once one is, an unsigned one is refused.
    let mut signed_before = false;
    let mut head = GENESIS_HASH;
    let mut unsigned = Vec::new();
    // The records that continue the chain, with their stream sequences: folded and decided
    // again afterwards (`redecide`), in one pass.
    let mut accepted: Vec<(OpenedRecord, u64)> = Vec::new();
    // Records refused (altered, or not signed by a trusted key), by the sequence number they
    // claim: when the chain then misses that number, the cause is already named.
    let mut refused: BTreeSet<u64> = BTreeSet::new();
    for (index, exported_record) in exported.records.iter().enumerate() {
        let position = index + 1;
        let stream_seq = exported_record.stream_seq;
        let claimed = seqs[index];
        // Each check refuses the record as every reader would, and the rest of the game is
        // still checked: the game service's next record continues the chain before it.
        let Some(record) = decoded[index].take() else {
            report.problems.push(problem(
                position,
                None,
                stream_seq,
                ProblemKind::Altered,
                "the record cannot be decoded".into(),
            ));
            continue;
        };
        let opened = match Game::open(record) {
            Ok(opened) => opened,
            Err(e) => {
                refused.extend(claimed);
                report.problems.push(problem(
                    position,
                    claimed,
                    stream_seq,
                    ProblemKind::Altered,
                    format!("its content does not match its hash ({e})"),
                ));
                continue;
            }
        };
        let (record, event) = (opened.record(), opened.event());
        let seq = event.game_seq;
        let here = |kind, detail: String| problem(position, Some(seq), stream_seq, kind, detail);
        if event.game_id != game_id {
            report.problems.push(here(
                ProblemKind::Inserted,
                format!("it belongs to game {:?}", event.game_id),
            ));
            continue;
        }
        let authenticity = if signatures_hold {
            legacy.check_named(record, seq, signed_before)
        } else {
            legacy.check(record, seq, signed_before)
        };
        match authenticity {
            Ok(Authenticity::Signed { key_id }) => {
                report.signed_by.insert(key_id);
            }
            Ok(Authenticity::Unsigned) => unsigned.push(seq),
            Err(e) => {
                let kind = match e {
                    SignatureError::Unsigned { .. } => ProblemKind::Unsigned,
                    SignatureError::UnsignedAfterSigned { .. } => ProblemKind::Inserted,
                    SignatureError::UnknownKey { .. } => ProblemKind::UnknownKey,
                    SignatureError::BadSignature { .. } => ProblemKind::BadSignature,
                };
                refused.insert(seq);
                report.problems.push(here(kind, e.to_string()));
                continue;
            }
        }
        // From here on the record is the game service's: what is wrong is where it stands.
        let expected = accepted.len() as u64 + 1;
        if seq != expected {
            if refused.contains(&expected) {
                // The record that belongs here was refused above: already named.
                break;
            }
            let later = seqs[index + 1..].contains(&Some(expected));
            let (kind, detail) = if later {
                (
                    ProblemKind::Reordered,
                    format!("record {expected} was expected here; it comes later in the file"),
                )
            } else if seq > expected {
                (
                    ProblemKind::Missing,
                    if seq == expected + 1 {
                        format!("record {expected} is not in the file")
                    } else {
                        format!("records {expected} to {} are not in the file", seq - 1)
                    },
                )
            } else {
                (ProblemKind::Inserted, format!("a second record {seq}"))
            };
            report.problems.push(here(kind, detail));
            break;
        }
        if record.prev_hash.as_slice() != head.as_slice() {
            report.problems.push(here(
                ProblemKind::Inserted,
                "it does not continue the chain of the records before it (a record was \
                 inserted or replaced)"
                    .into(),
            ));
            break;
        }
        head.copy_from_slice(&record.hash);
        signed_before |= !record.signature.is_empty();
        accepted.push((opened, stream_seq));
    }
    if let (Some(&first), Some(&last)) = (unsigned.first(), unsigned.last()) {
        report.problems.push(problem(
            first as usize,
            Some(first),
            0,
            ProblemKind::Unsigned,
            format!(
                "records {first} to {last} carry no signature (written before records were \
                 signed): they cannot be shown to come from the game service"
            ),
        ));
    }
    redecide(&exported.game_id, &accepted, report);
}

/// How many records a decision may write before the observation or action it rests on (the
/// clock's sides established by the reading they were read from, ahead of it).
const MAX_PREFIX: usize = 3;

/// The input a record was decided on, when it is one (a set-up revised is its own).
fn is_input(event: &GameEvent) -> bool {
    matches!(
        event.kind,
        Some(Kind::ObservationRecorded(_) | Kind::Arbiter(_) | Kind::SetUpRevised(_))
    )
}

/// Folds the records that continue the chain and decides every observation, arbiter action and
/// revision of the set-up again on the game folded up to where its decision begins, comparing with the records the
/// log holds from there: every record must fold, and be the meaning of an observation or
/// action as this version decides it. (Holes recorded by the service — `ObservationsMissing`,
/// decided on what it read of the ingest stream rather than on the log — are folded as they
/// are.)
fn redecide(game_id: &str, opened: &[(OpenedRecord, u64)], report: &mut Verification) {
    let problem = |at: usize, kind, detail: String| Problem {
        game_id: game_id.to_owned(),
        position: at + 1,
        game_seq: Some(opened[at].0.event().game_seq),
        stream_seq: opened[at].1,
        kind,
        detail,
    };
    let Some((first, _)) = opened.first() else {
        return;
    };
    let mut game = match Game::from_first_opened(first) {
        Ok(game) => game,
        Err(e) => {
            report
                .problems
                .push(problem(0, ProblemKind::Inconsistent, e.to_string()));
            return;
        }
    };
    let event_at = |i: usize| opened[i].0.event();
    // Once a decision is not reproduced, the rest is only folded: each record must still fold.
    let mut deciding = true;
    // A game set up by a newer boardcast reads its observations in ways this one does not know:
    // deciding them again here would report honest records as not reproduced.
    let interpretation = game.info().interpretation;
    if interpretation > CURRENT_INTERPRETATION {
        report.problems.push(problem(
            0,
            ProblemKind::NotReproduced,
            format!(
                "the game was set up by a newer boardcast (interpretation {interpretation}; this \
                 one decides up to {CURRENT_INTERPRETATION}): its decisions cannot be made again \
                 here; verify it with that version"
            ),
        ));
        deciding = false;
    }
    let mut at = 1;
    while at < opened.len() {
        let decided_len = if !deciding
            || matches!(event_at(at).kind, Some(Kind::ObservationsMissing(_)))
        {
            1
        } else {
            let Some(input) =
                (at..opened.len().min(at + MAX_PREFIX + 1)).find(|&i| is_input(event_at(i)))
            else {
                report.problems.push(problem(
                    at,
                    ProblemKind::NotReproduced,
                    "no observation or arbiter action of the log leads to it".into(),
                ));
                deciding = false;
                continue;
            };
            let event = event_at(input);
            let decided: Vec<NewEvent> = match &event.kind {
                Some(Kind::ObservationRecorded(recorded)) => match recorded
                    .observation
                    .as_ref()
                    .map(|obs| game.decide_observation(obs))
                {
                    Some(Ok(ObservationOutcome::Events(events))) => events,
                    _ => Vec::new(),
                },
                Some(Kind::Arbiter(action)) => {
                    let provenance = event.provenance.clone().unwrap_or_default();
                    game.decide_arbiter(action, &provenance.actor, &provenance.request_id)
                        .unwrap_or_default()
                }
                // Allowed then, as asked: the revision decided again is the record itself.
                Some(Kind::SetUpRevised(revised)) => {
                    let provenance = event.provenance.clone().unwrap_or_default();
                    revised
                        .set_up
                        .as_ref()
                        .and_then(|set_up| {
                            game.decide_set_up_revision(
                                set_up,
                                &provenance.actor,
                                &provenance.request_id,
                            )
                            .ok()
                        })
                        .unwrap_or_default()
                }
                _ => Vec::new(),
            };
            let recorded = opened[at..].iter().take(decided.len());
            let differs = decided
                .iter()
                .zip(recorded)
                .position(|(again, (logged, _))| {
                    let logged = logged.event();
                    // A log written before the typed terms holds their words alone.
                    let same_kind = logged.kind.as_ref().is_some_and(|logged| {
                        again.kind == *logged || terms::without_typed_terms(&again.kind) == *logged
                    });
                    !same_kind || Some(&again.provenance) != logged.provenance.as_ref()
                });
            if decided.len() <= input - at || differs.is_some() || at + decided.len() > opened.len()
            {
                let from = at + differs.unwrap_or(decided.len().min(opened.len() - at));
                report.problems.push(problem(
                    from.min(opened.len() - 1),
                    ProblemKind::NotReproduced,
                    format!(
                        "deciding record {} again gives {} records that differ from the log's \
                         from here on",
                        event.game_seq,
                        decided.len()
                    ),
                ));
                deciding = false;
                continue;
            }
            report.decisions_reproduced += 1;
            decided.len()
        };
        for (i, (record, _)) in opened.iter().enumerate().skip(at).take(decided_len) {
            if let Err(e) = game.apply_opened(record) {
                report
                    .problems
                    .push(problem(i, ProblemKind::Inconsistent, e.to_string()));
                return;
            }
        }
        at += decided_len;
    }
}

/// The end lists every game with its count and last hash: a file cut short, or a game whose last
/// records were dropped, is found here.
fn check_end(file: &RecordFile, report: &mut Verification) {
    let Some(end) = &file.end else {
        report.problems.push(Problem {
            game_id: "(file)".into(),
            position: 0,
            game_seq: None,
            stream_seq: 0,
            kind: ProblemKind::Truncated,
            detail: "the file has no end: it was cut short".into(),
        });
        return;
    };
    for summary in &end.games {
        let file_problem = |kind, detail: String| Problem {
            game_id: summary.game_id.clone(),
            position: 0,
            game_seq: None,
            stream_seq: 0,
            kind,
            detail,
        };
        let Some(game) = file.game(&summary.game_id) else {
            report.problems.push(file_problem(
                ProblemKind::Missing,
                format!(
                    "the file's end lists {} records, none is in the file",
                    summary.records
                ),
            ));
            continue;
        };
        let present = game.records.len() as u64;
        if present < summary.records {
            report.problems.push(file_problem(
                ProblemKind::Missing,
                format!(
                    "the file's end lists {} records, {present} are in the file",
                    summary.records
                ),
            ));
        } else if present > summary.records {
            report.problems.push(file_problem(
                ProblemKind::Inserted,
                format!(
                    "the file's end lists {} records, {present} are in the file",
                    summary.records
                ),
            ));
        } else if let Some(last) = game.records.last()
            && GameEventRecord::decode(last.payload.as_slice())
                .is_ok_and(|r| r.hash != summary.head_hash)
        {
            report.problems.push(file_problem(
                ProblemKind::Altered,
                "its last record is not the one the file's end lists".into(),
            ));
        }
    }
    for game in &file.games {
        if !end.games.iter().any(|s| s.game_id == game.game_id) {
            report.problems.push(Problem {
                game_id: game.game_id.clone(),
                position: 0,
                game_seq: None,
                stream_seq: 0,
                kind: ProblemKind::Inserted,
                detail: "the game is not listed in the file's end".into(),
            });
        }
    }
}
