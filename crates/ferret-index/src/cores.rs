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
}
