//! Atomic batch publish (ADR-50, nats-server 2.12+): a decision's records stored whole or not
//! at all, the first expecting the game's subject to end where this instance folded it.

use async_nats::HeaderMap;
use boardcast_game::events::GameEventRecord;
use prost::Message as _;

use super::{AppendError, Appended, WRONG_LAST_SEQUENCE, failed, unavailable};

/// Publishes `records` on `subject` as one batch stored whole or not at all, its first
/// message expecting the subject to end at `end`. Every message but the last is a plain
/// publish, except the first, which asks for an answer so that a refusal comes at once; the
/// last commits the batch and is answered with where it was stored.
pub(super) async fn publish(
    client: async_nats::Client,
    subject: &str,
    records: &[GameEventRecord],
    end: u64,
    trace: &HeaderMap,
    game_id: &str,
) -> Result<Appended, AppendError> {
    let id = format!("{:032x}", rand::random::<u128>());
    let count = records.len();
    for (n, record) in records.iter().enumerate() {
        let mut headers = trace.clone();
        headers.insert("Nats-Batch-Id", id.as_str());
        headers.insert("Nats-Batch-Sequence", (n + 1).to_string().as_str());
        if n == 0 {
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence",
                end.to_string().as_str(),
            );
        }
        let last = n + 1 == count;
        if last {
            headers.insert("Nats-Batch-Commit", "1");
        }
        let payload: bytes::Bytes = record.encode_to_vec().into();
        if n == 0 || last {
            let request = async_nats::Request::new().payload(payload).headers(headers);
            let answer = client
                .send_request(subject.to_owned(), request)
                .await
                .map_err(|e| unavailable(game_id, e))?;
            match read_answer(&answer.payload) {
                Answer::Stored { seq, count: stored } if last => {
                    if stored != count as u64 {
                        return Err(failed(
                            game_id,
                            format!("the batch of {count} records was stored as {stored}"),
                        ));
                    }
                    // A batch is stored as one run of sequences, ending at `seq`.
                    let first = seq.saturating_sub(stored.saturating_sub(1));
                    return Ok(Appended::Stored((first..=seq).collect()));
                }
                Answer::Stored { .. } | Answer::Empty if !last => {}
                Answer::Refused { code } if code == WRONG_LAST_SEQUENCE => {
                    return Ok(Appended::Moved);
                }
                Answer::Refused { .. } | Answer::Empty | Answer::Stored { .. } => {
                    return Err(failed(
                        game_id,
                        format!(
                            "nats-server answered a batch publish with {:?}",
                            String::from_utf8_lossy(&answer.payload)
                        ),
                    ));
                }
                Answer::Unreadable(e) => return Err(unavailable(game_id, e)),
            }
        } else {
            client
                .publish_with_headers(subject.to_owned(), headers, payload)
                .await
                .map_err(|e| unavailable(game_id, e))?;
        }
    }
    Err(failed(game_id, "an empty batch"))
}

#[derive(Debug)]
enum Answer {
    /// The batch (or the message) was stored; the batch's last message at `seq`.
    Stored {
        seq: u64,
        count: u64,
    },
    /// An answer with nothing in it (a batch's first message, accepted so far).
    Empty,
    /// An error with this JetStream error code.
    Refused {
        code: u64,
    },
    Unreadable(String),
}

fn read_answer(payload: &[u8]) -> Answer {
    if payload.is_empty() {
        return Answer::Empty;
    }
    let value: serde_json::Value = match serde_json::from_slice(payload) {
        Ok(value) => value,
        Err(e) => return Answer::Unreadable(e.to_string()),
    };
    if let Some(error) = value.get("error") {
        let code = error.get("err_code").and_then(|c| c.as_u64()).unwrap_or(0);
        return Answer::Refused { code };
    }
    match value.get("seq").and_then(|s| s.as_u64()) {
        Some(seq) => Answer::Stored {
            seq,
            count: value.get("count").and_then(|c| c.as_u64()).unwrap_or(1),
        },
        None => Answer::Unreadable(String::from_utf8_lossy(payload).into_owned()),
    }
}
