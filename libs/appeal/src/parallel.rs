//! Games are checked and replayed each on its own: spread over the machine's cores.

/// `work` on every item, the items split over the machine's cores; the results in the items'
/// order. A part whose thread panicked (a bug) gives `on_panic` for each of its items instead.
pub(crate) fn map_on_every_core<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T) -> R,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = items.len().div_ceil(threads).max(1);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .zip(items.chunks(chunk))
            .flat_map(|(handle, part)| {
                handle
                    .join()
                    .unwrap_or_else(|_| part.iter().map(&on_panic).collect())
            })
            .collect()
    })
}
