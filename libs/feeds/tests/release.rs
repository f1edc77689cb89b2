//! The delay and the feeds, on logs written by the game aggregate itself; live updates as
//! deltas: each change of a shown game, applied to the copy a viewer has of the game before it,
//! gives the game as the feeds now show it, nothing that shows nothing new is an update, and a
//! copy at another version is told so, not changed.

use boardcast_feeds::{
    Applied, Delays, DeltaError, Feeds, LichessPusher, RoundKey, apply_delta, national_line,
};
use boardcast_game::{
    Game, NewEvent,
    events::{
        AdjustClocks, Annotation, ArbiterAction, DeclareResult, EnterMove, GameEventRecord,
        GameResult, GameStarted, MoveCompleted, MoveProvisional, Player, Provenance,
        RestorePosition, Side, SideAction, Source, TimeControl, TimePeriod, arbiter_action::Action,
        game_event::Kind,
    },
    signing::{RecordSigner, TrustedKeys},
};
use boardcast_rules::{notation::Language, pgn::read_games};
use serde_json::Value;

const MINUTE: i64 = 60_000;
const T0: i64 = 1_800_000_000_000;

/// A game played by arbiter entries, with the records as the log holds them.
struct Played {
    game: Game,
    records: Vec<GameEventRecord>,
}

/// The records here are written by `Game::record`, which does not sign: accepted as a log
/// written before signing (the signatures have their own test below).
fn unsigned_logs() -> TrustedKeys {
    TrustedKeys::default().accepting_unsigned(true)
}

/// Logs whose records `hall` signed, and only those.
fn signed_by(hall: &RecordSigner) -> TrustedKeys {
    TrustedKeys::new([hall.public_key().clone()])
}

fn key(round: u32) -> RoundKey {
    RoundKey {
        tournament_id: "open".into(),
        round,
    }
}

fn start(round: u32, board: u32, at: i64) -> Played {
    let info = GameStarted {
        tournament_id: "open".into(),
        round,
        board_number: board,
        board_id: format!("b{board}"),
        white: Some(Player {
            name: format!("White {board}"),
            title: "GM".into(),
            fide_id: "1503014".into(),
            rating: 2830,
            federation: "NOR".into(),
            ..Default::default()
        }),
        black: Some(Player {
            name: format!("Black {board}"),
            ..Default::default()
        }),
        time_control: Some(TimeControl {
            periods: vec![TimePeriod {
                base_ms: 5_400_000,
                increment_ms: 30_000,
                ..Default::default()
            }],
        }),
        event_name: "Open".into(),
        ..Default::default()
    };
    let (id, started) = Game::decide_start(&info, "operator", "").expect("valid set-up");
    let records = Game::record(None, &id, vec![started], at);
    let game = Game::from_first_record(&records[0]).expect("folds");
    Played { game, records }
}

impl Played {
    fn act(&mut self, action: Action, at: i64) -> Vec<GameEventRecord> {
        let events = self
            .game
            .decide_arbiter(
                &ArbiterAction {
                    action: Some(action),
                    ..Default::default()
                },
                "ia-smith",
                "",
            )
            .expect("accepted");
        self.record(events, at)
    }

    /// Records `events` at `at` as the game service would, applied to the game.
    fn record(&mut self, events: Vec<NewEvent>, at: i64) -> Vec<GameEventRecord> {
        let records = Game::record(Some(&self.game), self.game.game_id(), events, at);
        for r in &records {
            self.game.apply(r).expect("applies");
        }
        self.records.extend(records.iter().cloned());
        records
    }

    fn play(&mut self, san: &str, at: i64) -> Vec<GameEventRecord> {
        self.act(Action::Move(EnterMove { san: san.into() }), at)
    }
}

/// A move the board shows, not confirmed by a press.
fn provisional(ply: u32, uci: &str, san: &str, replaces_uci: &str) -> NewEvent {
    NewEvent {
        kind: Kind::MoveProvisional(MoveProvisional {
            ply,
            uci: uci.into(),
            san: san.into(),
            replaces_uci: replaces_uci.into(),
        }),
        provenance: Provenance {
            source: Source::BoardSensor as i32,
            ..Default::default()
        },
    }
}

/// The press completing a move, with the clocks it read (White's, Black's).
fn pressed(ply: u32, uci: &str, san: &str, clocks: (u64, u64)) -> NewEvent {
    NewEvent {
        kind: Kind::MoveCompleted(MoveCompleted {
            ply,
            uci: uci.into(),
            san: san.into(),
            white_remaining_ms: Some(clocks.0),
            black_remaining_ms: Some(clocks.1),
            ..Default::default()
        }),
        provenance: Provenance {
            source: Source::Clock as i32,
            ..Default::default()
        },
    }
}

fn feed(feeds: &mut Feeds, records: &[GameEventRecord]) {
    for r in records {
        feeds.accept(r).expect("a good record");
    }
}

fn shown_moves(feeds: &Feeds, game_id: &str) -> usize {
    feeds.game(game_id).map_or(0, |g| g.moves.len())
}

#[test]
fn nothing_recorded_after_now_minus_the_delay_is_visible_anywhere() {
    let mut feeds = Feeds::new(Delays::parse(["10"]).expect("valid"), unsigned_logs());
    let mut game = start(1, 1, T0);
    for (i, san) in ["e4", "e5", "Nf3", "Nc6"].iter().enumerate() {
        game.play(san, T0 + (i as i64 + 1) * MINUTE);
    }
    feed(&mut feeds, &game.records);
    let id = game.game.game_id().to_owned();

    // Before the start is due, the game does not exist for viewers.
    feeds.release(T0 + 10 * MINUTE - 1);
    assert!(feeds.rounds().is_empty());
    assert!(feeds.game(&id).is_none());
    assert!(feeds.round_pgn(&key(1)).is_none());
    assert!(feeds.game_json(&id).is_none());

    let mut previous_etag = String::new();
    for shown in 0..=4 {
        let now = T0 + 10 * MINUTE + shown as i64 * MINUTE;
        feeds.release(now);
        assert_eq!(shown_moves(&feeds, &id), shown, "at +{shown} min");
        let body = feeds.round_pgn(&key(1)).expect("the round is shown");
        let games = read_games(&body.text).expect("valid PGN");
        assert_eq!(games[0].moves.len(), shown);
        assert!(body.last_modified_unix_ms <= now - 10 * MINUTE);
        assert_ne!(body.etag, previous_etag, "a new move is a new ETag");
        previous_etag = body.etag.clone();
        let (_, json) = feeds.game_json(&id).expect("shown");
        let view: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        assert_eq!(view["moves"].as_array().map(Vec::len), Some(shown));
    }
}

#[test]
fn a_delayed_round_is_released_in_steps_and_a_copy_is_fresh_until_the_next() {
    let delay = 10 * MINUTE;
    let step = boardcast_feeds::RELEASE_STEP_MS;
    let mut feeds = Feeds::new(Delays::parse(["10"]).expect("valid"), unsigned_logs());
    let mut quiet = Feeds::new(Delays::parse(["10"]).expect("valid"), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut quiet, &game.records.clone());
    // 1. e4 recorded a second into a step: shown with the rest of its step, at its end.
    game.play("e4", T0 + MINUTE + 1_000);
    feed(&mut feeds, &game.records);
    let shown_at = T0 + MINUTE + step + delay;
    feeds.release(shown_at - 1);
    assert_eq!(shown_moves(&feeds, &id), 0);
    feeds.release(shown_at);
    assert_eq!(shown_moves(&feeds, &id), 1);
    // A copy stays the newest until the release point's next step, and how long says nothing
    // of what is held back: the same for a round with a move about to show and one without.
    for (steps, into_step) in [(30, 0), (31, 1), (32, 1_200), (33, step - 1)] {
        let now = T0 + delay + steps * step + into_step;
        // Asked before this step's release ran, a copy is the previous step's: already stale.
        feeds.release(now - step);
        quiet.release(now - step);
        assert_eq!(feeds.round_fresh_for_ms(&key(1), now), 0);
        assert_eq!(quiet.round_fresh_for_ms(&key(1), now), 0);
        feeds.release(now);
        quiet.release(now);
        let fresh = (step - into_step) as u64;
        assert_eq!(feeds.round_fresh_for_ms(&key(1), now), fresh);
        assert_eq!(quiet.round_fresh_for_ms(&key(1), now), fresh);
    }
    // Without a delay (or a short one) the round is released continuously: never cacheable.
    let mut undelayed = Feeds::new(Delays::none(), unsigned_logs());
    feed(&mut undelayed, &game.records);
    undelayed.release(T0 + 5 * MINUTE);
    assert_eq!(undelayed.round_fresh_for_ms(&key(1), T0 + 5 * MINUTE), 0);
    let short = Feeds::new(Delays::parse(["19s"]).expect("valid"), unsigned_logs());
    assert_eq!(short.round_fresh_for_ms(&key(1), T0 + 1_234), 0);
}

#[test]
fn raising_the_delay_takes_nothing_back_and_lowering_it_releases_what_is_due() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut feeds, &game.records.clone());
    feed(&mut feeds, &game.play("d4", T0 + MINUTE));
    feeds.release(T0 + MINUTE);
    assert_eq!(shown_moves(&feeds, &id), 1);
    let before = feeds.round_pgn(&key(1)).expect("shown");

    feeds.set_delays(Delays::parse(["30"]).expect("valid"));
    feed(&mut feeds, &game.play("d5", T0 + 2 * MINUTE));
    feeds.release(T0 + 3 * MINUTE);
    assert_eq!(shown_moves(&feeds, &id), 1, "d4 stays, d5 waits");
    assert_eq!(feeds.round_pgn(&key(1)).expect("shown"), before);
    feeds.release(T0 + 2 * MINUTE + 30 * MINUTE - 1);
    assert_eq!(shown_moves(&feeds, &id), 1);
    assert_eq!(feeds.next_due(), Some(T0 + 32 * MINUTE));

    feeds.set_delays(Delays::parse(["open=5"]).expect("valid"));
    feeds.release(T0 + 7 * MINUTE);
    assert_eq!(shown_moves(&feeds, &id), 2, "due under the lower delay");
}

#[test]
fn rounds_list_games_in_board_order_whatever_order_they_started_in() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    for board in [3, 1, 2] {
        let game = start(4, board, T0);
        feed(&mut feeds, &game.records);
    }
    feeds.release(T0);
    let boards: Vec<u32> = feeds
        .round_games(&key(4))
        .iter()
        .map(|g| g.info.board_number)
        .collect();
    assert_eq!(boards, [1, 2, 3]);
    let body = feeds.round_pgn(&key(4)).expect("shown");
    let games = read_games(&body.text).expect("valid PGN");
    let rounds: Vec<&str> = games.iter().filter_map(|g| g.tag("Round")).collect();
    assert_eq!(rounds, ["4.1", "4.2", "4.3"]);
    assert_eq!(games[0].tag("Board"), Some("1"));
    assert_eq!(games[0].tag("WhiteTitle"), Some("GM"));
    assert_eq!(games[0].tag("WhiteFideId"), Some("1503014"));
    assert_eq!(games[0].tag("WhiteElo"), Some("2830"));
    assert_eq!(games[0].tag("TimeControl"), Some("5400+30"));
    assert_eq!(games[0].tag("BlackTitle"), None, "no empty tags");
    // Each game carries its id, which no renumbering of boards changes.
    let ids: Vec<&str> = games.iter().filter_map(|g| g.tag("GameId")).collect();
    let expected: Vec<&str> = feeds
        .round_games(&key(4))
        .iter()
        .map(|g| g.game_id.as_str())
        .collect();
    assert_eq!(ids, expected);
    assert_eq!(ids.len(), 3);
}

#[test]
fn time_added_by_the_arbiter_shows_in_the_clock_tags_at_once_and_on_lichess() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    for san in ["e4", "e5", "Nf3"] {
        game.play(san, T0 + 1);
    }
    game.act(
        Action::Clocks(AdjustClocks {
            white_remaining_ms: Some(3_600_000),
            black_remaining_ms: Some(3_000_000),
            ..Default::default()
        }),
        T0 + 2,
    );
    // At the same moment: Black's clock, running, has used nothing since it was set.
    game.act(
        Action::Clocks(AdjustClocks {
            black_added_ms: 120_000,
            reason: "penalty".into(),
            ..Default::default()
        }),
        T0 + 2,
    );
    feed(&mut feeds, &game.records);
    feeds.release(T0 + 3);
    let body = feeds.game_pgn(&id).expect("shown");
    let pgn = &read_games(&body.text).expect("valid")[0];
    assert_eq!(pgn.tag("WhiteClock"), Some("1:00:00"));
    assert_eq!(pgn.tag("BlackClock"), Some("0:52:00"));
    let (_, json) = feeds.game_json(&id).expect("shown");
    let view: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(view["clocks"]["running"], "black");
    assert_eq!(view["clocks"]["as_of_unix_ms"], T0 + 2);
    // Lichess reads a side's clock off its last move (and ignores the tags once that move has
    // one): White's Nf3, Black's e5.
    let push = LichessPusher::default().push(&feeds.round_games_with_versions(&key(1)), None);
    let pgn = &read_games(&push.text).expect("valid PGN")[0];
    let clocks: Vec<_> = pgn
        .moves
        .iter()
        .map(|m| (m.san.as_str(), m.clock_ms))
        .collect();
    assert_eq!(
        clocks,
        [
            ("e4", None),
            ("e5", Some(3_120_000)),
            ("Nf3", Some(3_600_000))
        ]
    );
}

/// A move entered by the arbiter carries no reading: the mover's clock ran until it was
/// entered, so viewers and lichess see it counted down to then, not as it stood before, and the
/// opponent's clock runs from then.
#[test]
fn a_move_without_a_reading_gets_the_movers_clock_as_it_ran_until_then() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    game.play("e4", T0 + 1_000);
    game.play("e5", T0 + 2_000);
    game.act(
        Action::Clocks(AdjustClocks {
            white_remaining_ms: Some(3_600_000),
            black_remaining_ms: Some(3_600_000),
            ..Default::default()
        }),
        T0 + 2_000,
    );
    let entered_at = T0 + 2_000 + 880_000;
    game.play("Nf3", entered_at);
    feed(&mut feeds, &game.records);
    feeds.release(entered_at);
    let (_, json) = feeds.game_json(&id).expect("shown");
    let view: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(view["clocks"]["white_ms"], 3_600_000 - 880_000);
    assert_eq!(view["clocks"]["black_ms"], 3_600_000);
    assert_eq!(view["clocks"]["as_of_unix_ms"], entered_at);
    assert_eq!(view["clocks"]["running"], "black");
    let push = LichessPusher::default().push(&feeds.round_games_with_versions(&key(1)), None);
    let pgn = &read_games(&push.text).expect("valid PGN")[0];
    let nf3 = pgn.moves.last().expect("three moves");
    assert_eq!((nf3.san.as_str(), nf3.clock_ms), ("Nf3", Some(2_720_000)));
}

/// A clock reading as the log records it, the clock running (or stopped) as `running` says.
fn reading(running: boardcast_game::device::ClockRun, clocks: (u64, u64)) -> NewEvent {
    use boardcast_game::device::{ClockReading, Observation, observation};
    use boardcast_game::events::ObservationRecorded;
    NewEvent {
        kind: Kind::ObservationRecorded(ObservationRecorded {
            observation: Some(Observation {
                board_id: "b1".into(),
                kind: Some(observation::Kind::Clock(ClockReading {
                    white_remaining_ms: clocks.0,
                    black_remaining_ms: clocks.1,
                    running: running as i32,
                    ..Default::default()
                })),
                ..Default::default()
            }),
        }),
        provenance: Provenance {
            source: Source::Clock as i32,
            ..Default::default()
        },
    }
}

/// The arbiter stops the clock: viewers see it stand, with the time used until then, and run
/// again from when it goes again; the readings in between are no updates.
#[test]
fn a_stopped_clock_stands_for_viewers_until_it_goes_again() {
    use boardcast_game::device::ClockRun;
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    game.record(vec![pressed(1, "e2e4", "e4", (5_000_000, 5_400_000))], T0);
    let view = |feeds: &Feeds| -> Value {
        serde_json::from_str(&feeds.game_json(&id).expect("shown").1).expect("JSON")
    };
    feed(&mut feeds, &game.records);
    feeds.release(T0);
    assert_eq!(view(&feeds)["clocks"]["running"], "black");
    let version = view(&feeds)["version"].clone();
    // Black thinks; the readings say so, and change nothing viewers see.
    let thinking = game.record(
        vec![reading(ClockRun::Black, (5_000_000, 5_390_000))],
        T0 + 10_000,
    );
    feed(&mut feeds, &thinking);
    feeds.release(T0 + 10_000);
    assert_eq!(
        view(&feeds)["version"],
        version,
        "a running clock is no update"
    );
    // Stopped 30 s after the press: Black's 30 s are used, and nothing runs.
    let stopped = game.record(
        vec![reading(ClockRun::Stopped, (5_000_000, 5_370_000))],
        T0 + 30_000,
    );
    feed(&mut feeds, &stopped);
    feeds.release(T0 + 30_000);
    let standing = view(&feeds);
    assert!(standing["clocks"]["running"].is_null(), "{standing}");
    assert_eq!(standing["clocks"]["black_ms"], 5_400_000 - 30_000);
    assert_eq!(standing["clocks"]["as_of_unix_ms"], T0 + 30_000);
    // More readings while it stands: no update. Going again ten minutes later: from then.
    let still = game.record(
        vec![reading(ClockRun::Stopped, (5_000_000, 5_370_000))],
        T0 + 300_000,
    );
    feed(&mut feeds, &still);
    feeds.release(T0 + 300_000);
    assert_eq!(view(&feeds)["version"], standing["version"]);
    let again = game.record(
        vec![reading(ClockRun::Black, (5_000_000, 5_370_000))],
        T0 + 630_000,
    );
    feed(&mut feeds, &again);
    feeds.release(T0 + 630_000);
    let running = view(&feeds);
    assert_eq!(running["clocks"]["running"], "black");
    assert_eq!(running["clocks"]["black_ms"], 5_400_000 - 30_000);
    assert_eq!(running["clocks"]["as_of_unix_ms"], T0 + 630_000);
    // Once the game is over no clock runs for viewers: the clock stopped then is no update.
    let ended = game.act(
        Action::Result(DeclareResult {
            result: GameResult::WhiteWins as i32,
            reason: "resignation".into(),
            article: "5.1.2".into(),
        }),
        T0 + 640_000,
    );
    feed(&mut feeds, &ended);
    feeds.release(T0 + 640_000);
    let over = view(&feeds);
    let stopped_after = game.record(
        vec![reading(ClockRun::Stopped, (5_000_000, 5_360_000))],
        T0 + 650_000,
    );
    feed(&mut feeds, &stopped_after);
    feeds.release(T0 + 650_000);
    assert_eq!(view(&feeds), over);
}

#[test]
fn a_record_out_of_order_altered_or_from_nowhere_is_refused_and_changes_nothing() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut feeds, &game.records.clone());
    let e4 = game.play("e4", T0 + 1);
    let e5 = game.play("e5", T0 + 2);

    assert!(feeds.accept(&e5[0]).is_err(), "skips e4's records");
    let mut altered = e4[0].clone();
    altered.event[4] ^= 1;
    assert!(feeds.accept(&altered).is_err(), "altered bytes");
    let mut unchained = e4[0].clone();
    unchained.prev_hash = vec![7; 32];
    assert!(feeds.accept(&unchained).is_err(), "another chain");
    let stranger = start(1, 2, T0);
    assert!(feeds.accept(&stranger.records[0]).is_ok());
    let mut not_a_start = e4[0].clone();
    not_a_start.event = Vec::new();
    assert!(feeds.accept(&not_a_start).is_err());

    feed(&mut feeds, &e4);
    feed(&mut feeds, &e5);
    feeds.release(T0 + 2);
    assert_eq!(shown_moves(&feeds, &id), 2);
    // Delivered again after a restart from an older position: nothing changes.
    feed(&mut feeds, &e4);
    feeds.release(T0 + 3);
    assert_eq!(shown_moves(&feeds, &id), 2);
}

#[test]
fn a_record_without_a_trusted_signature_is_refused_and_changes_nothing() {
    let hall = RecordSigner::from_seed([1; 32]);
    let intruder = RecordSigner::from_seed([2; 32]);
    let mut feeds = Feeds::new(Delays::none(), signed_by(&hall));
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    let unsigned_start = game.records[0].clone();
    assert!(feeds.accept(&unsigned_start).is_err(), "unsigned");
    let mut first = unsigned_start.clone();
    hall.sign(&mut first);
    feed(&mut feeds, &[first]);
    let e4 = game.play("e4", T0 + 1);
    // Continues the chain, but signed by a key nobody trusts, then not at all.
    let mut forged = e4[0].clone();
    intruder.sign(&mut forged);
    assert!(feeds.accept(&forged).is_err(), "unknown key");
    assert!(feeds.accept(&e4[0]).is_err(), "unsigned after signed");
    feeds.release(T0 + 2);
    assert_eq!(shown_moves(&feeds, &id), 0);
    for record in &e4 {
        let mut signed = record.clone();
        hall.sign(&mut signed);
        feed(&mut feeds, &[signed]);
    }
    feeds.release(T0 + 3);
    assert_eq!(shown_moves(&feeds, &id), 1);
}

#[test]
fn a_restart_from_the_stored_snapshots_serves_the_same_bytes() {
    let mut feeds = Feeds::new(Delays::parse(["1"]).expect("valid"), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    for (i, san) in ["c4", "e5", "Nc3", "Nf6"].iter().enumerate() {
        game.play(san, T0 + (i as i64 + 1) * 20_000);
    }
    feed(&mut feeds, &game.records);
    feeds.release(T0 + MINUTE + 45_000);
    let dirty = feeds.take_dirty();
    assert_eq!(shown_moves(&feeds, &id), 2);

    let mut restored = Feeds::restore(
        feeds.delays().clone(),
        unsigned_logs(),
        dirty.games,
        dirty.rounds,
        1,
    )
    .expect("decodes");
    assert_eq!(restored.round_pgn(&key(1)), feeds.round_pgn(&key(1)));
    assert_eq!(restored.game_json(&id), feeds.game_json(&id));
    // The next run's versions lie past any the first could have given.
    assert_eq!(
        restored.round_version(&key(1)),
        boardcast_feeds::VERSIONS_PER_RUN
    );

    // Raised delay after the restart: still never fewer moves than before.
    restored.set_delays(Delays::parse(["30"]).expect("valid"));
    restored.release(T0 + 2 * MINUTE);
    assert_eq!(shown_moves(&restored, &id), 2);
    // And the pending moves kept across the restart come out when due.
    restored.set_delays(Delays::none());
    restored.release(T0 + 2 * MINUTE);
    assert_eq!(shown_moves(&restored, &id), 4);
}

#[test]
fn moves_in_national_piece_letters() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    for san in ["Nf3", "d5", "g3", "Bg4", "Bg2", "Nd7", "O-O"] {
        game.play(san, T0 + 1);
    }
    // The board shows Black's queen on c8, not yet pressed: in the same letters.
    game.record(vec![provisional(8, "d8c8", "Qc8", "")], T0 + 1);
    feed(&mut feeds, &game.records);
    feeds.release(T0 + 1);
    let shown = feeds.game(&id).expect("shown");
    let (moves, provisional) = national_line(shown, Language::German);
    assert_eq!(moves, ["Sf3", "d5", "g3", "Lg4", "Lg2", "Sd7", "0-0"]);
    assert_eq!(provisional, ["Dc8"]);
}

#[test]
fn a_revised_provisional_move_is_shown_corrected_then_completed() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    for san in ["e4", "e5", "Nf3", "Nc6"] {
        game.play(san, T0);
    }
    // The bishop is seen on c4 on its way to b5, then the press completes Bb5.
    game.record(
        vec![
            provisional(5, "f1c4", "Bc4", ""),
            provisional(5, "f1b5", "Bb5", "f1c4"),
        ],
        T0 + 1,
    );
    feed(&mut feeds, &game.records);
    feeds.release(T0 + 1);
    let shown = |feeds: &Feeds| {
        let body = feeds.round_pgn(&key(1)).expect("shown");
        let games = read_games(&body.text).expect("valid PGN");
        games[0]
            .moves
            .iter()
            .map(|m| m.san.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(&feeds), ["e4", "e5", "Nf3", "Nc6", "Bb5"]);
    let (_, json) = feeds.game_json(&id).expect("shown");
    let view: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(view["provisional"], serde_json::json!(["Bb5"]));
    assert!(
        feeds
            .round_pgn(&key(1))
            .expect("shown")
            .text
            .contains("provisional")
    );

    let completed = game.record(
        vec![pressed(5, "f1b5", "Bb5", (5_000_000, 5_100_000))],
        T0 + 2,
    );
    feed(&mut feeds, &completed);
    feeds.release(T0 + 2);
    assert_eq!(shown(&feeds), ["e4", "e5", "Nf3", "Nc6", "Bb5"]);
    let text = feeds.round_pgn(&key(1)).expect("shown").text.clone();
    assert!(!text.contains("provisional"), "{text}");
    assert!(text.contains("Bb5 {[%clk 1:23:20]}"), "{text}");
}

#[test]
fn a_lichess_push_holds_completed_moves_only_on_its_boards_and_at_most_100_games() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut first = start(1, 1, T0);
    first.play("e4", T0);
    feed(&mut feeds, &first.records);
    for board in 2..=101 {
        feed(&mut feeds, &start(1, board, T0).records);
    }
    let seen = first.record(vec![provisional(2, "e7e5", "e5", "")], T0 + 1);
    feed(&mut feeds, &seen);
    feeds.release(T0 + 1);
    let mut pusher = LichessPusher::default();
    let push = pusher.push(&feeds.round_games_with_versions(&key(1)), None);
    assert_eq!(push.games, 100);
    assert_eq!(push.left_out_boards, [101]);
    let games = read_games(&push.text).expect("valid PGN");
    assert_eq!(games.len(), 100);
    // The move only the board shows is not pushed; the feed shows it, marked.
    let moves = |g: &boardcast_rules::pgn::PgnGame| {
        g.moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>()
    };
    assert_eq!(moves(&games[0]), ["e4"]);
    assert!(!push.text.contains("provisional"));
    assert!(
        feeds
            .round_pgn(&key(1))
            .expect("shown")
            .text
            .contains("provisional")
    );
    assert_eq!(games[0].tag("TimeControl"), Some("5400+30"));
    // A range of boards.
    let range = pusher.push(&feeds.round_games_with_versions(&key(1)), Some(&(2..=3)));
    let boards: Vec<_> = read_games(&range.text)
        .expect("valid PGN")
        .iter()
        .map(|g| g.tag("Board").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(boards, ["2", "3"]);
    assert!(range.left_out_boards.is_empty());

    // Completed by the press: pushed, with its clock.
    let completed = first.record(
        vec![pressed(2, "e7e5", "e5", (5_390_000, 5_380_000))],
        T0 + 2,
    );
    feed(&mut feeds, &completed);
    feeds.release(T0 + 2);
    let push = pusher.push(&feeds.round_games_with_versions(&key(1)), None);
    let games = read_games(&push.text).expect("valid PGN");
    assert_eq!(moves(&games[0]), ["e4", "e5"]);
    assert!(push.text.contains("e5 {[%clk 1:29:40]}"), "{}", push.text);
}

#[test]
fn a_game_read_again_from_its_log_is_shown_as_the_log_holds_it() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    game.play("e4", T0 + MINUTE);
    let id = game.game.game_id().to_owned();
    // The log as first delivered: 1. e4 e5, whose second move the log no longer holds.
    let mut delivered = game.game.clone();
    let lost = {
        let events = delivered
            .decide_arbiter(
                &ArbiterAction {
                    action: Some(Action::Move(EnterMove { san: "e5".into() })),
                    ..Default::default()
                },
                "ia-smith",
                "",
            )
            .expect("accepted");
        let records = Game::record(Some(&delivered), &id, events, T0 + 2 * MINUTE);
        for r in &records {
            delivered.apply(r).expect("applies");
        }
        records
    };
    feed(&mut feeds, &game.records);
    feed(&mut feeds, &lost);
    feeds.release(T0 + 3 * MINUTE);
    assert_eq!(shown_moves(&feeds, &id), 2);
    // The log holds 1... c5 there instead, then 2. Nf3: the next record does not follow on.
    let before_c5 = game.records.len();
    game.play("c5", T0 + 2 * MINUTE);
    let next = game.play("Nf3", T0 + 3 * MINUTE);
    assert!(feeds.accept(&next[0]).is_err());
    // Read again still without 1... c5: refused, and the game is shown as it was.
    let mut gapped = game.records[..before_c5].to_vec();
    gapped.extend(next.iter().cloned());
    assert!(feeds.read_again(&id, &gapped).is_err());
    feeds.release(T0 + 4 * MINUTE);
    assert_eq!(shown_moves(&feeds, &id), 2);
    // Read again whole: shown as the log holds it.
    feeds
        .read_again(&id, &game.records)
        .expect("the whole log follows on");
    let (changes, errors) = feeds.release(T0 + 4 * MINUTE);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(changes.len(), 1);
    let shown = feeds.game(&id).expect("shown");
    let sans: Vec<&str> = shown.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["e4", "c5", "Nf3"]);
    // What follows is taken as usual.
    feed(&mut feeds, &game.play("d6", T0 + 5 * MINUTE));
}

#[test]
fn another_record_with_the_last_number_is_a_fork_when_trusted_and_refused_when_not() {
    let hall = RecordSigner::from_seed([1; 32]);
    let intruder = RecordSigner::from_seed([2; 32]);
    let mut feeds = Feeds::new(Delays::none(), signed_by(&hall));
    let signed = |records: &[GameEventRecord], by: &RecordSigner| -> Vec<GameEventRecord> {
        records
            .iter()
            .map(|r| {
                let mut r = r.clone();
                by.sign(&mut r);
                r
            })
            .collect()
    };
    let game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut feeds, &signed(&game.records, &hall));
    // Two branches from the start: 1. e4, and 1. d4 numbered alike.
    let (mut e4_branch, mut d4_branch) = (
        Played {
            game: game.game.clone(),
            records: Vec::new(),
        },
        Played {
            game: game.game.clone(),
            records: Vec::new(),
        },
    );
    let e4 = signed(&e4_branch.play("e4", T0 + 1), &hall);
    let d4 = d4_branch.play("d4", T0 + 2);
    feed(&mut feeds, &e4);
    let last = d4.last().expect("a record");
    // The same number as the last record shown: refused when no trusted key signed it…
    let forged = signed(std::slice::from_ref(last), &intruder);
    let refused = feeds.accept(&forged[0]).expect_err("a forgery");
    assert_eq!(refused.game_out_of_chain(), None, "{refused}");
    // …and a fork, to be read again, when one did.
    let fork = signed(std::slice::from_ref(last), &hall);
    let forked = feeds.accept(&fork[0]).expect_err("a fork");
    assert_eq!(forked.game_out_of_chain(), Some(id.as_str()), "{forked}");
    // The last record delivered again is still nothing new.
    feeds
        .accept(e4.last().expect("a record"))
        .expect("delivered again");
    feeds.release(T0 + 3);
    assert_eq!(shown_moves(&feeds, &id), 1);
}

fn json(feeds: &Feeds, game_id: &str) -> Value {
    let (_, json) = feeds.game_json(game_id).expect("shown");
    serde_json::from_str(&json).expect("JSON")
}

/// A viewer's copies of the round's games, kept up to date by the deltas alone once each game
/// was sent whole.
#[derive(Default)]
struct Viewer {
    games: std::collections::BTreeMap<String, Value>,
    /// Bytes of the deltas and of the games sent whole.
    delta_bytes: usize,
    whole_bytes: usize,
    updates: usize,
}

impl Viewer {
    /// Takes every change of a release, as a live connection passes them on.
    fn release(&mut self, feeds: &mut Feeds, now: i64) {
        let (changes, errors) = feeds.release(now);
        assert!(errors.is_empty(), "{errors:?}");
        for change in changes.into_iter().filter(|c| c.seen_live) {
            self.updates += 1;
            let now_shown = json(feeds, &change.game_id);
            match (
                self.games.get_mut(&change.game_id),
                feeds.game_delta(&change.game_id),
            ) {
                (Some(copy), Some(delta)) => {
                    self.delta_bytes += delta.len();
                    let delta: Value = serde_json::from_str(&delta).expect("JSON");
                    assert_eq!(
                        apply_delta(copy, &delta),
                        Ok(Applied::Changed),
                        "applies to the copy before it"
                    );
                    assert_eq!(*copy, now_shown, "after {delta}");
                }
                _ => {
                    self.whole_bytes += now_shown.to_string().len();
                    self.games.insert(change.game_id.clone(), now_shown);
                }
            }
        }
    }
}

#[test]
fn every_change_applied_to_the_copy_before_it_gives_the_game_as_shown() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut viewer = Viewer::default();
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut feeds, &game.records.clone());
    viewer.release(&mut feeds, T0);
    let mut at = T0;
    let mut step = |game: &mut Played, action: Action, feeds: &mut Feeds, viewer: &mut Viewer| {
        at += MINUTE;
        let records = game.act(action, at);
        feed(feeds, &records);
        viewer.release(feeds, at);
    };
    for san in ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6"] {
        step(
            &mut game,
            Action::Move(EnterMove { san: san.into() }),
            &mut feeds,
            &mut viewer,
        );
    }
    // The clocks set by the arbiter; the position after 1... e5 restored (moves taken away);
    // play on; a note for the record only (no update); the result.
    step(
        &mut game,
        Action::Clocks(AdjustClocks {
            white_added_ms: 120_000,
            reason: "7.5.5".into(),
            ..Default::default()
        }),
        &mut feeds,
        &mut viewer,
    );
    step(
        &mut game,
        Action::Restore(RestorePosition {
            ply: 2,
            reason: "illegal move found".into(),
            white_remaining_ms: Some(5_000_000),
            black_remaining_ms: Some(5_100_000),
        }),
        &mut feeds,
        &mut viewer,
    );
    for san in ["d4", "exd4"] {
        step(
            &mut game,
            Action::Move(EnterMove { san: san.into() }),
            &mut feeds,
            &mut viewer,
        );
    }
    let updates = viewer.updates;
    step(
        &mut game,
        Action::Annotation(Annotation {
            text: "spectator warned".into(),
        }),
        &mut feeds,
        &mut viewer,
    );
    assert_eq!(
        viewer.updates, updates,
        "a note shows nothing new to viewers"
    );
    step(
        &mut game,
        Action::Result(DeclareResult {
            result: GameResult::WhiteWins as i32,
            reason: "resignation".into(),
            article: "5.1.2".into(),
        }),
        &mut feeds,
        &mut viewer,
    );
    let shown = json(&feeds, &id);
    assert_eq!(viewer.games[&id], shown);
    assert_eq!(
        shown["moves"],
        serde_json::json!(["e4", "e5", "d4", "exd4"])
    );
    assert_eq!(shown["result"], "1-0");
    // The game was sent whole once; every later change was smaller than the game.
    let whole = shown.to_string().len();
    assert!(viewer.whole_bytes <= whole, "{}", viewer.whole_bytes);
    assert!(
        viewer.delta_bytes < (viewer.updates - 1) * whole / 2,
        "deltas {} B for {} updates of a {whole} B game",
        viewer.delta_bytes,
        viewer.updates - 1
    );
}

#[test]
fn a_delta_for_another_version_or_game_changes_nothing() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut feeds, &game.records.clone());
    feeds.release(T0);
    let mut stale = json(&feeds, &id);
    for (i, san) in ["e4", "e5"].iter().enumerate() {
        let records = game.act(
            Action::Move(EnterMove { san: (*san).into() }),
            T0 + i as i64 + 1,
        );
        feed(&mut feeds, &records);
        feeds.release(T0 + i as i64 + 1);
    }
    // The copy missed 1. e4: the delta of 1... e5 is not for it.
    let delta: Value =
        serde_json::from_str(&feeds.game_delta(&id).expect("a delta")).expect("JSON");
    let before = stale.clone();
    let missed = apply_delta(&mut stale, &delta);
    assert!(
        matches!(missed, Err(DeltaError::OtherVersion { .. })),
        "{missed:?}"
    );
    assert_eq!(stale, before);
    // A copy that has the change already (the same delta published again by another instance)
    // is left as it is.
    let mut current = json(&feeds, &id);
    let had = current.clone();
    assert_eq!(apply_delta(&mut current, &delta), Ok(Applied::AlreadyHad));
    assert_eq!(current, had);
    // At that version but showing other moves (a branch an operator removed from a log that
    // forked, whose numbers the kept one reuses): asked for again, not taken as a repeat.
    let mut elsewhere = had.clone();
    elsewhere["moves"] = serde_json::json!(["d4", "d5"]);
    let kept = elsewhere.clone();
    assert!(matches!(
        apply_delta(&mut elsewhere, &delta),
        Err(DeltaError::OtherVersion { .. })
    ));
    assert_eq!(elsewhere, kept);
    // Past it: asked for again too (the copy may be on a removed branch; a fetch of an older
    // game changes nothing).
    let mut ahead = had.clone();
    ahead["version"] = serde_json::json!(delta["version"].as_u64().expect("a version") + 1);
    let kept = ahead.clone();
    assert!(matches!(
        apply_delta(&mut ahead, &delta),
        Err(DeltaError::OtherVersion { .. })
    ));
    assert_eq!(ahead, kept);
    let mut other = before.clone();
    other["game_id"] = "another".into();
    let kept = other.clone();
    assert!(matches!(
        apply_delta(&mut other, &delta),
        Err(DeltaError::NotThisGame(_))
    ));
    assert_eq!(other, kept);
    // Anything but a game and a delta is refused, never a panic.
    for (mut game, delta) in [
        (serde_json::json!([]), delta.clone()),
        (before.clone(), serde_json::json!({ "base": 1 })),
        (serde_json::json!({ "game_id": id }), delta.clone()),
        (before.clone(), serde_json::json!("delta")),
    ] {
        let was = game.clone();
        assert!(matches!(
            apply_delta(&mut game, &delta),
            Err(DeltaError::Malformed(_))
        ));
        assert_eq!(game, was);
    }
}

#[test]
fn instances_releasing_at_other_moments_show_each_game_in_the_same_bytes() {
    // One instance releases after every record, the other now and then: the same records
    // shown give the same views, versions included, so either may answer a viewer or a cache.
    let mut often = Feeds::new(Delays::none(), unsigned_logs());
    let mut seldom = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    let id = game.game.game_id().to_owned();
    feed(&mut often, &game.records.clone());
    feed(&mut seldom, &game.records.clone());
    often.release(T0);
    let moves = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"];
    for (i, san) in moves.iter().enumerate() {
        let at = T0 + (i as i64 + 1) * MINUTE;
        let mut records = game.play(san, at);
        // A note for the record between moves: nothing a viewer sees.
        records.extend(game.act(
            Action::Annotation(Annotation {
                text: format!("note {i}"),
            }),
            at + 1,
        ));
        feed(&mut often, &records);
        feed(&mut seldom, &records);
        often.release(at);
        often.release(at + 1);
        if i % 3 == 2 {
            seldom.release(at + 1);
        }
    }
    assert_eq!(json(&often, &id), json(&seldom, &id));
    assert_eq!(
        often.game_json(&id).map(|(_, json)| json),
        seldom.game_json(&id).map(|(_, json)| json)
    );
    assert_eq!(
        often.round_pgn(&key(1)).map(|b| b.etag.clone()),
        seldom.round_pgn(&key(1)).map(|b| b.etag.clone())
    );
    // The view's version is the log's: the last move's record, not the note after it.
    let shown = json(&often, &id);
    let last_move = game.records.len() as u64 - 1;
    assert_eq!(shown["version"], last_move);
}

#[test]
fn a_draw_offer_is_no_live_update_but_changes_the_rounds_feed_and_a_note_changes_nothing() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    game.play("e4", T0 + 1);
    feed(&mut feeds, &game.records.clone());
    feeds.release(T0 + 1);
    let version = feeds.round_version(&key(1));
    let etag = feeds.round_pgn(&key(1)).map(|b| b.etag.clone());
    // An arbiter's note is for the arbiters: nothing changes for viewers.
    let records = game.act(
        Action::Annotation(Annotation {
            text: "White asked whether a draw may be offered now".into(),
        }),
        T0 + 2,
    );
    feed(&mut feeds, &records);
    let (changes, errors) = feeds.release(T0 + 2);
    assert!(errors.is_empty());
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(feeds.round_version(&key(1)), version);
    assert_eq!(feeds.round_pgn(&key(1)).map(|b| b.etag.clone()), etag);
    // A draw offer is in the score only.
    let records = game.act(
        Action::DrawOffer(SideAction {
            player: Side::White as i32,
            ..Default::default()
        }),
        T0 + 3,
    );
    feed(&mut feeds, &records);
    let (changes, errors) = feeds.release(T0 + 3);
    assert!(errors.is_empty());
    let [change] = &changes[..] else {
        panic!("{changes:?}");
    };
    assert!(!change.seen_live);
    // The round's feed moved on (a poller or the lichess push sees it), live viewers get nothing.
    assert!(feeds.round_version(&key(1)) > version);
    assert_ne!(feeds.round_pgn(&key(1)).map(|b| b.etag.clone()), etag);
    assert!(feeds.round_json_since(&key(1), version).is_empty());
}

#[test]
fn a_corrected_set_up_is_shown_once_the_delay_allows_and_the_moves_stay() {
    let mut feeds = Feeds::new(Delays::parse(["10"]).expect("valid"), unsigned_logs());
    let mut game = start(1, 1, T0);
    feed(&mut feeds, &game.records.clone());
    let moved = game.play("e4", T0 + MINUTE);
    feed(&mut feeds, &moved);
    // The arbiter's sheet says White is someone else: corrected after the first move.
    let corrected = GameStarted {
        white: Some(Player {
            name: "Carlsen, Magnus".into(),
            ..Default::default()
        }),
        ..game.game.info().clone()
    };
    let revision = game
        .game
        .decide_set_up_revision(&corrected, "chief", "fix-names")
        .expect("players may be corrected");
    let revised = game.record(revision, T0 + 2 * MINUTE);
    feed(&mut feeds, &revised);
    let white = |feeds: &Feeds| {
        let body = feeds.round_pgn(&key(1)).expect("shown");
        let games = read_games(&body.text).expect("valid PGN");
        (
            games[0].tag("White").map(str::to_owned),
            games[0].moves.len(),
        )
    };
    feeds.release(T0 + 11 * MINUTE + 30_000);
    assert_eq!(
        white(&feeds),
        (Some("White 1".to_owned()), 1),
        "not due yet"
    );
    feeds.release(T0 + 12 * MINUTE);
    assert_eq!(white(&feeds), (Some("Carlsen, Magnus".to_owned()), 1));
}

#[test]
fn arbiters_notes_reasons_and_names_never_reach_viewers() {
    let mut feeds = Feeds::new(Delays::none(), unsigned_logs());
    let mut game = start(1, 1, T0);
    feed(&mut feeds, &game.records.clone());
    for (i, san) in ["e4", "e5"].into_iter().enumerate() {
        let records = game.play(san, T0 + (i as i64 + 1) * MINUTE);
        feed(&mut feeds, &records);
    }
    feeds.release(T0 + 2 * MINUTE + 1);
    let version_before = feeds.game("open-r1-b1").map(|g| g.updated_unix_ms);
    assert!(version_before.is_some());
    let note = game.act(
        Action::Annotation(Annotation {
            text: "Fair-play: White left the hall 3 times, check with the FPO".into(),
        }),
        T0 + 3 * MINUTE,
    );
    feed(&mut feeds, &note);
    feeds.release(T0 + 4 * MINUTE);
    assert_eq!(
        feeds.game("open-r1-b1").map(|g| g.updated_unix_ms),
        version_before,
        "a note changes nothing viewers see"
    );
    let clocks = game.act(
        Action::Clocks(AdjustClocks {
            black_added_ms: 120_000,
            reason: "White's phone rang".into(),
            ..Default::default()
        }),
        T0 + 5 * MINUTE,
    );
    feed(&mut feeds, &clocks);
    let result = game.act(
        Action::Result(DeclareResult {
            result: GameResult::BlackWins as i32,
            reason: "White's phone rang (Article 11.3.2.1)".into(),
            article: String::new(),
        }),
        T0 + 6 * MINUTE,
    );
    feed(&mut feeds, &result);
    feeds.release(T0 + 7 * MINUTE);
    let pgn = feeds.round_pgn(&key(1)).expect("shown").text.clone();
    let json = serde_json::to_string(&feeds.round_games(&key(1))).expect("JSON");
    for shown in [&pgn, &json] {
        for secret in ["Fair-play", "phone", "ia-smith", "11.3"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
    assert!(
        pgn.contains("the arbiter adjusted the clocks: +120 s for Black"),
        "{pgn}"
    );
    assert!(pgn.contains("result declared by the arbiter"), "{pgn}");
    assert!(pgn.contains("0-1"), "{pgn}");
}
