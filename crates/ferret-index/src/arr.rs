//! The store's big arrays, held either on the heap or read in place from the
//! memory-mapped snapshot, so that a process that only searches (`ferret
//! search`) or a server just restarted answers without copying the file
//! first. An array read in place is copied to the heap the first time it is
//! changed (copy on write): the watcher's first change to the records copies
//! them, the lists stay mapped until the next rebuild replaces them.
//!
//!
//! A heap array can also be shared ([`Arr::share`]): the snapshot writer
//! takes the store's arrays that way under a short lock and writes them with
//! no lock held, while the watcher goes on changing the store; an array the
//! watcher changes meanwhile is copied first (copy on write again), and one
//! no longer shared goes back to being a plain `Vec` for nothing.
//!
//! Written here because it is a few lines over `memmap2` and `bytemuck`:
//! `bytemuck` says which types any bytes are a valid value of (plain numbers
//! and `repr(C)` structs of them without padding), `memmap2` maps the file;
//! what neither does is keep the map alive beside a slice of it and fall back
//! to a `Vec` on the first write.

use std::{
    fmt,
    ops::{Deref, DerefMut},
    ptr::NonNull,
    sync::Arc,
};

use bytemuck::Pod;

/// A `Vec<T>` that may, until it is first changed, be a run of a mapped file
/// or a `Vec` shared with a snapshot being written.
pub(crate) enum Arr<T> {
    Heap(Vec<T>),
    Shared {
        /// The first item of `vec`, whose buffer never moves nor changes
        /// while it is shared.
        at: NonNull<T>,
        len: usize,
        vec: Arc<Vec<T>>,
    },
    Mapped {
        /// The first item, inside `map`, aligned for `T`.
        at: NonNull<T>,
        len: usize,
        /// Keeps the mapping (and so `at`) alive.
        map: Arc<memmap2::Mmap>,
        /// Where the run starts in the map, in bytes.
        offset: usize,
    },
}

// SAFETY: a mapped run is read-only shared memory kept alive by the `Arc`
// it holds, a shared one a `Vec<T>` behind an `Arc` that no one changes, so
// sharing or sending either is as safe as sharing `&[T]` (hence `T: Sync`
// for sending too); the heap variant is a `Vec<T>`.
unsafe impl<T: Send + Sync> Send for Arr<T> {}
// SAFETY: as above: `&Arr<T>` only ever gives out `&[T]`.
unsafe impl<T: Sync> Sync for Arr<T> {}

impl<T: Pod> Arr<T> {
    /// `len` items of `map` from byte `offset`; `None` when they do not lie
    /// inside it or are not aligned for `T`.
    pub fn mapped(map: &Arc<memmap2::Mmap>, offset: usize, len: usize) -> Option<Arr<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let run = map.get(offset..offset.checked_add(bytes)?)?;
        // Checks alignment and size; any bytes are a valid `T` (`Pod`).
        let items: &[T] = bytemuck::try_cast_slice(run).ok()?;
        Some(Arr::Mapped {
            at: NonNull::from(items).cast(),
            len,
            map: Arc::clone(map),
            offset,
        })
    }

    /// The array as a `Vec` to change, copied from the map first if it was
    /// read in place.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        // Read in place, or shared with a snapshot being written: copied.
        let copy = self.copy_if_borrowed();
        self.take_copy(copy);
        // Shared with no one (any more): the same buffer, for nothing.
        if let Arr::Shared { .. } = self {
            let Arr::Shared { vec, .. } = std::mem::take(self) else {
                unreachable!("matched above")
            };
            *self = Arr::Heap(Arc::try_unwrap(vec).unwrap_or_else(|v| v.to_vec()));
        }
        match self {
            Arr::Heap(v) => v,
            _ => unreachable!("just made a heap array"),
        }
    }

    /// Make a heap array one that clones share (cheaply, without copying
    /// it) until either is changed: see the module's comment.
    pub fn share(&mut self) {
        if let Arr::Heap(v) = self
            && v.capacity() > 0
        {
            let vec = Arc::new(std::mem::take(v));
            *self = Arr::Shared {
                at: NonNull::new(vec.as_ptr().cast_mut()).expect("a Vec's buffer is never null"),
                len: vec.len(),
                vec,
            };
        }
    }

    /// Bytes it holds on the heap (nothing while mapped).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Arr::Heap(v) => v.capacity() * std::mem::size_of::<T>(),
            Arr::Shared { vec, .. } => vec.capacity() * std::mem::size_of::<T>(),
            Arr::Mapped { .. } => 0,
        }
    }

    /// Give back spare capacity (nothing to give while mapped or shared).
    pub fn shrink_to_fit(&mut self) {
        if let Arr::Heap(v) = self {
            v.shrink_to_fit();
        }
    }

    /// Its items' bytes.
    pub fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice::<T, u8>(self)
    }

    /// Read `other` (a run of a newer map of the same length) in place
    /// instead, when `same`: after a snapshot is written, what it holds
    /// unchanged need not stay on the heap, nor in an older snapshot's map
    /// (whose file, replaced, would otherwise be kept on disk by the map).
    /// `same` is the caller's comparison of the items ([`Arr::bytes`], in
    /// slices under read locks: see `Index::read_in_place`), nothing changed
    /// since; debug builds compare them again. Returns the heap bytes let go
    /// (0 when not taken). The pages of the run compared are let go either
    /// way.
    pub fn adopt(&mut self, other: Arr<T>, same: bool) -> usize {
        let Arr::Mapped {
            map: theirs,
            offset,
            len,
            ..
        } = &other
        else {
            return 0;
        };
        let newer = match self {
            Arr::Heap(_) | Arr::Shared { .. } => true,
            Arr::Mapped { map, .. } => !Arc::ptr_eq(map, theirs),
        };
        let same = same && newer && self.len() == other.len();
        debug_assert!(
            !same || self.bytes() == other.bytes(),
            "adopted unlike items"
        );
        // The comparison read every page of the run: they leave the
        // process's memory either way (taken, searches bring back those
        // they read, as after a restart's load).
        forget_pages(theirs, (*offset, *len * std::mem::size_of::<T>()));
        if !same {
            return 0;
        }
        let freed = self.heap_bytes();
        *self = other;
        freed
    }

    /// A heap copy of the array when a change would have to copy it first
    /// (it is read in place, or shared with a snapshot being written), made
    /// with only `&self` (under the store's read lock, while searches go
    /// on), to be taken by [`Arr::take_copy`]; `None` otherwise.
    pub fn copy_if_borrowed(&self) -> Option<Vec<T>> {
        match self {
            Arr::Heap(_) => None,
            Arr::Shared { vec, .. } if Arc::strong_count(vec) == 1 => None,
            Arr::Shared { vec, .. } => {
                let mut copy = Vec::with_capacity(vec.capacity());
                copy.extend_from_slice(vec);
                Some(copy)
            }
            Arr::Mapped { .. } => Some(self.to_vec()),
        }
    }

    /// Hold `copy` on the heap instead, when there is one and the array is
    /// still mapped or shared and of the copy's length: `copy` must hold
    /// the same items ([`Arr::copy_if_borrowed`] of it, nothing changed
    /// since; debug builds check). The pages of a mapped run are let go.
    pub fn take_copy(&mut self, copy: Option<Vec<T>>) {
        let Some(copy) = copy else { return };
        if matches!(self, Arr::Heap(_)) || self.len() != copy.len() {
            return;
        }
        debug_assert!(
            bytemuck::cast_slice::<T, u8>(&copy) == self.bytes(),
            "a copy of other items"
        );
        let was = std::mem::replace(self, Arr::Heap(copy));
        if let Arr::Mapped {
            len, map, offset, ..
        } = was
        {
            forget_pages(&map, (offset, len * std::mem::size_of::<T>()));
        }
    }

    /// Whether it is still read in place.
    #[cfg(test)]
    pub fn is_mapped(&self) -> bool {
        matches!(self, Arr::Mapped { .. })
    }
}

/// Tell the kernel this process no longer needs the whole pages of `run`
/// (offset, length) mapped: a run copied to the heap would otherwise stay
/// resident twice. Only a hint: another view of the run that reads it later
/// faults the same bytes in again from the file.
fn forget_pages(map: &memmap2::Mmap, (offset, len): (usize, usize)) {
    let page = rustix::param::page_size();
    let start = offset.next_multiple_of(page);
    let end = (offset + len) / page * page;
    if end > start {
        // SAFETY: the map is a read-only private map of a file that is never
        // written in place, so its pages are always clean: dropping them
        // loses nothing, and a later read faults the file's same bytes back
        // in (what MADV_DONTNEED does to clean file pages); no view of them
        // sees anything else.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

impl<T: Pod> Deref for Arr<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Arr::Heap(v) => v,
            // SAFETY: `at` and `len` were taken from a slice of the map that
            // `map` keeps alive and never changes (the file is mapped
            // read-only and private); alignment and bounds were checked when
            // it was made, and `T: Pod` makes any bytes a valid `T`. A
            // shared run is the buffer of the `Vec` its `Arc` keeps alive,
            // which no one changes (or moves) while it is behind the `Arc`.
            Arr::Mapped { at, len, .. } | Arr::Shared { at, len, .. } => unsafe {
                std::slice::from_raw_parts(at.as_ptr(), *len)
            },
        }
    }
}

impl<T: Pod> DerefMut for Arr<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.to_mut()
    }
}

impl<T> Default for Arr<T> {
    fn default() -> Self {
        Arr::Heap(Vec::new())
    }
}

impl<T> From<Vec<T>> for Arr<T> {
    fn from(v: Vec<T>) -> Self {
        Arr::Heap(v)
    }
}

impl<T> FromIterator<T> for Arr<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Arr::Heap(iter.into_iter().collect())
    }
}

impl<'a, T: Pod> IntoIterator for &'a Arr<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Pod> Clone for Arr<T> {
    fn clone(&self) -> Self {
        match self {
            Arr::Heap(v) => Arr::Heap(v.clone()),
            Arr::Shared { at, len, vec } => Arr::Shared {
                at: *at,
                len: *len,
                vec: Arc::clone(vec),
            },
            Arr::Mapped {
                at,
                len,
                map,
                offset,
            } => Arr::Mapped {
                at: *at,
                len: *len,
                map: Arc::clone(map),
                offset: *offset,
            },
        }
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for Arr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self {
            Arr::Heap(_) => "heap",
            Arr::Shared { .. } => "shared",
            Arr::Mapped { .. } => "mapped",
        };
        write!(f, "Arr({how}, {} items)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_run_reads_in_place_and_copies_on_the_first_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        let words: Vec<u32> = (0..100).collect();
        let mut bytes = vec![0u8; 8];
        bytes.extend_from_slice(bytemuck::cast_slice(&words));
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a file of this test's own, not changed while mapped.
        let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap());
        let mut a: Arr<u32> = Arr::mapped(&map, 8, 100).unwrap();
        assert!(a.is_mapped());
        assert_eq!(a[..], words[..]);
        let b = a.clone();
        a[3] = 7;
        assert!(!a.is_mapped() && b.is_mapped());
        assert_eq!((a[3], b[3]), (7, 3));
        a.to_mut().push(100);
        assert_eq!(a.len(), 101);
        // Out of bounds, or not aligned for the type: refused.
        assert!(Arr::<u32>::mapped(&map, 8, 101).is_none());
        assert!(Arr::<u32>::mapped(&map, 6, 2).is_none());
        assert!(Arr::<u32>::mapped(&map, usize::MAX, 2).is_none());
    }

    /// A copy made with `&self` of a mapped run, or of a shared one whose
    /// other holder is still there, is taken in its place; a heap array, or
    /// one shared no longer, has none to make; a copy of another length is
    /// not taken.
    #[test]
    fn a_copy_made_under_a_read_lock_is_taken_in_place_of_the_map() {
        let dir = tempfile::tempdir().unwrap();
        let words: Vec<u32> = (0..1000).collect();
        let map = map_of(dir.path(), "words", &words);
        let mut a = Arr::<u32>::mapped(&map, 0, 1000).unwrap();
        let copy = a.copy_if_borrowed().unwrap();
        a.take_copy(Some(copy[..999].to_vec()));
        assert!(a.is_mapped(), "another length");
        a.take_copy(None);
        assert!(a.is_mapped(), "none");
        a.take_copy(Some(copy));
        assert!(!a.is_mapped() && a[..] == words[..]);
        assert!(a.copy_if_borrowed().is_none());
        let mut shared = Arr::from(words.clone());
        shared.share();
        assert!(shared.copy_if_borrowed().is_none(), "shared with no one");
        let other = shared.clone();
        let copy = shared.copy_if_borrowed().unwrap();
        shared.take_copy(Some(copy));
        assert!(matches!(shared, Arr::Heap(_)) && shared[..] == words[..]);
        assert!(matches!(other, Arr::Shared { .. }) && other[..] == words[..]);
    }

    fn map_of(dir: &std::path::Path, name: &str, words: &[u32]) -> Arc<memmap2::Mmap> {
        let path = dir.join(name);
        std::fs::write(&path, bytemuck::cast_slice::<u32, u8>(words)).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a file of this test's own, not changed while mapped.
        Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap())
    }

    /// A run of a newer map of the same length is taken when the caller
    /// found the items the same: from the heap (whose bytes are let go), or
    /// from an older map; never a run of another length, nor one not mapped.
    #[test]
    fn a_mapped_run_of_the_same_length_is_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let words: Vec<u32> = (0..1000).collect();
        let older = map_of(dir.path(), "older", &words);
        let newer = map_of(dir.path(), "newer", &words);
        let run = |map: &Arc<memmap2::Mmap>, len| Arr::<u32>::mapped(map, 0, len).unwrap();

        let mut heap: Arr<u32> = Arr::from(words.clone());
        assert_eq!(heap.adopt(run(&newer, 999), true), 0, "shorter");
        assert_eq!(heap.adopt(Arr::from(words.clone()), true), 0, "not mapped");
        assert!(!heap.is_mapped());
        assert_eq!(heap.bytes(), bytemuck::cast_slice::<u32, u8>(&words));
        assert_eq!(heap.adopt(run(&newer, 1000), false), 0, "found unlike");
        assert!(!heap.is_mapped());
        assert_eq!(heap.adopt(run(&newer, 1000), true), 4000);
        assert!(heap.is_mapped() && heap[..] == words[..]);

        let mut old = run(&older, 1000);
        assert_eq!(
            old.adopt(run(&older, 1000), true),
            0,
            "the same map: nothing to gain"
        );
        assert_eq!(
            old.adopt(run(&newer, 1000), true),
            0,
            "no heap bytes, but taken"
        );
        let Arr::Mapped { map, .. } = &old else {
            panic!("still mapped")
        };
        assert!(Arc::ptr_eq(map, &newer));
        assert_eq!(Arc::strong_count(&older), 1, "the older map is let go");
    }

    /// Debug builds (the tests) check the caller's comparison.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "adopted unlike items")]
    fn a_run_of_other_items_is_caught_in_debug_builds() {
        let dir = tempfile::tempdir().unwrap();
        let words: Vec<u32> = (0..1000).collect();
        let mut changed = words.clone();
        changed[999] = 5;
        let other = map_of(dir.path(), "other", &changed);
        let mut heap: Arr<u32> = Arr::from(words);
        heap.adopt(Arr::<u32>::mapped(&other, 0, 1000).unwrap(), true);
    }
}
