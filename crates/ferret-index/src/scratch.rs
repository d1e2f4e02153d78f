//! A search's largest vectors kept for the next search.
//!
//! A search over a million entries makes bit sets of every name and of every
//! entry (125 KB each at 1M, 1.25 MB at 10M) and lists of the names it found;
//! freed at the end of the call, glibc hands such blocks back to the system
//! (mapped from 256 KiB, see `trim::map_large_allocations`, or trimmed from
//! the top of a heap), and the next call writes fresh pages, a fault for each
//! 4 KiB (about 145 a call for `report` at 1M on this project's machine, 1–2
//! µs each). Kept here instead, in one store for the process (kept per
//! thread, a server's many search threads each kept their own: 4 MiB more
//! resident after a client's calls), at most [`WORD_SETS`] bit sets and
//! [`ID_LISTS`] lists of the largest size asked so far (bit sets of 1.25 MB
//! at 10M entries), and never less than [`FLOOR`] bytes of each kind.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many of the largest bit sets asked are kept: a common word's search
/// makes one of its names and up to four of entries (its tiers).
const WORD_SETS: usize = 6;
/// How many of the largest id lists asked are kept: a search makes one.
const ID_LISTS: usize = 2;
/// What may be kept of each kind whatever was asked.
const FLOOR: usize = 1 << 20;

static WORDS: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
static IDS: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
/// The largest vector of each kind asked so far, in bytes.
static LARGEST_WORDS: AtomicUsize = AtomicUsize::new(0);
static LARGEST_IDS: AtomicUsize = AtomicUsize::new(0);

/// The most kept, in bytes, of a kind whose largest vector asked is
/// `largest`: `many` of them, at least [`FLOOR`]. (A bound of 1 MiB kept
/// nothing at 10M entries, whose bit sets are 1.25 MB each.)
fn bound(largest: &AtomicUsize, many: usize) -> usize {
    FLOOR.max(largest.load(Ordering::Relaxed).saturating_mul(many))
}

/// `len` zero words: a vector given back if one is large enough.
pub(crate) fn zeroed_words(len: usize) -> Vec<u64> {
    LARGEST_WORDS.fetch_max(len.saturating_mul(8), Ordering::Relaxed);
    match take(&WORDS, len) {
        Some(mut v) => {
            v.resize(len, 0);
            v
        }
        None => vec![0; len],
    }
}

/// An empty vector of at least `cap` ids.
pub(crate) fn ids_with_capacity(cap: usize) -> Vec<u32> {
    LARGEST_IDS.fetch_max(cap.saturating_mul(4), Ordering::Relaxed);
    take(&IDS, cap).unwrap_or_else(|| Vec::with_capacity(cap))
}

/// Keeps `v` for a later call, if little enough is kept.
pub(crate) fn give_words(v: Vec<u64>) {
    give(&WORDS, v, bound(&LARGEST_WORDS, WORD_SETS));
}

/// Keeps `v` for a later call, if little enough is kept.
pub(crate) fn give_ids(v: Vec<u32>) {
    give(&IDS, v, bound(&LARGEST_IDS, ID_LISTS));
}

/// The smallest kept vector of at least `cap`, emptied.
fn take<T>(kept: &Mutex<Vec<Vec<T>>>, cap: usize) -> Option<Vec<T>> {
    let mut k = kept.lock().unwrap_or_else(|e| e.into_inner());
    let i = (0..k.len())
        .filter(|&i| k[i].capacity() >= cap)
        .min_by_key(|&i| k[i].capacity())?;
    let mut v = k.swap_remove(i);
    v.clear();
    Some(v)
}

fn give<T>(kept: &Mutex<Vec<Vec<T>>>, v: Vec<T>, most: usize) {
    let bytes = |v: &Vec<T>| v.capacity() * std::mem::size_of::<T>();
    if bytes(&v) == 0 || bytes(&v) > most {
        return;
    }
    let mut k = kept.lock().unwrap_or_else(|e| e.into_inner());
    let held: usize = k.iter().map(bytes).sum();
    if held + bytes(&v) <= most {
        k.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_given_back_is_taken_again_cleared() {
        // (A store of the test's own: tests run side by side.)
        let kept = Mutex::new(Vec::new());
        let mut w = vec![0u64; 1000];
        w[7] = 99;
        let at = w.as_ptr();
        give(&kept, w, 1 << 20);
        let mut again = take(&kept, 500).expect("kept");
        again.resize(500, 0);
        assert_eq!(again.as_ptr(), at);
        assert!(again.iter().all(|&x| x == 0));
        // Through the process's stores: whatever comes back is as asked.
        let words = zeroed_words(300);
        assert!(words.len() == 300 && words.iter().all(|&x| x == 0));
        give_words(words);
        let ids = ids_with_capacity(50);
        assert!(ids.is_empty() && ids.capacity() >= 50);
        give_ids(ids);
    }

    /// The bound is the floor until the vectors asked grow past it, then
    /// as many of the largest as a search makes.
    #[test]
    fn the_bound_grows_with_the_largest_vector_asked() {
        let largest = AtomicUsize::new(0);
        assert_eq!(bound(&largest, WORD_SETS), FLOOR);
        largest.fetch_max(125_000, Ordering::Relaxed);
        assert_eq!(bound(&largest, WORD_SETS), FLOOR, "1M entries' bit sets");
        largest.fetch_max(1_250_000, Ordering::Relaxed);
        assert_eq!(bound(&largest, WORD_SETS), 7_500_000, "10M entries'");
        // What the bound lets in is kept (the process's stores are shared
        // with the tests running beside this one: a store of its own).
        let kept = Mutex::new(Vec::new());
        for _ in 0..WORD_SETS + 1 {
            give(&kept, vec![0u64; 1_250_000 / 8], bound(&largest, WORD_SETS));
        }
        assert_eq!(kept.lock().unwrap().len(), WORD_SETS);
    }

    #[test]
    fn at_most_the_bound_is_kept() {
        let kept = Mutex::new(Vec::new());
        for _ in 0..4 {
            give(&kept, vec![0u64; 1000], 20_000);
        }
        // Two of 8,000 bytes fit in 20,000; a third does not.
        assert_eq!(kept.lock().unwrap().len(), 2);
        // Larger than the bound: not kept at all.
        give(&kept, vec![0u64; 3000], 20_000);
        assert_eq!(kept.lock().unwrap().len(), 2);
        // The smallest that is large enough is taken.
        give(&kept, vec![0u64; 10], 20_000);
        assert_eq!(take(&kept, 5).map(|v| v.capacity()), Some(10));
        assert!(take(&kept, 2000).is_none());
    }
}
