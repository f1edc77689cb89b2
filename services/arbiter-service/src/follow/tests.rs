//! The fold of the game log into games, alerts and views, without NATS.

use super::*;
use boardcast_game::events::{
    AlertAcknowledgement, ArbiterAction, EnterMove, GameEvent, arbiter_action::Action,
};
use prost::Message as _;

/// A scripted game's records, decided by the aggregate as the game service would.
struct Script {
    pub game: Game,
    pub records: Vec<GameEventRecord>,
}

impl Script {
    fn start(tournament: &str, round: u32, board: u32) -> Script {
        let info = boardcast_game::example_game(tournament, round, board, &format!("board{board}"));
        let (id, start) = Game::decide_start(&info, "operator", "").expect("valid game");
        let records = Game::record(None, &id, vec![start], 1_000);
        let game = Game::from_first_record(&records[0]).expect("folds");
        Script { game, records }
    }

    fn act(&mut self, action: Action, request_id: &str) {
        let events = self
            .game
            .decide_arbiter(
                &ArbiterAction {
                    action: Some(action),
                    ..Default::default()
                },
                "ia-smith",
                request_id,
            )
            .expect("accepted");
        let records = Game::record(Some(&self.game), self.game.game_id(), events, 2_000);
        for record in records {
            self.game.apply(&record).expect("applies");
            self.records.push(record);
        }
    }

    fn subject(&self) -> String {
        boardcast_kit::nats::game_subject(self.game.game_id())
    }
}

#[test]
fn a_game_is_folded_with_its_timeline_and_clocks() {
    let mut script = Script::start("open", 1, 3);
    script.act(Action::Move(EnterMove { san: "e4".into() }), "r1");
    script.act(
        Action::Acknowledgement(AlertAcknowledgement {
            alert_game_seq: 2,
            note: String::new(),
        }),
        "r2",
    );
    let games = Games::new(TrustedKeys::default().accepting_unsigned(true));
    for (i, record) in script.records.iter().enumerate() {
        games.fold_message(i as u64 + 1, &script.subject(), &record.encode_to_vec());
    }
    let id = script.game.game_id().to_owned();
    let detail = games.game_detail(&id).expect("known");
    assert_eq!(detail.board.board_number, 3);
    assert_eq!(detail.board.state, "playing");
    assert_eq!(detail.board.last_move, "1. e4");
    assert_eq!(detail.board.to_move, "black");
    let words: Vec<&str> = detail.timeline.iter().map(|e| e.words.as_str()).collect();
    assert!(
        words[0].starts_with("game set up: White – Black"),
        "{words:?}"
    );
    assert!(
        words.iter().any(|w| w.contains("move e4 entered")),
        "{words:?}"
    );
    assert!(
        words
            .iter()
            .any(|w| w.contains("alert of log entry 2 acknowledged")),
        "{words:?}"
    );
    assert!(
        detail
            .timeline
            .iter()
            .any(|e| e.actor == "ia-smith" && e.category == "ruling")
    );
    assert_eq!(games.entries_of_request(&id, "r1").len(), 2);

    // The position after any entry, folded again from the records.
    let at = games.position_at(&id, 1).expect("folds");
    assert_eq!(at.completed_plies, 0);
    assert_eq!(at.to_move, "white");
    let at = games
        .position_at(&id, games.last_game_seq(&id).unwrap_or(0))
        .expect("folds");
    assert_eq!(at.moves.len(), 1);
    assert!(matches!(
        games.position_at(&id, 99),
        Err(AtError::OutOfRange { last, .. }) if last == script.records.len() as u64
    ));
}

#[test]
fn a_broken_chain_is_reported_on_the_game_never_a_crash() {
    let mut script = Script::start("open", 1, 1);
    script.act(Action::Move(EnterMove { san: "d4".into() }), "r1");
    script.act(Action::Move(EnterMove { san: "d5".into() }), "r2");
    let games = Games::new(TrustedKeys::default().accepting_unsigned(true));
    let subject = script.subject();
    games.fold_message(1, &subject, &script.records[0].encode_to_vec());
    // Entry 2 is altered after it was stored.
    let mut altered = script.records[1].clone();
    let mut event = GameEvent::decode(altered.event.as_slice()).expect("decodes");
    event.recorded_unix_ms += 1;
    altered.event = event.encode_to_vec();
    let altered = altered.encode_to_vec();
    games.fold_message(2, &subject, &altered);
    // Entry 3 then skips entry 2; the log read again still lacks it.
    let third = script.records[2].encode_to_vec();
    games.fold_message(3, &subject, &third);
    let log = [
        (1, script.records[0].encode_to_vec()),
        (2, altered),
        (3, third),
    ];
    games.fold_mended(&subject, &log);
    games.fold_message(4, &subject, b"not a record at all");
    // Entry 2 altered is refused (its hash does not match); entry 3 then does not follow
    // entry 1: the log is damaged there; what comes after is not shown.
    let board = games.board(script.game.game_id()).expect("shown");
    assert_eq!(board.state, "damaged");
    let damage = board.damage.expect("damage");
    assert_eq!(damage.at_game_seq, 3);
    assert!(
        damage.message.starts_with("log damaged at entry 3"),
        "{}",
        damage.message
    );
    assert_eq!(damage.entries_not_shown, 1);
    let detail = games.game_detail(script.game.game_id()).expect("shown");
    assert_eq!(
        detail.refused_records.len(),
        1,
        "{:?}",
        detail.refused_records
    );
    // Garbage on another game's subject damages that game only.
    games.fold_message(5, "boardcast.game.other.events", b"\x01\x02");
    assert_eq!(games.game_count(), 2);
    assert_eq!(board.last_game_seq, 1);
}

#[test]
fn a_game_damaged_by_a_missing_entry_is_whole_again_once_its_log_is_mended() {
    let mut script = Script::start("open", 1, 1);
    script.act(Action::Move(EnterMove { san: "d4".into() }), "r1");
    script.act(Action::Move(EnterMove { san: "d5".into() }), "r2");
    let games = Games::new(TrustedKeys::default().accepting_unsigned(true));
    let subject = script.subject();
    let log: Vec<(u64, Vec<u8>)> = (1..)
        .zip(script.records.iter().map(|r| r.encode_to_vec()))
        .collect();
    games.fold_message(1, &subject, &log[0].1);
    // Entry 2 (stream sequence 2) is missing: the game is damaged at once.
    games.fold_message(3, &subject, &log[2].1);
    let board = games.board(script.game.game_id()).expect("shown");
    assert_eq!(board.damage.map(|d| d.at_game_seq), Some(3));
    // An operator mended the log: read again, it follows on.
    games.fold_mended(&subject, &log[..3]);
    let board = games.board(script.game.game_id()).expect("shown");
    assert!(board.damage.is_none(), "{:?}", board.damage);
    assert_eq!(board.last_game_seq, 3);
}

#[test]
fn records_delivered_again_are_folded_once() {
    let script = Script::start("open", 1, 1);
    let games = Games::new(TrustedKeys::default().accepting_unsigned(true));
    let payload = script.records[0].encode_to_vec();
    games.fold_message(7, &script.subject(), &payload);
    games.fold_message(7, &script.subject(), &payload);
    let board = games.board(script.game.game_id()).expect("shown");
    assert!(board.damage.is_none());
    assert_eq!(board.last_game_seq, 1);
}
