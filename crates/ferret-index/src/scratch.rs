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
//! resident after a client's calls), at most [`KEEP_WORDS`] and
//! [`KEEP_IDS`] bytes.

use std::sync::Mutex;

/// The most kept of bit sets' words, in bytes: the bit sets of a common
/// word's search at 1M (its names' and four tiers' of entries).
const KEEP_WORDS: usize = 1 << 20;
/// The most kept of id lists, in bytes.
const KEEP_IDS: usize = 1 << 20;

static WORDS: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
static IDS: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());

/// `len` zero words: a vector given back if one is large enough.
pub(crate) fn zeroed_words(len: usize) -> Vec<u64> {
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
    take(&IDS, cap).unwrap_or_else(|| Vec::with_capacity(cap))
}

/// Keeps `v` for a later call, if little enough is kept.
pub(crate) fn give_words(v: Vec<u64>) {
    give(&WORDS, v, KEEP_WORDS);
}

/// Keeps `v` for a later call, if little enough is kept.
pub(crate) fn give_ids(v: Vec<u32>) {
    give(&IDS, v, KEEP_IDS);
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
