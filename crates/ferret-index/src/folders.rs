//! Every folder's name, folded, parents before their folders: what fuzzy
//! search reads to learn how far each word of a query gets through each
//! folder's path.
//!
//! Read from the store itself, that pass costs a climb through the records
//! and a lookup in the name dictionary per folder, each a cache miss (15–18 ms
//! for the 100,000 folders of the 1M synthetic tree, most of a specific fuzzy
//! query); read from this table it is one sequential pass. The table is made
//! by the first fuzzy query after the folders changed (a folder added,
//! removed, moved or renamed: the store's `folder_stamp`) and kept until they
//! change again. It holds no name keys (a rebuild of the orders renumbers
//! them), only entry ids, each folder slot's place and the folded names.

use std::sync::{Arc, Mutex};

/// A folder's parent in the table when it is a root.
pub(crate) const ROOT: u32 = u32::MAX;

/// The folders reachable from the roots, each after its parent.
#[derive(Debug, Default)]
pub(crate) struct FolderTable {
    /// The store's `folder_stamp` it was made at.
    pub stamp: u64,
    /// Each folder's entry id.
    pub ids: Vec<u32>,
    /// By folder slot (`Store::dir_slot`): the folder's place, or [`ROOT`]
    /// where the slot holds no folder reachable from the roots.
    places: Vec<u32>,
    /// Each folder's parent, as a place in this table, or [`ROOT`].
    pub parents: Vec<u32>,
    /// Each folder's place in the ranking but for a query's words, packed
    /// as the ranker packs it (its depth, path length, whether generated or
    /// built): what ranking an entry in it reads instead of climbing its
    /// folders.
    statics: Vec<u64>,
    /// Each folder's [`byte_bits`] of its folded name.
    masks: Vec<u64>,
    /// Where each folder's folded name ends in `names`.
    ends: Vec<u32>,
    names: Vec<u8>,
}

impl FolderTable {
    /// An empty table for the store at `stamp`.
    pub fn new(stamp: u64) -> FolderTable {
        FolderTable {
            stamp,
            ..FolderTable::default()
        }
    }

    /// Add a folder (after its parent): its id, slot, parent's place,
    /// folded name and fixed place in the ranking (packed); its place.
    pub fn push(&mut self, id: u32, slot: u32, parent: u32, folded: &[u8], fixed: u64) -> u32 {
        debug_assert!(parent == ROOT || (parent as usize) < self.ids.len());
        let place = self.ids.len() as u32;
        self.statics.push(fixed);
        self.ids.push(id);
        let slot = slot as usize;
        if self.places.len() <= slot {
            self.places.resize(slot + 1, ROOT);
        }
        self.places[slot] = place;
        self.parents.push(parent);
        self.names.extend_from_slice(folded);
        self.masks.push(byte_bits(folded));
        self.ends.push(self.names.len() as u32);
        place
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The place of the folder in `slot`, if the table holds it.
    pub fn place_of(&self, slot: usize) -> Option<usize> {
        self.places
            .get(slot)
            .filter(|&&p| p != ROOT)
            .map(|&p| p as usize)
    }

    /// The fixed place in the ranking (packed) of the folder at `place`.
    pub fn fixed(&self, place: usize) -> u64 {
        self.statics[place]
    }

    /// The folded name of the folder at `place`.
    pub fn name(&self, place: usize) -> &[u8] {
        let from = if place == 0 {
            0
        } else {
            self.ends[place - 1] as usize
        };
        &self.names[from..self.ends[place] as usize]
    }

    /// The [`byte_bits`] of the folder's folded name at `place`.
    pub fn mask(&self, place: usize) -> u64 {
        self.masks[place]
    }

    fn shrink_to_fit(&mut self) {
        self.masks.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.places.shrink_to_fit();
        self.parents.shrink_to_fit();
        self.statics.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.names.shrink_to_fit();
    }
}

/// Which bytes `folded` holds, a bit for each letter, digit, `.`, `-`, `_`,
/// space and `/`, the other bytes sharing the rest: a folder whose bits lack
/// the byte a word looks for next moves the word no further, and its name
/// is passed over unread (a name's own mask, `names::byte_mask`, shares
/// bits between digits and between separators, and most folders of a tree
/// hold some separator).
pub(crate) fn byte_bits(folded: &[u8]) -> u64 {
    folded.iter().fold(0, |m, &b| m | byte_bit64(b))
}

/// The bit of [`byte_bits`] that stands for `b`.
#[inline]
pub(crate) fn byte_bit64(b: u8) -> u64 {
    1 << match b {
        b'a'..=b'z' => u32::from(b - b'a'),
        b'0'..=b'9' => 26 + u32::from(b - b'0'),
        b'.' => 36,
        b'-' => 37,
        b'_' => 38,
        b' ' => 39,
        b'/' => 40,
        _ => 41 + u32::from(b) % 23,
    }
}

/// The table last made for a store, if any. A clone of the store starts
/// without one (the two may change apart while their stamps agree).
#[derive(Default)]
pub(crate) struct FolderCache(Mutex<Option<Arc<FolderTable>>>);

impl FolderCache {
    /// The table for `stamp`, made by `make` if the one kept is older.
    pub fn get(&self, stamp: u64, make: impl FnOnce() -> FolderTable) -> Arc<FolderTable> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = kept.as_ref()
            && t.stamp == stamp
        {
            return t.clone();
        }
        let mut table = make();
        debug_assert_eq!(table.stamp, stamp);
        table.shrink_to_fit();
        let table = Arc::new(table);
        *kept = Some(table.clone());
        table
    }

    /// Heap bytes the kept table holds.
    pub fn heap_bytes(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or(0, |t| {
                (t.ids.capacity() + t.places.capacity() + t.parents.capacity() + t.ends.capacity())
                    * 4
                    + (t.statics.capacity() + t.masks.capacity()) * 8
                    + t.names.capacity()
            })
    }
}

impl Clone for FolderCache {
    fn clone(&self) -> FolderCache {
        FolderCache::default()
    }
}

impl std::fmt::Debug for FolderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FolderCache")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte sets a bit only it and the bytes sharing it set: every
    /// letter, digit and separator its own.
    #[test]
    fn a_byte_is_always_in_its_names_bits() {
        let mut owners = [0u32; 64];
        for b in 0..=255u8 {
            let bit = byte_bit64(b);
            assert_eq!(bit.count_ones(), 1);
            owners[bit.trailing_zeros() as usize] += 1;
            let name = [b'x', b, b'y'];
            assert_ne!(byte_bits(&name) & bit, 0, "{b}");
        }
        for b in b"abcxyz0123456789.-_ /" {
            assert_eq!(owners[byte_bit64(*b).trailing_zeros() as usize], 1, "{b}");
        }
        assert_eq!(byte_bits(b"ab") & byte_bit64(b'c'), 0);
    }

    #[test]
    fn names_come_back_by_place_and_the_cache_keeps_one_table_a_stamp() {
        let mut t = FolderTable::new(3);
        let root = t.push(0, 0, ROOT, b"root", 1);
        let a = t.push(5, 1, root, b"", 2);
        let b = t.push(7, 2, a, b"beta", 3);
        assert_eq!(
            (t.name(0), t.name(1), t.name(2)),
            (&b"root"[..], &b""[..], &b"beta"[..])
        );
        assert_eq!((t.parents[b as usize], t.len()), (a, 3));
        assert_eq!((t.fixed(0), t.fixed(1), t.fixed(2)), (1, 2, 3));
        assert_eq!((t.mask(1), t.mask(2)), (0, byte_bits(b"beat")));
        assert_eq!(
            (t.place_of(2), t.place_of(1), t.place_of(9)),
            (Some(2), Some(1), None)
        );

        let cache = FolderCache::default();
        let mut made = 0;
        let first = cache.get(3, || {
            made += 1;
            t
        });
        let again = cache.get(3, || unreachable!("kept for the same stamp"));
        assert!(Arc::ptr_eq(&first, &again));
        assert!(cache.heap_bytes() > 0);
        assert!(
            cache.clone().heap_bytes() == 0,
            "a clone starts without one"
        );
        let newer = cache.get(4, || {
            made += 1;
            FolderTable::new(4)
        });
        assert_eq!((newer.len(), made), (0, 2));
    }
}
