//! A game driven as the services drive it, shared by the aggregate's tests: each decision
//! recorded, applied and folded into the alerts right away, with what the log then holds.

#![allow(dead_code)]

use boardcast_game::alerts::{Alert, AlertKind, GameAlerts};
use boardcast_game::device::{
    BoardPlacement, ClockReading, ClockRun, Observation, observation::Kind as Obs,
};
use boardcast_game::events::{
    ArbiterAction, GameEvent, GameEventRecord, GameStarted, Player, TimeControl, TimePeriod,
    arbiter_action::Action, game_event::Kind,
};
use boardcast_game::{ActionRejected, Game, NewEvent, ObservationOutcome};
use shakmaty::{Chess, Position, san::San};

/// The id of every test game: tournament "t", round 1, board 1 (board id "b").
pub const GAME: &str = "t-r1-b1";

/// The set-up of the test game.
pub fn started(edition: &str, start_fen: &str, periods: Vec<TimePeriod>) -> GameStarted {
    GameStarted {
        tournament_id: "t".into(),
        round: 1,
        board_number: 1,
        board_id: "b".into(),
        white: Some(Player {
            name: "W".into(),
            ..Default::default()
        }),
        black: Some(Player {
            name: "B".into(),
            ..Default::default()
        }),
        time_control: Some(TimeControl { periods }),
        edition: edition.into(),
        start_fen: start_fen.into(),
        ..Default::default()
    }
}

/// When the test log records entry `game_seq`.
pub fn recorded_at(game_seq: u64) -> i64 {
    1_700_000_000_000 + game_seq as i64 * 1000
}

pub struct Board {
    pub game: Game,
    pub records: Vec<GameEventRecord>,
    pub events: Vec<GameEvent>,
    pub alerts: GameAlerts,
    /// What each fold of the alerts returned, by game_seq.
    pushed: Vec<(u64, Vec<usize>)>,
    pub device_seq: u64,
    /// The board's clock: observation `n` is made at `device_time_base + n` seconds unless a
    /// test gives the time.
    device_time_base: i64,
}

impl Board {
    /// The game set up from its first record, nothing observed yet.
    pub fn from_first_record(first: GameEventRecord, device_time_base: i64) -> Board {
        let game = Game::from_first_record(&first).expect("folds");
        let event = Game::open_record(&first).expect("opens");
        let mut alerts = GameAlerts::new();
        let pushed = vec![(event.game_seq, alerts.fold(&event, &game))];
        Board {
            game,
            records: vec![first],
            events: vec![event],
            alerts,
            pushed,
            device_seq: 0,
            device_time_base,
        }
    }

    /// The game of `info`, set up as the operator would, nothing observed yet.
    pub fn start(info: &GameStarted, device_time_base: i64) -> Board {
        let (id, start) = Game::decide_start(info, "operator", "").expect("valid game");
        assert_eq!(id, GAME);
        let mut records = Game::record(None, &id, vec![start], recorded_at(1));
        Board::from_first_record(records.remove(0), device_time_base)
    }

    /// Records, applies and folds decided events, as the game and arbiter services do.
    pub fn append(&mut self, events: Vec<NewEvent>) {
        let next = self.game.last_game_seq() + 1;
        let records = Game::record(Some(&self.game), GAME, events, recorded_at(next));
        for record in records {
            self.game.apply(&record).expect("applies");
            let event = Game::open_record(&record).expect("opens");
            let changed = self.alerts.fold(&event, &self.game);
            self.pushed.push((event.game_seq, changed));
            self.events.push(event);
            self.records.push(record);
        }
    }

    pub fn observe(&mut self, kind: Obs) {
        let at = self.device_time_base + (self.device_seq as i64 + 1) * 1000;
        self.observe_at(kind, at);
    }

    pub fn observe_at(&mut self, kind: Obs, device_time_unix_ms: i64) {
        self.device_seq += 1;
        let obs = Observation {
            board_id: "b".into(),
            device_seq: self.device_seq,
            device_time_unix_ms,
            kind: Some(kind),
            ..Default::default()
        };
        if let ObservationOutcome::Events(events) =
            self.game.decide_observation(&obs).expect("valid")
        {
            self.append(events);
        }
    }

    pub fn placement(&mut self, board: &shakmaty::Board) {
        self.observe(Obs::Placement(BoardPlacement {
            placement: board.board_fen().to_string(),
        }));
    }

    pub fn clock(&mut self, running: ClockRun) {
        self.observe(Obs::Clock(ClockReading {
            white_remaining_ms: 5_000_000,
            black_remaining_ms: 5_000_000,
            running: running as i32,
            ..Default::default()
        }));
    }

    /// The clock started for White, both displays showing `ms`.
    pub fn start_clock(&mut self, ms: u64) {
        self.observe(Obs::Clock(ClockReading {
            white_remaining_ms: ms,
            black_remaining_ms: ms,
            running: ClockRun::White as i32,
            ..Default::default()
        }));
    }

    /// The clock shows `white`'s and/or `black`'s flag, White's clock running.
    pub fn flag(&mut self, white: bool, black: bool) {
        self.observe(Obs::Clock(ClockReading {
            white_remaining_ms: if white { 0 } else { 1_000 },
            black_remaining_ms: if black { 0 } else { 1_000 },
            running: ClockRun::White as i32,
            white_flag: white,
            black_flag: black,
            ..Default::default()
        }));
    }

    /// A move seen on the board and completed by the mover's press.
    pub fn play(&mut self, pos: &mut Chess, san: &str) {
        play_san(pos, san);
        self.placement(pos.board());
        self.clock(running_side(pos));
    }

    /// A move seen on the board just before the mover's press at `at_ms`, the clock then
    /// reading `clocks` (White, Black).
    pub fn play_timed(&mut self, pos: &mut Chess, san: &str, at_ms: i64, clocks: (u64, u64)) {
        play_san(pos, san);
        self.observe_at(
            Obs::Placement(BoardPlacement {
                placement: pos.board().board_fen().to_string(),
            }),
            at_ms - 100,
        );
        self.observe_at(
            Obs::Clock(ClockReading {
                white_remaining_ms: clocks.0,
                black_remaining_ms: clocks.1,
                running: running_side(pos) as i32,
                ..Default::default()
            }),
            at_ms,
        );
    }

    /// An arbiter's action, recorded if the game accepts it.
    pub fn try_act(
        &mut self,
        action: Action,
        actor: &str,
        resolves_alerts: Vec<u64>,
    ) -> Result<(), ActionRejected> {
        let events = self.game.decide_arbiter(
            &ArbiterAction {
                action: Some(action),
                resolves_alerts,
            },
            actor,
            "",
        )?;
        self.append(events);
        Ok(())
    }

    pub fn act(&mut self, action: Action, actor: &str) {
        self.act_resolving(action, actor, Vec::new());
    }

    pub fn act_resolving(&mut self, action: Action, actor: &str, resolves_alerts: Vec<u64>) {
        self.try_act(action, actor, resolves_alerts)
            .expect("accepted");
    }

    /// Every entry's kind, in order (the first is the set-up).
    pub fn kinds(&self) -> Vec<&Kind> {
        self.events.iter().filter_map(|e| e.kind.as_ref()).collect()
    }

    pub fn count(&self, pick: impl Fn(&Kind) -> bool) -> usize {
        self.kinds().into_iter().filter(|k| pick(k)).count()
    }

    /// The game_seqs of the entries `pick` picks, in order.
    pub fn seqs(&self, pick: impl Fn(&Kind) -> bool) -> Vec<u64> {
        self.events
            .iter()
            .filter(|e| e.kind.as_ref().is_some_and(&pick))
            .map(|e| e.game_seq)
            .collect()
    }

    /// The game_seq of the `MoveCompleted` of `ply` (of the moves that stand).
    pub fn move_seq(&self, ply: usize) -> u64 {
        self.game.completed_moves()[ply - 1].game_seq
    }

    /// Every alert as (kind, raised_at, ply, article, rests_on).
    pub fn raised(&self) -> Vec<(AlertKind, u64, u32, String, Vec<u64>)> {
        self.alerts
            .alerts()
            .iter()
            .map(|a| {
                (
                    a.kind,
                    a.raised_at,
                    a.ply,
                    a.article.clone(),
                    a.rests_on.clone(),
                )
            })
            .collect()
    }

    pub fn alert(&self, raised_at: u64) -> &Alert {
        self.alerts.get(raised_at).expect("an alert raised there")
    }

    /// What the fold of entry `game_seq` returned.
    pub fn pushed_at(&self, game_seq: u64) -> &[usize] {
        self.pushed
            .iter()
            .find(|(seq, _)| *seq == game_seq)
            .map(|(_, changed)| changed.as_slice())
            .expect("folded")
    }

    /// The key property of the alerts: the log alone gives them. Folded again from scratch
    /// (twice), and after a restart half-way (a new `GameAlerts` over the same records), they are
    /// the live ones; and no entry raised an alert of a kind twice.
    pub fn assert_refolds(&self) {
        let first = refold(&self.records);
        assert_eq!(first, self.alerts, "a refold gives the live alerts");
        assert_eq!(refold(&self.records), first, "two refolds agree");
        // Folded up to half-way, then on: what a service that went on folding holds.
        let half = self.records.len() / 2;
        let (mut game, mut resumed) = fold_records(&self.records[..half]);
        for record in &self.records[half..] {
            game.apply(record).expect("applies");
            resumed.fold(&Game::open_record(record).expect("opens"), &game);
        }
        assert_eq!(resumed, self.alerts, "folding on after half-way");
        let mut named: Vec<(u64, AlertKind)> = self
            .alerts
            .alerts()
            .iter()
            .map(|a| (a.raised_at, a.kind))
            .collect();
        let all = named.len();
        named.sort_by_key(|(seq, kind)| (*seq, *kind as u8));
        named.dedup();
        assert_eq!(named.len(), all, "each alert raised once");
        // What each fold returned are the alerts it raised or changed, and every alert was
        // pushed when it was raised.
        for alert in self.alerts.alerts() {
            let index = self
                .alerts
                .alerts()
                .iter()
                .position(|a| a == alert)
                .expect("listed");
            assert!(self.pushed_at(alert.raised_at).contains(&index));
        }
    }

    pub fn dump(&self) {
        for e in &self.events {
            if !matches!(e.kind, Some(Kind::ObservationRecorded(_))) {
                eprintln!("{} {:?}", e.game_seq, e.kind);
            }
        }
        for a in self.alerts.alerts() {
            eprintln!("{a:?}");
        }
    }
}

/// The alerts folded from `records` (at least the first).
pub fn refold(records: &[GameEventRecord]) -> GameAlerts {
    fold_records(records).1
}

/// The game and its alerts folded from `records` (at least the first).
pub fn fold_records(records: &[GameEventRecord]) -> (Game, GameAlerts) {
    let mut alerts = GameAlerts::new();
    let mut game = Game::from_first_record(&records[0]).expect("folds");
    alerts.fold(&Game::open_record(&records[0]).expect("opens"), &game);
    for record in &records[1..] {
        game.apply(record).expect("applies");
        alerts.fold(&Game::open_record(record).expect("opens"), &game);
    }
    (game, alerts)
}

/// Plays `san` on `pos`.
pub fn play_san(pos: &mut Chess, san: &str) {
    let mv = san
        .parse::<San>()
        .expect("san")
        .to_move(pos)
        .expect("legal");
    pos.play_unchecked(mv);
}

/// The clock side running after the last move: the side to move.
pub fn running_side(pos: &Chess) -> ClockRun {
    if pos.turn().is_white() {
        ClockRun::White
    } else {
        ClockRun::Black
    }
}

/// The position of a FEN.
pub fn position(fen: &str) -> Chess {
    fen.parse::<shakmaty::fen::Fen>()
        .expect("a FEN")
        .into_position(shakmaty::CastlingMode::Standard)
        .expect("legal")
}

/// Where the games with moves nobody saw start: the kings and Black's g8 knight.
pub const KNIGHT_SHUFFLE: &str = "4k1n1/pp6/8/8/8/8/6PP/7K w - - 0 1";

/// From [`KNIGHT_SHUFFLE`]: 1. Kg1 Nh6 2. Kh1 Ng8 seen and pressed, then 3. Kg1 Nf6 4. Kh1,
/// which the board misses; it is seen again when White presses (plies 5 to 7 reconstructed).
pub fn three_moves_nobody_saw(board: &mut Board, pos: &mut Chess) {
    for san in ["Kg1", "Nh6", "Kh1", "Ng8"] {
        board.play(pos, san);
    }
    for san in ["Kg1", "Nf6", "Kh1"] {
        play_san(pos, san);
    }
    board.placement(pos.board());
    board.clock(ClockRun::Black);
}
