//! The one reader of the game log (`BOARDCAST_GAMES`) that the game service, the broadcast and
//! arbiter services and `boardcast export` share: the messages of a subject in stream order from
//! a sequence on, then live as they are stored.
//!
//! It reads through an ordered consumer: JetStream (nats-server 2.12+) delivers every message
//! once and in order, and the client recreates the consumer after a gap (a missed heartbeat, a
//! server restart) from the last sequence it delivered; a sequence never delivered was removed.
//! As a last resort, when nothing comes for [`STALL_CHECK`] although the log holds more, the
//! reader makes the consumer again from the next sequence it owes, so no reader waits for good.
//! [`game_records`] reads one game's records by sequence, from the stream's leader.
//!
//! A game whose records, as read, do not follow on from what a reader folded of it is a real
//! fault of the log on such a server (an acknowledged record lost, a forged or forked branch):
//! every reader names it with one type, [`LogBreak`], shows nothing of the game past it, and
//! reads it again every [`MENDED_CHECK`] ([`mended_records`]) until an operator has mended it
//! (`boardcast fork`). What each reader then does is said where it marks the game.

use async_nats::jetstream::{
    consumer::{DeliverPolicy, pull::OrderedConfig},
    stream::Stream,
};
use futures::StreamExt as _;

/// How long a reader waits for the next message before it asks the log whether there is one.
pub const STALL_CHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// One message of the game log as stored.
pub struct LogMessage {
    /// Its sequence in the stream.
    pub stream_seq: u64,
    /// How many messages of the subject followed it in the stream when it was delivered (0: the
    /// reader has caught up).
    pub pending: u64,
    /// The subject it is stored on (`boardcast.game.<game_id>.events`).
    pub subject: String,
    /// The encoded `GameEventRecord`, as stored.
    pub payload: bytes::Bytes,
    /// When NATS stored it: where a reader's latency is measured from.
    pub stored_at: std::time::SystemTime,
    /// The trace of what the record was decided on, to continue in the reader's span.
    pub trace: opentelemetry::Context,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// NATS could not be read; the ordered consumer goes on once it can.
    #[error("reading the game log: {0}")]
    Read(String),
    /// A message came without its place in the stream: following on from it could skip or
    /// repeat records, so a follower starts again from its last folded sequence.
    #[error("a game log message without its stream position: {0}")]
    NoPosition(String),
}

/// A game whose log, as read, does not follow on from what a reader folded of it: a record
/// missing, two records with one number (a fork), a broken link of the hash chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBreak {
    pub game_id: String,
    /// Where the record that does not follow on is stored.
    pub stream_seq: u64,
    /// Its number in the game (0 when it could not be read).
    pub game_seq: u64,
    /// What is wrong, in words.
    pub why: String,
}

/// What to check when a record is refused for its signing key: a reader whose trusted keys
/// file lacks the game service's key refuses every record, which reads as every game broken.
pub const UNTRUSTED_KEY_HINT: &str = "if every record is refused so, this service's trusted \
     keys file (--trusted-keys) lacks the game service's signing key (boardcast keys show): fix \
     the file and restart";

/// [`UNTRUSTED_KEY_HINT`] when `why` (a refusal's or a break's reason) is a record signed by a
/// key the reader does not trust.
pub fn untrusted_key_hint(why: &str) -> Option<&'static str> {
    why.contains("which is not among the trusted keys")
        .then_some(UNTRUSTED_KEY_HINT)
}

impl LogBreak {
    /// What to do about it, for the reader's log: most breaks need an operator to mend the log
    /// (`boardcast fork`); records signed by a key the reader does not trust point at the
    /// reader's own trusted keys file instead.
    pub fn remedy(&self) -> &'static str {
        untrusted_key_hint(&self.why).unwrap_or(
            "its later records are not shown until an operator mends its log (boardcast fork)",
        )
    }
}

impl std::fmt::Display for LogBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the log of game {} does not follow on at record {} (stream sequence {}): {}",
            self.game_id, self.game_seq, self.stream_seq, self.why
        )
    }
}

/// One message of the game log as [`read_records`] takes it.
#[derive(Debug)]
pub enum Read {
    /// The next record of its game: signed by a trusted key, numbered and chained after the
    /// last one taken of that game (or the first taken of it).
    Record {
        stream_seq: u64,
        /// Boxed: far larger than the other kinds.
        opened: Box<boardcast_game::OpenedRecord>,
    },
    /// Not a record of the game service's (undecodable, altered, not signed by a trusted key,
    /// naming another game than its subject's): left out, and the game's log goes on with the
    /// next record.
    Refused {
        stream_seq: u64,
        subject: String,
        why: String,
    },
    /// The first record of a game that does not follow on from what was taken of it: nothing
    /// more of that game is taken.
    Break(LogBreak),
}

/// The records on `subject` (one game's, or `GAMES_SUBJECTS` for every game) from stream
/// sequence `start` on, then live, each checked: signed by a key in `trusted` (once a game's
/// records are signed, every later one), numbered and chained after the one before. A copy of a
/// record taken already is passed over. Read from the start, a game begins with its record 1;
/// read from the middle of the log, a game's first record read is taken as where it starts.
/// After a break, a game's records are taken again once one follows on from the last taken (an
/// operator kept that branch).
pub async fn read_records(
    stream: &Stream,
    subject: &str,
    start: u64,
    trusted: boardcast_game::signing::TrustedKeys,
) -> Result<impl futures::Stream<Item = Result<Read, LogError>> + Send + use<>, LogError> {
    let mut checks = Checks::new(trusted, start <= 1);
    let messages = read_from(stream, subject, start).await?;
    Ok(messages.filter_map(move |message| {
        futures::future::ready(match message {
            Ok(message) => checks.take(message).map(Ok),
            Err(e) => Some(Err(e)),
        })
    }))
}

/// What [`read_records`] keeps of each game it reads.
struct Checks {
    trusted: boardcast_game::signing::TrustedKeys,
    /// Whether the log is read from its start: every game then begins with its record 1.
    from_start: bool,
    games: std::collections::HashMap<String, Taken>,
}

/// The records taken of a game.
struct Taken {
    /// The number of the first record taken.
    first_seq: u64,
    /// The hash of each record taken, in order from `first_seq`: a copy of any of them is
    /// passed over, as every reader passes it over.
    hashes: Vec<Vec<u8>>,
    /// Whether a signed record was taken: from then on every record must be signed.
    signed: bool,
    /// The game's log did not follow on: nothing more of it is taken until a record follows on
    /// from the last one taken.
    broken: bool,
}

impl Taken {
    fn last_seq(&self) -> u64 {
        self.first_seq
            .saturating_add(self.hashes.len() as u64)
            .saturating_sub(1)
    }

    fn hash_of(&self, game_seq: u64) -> Option<&[u8]> {
        let index = usize::try_from(game_seq.checked_sub(self.first_seq)?).ok()?;
        self.hashes.get(index).map(Vec::as_slice)
    }
}

impl Checks {
    fn new(trusted: boardcast_game::signing::TrustedKeys, from_start: bool) -> Checks {
        Checks {
            trusted,
            from_start,
            games: std::collections::HashMap::new(),
        }
    }

    fn take(&mut self, message: LogMessage) -> Option<Read> {
        let stream_seq = message.stream_seq;
        let subject_game = crate::nats::game_of_subject(&message.subject).unwrap_or_default();
        let refused = |why: String| Read::Refused {
            stream_seq,
            subject: message.subject.clone(),
            why,
        };
        let taken = self.games.get(subject_game);
        let signed_before = taken.is_some_and(|t| t.signed);
        let opened =
            match boardcast_game::Game::read_stored(&message.payload, &self.trusted, signed_before)
            {
                Ok(opened) => opened,
                Err(e) => return Some(refused(e.to_string())),
            };
        let (game_id, game_seq) = (&opened.event().game_id, opened.event().game_seq);
        if game_id != subject_game {
            return Some(refused(format!("record {game_seq} names game {game_id:?}")));
        }
        let record = opened.record();
        let follows_on = |t: &Taken| {
            game_seq == t.last_seq().saturating_add(1)
                && Some(record.prev_hash.as_slice()) == t.hash_of(t.last_seq())
        };
        let why = match taken {
            Some(t) if t.hash_of(game_seq) == Some(record.hash.as_slice()) => return None,
            Some(t) if t.broken && !follows_on(t) => return None,
            Some(t) if game_seq <= t.last_seq() => Some(format!(
                "a second record numbered {game_seq}: the log forked"
            )),
            Some(t) if game_seq != t.last_seq().saturating_add(1) => Some(format!(
                "record {game_seq} after record {}: records are missing",
                t.last_seq()
            )),
            Some(t) if !follows_on(t) => {
                Some("it is not chained to the record before it".to_owned())
            }
            None if self.from_start && game_seq != 1 => Some(format!(
                "record {game_seq} is the game's first in the log: records are missing"
            )),
            _ => None,
        };
        if let Some(why) = why {
            let t = self.games.entry(subject_game.to_owned()).or_insert(Taken {
                first_seq: game_seq,
                hashes: Vec::new(),
                signed: false,
                broken: false,
            });
            t.broken = true;
            return Some(Read::Break(LogBreak {
                game_id: subject_game.to_owned(),
                stream_seq,
                game_seq,
                why,
            }));
        }
        let signed = !record.signature.is_empty();
        match self.games.get_mut(subject_game) {
            Some(t) if !t.hashes.is_empty() => {
                t.hashes.push(record.hash.clone());
                t.signed |= signed;
                t.broken = false;
            }
            _ => {
                self.games.insert(
                    subject_game.to_owned(),
                    Taken {
                        first_seq: game_seq,
                        hashes: vec![record.hash.clone()],
                        signed,
                        broken: false,
                    },
                );
            }
        }
        Some(Read::Record {
            stream_seq,
            opened: Box::new(opened),
        })
    }
}

/// How often a reader reads a game whose log does not follow on again, to find it mended.
pub const MENDED_CHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// Game `game_id`'s records up to stream sequence `up_to` when they now follow on as every
/// reader folds them (an operator mended the log; [`boardcast_game::follows_on`]), to be folded
/// afresh; `None` while they still do not.
pub async fn mended_records(
    stream: &Stream,
    game_id: &str,
    up_to: u64,
    trusted: &boardcast_game::signing::TrustedKeys,
) -> Result<Option<Vec<(u64, bytes::Bytes)>>, LogError> {
    let records = game_records(stream, game_id, up_to).await?;
    Ok(boardcast_game::follows_on(game_id, &records, trusted)
        .is_ok()
        .then_some(records))
}

/// The messages on `subject` (one game's, or `GAMES_SUBJECTS` for every game) from stream
/// sequence `start` on (1: from the beginning), then live.
pub async fn read_from(
    stream: &Stream,
    subject: &str,
    start: u64,
) -> Result<impl futures::Stream<Item = Result<LogMessage, LogError>> + Send + use<>, LogError> {
    let reader = Reader {
        messages: ordered_from(stream, subject, start).await?,
        stream: stream.clone(),
        subject: subject.to_owned(),
        next_seq: start.max(1),
    };
    Ok(Box::pin(futures::stream::unfold(
        reader,
        |mut reader| async move {
            let item = reader.next().await?;
            Some((item, reader))
        },
    )))
}

type Messages = std::pin::Pin<Box<dyn futures::Stream<Item = Result<LogMessage, LogError>> + Send>>;

/// A reader of the log that makes its consumer again when it stalls.
struct Reader {
    messages: Messages,
    stream: Stream,
    subject: String,
    /// The sequence from which the messages not delivered yet start.
    next_seq: u64,
}

impl Reader {
    async fn next(&mut self) -> Option<Result<LogMessage, LogError>> {
        loop {
            match tokio::time::timeout(STALL_CHECK, self.messages.next()).await {
                Ok(Some(Ok(message))) => {
                    self.next_seq = message.stream_seq.saturating_add(1);
                    return Some(Ok(message));
                }
                Ok(other) => return other,
                Err(_) => self.restart_if_stalled().await,
            }
        }
    }

    /// Nothing came for a while: normal when the log holds nothing more, a stall when it does.
    async fn restart_if_stalled(&mut self) {
        let waiting =
            match crate::nats::next_message(&self.stream, self.next_seq, &self.subject).await {
                Ok(waiting) => waiting,
                // NATS away: the consumer goes on once it is back; asked again at the next check.
                Err(e) => {
                    tracing::debug!("checking the game log for records not delivered: {e}");
                    return;
                }
            };
        let Some(waiting) = waiting else {
            return;
        };
        tracing::warn!(
            from = self.next_seq,
            waiting = waiting.sequence,
            "the game log's consumer delivered nothing for {} s although the log holds more: \
             making it again",
            STALL_CHECK.as_secs()
        );
        self.restart().await;
    }

    /// Makes the consumer again from the first message not delivered.
    async fn restart(&mut self) {
        match ordered_from(&self.stream, &self.subject, self.next_seq).await {
            Ok(messages) => self.messages = messages,
            Err(e) => tracing::warn!("making the game log's consumer again: {e}"),
        }
    }
}

/// Whether `subject` is every message of `stream` (its one configured subject).
fn is_whole_stream(stream: &Stream, subject: &str) -> bool {
    stream.cached_info().config.subjects == [subject]
}

/// An ordered consumer's messages on `subject` from stream sequence `start`.
async fn ordered_from(stream: &Stream, subject: &str, start: u64) -> Result<Messages, LogError> {
    let deliver_policy = if start <= 1 {
        DeliverPolicy::All
    } else {
        DeliverPolicy::ByStartSequence {
            start_sequence: start,
        }
    };
    // The whole stream unfiltered: the server then need not match subjects to deliver.
    let whole_stream = is_whole_stream(stream, subject);
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: if whole_stream {
                String::new()
            } else {
                subject.to_owned()
            },
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    Ok(Box::pin(messages.map(|message| {
        let message = message.map_err(|e| LogError::Read(e.to_string()))?;
        let info = message
            .info()
            .map_err(|e| LogError::NoPosition(e.to_string()))?;
        Ok(LogMessage {
            stream_seq: info.stream_sequence,
            pending: info.pending,
            subject: message.subject.to_string(),
            payload: message.payload.clone(),
            stored_at: info.published.into(),
            trace: crate::telemetry::context_from_nats(message.headers.as_ref()),
        })
    })))
}

/// Game `game_id`'s records as stored up to stream sequence `up_to` (stream sequence and
/// payload, in order), read one by one from the log's leader: a game read whole again (an
/// operator mended its log), or checked (`boardcast fork`).
pub async fn game_records(
    stream: &Stream,
    game_id: &str,
    up_to: u64,
) -> Result<Vec<(u64, bytes::Bytes)>, LogError> {
    game_records_between(stream, game_id, 0, up_to).await
}

/// Game `game_id`'s records stored after stream sequence `after` and up to `up_to`, as
/// [`game_records`].
pub async fn game_records_between(
    stream: &Stream,
    game_id: &str,
    after: u64,
    up_to: u64,
) -> Result<Vec<(u64, bytes::Bytes)>, LogError> {
    let subject = crate::nats::game_subject(game_id);
    let mut records = Vec::new();
    let mut seq = after.saturating_add(1);
    while seq <= up_to {
        let message = crate::nats::next_message(stream, seq, &subject)
            .await
            .map_err(|e| LogError::Read(format!("reading the log of game {game_id} again: {e}")))?;
        let Some(message) = message.filter(|m| m.sequence <= up_to) else {
            break;
        };
        seq = message.sequence.saturating_add(1);
        records.push((message.sequence, message.payload));
    }
    Ok(records)
}

/// A span for folding records whose traces are `traces`: a child of the last record traced (so a
/// move's trace reaches the readers of the log), linked to the others of a batch.
pub fn fold_span<'a>(
    reader: &'static str,
    traces: impl IntoIterator<Item = &'a opentelemetry::Context>,
) -> tracing::Span {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let span = tracing::info_span!("game_log.fold", reader);
    let mut traced = traces
        .into_iter()
        .map(|cx| cx.span().span_context().clone())
        .filter(|span_context| span_context.is_valid())
        .collect::<Vec<_>>();
    if let Some(last) = traced.pop() {
        crate::telemetry::continue_trace(
            &span,
            opentelemetry::Context::new().with_remote_span_context(last),
        );
        for other in traced {
            span.add_link(other);
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use boardcast_game::events::{
        Annotation, ArbiterAction, GameEventRecord, arbiter_action::Action,
    };
    use boardcast_game::signing::{RecordSigner, TrustedKeys};
    use boardcast_game::{Game, example_game};
    use prost::Message as _;

    use super::*;

    /// The first `n` records of the game on board `board`, signed, as stored: its start then
    /// arbiter's notes saying `note`.
    fn records(board: u32, n: usize, signer: &RecordSigner, note: &str) -> Vec<GameEventRecord> {
        let info = example_game("open", 1, board, &format!("b{board}"));
        let (game_id, started) = Game::decide_start(&info, "operator", "r").expect("valid");
        let first = Game::record_signed(None, &game_id, vec![started], 1_000, signer).remove(0);
        let mut game = Game::from_first_record(&first).expect("folds");
        let mut records = vec![first];
        for i in 1..n {
            let note = ArbiterAction {
                action: Some(Action::Annotation(Annotation { text: note.into() })),
                ..Default::default()
            };
            let events = game
                .decide_arbiter(&note, "arbiter", &format!("r{i}"))
                .expect("taken");
            let record =
                Game::record_signed(Some(&game), &game_id, events, 2_000, signer).remove(0);
            game.apply(&record).expect("follows");
            records.push(record);
        }
        records
    }

    fn message(stream_seq: u64, record: &GameEventRecord) -> LogMessage {
        let game_id = Game::open_record(record).expect("opens").game_id;
        LogMessage {
            stream_seq,
            pending: 0,
            subject: crate::nats::game_subject(&game_id),
            payload: record.encode_to_vec().into(),
            stored_at: std::time::SystemTime::UNIX_EPOCH,
            trace: opentelemetry::Context::new(),
        }
    }

    /// What `checks` makes of each message: `R` a record, `-` refused, `B` a break, `.` none.
    fn read(checks: &mut Checks, messages: Vec<LogMessage>) -> String {
        messages
            .into_iter()
            .map(|m| match checks.take(m) {
                Some(Read::Record { .. }) => 'R',
                Some(Read::Refused { .. }) => '-',
                Some(Read::Break(_)) => 'B',
                None => '.',
            })
            .collect()
    }

    #[test]
    fn records_that_follow_on_are_taken_and_the_rest_named_as_every_reader_names_it() {
        let signer = RecordSigner::from_seed([9; 32]);
        let trusted = TrustedKeys::parse(&signer.public_key().to_text()).expect("a key");
        let checks = || Checks::new(trusted.clone(), true);
        let game = records(1, 4, &signer, "n");
        let other = records(2, 3, &signer, "n");

        // In order, copies (of the last record, of an earlier one) passed over, another game
        // alongside.
        let log = vec![
            message(1, &game[0]),
            message(2, &other[0]),
            message(3, &game[1]),
            message(4, &game[1]),
            message(5, &game[2]),
            message(6, &game[1]),
            message(7, &game[3]),
        ];
        assert_eq!(read(&mut checks(), log), "RRR.R.R");

        // Read from the start, a game whose first record in the log is not its record 1.
        let log = vec![message(1, &game[1]), message(2, &game[2])];
        assert_eq!(read(&mut checks(), log), "B.");
        // Read from the middle, it starts where it is first read.
        let log = vec![message(8, &game[1]), message(9, &game[2])];
        assert_eq!(read(&mut Checks::new(trusted.clone(), false), log), "RR");

        // A record missing: a break, and nothing more of that game; the other goes on.
        let mut c = checks();
        let log = vec![
            message(1, &game[0]),
            message(2, &game[2]),
            message(3, &game[3]),
            message(4, &other[0]),
        ];
        assert_eq!(read(&mut c, log), "RB.R");

        // Two records numbered 2: the log forked.
        let fork = &records(1, 2, &signer, "another note")[1];
        let mut c = checks();
        let read_out = read(
            &mut c,
            vec![
                message(1, &game[0]),
                message(2, &game[1]),
                message(3, fork),
                message(4, &game[1]),
            ],
        );
        assert_eq!(read_out, "RRB.");
        // The branch taken goes on (an operator kept it): its records are taken again.
        assert_eq!(read(&mut c, vec![message(5, &game[2])]), "R");

        // Refused and left out, the game's log going on: garbage, a record no trusted key
        // signed, an unsigned one after signed ones.
        let stranger = RecordSigner::from_seed([66; 32]);
        let forged = records(1, 2, &stranger, "n");
        let mut unsigned = game[1].clone();
        unsigned.signature.clear();
        let mut garbage = message(2, &game[1]);
        garbage.payload = bytes::Bytes::from_static(b"not a record");
        let log = vec![
            message(1, &game[0]),
            garbage,
            message(3, &forged[1]),
            message(4, &unsigned),
            message(5, &game[1]),
        ];
        assert_eq!(read(&mut checks(), log), "R---R");
    }

    #[test]
    fn a_break_on_an_untrusted_key_points_at_the_trusted_keys_file() {
        let at = |why: String| LogBreak {
            game_id: "g".into(),
            stream_seq: 7,
            game_seq: 2,
            why,
        };
        let untrusted = boardcast_game::signing::SignatureError::UnknownKey {
            game_seq: 2,
            key_id: "k1".into(),
        };
        assert!(
            at(untrusted.to_string())
                .remedy()
                .contains("--trusted-keys")
        );
        let forked = at("a second record numbered 2: the log forked".into());
        assert!(forked.remedy().contains("boardcast fork"));
    }
}
