//! Every service's /metrics count what happened in a short round played on simulated boards:
//! the game service's appended records are the game log's and every observation in the ingest
//! stream is counted once with what became of it (its /healthz and /readyz answer); the arbiter
//! service has folded the log up to its end and reports the alerts open; the broadcast service
//! counts a live connection while it is open; both time the records they read live.

mod support;

use std::collections::BTreeMap;

use async_nats::jetstream;
use boardcast_kit::nats::GAMES_STREAM;
use boardcast_testkit::{ArbiterService, BroadcastService, GameService, TestNats};

/// The samples of `name` in a Prometheus text page, by their labels.
fn samples(page: &str, name: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let labels = series.strip_prefix(name)?;
            (labels.is_empty() || labels.starts_with('{'))
                .then(|| Some((labels.to_owned(), value.parse().ok()?)))?
        })
        .collect()
}

/// The value of the sample of `name` whose labels include `label` (all of them when empty).
fn total(page: &str, name: &str, label: &str) -> f64 {
    samples(page, name)
        .iter()
        .filter(|(labels, _)| labels.contains(label))
        .map(|(_, value)| value)
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_what_happened_in_a_short_round() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(game_service.metrics_url(path)).send();
    assert_eq!(get("/healthz").await?.status(), 200);
    assert_eq!(get("/readyz").await?.status(), 200);

    let broadcast = BroadcastService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;

    support::play(support::PGN, 2, &[], &nats.url(), &game_service.url())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    support::drained(&js).await?;

    let page = get("/metrics").await?.text().await?;
    let records = js
        .get_stream(GAMES_STREAM)
        .await?
        .info()
        .await?
        .state
        .messages;
    let mut observations = 0;
    for partition in boardcast_kit::nats::observation_partitions(&js).await? {
        observations += js
            .get_stream(boardcast_kit::nats::ingest_stream(partition))
            .await?
            .info()
            .await?
            .state
            .messages;
    }
    assert!(records > 0 && observations > 0);
    assert_eq!(
        total(&page, "boardcast_records_appended_total", ""),
        records as f64,
        "every record of the game log, appended by this one instance:\n{page}"
    );
    // Each observation is done with once here (none is retried on one quiet instance).
    assert_eq!(
        total(&page, "boardcast_observations_total", ""),
        observations as f64,
        "{page}"
    );
    assert!(
        total(
            &page,
            "boardcast_observations_total",
            "disposition=\"applied\""
        ) > 0.0
    );
    assert_eq!(
        total(
            &page,
            "boardcast_observations_total",
            "disposition=\"dead_lettered\""
        ),
        0.0,
        "{page}"
    );
    assert_eq!(total(&page, "boardcast_append_conflicts_total", ""), 0.0);
    // Each applied observation's time from NATS to the log, and nothing left waiting.
    assert_eq!(
        total(&page, "boardcast_observation_applied_seconds_count", ""),
        total(
            &page,
            "boardcast_observations_total",
            "disposition=\"applied\""
        ),
        "{page}"
    );
    let lags = samples(&page, "boardcast_ingest_lag");
    assert!(
        !lags.is_empty() && lags.values().all(|lag| *lag == 0.0),
        "{page}"
    );

    // The arbiter service follows the log to its end, and says how many alerts are open.
    let last = js
        .get_stream(GAMES_STREAM)
        .await?
        .info()
        .await?
        .state
        .last_sequence;
    // Not on the dashboard's address, which remote arbiters (and anyone) reach.
    let on_dashboard = http.get(arbiter.url("/metrics")).send().await?;
    let status = on_dashboard.status();
    let text = on_dashboard.text().await?;
    assert!(
        !status.is_success() && !text.contains("boardcast_"),
        "{status}: {text}"
    );
    let arbiter_page = scraped_until(&http, &arbiter.metrics_url("/metrics"), |page| {
        total(page, "boardcast_log_folded_seq", "") == last as f64
    })
    .await?;
    assert_eq!(
        samples(&arbiter_page, "boardcast_alerts_open").len(),
        1,
        "{arbiter_page}"
    );
    // Each record read live is timed from the log to the alerts (the first may be read before
    // the follower knows it is live).
    let timed = total(&arbiter_page, "boardcast_log_to_alerts_seconds_count", "");
    assert!(timed > 0.0 && timed <= records as f64, "{arbiter_page}");

    // A viewer's live connection to the round is counted while it is open.
    let info = support::states(&game_service.url()).await?[0]
        .info
        .clone()
        .expect("set up");
    let live = http
        .get(broadcast.url(&format!(
            "/tournaments/{}/rounds/{}/updates",
            info.tournament_id, info.round
        )))
        .send()
        .await?;
    assert_eq!(live.status(), 200);
    let broadcast_page = scraped_until(&http, &broadcast.metrics_url("/metrics"), |page| {
        total(page, "boardcast_feed_subscribers", "") == 1.0
    })
    .await?;
    // The records folded into the feeds, timed from the log.
    let fed = total(&broadcast_page, "boardcast_log_to_fold_seconds_count", "");
    assert!(fed > 0.0 && fed <= records as f64, "{broadcast_page}");
    drop(live);
    scraped_until(&http, &broadcast.metrics_url("/metrics"), |page| {
        total(page, "boardcast_feed_subscribers", "") == 0.0
    })
    .await?;
    Ok(())
}

/// Scrapes `url` until `done` holds for the page (within 20 s), and returns that page.
async fn scraped_until(
    http: &reqwest::Client,
    url: &str,
    done: impl Fn(&str) -> bool,
) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let page = http.get(url).send().await?.text().await?;
        if done(&page) {
            return Ok(page);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{url} never showed what was expected:\n{page}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
