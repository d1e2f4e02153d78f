//! The cores this process may use, read once.
//!
//! `std::thread::available_parallelism` reads the process's cgroup files
//! (`/proc/self/cgroup`, the mount table, `cpu.max`) on every call: 27 µs
//! on this project's machine, asked by every search, fuzzy pass and grep
//! that splits its work (a rare literal's grep takes about 0.5 ms in all).
//! The count is read on the first call and kept: a quota changed while the
//! server runs is seen at its next start.

use std::sync::OnceLock;

/// How many threads the process can run at once (at least 1), as the
/// operating system said on the first call.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Threads a piece of `work` is split into: one below `from`, else a
/// core each, at most eight (the bound every split of the crate had).
pub(crate) fn threads_for(work: usize, from: usize) -> usize {
    if work < from { 1 } else { cores().min(8) }
}

/// `work(i)` for each part `i` of `0..parts`, the results in that order:
/// the calling thread and up to `threads - 1` more each take the next part
/// no one has taken until none is left.
///
/// The caller works from the start rather than waiting on threads it
/// spawned, one part each: on this project's 2-core machine a thread
/// spawned for a millisecond's work was often run only after its sibling had
/// finished (`report` at 1M: the second half's thread started 0.64 ms after
/// the first, which had taken 0.6 ms), so a split in two took as long as no
/// split. Parts taken as threads come free also even out parts of unequal
/// cost. A panic in any part is raised again on the caller.
pub(crate) fn in_parts<R: Send>(
    parts: usize,
    threads: usize,
    work: impl Fn(usize) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = threads.clamp(1, parts.max(1));
    if threads == 1 {
        return (0..parts).map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let take = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= parts {
                return done;
            }
            done.push((i, work(i)));
        }
    };
    let mut all = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(take)).collect();
        let mut all = take();
        for h in helpers {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_count_is_the_systems_and_kept() {
        let first = super::cores();
        assert!(first >= 1);
        assert_eq!(
            first,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        assert_eq!(super::cores(), first);
    }

    #[test]
    fn parts_come_back_in_order_whoever_took_them() {
        for threads in [1, 2, 3, 8] {
            for parts in [0, 1, 2, 5, 64] {
                let got = super::in_parts(parts, threads, |i| {
                    // Parts of unequal cost, so that threads take them out of turn.
                    if i % 3 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    i * 10
                });
                assert_eq!(got, (0..parts).map(|i| i * 10).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_part_that_panics_is_raised_on_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            super::in_parts(16, 2, |i| {
                assert!(i != 11, "part eleven");
                i
            })
        });
        assert!(caught.is_err());
    }
}
