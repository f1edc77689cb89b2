//! Turns at something scarce (a slow password hash) shared fairly between callers: a turn that
//! ends goes to the next caller in turn, not to whoever came first, so one caller asking many
//! times at once (a flood of logins from one address) waits behind itself rather than in front
//! of everybody else.
//!
//! A FIFO semaphore serves requests in arrival order: 500 made-up logins from one address put
//! the chief arbiter's, from another, behind 500 hashes. Here each caller has its own queue,
//! capped, and the queues are served round-robin.

use std::{
    collections::{HashMap, VecDeque},
    hash::Hash,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::sync::oneshot;

/// Why no turn was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoTurn {
    #[error("this caller already has as many requests waiting as it may")]
    TooManyWaiting,
    #[error("no turn came in time")]
    TimedOut,
}

/// At most `at_once` turns at a time; at most `waiting_per_caller` of one caller's requests
/// waiting. Shared as an `Arc`: a turn is owned, so that it can go with the work it guards into
/// another thread and end with that work, not with the request that asked for it.
pub struct FairTurns<K> {
    at_once: usize,
    waiting_per_caller: usize,
    state: Mutex<State<K>>,
}

struct State<K> {
    /// Turns given and not yet ended.
    in_use: usize,
    /// Each waiting caller's requests, oldest first. A request that gave up (timed out,
    /// cancelled) stays until it is skipped: its receiver is gone.
    queues: HashMap<K, VecDeque<oneshot::Sender<()>>>,
    /// The callers with requests waiting, in the order they are served: exactly those with a
    /// queue (kept so by `turn` and `hand_on`).
    order: VecDeque<K>,
}

/// A turn; it ends when dropped, and the next caller's request gets it.
#[must_use = "the turn ends when dropped"]
pub struct Turn<K: Eq + Hash + Clone> {
    turns: Arc<FairTurns<K>>,
}

impl<K: Eq + Hash + Clone> FairTurns<K> {
    pub fn new(at_once: usize, waiting_per_caller: usize) -> Arc<Self> {
        Arc::new(FairTurns {
            at_once: at_once.max(1),
            waiting_per_caller,
            state: Mutex::new(State {
                in_use: 0,
                queues: HashMap::new(),
                order: VecDeque::new(),
            }),
        })
    }

    /// A turn for `caller`, waiting at most `wait` for it.
    pub async fn turn(self: &Arc<Self>, caller: K, wait: Duration) -> Result<Turn<K>, NoTurn> {
        let receiver = {
            let mut state = self.lock();
            // Turns free only while nobody waits (`hand_on` gives an ending turn to a waiting
            // request before it frees it).
            if state.in_use < self.at_once && state.order.is_empty() {
                state.in_use += 1;
                return Ok(Turn {
                    turns: self.clone(),
                });
            }
            if !state.queues.contains_key(&caller) {
                state.order.push_back(caller.clone());
            }
            let queue = state.queues.entry(caller).or_default();
            queue.retain(|request| !request.is_closed());
            // Refused, the caller's queue stays (empty, perhaps) until `hand_on` reaches it.
            if queue.len() >= self.waiting_per_caller {
                return Err(NoTurn::TooManyWaiting);
            }
            let (sender, receiver) = oneshot::channel();
            queue.push_back(sender);
            receiver
        };
        let mut waiting = Waiting {
            turns: self.clone(),
            receiver: Some(receiver),
        };
        let given = match waiting.receiver.as_mut() {
            Some(receiver) => tokio::time::timeout(wait, receiver).await,
            None => return Err(NoTurn::TimedOut),
        };
        match given {
            Ok(Ok(())) => {
                waiting.receiver = None;
                Ok(Turn {
                    turns: self.clone(),
                })
            }
            // Timed out (or, impossibly, the sender dropped): `Waiting`'s drop hands on a turn
            // given in the meantime.
            _ => Err(NoTurn::TimedOut),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // The state is consistent at every unlock; a panic elsewhere does not spoil it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Hands an ended turn to the next caller in turn, or returns it.
    fn hand_on(&self, state: &mut State<K>) {
        while let Some(caller) = state.order.pop_front() {
            let Some(queue) = state.queues.get_mut(&caller) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                state.queues.remove(&caller);
            } else {
                state.order.push_back(caller);
            }
            if let Some(request) = next
                && request.send(()).is_ok()
            {
                return;
            }
        }
        state.in_use = state.in_use.saturating_sub(1);
    }
}

/// A request waiting for its turn. Dropped without having taken it (timed out, or the caller's
/// future dropped), it hands on a turn given in the meantime, so no turn is ever lost.
struct Waiting<K: Eq + Hash + Clone> {
    turns: Arc<FairTurns<K>>,
    receiver: Option<oneshot::Receiver<()>>,
}

impl<K: Eq + Hash + Clone> Drop for Waiting<K> {
    fn drop(&mut self) {
        if let Some(mut receiver) = self.receiver.take() {
            // Closed under the lock: a turn sent before is found here, and none can be sent
            // after (a send to a closed receiver fails, and `hand_on` tries the next request).
            let mut state = self.turns.lock();
            receiver.close();
            if receiver.try_recv().is_ok() {
                self.turns.hand_on(&mut state);
            }
        }
    }
}

impl<K: Eq + Hash + Clone> Drop for Turn<K> {
    fn drop(&mut self) {
        let mut state = self.turns.lock();
        self.turns.hand_on(&mut state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn turns_go_round_the_callers_not_in_arrival_order() {
        let turns = FairTurns::new(1, 100);
        let first = turns.turn("flood", LONG).await.unwrap();
        let (served, mut order) = tokio::sync::mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        // Ten from the flood first, then one from elsewhere.
        for (n, caller) in std::iter::repeat_n("flood", 10)
            .chain(["chief"])
            .enumerate()
        {
            let (shared, served) = (turns.clone(), served.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = shared.turn(caller, LONG).await.unwrap();
                served.send((n, caller)).unwrap();
            }));
            tokio::task::yield_now().await;
            // Each is queued before the next is asked for.
            while turns
                .lock()
                .queues
                .values()
                .map(VecDeque::len)
                .sum::<usize>()
                < n + 1
            {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        for task in waiting {
            task.await.unwrap();
        }
        drop(served);
        let mut callers = Vec::new();
        while let Some((_, caller)) = order.recv().await {
            callers.push(caller);
        }
        assert_eq!(callers[..2], ["flood", "chief"], "{callers:?}");
        assert_eq!(callers.len(), 11);
        assert_eq!(turns.lock().in_use, 0);
    }

    #[tokio::test]
    async fn a_caller_may_have_only_so_many_waiting() {
        let turns = FairTurns::new(1, 2);
        let _held = turns.turn("a", LONG).await.unwrap();
        let one = turns.turn("a", LONG);
        let two = turns.turn("a", LONG);
        let three = turns.turn("a", Duration::from_millis(10));
        let other = turns.turn("b", Duration::from_millis(10));
        tokio::pin!(one, two);
        // Poll the first two so they queue.
        assert!(futures::poll!(&mut one).is_pending());
        assert!(futures::poll!(&mut two).is_pending());
        assert_eq!(three.await.err(), Some(NoTurn::TooManyWaiting));
        assert_eq!(other.await.err(), Some(NoTurn::TimedOut));
    }

    #[tokio::test]
    async fn a_turn_given_to_a_request_that_gave_up_is_handed_on() {
        let turns = FairTurns::new(1, 10);
        let held = turns.turn("a", LONG).await.unwrap();
        let gives_up = turns.turn("b", LONG);
        let waits = turns.turn("c", LONG);
        tokio::pin!(gives_up, waits);
        assert!(futures::poll!(&mut gives_up).is_pending());
        assert!(futures::poll!(&mut waits).is_pending());
        // "b" is sent the turn, but is dropped before it takes it.
        drop(held);
        gives_up.set(turns.turn("d", Duration::ZERO));
        let _turn = waits.await.expect("the turn reached the next request");
        assert_eq!(turns.lock().in_use, 1);
    }

    /// Requests giving up while turns are handed on, on several threads: every turn comes back.
    /// (A stress check: what keeps the handover race-free is `Waiting::drop` closing its
    /// receiver under the lock before it looks.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_turn_is_lost_when_requests_give_up_as_turns_end() {
        let turns = FairTurns::new(2, 8);
        let mut tasks = Vec::new();
        for n in 0..400u64 {
            let turns = turns.clone();
            tasks.push(tokio::spawn(async move {
                // Some hold their turn a moment; most give up almost at once.
                let wait = Duration::from_micros(50 + (n * 37) % 400);
                if let Ok(turn) = turns.turn(n % 5, wait).await {
                    tokio::time::sleep(Duration::from_micros(n % 200)).await;
                    drop(turn);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(turns.lock().in_use, 0, "every turn came back");
        let _first = turns.turn(0, Duration::ZERO).await.unwrap();
        let _second = turns.turn(1, Duration::ZERO).await.unwrap();
    }

    #[tokio::test]
    async fn requests_that_timed_out_leave_nothing_behind() {
        let turns = FairTurns::new(1, 10);
        let held = turns.turn("a", LONG).await.unwrap();
        for _ in 0..5 {
            assert_eq!(
                turns.turn("b", Duration::from_millis(1)).await.err(),
                Some(NoTurn::TimedOut)
            );
        }
        drop(held);
        assert_eq!(turns.lock().in_use, 0);
        assert!(turns.lock().queues.is_empty());
        let _again = turns.turn("b", LONG).await.unwrap();
    }
}
