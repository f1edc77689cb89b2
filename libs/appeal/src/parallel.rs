//! Games are checked and replayed each on its own: spread over the machine's cores.

use std::{
    collections::BTreeMap,
    sync::{
        Condvar, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

/// `work` on every item, the items shared out over the machine's cores as each thread becomes
/// free (games differ in length: fixed halves leave a core idle at the end); the results in the
/// items' order. An item whose work panicked (a bug) gives `on_panic` instead, and the others go
/// on.
pub(crate) fn map_on_every_core<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let one = |index: usize, item: &T| {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)));
        (index, result.unwrap_or_else(|_| on_panic(item)))
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else {
                            return mine;
                        };
                        mine.push(one(index, item));
                    }
                })
            })
            .collect();
        // Each item's panic is caught above; a thread that died anyway (`on_panic` itself
        // panicked) is not papered over with a shorter list.
        handles
            .into_iter()
            .flat_map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_unstable_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

/// `work` on every item over the machine's cores, each result handed to `each` (on the calling
/// thread, which works on items too while none is ready to hand over) in the items' order as soon
/// as it and those before it are done. At most `window` items are worked on or waiting ahead of
/// the next one to hand over, so a large round is never held in memory whole. An item whose work
/// panicked gives `on_panic` instead.
pub(crate) fn for_each_on_every_core<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T) -> R + Sync,
    window: usize,
    mut each: impl FnMut(&T, R),
) {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let window = window.max(threads);
    let next = AtomicUsize::new(0);
    // How many results were handed over; helpers wait while they are `window` ahead of it.
    let handed = (Mutex::new(0usize), Condvar::new());
    // Set when the calling thread stops handing over (`each` panicked): helpers stop too, or
    // the scope would wait for them for ever.
    let abandoned = std::sync::atomic::AtomicBool::new(false);
    struct Abandon<'a>(
        &'a (Mutex<usize>, Condvar),
        &'a std::sync::atomic::AtomicBool,
    );
    impl Drop for Abandon<'_> {
        fn drop(&mut self) {
            self.1.store(true, Ordering::Release);
            let _held = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
            self.0.1.notify_all();
        }
    }
    let one = |item: &T| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)))
            .unwrap_or_else(|_| on_panic(item))
    };
    let (done, results) = std::sync::mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for _ in 1..threads {
            let done = done.clone();
            let (next, handed, one, abandoned) = (&next, &handed, &one, &abandoned);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else {
                        return;
                    };
                    {
                        let (count, moved) = handed;
                        let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
                        while index >= *count + window && !abandoned.load(Ordering::Acquire) {
                            count = moved.wait(count).unwrap_or_else(|e| e.into_inner());
                        }
                    }
                    if abandoned.load(Ordering::Acquire) {
                        return;
                    }
                    if done.send((index, one(item))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done);
        let _abandon_on_unwind = Abandon(&handed, &abandoned);
        let mut waiting: BTreeMap<usize, R> = BTreeMap::new();
        let mut next_to_hand = 0;
        // An item this thread may take next: one within the window, none once all are taken.
        let mut own: Option<usize> = None;
        while next_to_hand < items.len() {
            while let Ok((index, result)) = results.try_recv() {
                waiting.insert(index, result);
            }
            if let Some(result) = waiting.remove(&next_to_hand) {
                each(&items[next_to_hand], result);
                next_to_hand += 1;
                let (count, moved) = &handed;
                *count.lock().unwrap_or_else(|e| e.into_inner()) = next_to_hand;
                moved.notify_all();
                continue;
            }
            let index = *own.get_or_insert_with(|| next.fetch_add(1, Ordering::Relaxed));
            match items.get(index) {
                Some(item) if index < next_to_hand + window => {
                    own = None;
                    waiting.insert(index, one(item));
                }
                // Nothing this thread may take now: wait for a helper's result.
                _ => match results.recv() {
                    Ok((index, result)) => {
                        waiting.insert(index, result);
                    }
                    Err(_) => break,
                },
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_order_and_a_panic_costs_only_its_item() {
        let items: Vec<u32> = (0..1000).collect();
        let results = map_on_every_core(
            &items,
            |&n| {
                assert!(n != 500, "a bug on one item");
                n * 2
            },
            |&n| u32::MAX - n,
        );
        let expected: Vec<u32> = items
            .iter()
            .map(|&n| if n == 500 { u32::MAX - 500 } else { n * 2 })
            .collect();
        assert_eq!(results, expected);
        assert!(map_on_every_core(&[] as &[u32], |&n| n, |&n| n).is_empty());
    }

    #[test]
    fn each_result_is_handed_over_in_order_with_a_bounded_window() {
        let items: Vec<usize> = (0..300).collect();
        let handed_count = AtomicUsize::new(0);
        let most_ahead = AtomicUsize::new(0);
        let mut handed = Vec::new();
        for_each_on_every_core(
            &items,
            |&n| {
                // How far this item is ahead of the next to hand over.
                let ahead = n.saturating_sub(handed_count.load(Ordering::SeqCst));
                most_ahead.fetch_max(ahead, Ordering::SeqCst);
                // Uneven work, so that results finish out of order.
                std::thread::sleep(std::time::Duration::from_micros((n as u64 % 7) * 50));
                assert!(n != 150, "a bug on one item");
                n
            },
            |_| usize::MAX,
            8,
            |&item, result| {
                let expected = if item == 150 { usize::MAX } else { item };
                assert_eq!(result, expected);
                handed.push(item);
                handed_count.fetch_add(1, Ordering::SeqCst);
            },
        );
        assert_eq!(handed, items);
        assert!(most_ahead.load(Ordering::SeqCst) < 8);
    }

    #[test]
    fn a_panic_where_results_are_handed_over_stops_everything_without_hanging() {
        let items: Vec<usize> = (0..200).collect();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_on_every_core(
                &items,
                |&n| n,
                |_| 0,
                4,
                |&item, _| assert!(item != 10, "a bug where results are used"),
            )
        }));
        assert!(outcome.is_err());
    }
}
