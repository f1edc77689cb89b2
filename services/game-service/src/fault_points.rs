//! Fault points for the tests: a panic at a chosen place while handling a chosen observation or
//! folding a chosen record, so that the tests can show on the real service that a bug never
//! stops the hall nor crash-loops the service (`tests/tests/ingest_isolation.rs`).
//!
//! Armed by `BOARDCAST_FAULT_PANIC`, a comma-separated list of `<place>:<board>:<device_seq>`
//! (`handling`, `deciding` or `stored`) or `<place>:<game>:<game_seq>` (`folding` or `folded`;
//! see [`Place`]). Debug
//! builds only, which are what the tests run: a release build has no fault points and ignores
//! the variable.

/// Where in handling an observation a fault point panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Before it is decided, on every delivery.
    Handling,
    /// Inside the decision.
    Deciding,
    /// Once its events are stored in the game log, before it is acknowledged (its next delivery
    /// finds them applied and passes).
    Stored,
    /// As a game's record is applied to the game (right after applying it, so with the game
    /// changed), keyed by game and `game_seq`, on every fold of it (as a bug in the rules or the
    /// aggregate would).
    Folding,
    /// Once a game's record is applied, in the games' own bookkeeping (outside the guard on
    /// applying it), keyed like `Folding`.
    Folded,
}

/// One armed fault point.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
struct Armed {
    place: Place,
    /// The board, or the game for `Folding` and `Folded`.
    key: String,
    /// The observation's `device_seq`, or the record's `game_seq` for `Folding` and `Folded`.
    number: u64,
}

/// The fault points `spec` arms; the items it cannot read are returned apart, to be reported.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
fn parse(spec: &str) -> (Vec<Armed>, Vec<&str>) {
    let mut armed = Vec::new();
    let mut unreadable = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let read = item.split_once(':').and_then(|(place, rest)| {
            let place = match place {
                "handling" => Place::Handling,
                "deciding" => Place::Deciding,
                "stored" => Place::Stored,
                "folding" => Place::Folding,
                "folded" => Place::Folded,
                _ => return None,
            };
            let (key, number) = rest.rsplit_once(':')?;
            Some(Armed {
                place,
                key: key.to_owned(),
                number: number.parse().ok()?,
            })
        });
        match read {
            Some(point) => armed.push(point),
            None => unreadable.push(item),
        }
    }
    (armed, unreadable)
}

/// Panics if a fault point is armed at `place` for observation `number` of board `key` (record
/// `number` of game `key` for `Folding` and `Folded`).
#[cfg(debug_assertions)]
pub fn panic_at(place: Place, key: &str, number: u64) {
    static ARMED: std::sync::OnceLock<Vec<Armed>> = std::sync::OnceLock::new();
    let armed = ARMED.get_or_init(|| {
        let spec = std::env::var("BOARDCAST_FAULT_PANIC").unwrap_or_default();
        let (armed, unreadable) = parse(&spec);
        if !unreadable.is_empty() {
            tracing::error!(
                ?unreadable,
                "BOARDCAST_FAULT_PANIC: not <handling|deciding|stored>:<board>:<device_seq> \
                 nor <folding|folded>:<game>:<game_seq>"
            );
        }
        if !armed.is_empty() {
            tracing::warn!(?armed, "fault points armed: these observations will panic");
        }
        armed
    });
    if armed
        .iter()
        .any(|a| a.place == place && a.key == key && a.number == number)
    {
        match place {
            Place::Folding | Place::Folded => {
                panic!("fault point {place:?} for record {number} of game {key}")
            }
            _ => panic!("fault point {place:?} for observation {number} of board {key}"),
        }
    }
}

/// Release builds have no fault points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn panic_at(_place: Place, _key: &str, _number: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_arms_its_points_and_reports_what_it_cannot_read() {
        let (armed, unreadable) = parse(
            "handling:b:1, stored:hall:b:2,deciding:b:x,later:b:3,stored:b,folding:g:4,folded:g:5",
        );
        assert_eq!(
            armed,
            [
                Armed {
                    place: Place::Handling,
                    key: "b".into(),
                    number: 1
                },
                Armed {
                    place: Place::Stored,
                    key: "hall:b".into(),
                    number: 2
                },
                Armed {
                    place: Place::Folding,
                    key: "g".into(),
                    number: 4
                },
                Armed {
                    place: Place::Folded,
                    key: "g".into(),
                    number: 5
                },
            ]
        );
        assert_eq!(unreadable, ["deciding:b:x", "later:b:3", "stored:b"]);
    }
}
