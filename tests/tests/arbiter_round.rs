//! A round played with injected irregularities, from the boards to the arbiter's rulings, every
//! part a real process on NATS with users and permissions: the alerts are exactly those the
//! simulator's record promises, each once; an arbiter's penalty confirmation, time addition and
//! position restore show in the game's state, its log (with the arbiter's name) and the broadcast
//! feed; a claim's verdict is the rules library's.

mod support;

use std::{collections::BTreeMap, time::Duration};

use anyhow::{Context as _, bail, ensure};
use boardcast_access::{Grant, Role as AccessRole};
use boardcast_kit::nats_access::Role;
use boardcast_rules::{
    claims::{ClaimVerdict as RulesVerdict, DrawClaim, evaluate_claim},
    pgn::{AnnotatedGame, parse_san, read_annotated_games},
    repetition::RepetitionTracker,
};
use boardcast_schema::game::v1::{GetGameRequest, game_event::Kind};
use boardcast_testkit::{
    ArbiterService, BroadcastService, GameService, TEST_PASSWORD, TestNats, TestUsers,
    arbiter::ArbiterSession, secure_nats::SecureNats,
};
use serde_json::{Value, json};

const TOURNAMENT: &str = "arbiters-open";

/// Board 1: the Berlin left unfinished, for the rulings. Board 2: the Berlin to its agreed draw.
/// Board 3: knights out and back until Black can claim a threefold repetition with 4... Ng8.
const PGN: &str = "[Event \"Arbiters Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\
    [Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 4. O-O Nxe4 5. Re1 Nd6 6. Nxe5 Be7 \
    7. Bf1 Nxe5 8. Rxe5 O-O *\n\n\
    [Event \"Arbiters Open\"]\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n\
    [Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 4. O-O Nxe4 5. Re1 Nd6 6. Nxe5 Be7 \
    7. Bf1 Nxe5 8. Rxe5 O-O 1/2-1/2\n\n\
    [Event \"Arbiters Open\"]\n[Round \"1.3\"]\n[White \"E\"]\n[Black \"F\"]\n\
    [Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 *\n";

/// One of every kind of incident the simulator injects, spread over the boards.
const INCIDENTS: &str = "board=1:press-without-move@ply=5,board=2:battery-low@ply=3,\
    board=2:irregular-placement@ply=7,board=2:lost-observations@ply=12,\
    board=3:offline@ply=4:for=30s,board=1:touched-piece@ply=6";

/// The hall: NATS with users and permissions, the three services, and the round played on it.
struct Hall {
    nats: SecureNats,
    game_service: GameService,
    arbiter: ArbiterService,
    broadcast: BroadcastService,
    /// What `boardcast simulate --incident-record` wrote.
    record: Value,
}

impl Hall {
    async fn play() -> anyhow::Result<Hall> {
        let nats = TestNats::start_secured(&[])?;
        let game_service = GameService::start(&nats.url_for(&Role::GameService)?)?;
        let arbiter =
            ArbiterService::start(&nats.url_for(&Role::ArbiterService)?, &game_service.url())?;
        let broadcast = BroadcastService::start(&nats.url_for(&Role::BroadcastService)?)?;
        let dir = tempfile::tempdir()?;
        let record_path = dir.path().join("incidents.json");
        let record_arg = record_path.to_string_lossy();
        support::play(
            PGN,
            3,
            &[
                "--time-control",
                "5400+30",
                "--incidents",
                INCIDENTS,
                "--incident-record",
                &record_arg,
            ],
            &nats.url_for(&Role::Simulator)?,
            &game_service.url(),
        )?;
        let record = serde_json::from_str(&std::fs::read_to_string(&record_path)?)?;
        // Every observation decided before anyone looks.
        let admin = boardcast_kit::nats::connect(&nats.url_for(&Role::Admin)?, "test").await?;
        support::drained(&async_nats::jetstream::new(admin)).await?;
        let hall = Hall {
            nats,
            game_service,
            arbiter,
            broadcast,
            record,
        };
        Ok(hall)
    }

    fn game_ids(&self) -> Vec<String> {
        self.record["boards"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["game_id"].as_str().map(str::to_owned))
            .collect()
    }

    /// The game's last log entry as the game service has it.
    async fn last_game_seq(&self, game_id: &str) -> anyhow::Result<u64> {
        let mut client = self.game_service.client().await?;
        Ok(client
            .get_game(GetGameRequest {
                game_id: game_id.into(),
            })
            .await?
            .into_inner()
            .last_game_seq)
    }

    /// Waits until the arbiter service has followed each game's log to its last entry.
    async fn caught_up(&self, session: &ArbiterSession) -> anyhow::Result<()> {
        for game_id in self.game_ids() {
            let last = self.last_game_seq(&game_id).await?;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let seen = session
                    .get(&format!("/api/games/{game_id}"))
                    .await
                    .ok()
                    .and_then(|g| g["board"]["last_game_seq"].as_u64());
                if seen == Some(last) {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    bail!("the arbiter service shows {game_id} at {seen:?}, the log at {last}");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// The round's PGN from the broadcast service, once `ready` holds for it.
    async fn feed(
        &self,
        ready: impl Fn(&[AnnotatedGame]) -> bool,
    ) -> anyhow::Result<Vec<AnnotatedGame>> {
        let url = self
            .broadcast
            .url(&format!("/tournaments/{TOURNAMENT}/rounds/1.pgn"));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let response = reqwest::get(&url).await?;
            let games = if response.status().is_success() {
                read_annotated_games(&response.text().await?)?
            } else {
                Vec::new()
            };
            if ready(&games) {
                return Ok(games);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("the feed never showed what was expected: {games:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// (game, kind, ply) of each alert, sorted.
fn alert_keys(alerts: &[Value]) -> Vec<(String, String, u64)> {
    let mut keys: Vec<(String, String, u64)> = alerts
        .iter()
        .map(|a| {
            (
                a["game_id"].as_str().unwrap_or_default().to_owned(),
                a["kind"].as_str().unwrap_or_default().to_owned(),
                a["ply"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_with_injected_incidents_raises_exactly_the_recorded_alerts_each_once()
-> anyhow::Result<()> {
    let hall = Hall::play().await?;
    let session = hall.arbiter.login("admin", TEST_PASSWORD).await?;
    hall.caught_up(&session).await?;

    let mut expected: Vec<(String, String, u64)> = Vec::new();
    for board in hall.record["boards"].as_array().context("boards")? {
        let game_id = board["game_id"].as_str().context("game_id")?;
        for incident in board["incidents"].as_array().context("incidents")? {
            for alert in incident["expected_alerts"].as_array().context("alerts")? {
                expected.push((
                    game_id.to_owned(),
                    alert["kind"].as_str().context("kind")?.to_owned(),
                    alert["ply"].as_u64().context("ply")?,
                ));
            }
        }
    }
    ensure!(
        expected.len() == 7,
        "the record lists the incidents' alerts: {expected:?}"
    );
    // Not an incident: Black can claim a threefold repetition with the intended 4... Ng8 once
    // White has played 4. Ng1 (ply 7) on board 3.
    expected.push((
        format!("{TOURNAMENT}-r1-b3"),
        "threefold_available".into(),
        7,
    ));
    expected.sort();

    let answer = session.get("/api/alerts?all=true").await?;
    let alerts = answer["alerts"].as_array().context("alerts")?;
    assert_eq!(alert_keys(alerts), expected, "{alerts:#?}");
    // Each rests on log entries and names the article concerned.
    for alert in alerts {
        let rests_on = alert["rests_on"].as_array().context("rests_on")?;
        assert!(!rests_on.is_empty(), "{alert}");
        // The equipment's troubles concern no article of the Laws.
        let equipment = [
            "battery_low",
            "board_not_responding",
            "observations_missing",
        ];
        let article = alert["article"].as_str().unwrap_or_default();
        let kind = alert["kind"].as_str().unwrap_or_default();
        assert_eq!(article.is_empty(), equipment.contains(&kind), "{alert}");
    }
    Ok(())
}

/// The arbiter actions in a game's log as (action, actor), read from the game service.
async fn arbiter_actions(hall: &Hall, game_id: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut client = hall.game_service.client().await?;
    let events = support::game_events(&mut client, game_id).await?;
    Ok(events
        .into_iter()
        .filter_map(|event| {
            let actor = event.provenance.as_ref()?.actor.clone();
            match event.kind? {
                Kind::Arbiter(action) => {
                    let name = format!("{:?}", action.action?);
                    let name = name.split('(').next().unwrap_or_default().to_owned();
                    Some((name, actor))
                }
                Kind::PositionRestored(_) => Some(("PositionRestored".to_owned(), actor)),
                _ => None,
            }
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_arbiters_rulings_show_in_the_state_the_log_and_the_feed() -> anyhow::Result<()> {
    let hall = Hall::play().await?;
    // An arbiter of board 1 only.
    let token = TestUsers::shared()?.add(
        "ia-jones",
        &[Grant {
            tournament: TOURNAMENT.into(),
            role: AccessRole::Arbiter,
            boards: vec![1],
        }],
    )?;
    hall.game_service.wait_for_user(&token).await?;
    let session = hall.arbiter.login("ia-jones", TEST_PASSWORD).await?;
    hall.caught_up(&session).await?;
    let game_id = format!("{TOURNAMENT}-r1-b1");
    let game_path = format!("/api/games/{game_id}");
    let act = |action: Value, resolves: Vec<u64>| {
        let session = &session;
        let path = format!("{game_path}/act");
        async move {
            let request_id = session.request_id().await?;
            session
                .post(
                    &path,
                    &json!({ "request_id": request_id, "resolves_alerts": resolves,
                             "action": action }),
                )
                .await
        }
    };

    // The penalty the edition proposes for White's illegal move (a press without a move at
    // ply 5), confirmed; the illegal-move alert resolved by it.
    let detail = session.get(&game_path).await?;
    let pending = detail["pending_penalties"]
        .as_array()
        .context("pending penalties")?;
    let [penalty] = &pending[..] else {
        bail!("one illegal move to rule on: {pending:?}");
    };
    assert_eq!(
        (penalty["ply"].as_u64(), penalty["offender"].as_str()),
        (Some(5), Some("white"))
    );
    let illegal_seq = penalty["game_seq"].as_u64().context("game_seq")?;
    let alert = detail["alerts"]
        .as_array()
        .context("alerts")?
        .iter()
        .find(|a| a["kind"] == "illegal_move")
        .context("the illegal-move alert")?;
    let raised_at = alert["raised_at"].as_u64().context("raised_at")?;
    let black_before = detail["board"]["clocks"]["black_ms"]
        .as_u64()
        .context("Black's clock")?;
    let answer = act(
        json!({ "type": "penalty", "illegal_move_game_seq": illegal_seq, "confirmed": true }),
        vec![raised_at],
    )
    .await?;
    assert!(
        answer["recorded"].as_array().is_some_and(|r| !r.is_empty()),
        "the answer says what was recorded: {answer}"
    );
    let detail = session.get(&game_path).await?;
    assert_eq!(detail["pending_penalties"], json!([]));
    let alert = detail["alerts"]
        .as_array()
        .context("alerts")?
        .iter()
        .find(|a| a["raised_at"] == raised_at)
        .context("the alert")?;
    assert_eq!(
        (&alert["status"], &alert["status_by"]),
        (&json!("resolved"), &json!("ia-jones"))
    );
    // The opponent's bonus on the clock the arbiter sees.
    let black_after = detail["board"]["clocks"]["black_ms"]
        .as_u64()
        .context("Black's clock")?;
    assert_eq!(
        black_after,
        black_before + 120_000,
        "2 minutes for Black (7.5.5)"
    );
    // Viewers read the ruling in fixed words, without the arbiter's name.
    let confirmed = "illegal move: the arbiter confirmed the penalty".to_owned();
    hall.feed(|games| {
        games
            .first()
            .is_some_and(|g| g.notes.iter().any(|n| n.arbiter_notes.contains(&confirmed)))
    })
    .await?;

    // A minute for White.
    let white_before = session.get(&game_path).await?["board"]["clocks"]["white_ms"]
        .as_u64()
        .context("White's clock")?;
    act(
        json!({ "type": "clocks", "white_added": 60_000, "reason": "clock malfunction" }),
        vec![],
    )
    .await?;
    let detail = session.get(&game_path).await?;
    let white = detail["board"]["clocks"]["white_ms"]
        .as_u64()
        .context("White's clock")?;
    // The time, not the reason.
    let added = "the arbiter adjusted the clocks: +60 s for White".to_owned();
    hall.feed(|games| {
        games
            .first()
            .is_some_and(|g| g.notes.iter().any(|n| n.arbiter_notes.contains(&added)))
    })
    .await?;
    assert_eq!(white, white_before + 60_000, "a minute for White");

    // The position after 5. Re1 restored, with the clocks set for it.
    act(
        json!({ "type": "restore", "ply": 9, "reason": "the illegal move's aftermath",
                "white_remaining": "1:20:00", "black_remaining": "1:25:00" }),
        vec![],
    )
    .await?;
    let state = hall
        .game_service
        .client()
        .await?
        .get_game(GetGameRequest {
            game_id: game_id.clone(),
        })
        .await?
        .into_inner();
    assert_eq!(state.moves.len(), 9, "the game goes on from ply 9");
    let detail = session.get(&game_path).await?;
    assert_eq!(detail["board"]["completed_plies"], 9);
    assert_eq!(
        (
            detail["board"]["clocks"]["white_ms"].as_u64(),
            detail["board"]["clocks"]["black_ms"].as_u64()
        ),
        (Some(80 * 60_000), Some(85 * 60_000))
    );
    let games = hall
        .feed(|games| games.first().is_some_and(|g| g.game.moves.len() == 9))
        .await?;
    let notes: Vec<&String> = games[0]
        .notes
        .iter()
        .flat_map(|n| &n.arbiter_notes)
        .collect();
    assert!(
        notes.iter().any(|n| n.as_str()
            == "the arbiter restored the position after ply 9; White's clock set to 1:20:00; \
                Black's clock set to 1:25:00"),
        "the restore is in the score, without the arbiter's name or reason: {notes:?}"
    );

    // The log names the arbiter for every ruling.
    assert_eq!(
        arbiter_actions(&hall, &game_id).await?,
        [
            ("Penalty".to_owned(), "ia-jones".to_owned()),
            ("Clocks".to_owned(), "ia-jones".to_owned()),
            ("Restore".to_owned(), "ia-jones".to_owned()),
            ("PositionRestored".to_owned(), "ia-jones".to_owned()),
        ]
    );
    drop(hall.nats);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_through_the_dashboard_gets_the_rules_librarys_verdict() -> anyhow::Result<()> {
    let hall = Hall::play().await?;
    let session = hall.arbiter.login("admin", TEST_PASSWORD).await?;
    hall.caught_up(&session).await?;
    let game_id = format!("{TOURNAMENT}-r1-b3");

    // The rules library on the same moves.
    let game = boardcast_rules::pgn::read_games(PGN)?.remove(2);
    let rules = boardcast_game::rules_of(&boardcast_schema::game::v1::GameStarted {
        edition: "fide-2023".into(),
        ..Default::default()
    })?;
    let mut pos = game.start_position()?;
    let mut history = RepetitionTracker::new(rules.edition, &pos, 0);
    for m in &game.moves {
        let mv = parse_san(&pos, &m.san).context("a legal move")?;
        history.play(mv, 0)?;
        pos = history.position().clone();
    }
    let mut claims = BTreeMap::new();
    for intended in ["", "Ng8", "Nc6"] {
        let claim = DrawClaim {
            kind: boardcast_rules::claims::ClaimKind::Threefold,
            intended_move: match intended {
                "" => None,
                san => Some(parse_san(&pos, san).context("a legal intended move")?),
            },
            claimant_has_moved: false,
            claimant_has_touched: false,
            claimant_remaining_ms: 0,
        };
        claims.insert(intended, evaluate_claim(&rules, &history, &claim)?);
    }

    for (intended, report) in claims {
        let verdict = session
            .post(
                &format!("/api/games/{game_id}/claim"),
                &json!({ "kind": "threefold", "intended_move": intended }),
            )
            .await?;
        let name = match report.verdict {
            RulesVerdict::Upheld => "upheld",
            RulesVerdict::Rejected { .. } => "rejected",
            RulesVerdict::RightLost => "right_lost",
        };
        assert_eq!(verdict["verdict"], name, "{intended:?}: {verdict}");
        assert_eq!(verdict["article"], report.article, "{intended:?}");
        // What ruling it incorrect would cost, in words (Article 9.5), by the game's time
        // control (the detail's figures).
        let penalty = verdict["penalty_if_rejected"].as_str().unwrap_or_default();
        match &report.verdict {
            RulesVerdict::Rejected {
                intended_move_must_be_played,
                ..
            } => {
                let bonus_ms = verdict["detail"]["verdict"]["penalty"]["opponent_bonus_ms"]
                    .as_u64()
                    .context("the penalty's time")?;
                assert!(bonus_ms > 0, "{verdict}");
                let added = format!("{} s added to the opponent's clock", bonus_ms / 1000);
                assert!(penalty.starts_with(&added), "{intended:?}: {verdict}");
                if let Some(uci) = intended_move_must_be_played {
                    assert!(
                        penalty.ends_with(&format!("the written move {uci} must be played")),
                        "{intended:?}: {verdict}"
                    );
                }
            }
            _ => assert_eq!(penalty, "", "{intended:?}: {verdict}"),
        }
        let plies: Vec<u64> = verdict["occurrences"]
            .as_array()
            .context("occurrences")?
            .iter()
            .filter_map(|o| o["ply"].as_u64())
            .collect();
        let expected: Vec<u64> = report
            .evidence
            .occurrences
            .iter()
            .map(|o| u64::from(o.ply))
            .collect();
        assert_eq!(plies, expected, "{intended:?}");
    }
    Ok(())
}
