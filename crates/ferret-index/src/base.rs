//! The orders searches read, rebuilt from the records now and then: every entry
//! by name, by modification time and by size (what Everything calls fast sorts),
//! plus the name dictionary's trigram and extension lists. This module holds
//! the data; [`crate::orders`] builds it and reads it against the store.
//!
//! Between rebuilds the records change and the orders do not: an entry whose name,
//! size or time changed (or that is new) is in the delta and is searched entry by
//! entry; the orders skip it, and its old keys are kept in `Store::stale` so that
//! a binary search over an order reads the keys the order was sorted by. A rebuild
//! happens when the delta grows past a share of the index
//! (`Store::needs_rebuild`); the index thread does it while
//! searches go on, and swaps the result in under a short write lock.

use crate::EntryId;
use crate::names::Names;
use crate::wire::{Reader, SnapshotError, Writer};

/// An entry's keys as the orders hold them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BaseKey {
    pub name: u32,
    pub mtime: u32,
    pub size: u64,
    pub dir: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Base {
    /// Entries in name order (by name id, then id). Roots are left out.
    pub by_name: Vec<EntryId>,
    /// `by_name[name_start[k]..name_start[k + 1]]` are the entries named `k`.
    pub name_start: Vec<u32>,
    /// Entries by modification time (unknown last), then name, then id.
    pub by_mtime: Vec<EntryId>,
    /// Entries by size, folders first among those of size 0, then name, then id.
    pub by_size: Vec<EntryId>,
    /// How many slots the store had when this was built.
    pub(crate) ids: usize,
}

impl Base {
    /// Ids below this may be in the orders.
    pub fn ids(&self) -> usize {
        self.ids
    }

    pub fn heap_bytes(&self) -> usize {
        (self.by_name.capacity()
            + self.name_start.capacity()
            + self.by_mtime.capacity()
            + self.by_size.capacity())
            * 4
    }

    pub fn write_to(&self, w: &mut Writer) {
        w.u32s(&self.by_name);
        w.u32s(&self.name_start);
        w.u32s(&self.by_mtime);
        w.u32s(&self.by_size);
        w.u64(self.ids as u64);
    }

    pub fn read_from(r: &mut Reader<'_>) -> Result<Base, SnapshotError> {
        Ok(Base {
            by_name: r.u32s()?,
            name_start: r.u32s()?,
            by_mtime: r.u32s()?,
            by_size: r.u32s()?,
            ids: r.u64()? as usize,
        })
    }

    /// The run of `by_name` holding the entries named `name` (a sorted name id).
    #[inline]
    pub fn named(&self, name: u32) -> std::ops::Range<usize> {
        match (
            self.name_start.get(name as usize),
            self.name_start.get(name as usize + 1),
        ) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }
}

/// A compacted children arena and each folder slot's `(start, cap)`.
pub(crate) type Children = (Vec<EntryId>, Vec<(u32, u32)>);

/// What a rebuild makes, swapped in by `Store::install`.
pub(crate) struct Rebuilt {
    pub names: Names,
    pub names_of: Vec<u32>,
    pub base: Base,
    pub children: Option<Children>,
}
