//! A shown game's live update as what changed since its previous version, and how a client
//! applies one: a viewer is sent a game whole once (on connecting), then only its changes.
//!
//! The contract is on JSON, as a page or another venue system sees it: a [`GameDelta`] names the
//! `version` the game had before it (`base`) and the one it gives it (`version`); a client whose
//! copy of the game is at another version missed an update and asks for the game again (its
//! `.json`, or a new connection) instead of applying it — unless the delta is the very change
//! its copy already shows, come again from another instance ([`Applied::AlreadyHad`]). Only the
//! fields that changed are present; new completed moves are added to the end, or, with
//! `moves_from`, replace those from that index on (after a position an arbiter restored).

use serde_json::Value;

use crate::view::{ClockView, GameView};

/// What changed in a game's view from version `base` to `version`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GameDelta {
    pub game_id: String,
    pub version: u64,
    /// The version a copy must be at for this to apply.
    pub base: u64,
    /// Present when completed moves were taken back: those before this index stay, the rest
    /// are replaced by `moves`, `uci` and `move_clocks`. Absent, these are added to the end
    /// (absent too: the completed moves did not change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_from: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uci: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_clocks: Option<Vec<Option<u64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconfirmed_plies: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisional: Option<Vec<String>>,
    /// `null` when the clocks are no longer known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clocks: Option<Option<ClockView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// `null` when the game is no longer over (an arbiter's decision taken back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub board_responding: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub battery_low: Option<bool>,
}

/// Whether two views show the same, their versions aside (without copying either: this runs
/// for every event released).
pub(crate) fn same_but_version(a: &GameView, b: &GameView) -> bool {
    let GameView {
        game_id,
        version: _,
        tournament_id,
        event,
        round,
        board_number,
        white,
        black,
        fen,
        moves,
        uci,
        move_clocks,
        unconfirmed_plies,
        provisional,
        clocks,
        result,
        termination,
        board_responding,
        battery_low,
    } = a;
    *game_id == b.game_id
        && *tournament_id == b.tournament_id
        && *event == b.event
        && *round == b.round
        && *board_number == b.board_number
        && *white == b.white
        && *black == b.black
        && *fen == b.fen
        && *moves == b.moves
        && *uci == b.uci
        && *move_clocks == b.move_clocks
        && *unconfirmed_plies == b.unconfirmed_plies
        && *provisional == b.provisional
        && *clocks == b.clocks
        && *result == b.result
        && *termination == b.termination
        && *board_responding == b.board_responding
        && *battery_low == b.battery_low
}

impl GameDelta {
    /// The change from `before` to `after`; `None` when it is not one a delta carries (another
    /// game, or its players, event, round or board changed, or `before` has no version: a view
    /// restored from state written before versions were kept): the game is then sent whole.
    pub fn between(before: &GameView, after: &GameView) -> Option<GameDelta> {
        if before.version == 0 {
            return None;
        }
        let identity = |v: &GameView| {
            (
                v.game_id.clone(),
                v.tournament_id.clone(),
                v.event.clone(),
                v.round,
                v.board_number,
                v.white.clone(),
                v.black.clone(),
            )
        };
        if identity(before) != identity(after) {
            return None;
        }
        let kept = before
            .moves
            .iter()
            .zip(&before.uci)
            .zip(&before.move_clocks)
            .zip(after.moves.iter().zip(&after.uci).zip(&after.move_clocks))
            .take_while(|(a, b)| a == b)
            .count();
        let moves_changed = kept < before.moves.len().max(after.moves.len());
        Some(GameDelta {
            game_id: after.game_id.clone(),
            version: after.version,
            base: before.version,
            moves_from: (kept < before.moves.len()).then_some(kept),
            moves: moves_changed.then(|| tail(&after.moves, kept)),
            uci: moves_changed.then(|| tail(&after.uci, kept)),
            move_clocks: moves_changed.then(|| tail(&after.move_clocks, kept)),
            fen: (before.fen != after.fen).then(|| after.fen.clone()),
            unconfirmed_plies: (before.unconfirmed_plies != after.unconfirmed_plies)
                .then(|| after.unconfirmed_plies.clone()),
            provisional: (before.provisional != after.provisional)
                .then(|| after.provisional.clone()),
            clocks: (before.clocks != after.clocks).then_some(after.clocks),
            result: (before.result != after.result).then(|| after.result.clone()),
            termination: (before.termination != after.termination)
                .then(|| after.termination.clone()),
            board_responding: (before.board_responding != after.board_responding)
                .then_some(after.board_responding),
            battery_low: (before.battery_low != after.battery_low).then_some(after.battery_low),
        })
    }
}

/// The items from `from` on.
fn tail<T: Clone>(all: &[T], from: usize) -> Vec<T> {
    all.get(from..).unwrap_or_default().to_vec()
}

/// What [`apply_delta`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The copy is now at the delta's version.
    Changed,
    /// The copy is at the delta's version and already shows everything it tells: the same
    /// change came again (every instance of the service publishes on the NATS subjects).
    /// Nothing to do.
    AlreadyHad,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// The copy is at another version than the delta's base (an update was missed), or at the
    /// delta's version but showing something else. Ask for the game again.
    #[error("the game is at version {have}; this update applies to version {base}")]
    OtherVersion { have: u64, base: u64 },
    #[error("not a game update of this game: {0}")]
    NotThisGame(String),
    #[error("not a game or not a delta: {0}")]
    Malformed(String),
}

/// Applies a delta (as JSON) to a game (as JSON), as a client does: the game is left as it was
/// when the delta does not apply to it.
///
/// A copy already at the delta's version takes it as a repeat only when it shows every value
/// the delta tells: a version is a number in the game's log, and after an operator kept one
/// branch of a log that forked, the same number may stand for other content than the copy
/// holds (it then asks for the game again, as for a missed update).
pub fn apply_delta(game: &mut Value, delta: &Value) -> Result<Applied, DeltaError> {
    let (Some(copy), Some(fields)) = (game.as_object(), delta.as_object()) else {
        return Err(DeltaError::Malformed("both must be JSON objects".into()));
    };
    let (Some(game_id), Some(delta_id)) = (text(copy, "game_id"), text(fields, "game_id")) else {
        return Err(DeltaError::Malformed("a game_id is missing".into()));
    };
    if game_id != delta_id {
        return Err(DeltaError::NotThisGame(format!(
            "{delta_id} is not {game_id}"
        )));
    }
    let (have, base) = (number(copy, "version")?, number(fields, "base")?);
    let version = number(fields, "version")?;
    let kept = fields
        .get("moves_from")
        .and_then(Value::as_u64)
        .and_then(|k| usize::try_from(k).ok());
    // A version 0 names no content (state written before versions were kept).
    if have == version && have != base && have != 0 && shows(copy, fields, kept) {
        return Ok(Applied::AlreadyHad);
    }
    if have != base || base == 0 {
        return Err(DeltaError::OtherVersion { have, base });
    }
    for (name, value) in fields {
        match name.as_str() {
            "game_id" | "base" | "moves_from" => {}
            "moves" | "uci" | "move_clocks" => {
                if let (Some(list), Some(tail)) = (game[name].as_array_mut(), value.as_array()) {
                    list.truncate(kept.unwrap_or(usize::MAX));
                    list.extend(tail.iter().cloned());
                }
            }
            _ => game[name] = value.clone(),
        }
    }
    Ok(Applied::Changed)
}

/// Whether `copy` shows every value of the delta `fields` (moves from `kept` on, else at its
/// end).
fn shows(
    copy: &serde_json::Map<String, Value>,
    fields: &serde_json::Map<String, Value>,
    kept: Option<usize>,
) -> bool {
    fields.iter().all(|(name, value)| match name.as_str() {
        "game_id" | "base" | "moves_from" => true,
        "moves" | "uci" | "move_clocks" => {
            let (Some(list), Some(tail)) =
                (copy.get(name).and_then(Value::as_array), value.as_array())
            else {
                return false;
            };
            let from = kept.unwrap_or(list.len().saturating_sub(tail.len()));
            list.get(from..)
                .is_some_and(|shown| shown == tail.as_slice())
        }
        _ => copy.get(name) == Some(value),
    })
}

fn text<'a>(object: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a str> {
    object.get(name).and_then(Value::as_str)
}

fn number(object: &serde_json::Map<String, Value>, name: &str) -> Result<u64, DeltaError> {
    object
        .get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| DeltaError::Malformed(format!("{name} is missing")))
}
