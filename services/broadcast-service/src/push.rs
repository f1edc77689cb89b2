//! Pushes a round's PGN to a lichess broadcast round whenever the round changes, so that viewers
//! there see a move within a second instead of after lichess's next poll.
//!
//! `POST {lichess}/api/broadcast/round/{id}/push` with the round's games as lichess takes them
//! ([`boardcast_feeds::LichessPusher`]: what the delay has released, nothing newer; completed
//! moves only; at most 100 games, so a larger round is pushed as ranges of boards to several
//! lichess rounds) and the configured bearer token. Lichess answers per game whether it took
//! it; that answer is kept for the operator (`/api/push`). Failures are retried with growing
//! pauses; a newer body replaces one that could not be sent, and a body lichess already took is
//! not sent again.

use std::{
    collections::BTreeMap,
    ops::RangeInclusive,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use boardcast_feeds::{LICHESS_MAX_GAMES, LichessPusher, RoundKey, parse_board_range};
use serde::Serialize;

use crate::projection::{Projection, now_unix_ms};

/// One round, or a range of its boards, pushed to one lichess broadcast round.
#[derive(Debug, Clone)]
pub struct PushTarget {
    pub round: RoundKey,
    /// The boards pushed; all of the round's when `None`.
    pub boards: Option<RangeInclusive<u32>>,
    pub lichess_round_id: String,
}

impl PushTarget {
    /// How the operator names it: `TOURNAMENT/ROUND`, with `:FIRST-LAST` for a range of boards.
    pub fn name(&self) -> String {
        let round = format!("{}/{}", self.round.tournament_id, self.round.round);
        match &self.boards {
            Some(boards) => format!("{round}:{}-{}", boards.start(), boards.end()),
            None => round,
        }
    }
}

impl std::str::FromStr for PushTarget {
    type Err = String;

    /// `TOURNAMENT/ROUND[:FIRST-LAST]=LICHESS_ROUND_ID`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "push target {s:?}: write TOURNAMENT/ROUND=LICHESS_ROUND_ID, e.g. \
                 london-2026/3=AbCdEfGh, or TOURNAMENT/ROUND:FIRST-LAST=LICHESS_ROUND_ID for \
                 boards FIRST to LAST, e.g. open-2026/3:101-200=AbCdEfGh"
            )
        };
        let (round, id) = s.split_once('=').ok_or_else(bad)?;
        let (round, boards) = match round.split_once(':') {
            Some((round, boards)) => (
                round,
                Some(parse_board_range(boards).map_err(|e| format!("push target {s:?}: {e}"))?),
            ),
            None => (round, None),
        };
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
            boards,
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
    /// Shown games this push leaves out, and what to do; empty when it leaves out none.
    pub warning: String,
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
    let name = target.name();
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
    let mut pusher = LichessPusher::default();
    // The round's version whose push lichess took (or that changed nothing lichess is sent).
    let mut pushed_version = 0;
    // The body lichess last took: a change of the round outside what is pushed is not sent.
    let mut taken = String::new();
    let mut failures = 0u32;
    loop {
        // Registered before looking, so that a change in between is not missed.
        let changed = projection.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (version, push) = {
            let feeds = projection.read();
            let version = feeds.round_version(&target.round);
            let push = (version != pushed_version).then(|| {
                pusher.push(
                    &feeds.round_games_with_versions(&target.round),
                    target.boards.as_ref(),
                )
            });
            (version, push)
        };
        let Some(push) = push.filter(|p| p.games > 0) else {
            // Looked at again now and then in any case.
            let _ = tokio::time::timeout(Duration::from_secs(5), changed).await;
            continue;
        };
        let warning = left_out_warning(&target, &push.left_out_boards);
        {
            let mut statuses = statuses.lock().unwrap_or_else(|e| e.into_inner());
            let status = statuses.entry(name.clone()).or_default();
            if status.warning != warning && !warning.is_empty() {
                tracing::warn!(round = %name, "{warning}");
            }
            status.warning = warning;
        }
        if push.text == taken {
            pushed_version = version;
            continue;
        }
        let attempt = now_unix_ms();
        let result = send(&client, &url, &token, push.text.clone()).await;
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
                taken = push.text;
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

/// What the operator is told when shown games are past what one lichess round holds.
fn left_out_warning(target: &PushTarget, left_out_boards: &[u32]) -> String {
    let (Some(first), Some(last)) = (left_out_boards.first(), left_out_boards.last()) else {
        return String::new();
    };
    format!(
        "{} games (boards {first} to {last}) are not pushed: a lichess broadcast round holds at \
         most {LICHESS_MAX_GAMES}. Push the round as ranges of boards to several lichess rounds: \
         --push-lichess {}/{}:FIRST-LAST=LICHESS_ROUND_ID",
        left_out_boards.len(),
        target.round.tournament_id,
        target.round.round
    )
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
        assert!(target.boards.is_none());
        assert_eq!(target.name(), "london-2026/3");
        let range: PushTarget = "open/2:101-200=AbCd".parse().expect("valid");
        assert_eq!(range.boards, Some(101..=200));
        assert_eq!(range.round.tournament_id, "open");
        assert_eq!(range.name(), "open/2:101-200");
        let too_many = "open/2:1-101=AbCd"
            .parse::<PushTarget>()
            .expect_err("over 100");
        assert!(too_many.contains("at most 100"), "{too_many}");
        for bad in [
            "open/2:0-10=AbCd",
            "open/2:10-9=AbCd",
            "open/2:1=AbCd",
            "open/2:a-b=AbCd",
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
