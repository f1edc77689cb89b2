//! Pushes a round's PGN to a lichess broadcast round whenever the round changes, so that viewers
//! there see a move within a second instead of after lichess's next poll.
//!
//! `POST {lichess}/api/broadcast/round/{id}/push` with the round's feed (what the delay has
//! released, nothing newer) and the configured bearer token. Lichess answers per game whether it
//! took it; that answer is kept for the operator (`/api/push`). Failures are retried with growing
//! pauses; a newer body replaces one that could not be sent.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use boardcast_feeds::RoundKey;
use serde::Serialize;

use crate::projection::{Projection, now_unix_ms};

/// One round pushed to one lichess broadcast round.
#[derive(Debug, Clone)]
pub struct PushTarget {
    pub round: RoundKey,
    pub lichess_round_id: String,
}

impl std::str::FromStr for PushTarget {
    type Err = String;

    /// `TOURNAMENT/ROUND=LICHESS_ROUND_ID`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "push target {s:?}: write TOURNAMENT/ROUND=LICHESS_ROUND_ID, e.g. \
                 london-2026/3=AbCdEfGh"
            )
        };
        let (round, id) = s.split_once('=').ok_or_else(bad)?;
        let (tournament, number) = round.rsplit_once('/').ok_or_else(bad)?;
        let number = number.parse().map_err(|_| bad())?;
        let id_ok = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric());
        if tournament.is_empty() || !id_ok {
            return Err(bad());
        }
        Ok(PushTarget {
            round: RoundKey {
                tournament_id: tournament.to_owned(),
                round: number,
            },
            lichess_round_id: id.to_owned(),
        })
    }
}

/// What the last push of a round brought, for the operator.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PushStatus {
    pub lichess_round_id: String,
    /// The round's version last sent and taken (0 = nothing yet).
    pub pushed_version: u64,
    pub last_attempt_unix_ms: i64,
    pub last_success_unix_ms: i64,
    /// Why the last attempt failed; empty when it succeeded.
    pub error: String,
    /// Lichess's answer per game: moves taken, or why the game was refused.
    pub games: Vec<GameStatus>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GameStatus {
    pub white: String,
    pub black: String,
    pub round: String,
    pub moves: Option<u64>,
    pub error: Option<String>,
}

pub type PushStatuses = Arc<Mutex<BTreeMap<String, PushStatus>>>;

/// The pause after the n-th failure in a row: 1 s, 2 s, 4 s … at most a minute.
fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.min(6)).min(Duration::from_secs(60))
}

/// Pushes one round for as long as the service runs.
pub async fn push_round(
    projection: Arc<Projection>,
    target: PushTarget,
    lichess_url: String,
    token: String,
    statuses: PushStatuses,
) {
    let name = format!("{}/{}", target.round.tournament_id, target.round.round);
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .user_agent(concat!("boardcast/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("cannot make an HTTP client for the lichess push: {e}");
            return;
        }
    };
    let url = format!(
        "{}/api/broadcast/round/{}/push",
        lichess_url.trim_end_matches('/'),
        target.lichess_round_id
    );
    let mut pushed_version = 0;
    let mut failures = 0u32;
    loop {
        // Registered before looking, so that a change in between is not missed.
        let changed = projection.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (version, body) = {
            let feeds = projection.read();
            (
                feeds.round_version(&target.round),
                feeds.round_pgn(&target.round),
            )
        };
        let Some(body) = body.filter(|_| version != pushed_version) else {
            // Looked at again now and then in any case.
            let _ = tokio::time::timeout(Duration::from_secs(5), changed).await;
            continue;
        };
        let attempt = now_unix_ms();
        let result = send(&client, &url, &token, body.text.clone()).await;
        {
            let mut statuses = statuses.lock().unwrap_or_else(|e| e.into_inner());
            let status = statuses.entry(name.clone()).or_default();
            status.lichess_round_id = target.lichess_round_id.clone();
            status.last_attempt_unix_ms = attempt;
            match &result {
                Ok(games) => {
                    status.pushed_version = version;
                    status.last_success_unix_ms = attempt;
                    status.error.clear();
                    status.games = games.clone();
                }
                Err(e) => status.error = format!("{e:#}"),
            }
        }
        match result {
            Ok(games) => {
                pushed_version = version;
                failures = 0;
                for game in games.iter().filter(|g| g.error.is_some()) {
                    tracing::warn!(
                        round = %name, white = %game.white, black = %game.black,
                        "lichess refused a game: {}", game.error.as_deref().unwrap_or_default()
                    );
                }
            }
            Err(e) => {
                tracing::warn!(round = %name, "pushing to lichess: {e:#}");
                tokio::time::sleep(backoff(failures)).await;
                failures = failures.saturating_add(1);
            }
        }
    }
}

/// One push; the games lichess reports on.
async fn send(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: String,
) -> anyhow::Result<Vec<GameStatus>> {
    let response = client
        .post(url)
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(body)
        .send()
        .await
        .context("sending the round")?;
    let status = response.status();
    let text = response.text().await.context("reading lichess's answer")?;
    if !status.is_success() {
        anyhow::bail!(
            "lichess answered {status}: {}",
            text.chars().take(300).collect::<String>()
        );
    }
    let answer: serde_json::Value =
        serde_json::from_str(&text).context("lichess's answer is not JSON")?;
    let games = answer["games"].as_array().cloned().unwrap_or_default();
    Ok(games
        .iter()
        .map(|g| {
            let tag = |name: &str| g["tags"][name].as_str().unwrap_or_default().to_owned();
            GameStatus {
                white: tag("White"),
                black: tag("Black"),
                round: tag("Round"),
                moves: g["moves"].as_u64(),
                error: g["error"].as_str().map(str::to_owned),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_targets_are_read_or_refused_with_the_expected_form() {
        let target: PushTarget = "london-2026/3=AbCd1234".parse().expect("valid");
        assert_eq!(target.round.tournament_id, "london-2026");
        assert_eq!(target.round.round, 3);
        assert_eq!(target.lichess_round_id, "AbCd1234");
        for bad in [
            "london-2026=AbCd",
            "london/x=AbCd",
            "/3=AbCd",
            "t/3=",
            "t/3=../x",
        ] {
            assert!(bad.parse::<PushTarget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_pause_grows_to_a_minute() {
        assert_eq!(backoff(0), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(8));
        assert_eq!(backoff(30), Duration::from_secs(60));
    }
}
