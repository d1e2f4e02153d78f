//! The orders searches read, rebuilt from the records now and then: every entry
//! by name, by modification time and by size (what Everything calls fast sorts),
//! plus the name dictionary's trigram and extension lists.
//!
//! Between rebuilds the records change and the orders do not: an entry whose name,
//! size or time changed (or that is new) is in the delta and is searched entry by
//! entry; the orders skip it, and its old keys are kept in `Store::stale` so that
//! a binary search over an order reads the keys the order was sorted by. A rebuild
//! happens when the delta grows past a share of the index
//! ([`crate::store::Store::needs_rebuild`]); the index thread does it while
//! searches go on, and swaps the result in under a short write lock.

use crate::names::Names;
use crate::snapshot::{Reader, SnapshotError, Writer};
use crate::store::{EntryId, FLAG_DELTA, Kind, NONE, Store, UNKNOWN_SECS};

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
    ids: usize,
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

/// What a rebuild makes, swapped in by [`Store::install`].
pub(crate) struct Rebuilt {
    pub names: Names,
    pub names_of: Vec<u32>,
    pub base: Base,
    pub children: Option<Children>,
}

/// Whether base iteration must skip `id` (it changed, is new, or is gone).
#[inline]
pub(crate) fn skipped(store: &Store, id: EntryId) -> bool {
    let r = &store.records[id as usize];
    r.flags & FLAG_DELTA != 0 || r.kind == Kind::Free as u8
}

/// The mtime the base order holds for `id`.
#[inline]
pub(crate) fn base_mtime(store: &Store, id: EntryId) -> u32 {
    match store.stale.get(&id) {
        Some(k) if skipped(store, id) => k.mtime,
        _ => store.records[id as usize].mtime,
    }
}

#[inline]
pub(crate) fn base_size(store: &Store, id: EntryId) -> u64 {
    match store.stale.get(&id) {
        Some(k) if skipped(store, id) => k.size,
        _ => store.size(id),
    }
}

/// Positions `a..b` of `by_mtime` whose (base) time lies in `lo..=hi`.
pub(crate) fn mtime_positions(store: &Store, lo: u32, hi: u32) -> std::ops::Range<usize> {
    let o = &store.base.by_mtime;
    let a = o.partition_point(|&id| base_mtime(store, id) < lo);
    let b = o.partition_point(|&id| base_mtime(store, id) <= hi);
    a..b.max(a)
}

/// Positions `a..b` of `by_size` whose (base) size lies in `lo..=hi` (folders,
/// of size 0 here, included).
pub(crate) fn size_positions(store: &Store, lo: u64, hi: u64) -> std::ops::Range<usize> {
    let o = &store.base.by_size;
    let a = o.partition_point(|&id| base_size(store, id) < lo);
    let b = o.partition_point(|&id| base_size(store, id) <= hi);
    a..b.max(a)
}

/// Entries the orders hold in `lo..=hi` that have changed or gone since.
pub(crate) fn stale_in_mtime(store: &Store, lo: u32, hi: u32) -> usize {
    store
        .stale
        .iter()
        .filter(|(id, k)| {
            skipped(store, **id) && k.mtime != UNKNOWN_SECS && (lo..=hi).contains(&k.mtime)
        })
        .count()
}

pub(crate) fn stale_in_size(store: &Store, lo: u64, hi: u64) -> usize {
    store
        .stale
        .iter()
        .filter(|(id, k)| skipped(store, **id) && !k.dir && (lo..=hi).contains(&k.size))
        .count()
}

/// Build the orders and lists for the store as it is now.
pub(crate) fn rebuild(store: &Store) -> Rebuilt {
    let n = store.records.len();
    let live = |id: usize| {
        let r = &store.records[id];
        r.kind != Kind::Free as u8 && r.parent != NONE
    };
    // The dictionary first: the orders break ties by name, in its new ids.
    let mut used = vec![false; store.names.len() as usize];
    for (i, &name) in store.names_of.iter().enumerate() {
        if store.records[i].kind != Kind::Free as u8 {
            used[name as usize] = true;
        }
    }
    let (mut names, map) = store.names.rebuild(&used);
    drop(used);
    let mut names_of = vec![0u32; n];
    for i in 0..n {
        if store.records[i].kind != Kind::Free as u8 {
            names_of[i] = map[store.names_of[i] as usize];
        }
    }
    drop(map);
    let (lists, (by_mtime, by_size, children), (by_name, name_start)) =
        std::thread::scope(|scope| {
            let lists = scope.spawn(|| names.lists());
            let orders = scope.spawn(|| {
                let names_of = &names_of;
                let mut by_mtime: Vec<(u64, u32)> = (0..n)
                    .filter(|&i| live(i))
                    .map(|i| {
                        let key =
                            (u64::from(store.records[i].mtime) << 32) | u64::from(names_of[i]);
                        (key, i as u32)
                    })
                    .collect();
                by_mtime.sort_unstable();
                let by_mtime: Vec<EntryId> = by_mtime.into_iter().map(|(_, i)| i).collect();
                // Folders (no size) first among the entries of size 0.
                let mut by_size: Vec<(u64, u64, u32)> = (0..n)
                    .filter(|&i| live(i))
                    .map(|i| {
                        let file = u64::from(store.records[i].kind != Kind::Dir as u8);
                        (
                            store.size(i as u32),
                            (file << 32) | u64::from(names_of[i]),
                            i as u32,
                        )
                    })
                    .collect();
                by_size.sort_unstable();
                let by_size: Vec<EntryId> = by_size.into_iter().map(|(_, _, i)| i).collect();
                let children = store.children_fragmented().then(|| compact_children(store));
                (by_mtime, by_size, children)
            });
            // Counting sort by name: ids ascend within each name.
            let mut name_start = vec![0u32; names.len() as usize + 1];
            for i in 0..n {
                if live(i) {
                    name_start[names_of[i] as usize + 1] += 1;
                }
            }
            for k in 1..name_start.len() {
                name_start[k] += name_start[k - 1];
            }
            let mut fill = name_start.clone();
            let mut by_name = vec![0u32; *name_start.last().unwrap_or(&0) as usize];
            for (i, &k) in names_of.iter().enumerate() {
                if live(i) {
                    by_name[fill[k as usize] as usize] = i as u32;
                    fill[k as usize] += 1;
                }
            }
            (
                lists.join().expect("the list builder panicked"),
                orders.join().expect("the order builder panicked"),
                (by_name, name_start),
            )
        });
    names.set_lists(lists);
    Rebuilt {
        names,
        names_of,
        base: Base {
            by_name,
            name_start,
            by_mtime,
            by_size,
            ids: n,
        },
        children,
    }
}

fn compact_children(store: &Store) -> Children {
    let total: usize = store.dirs.iter().map(|d| d.len as usize).sum();
    let mut arena = Vec::with_capacity(total);
    let mut starts = Vec::with_capacity(store.dirs.len());
    for d in &store.dirs {
        let start = arena.len() as u32;
        arena.extend_from_slice(&store.children[d.start as usize..(d.start + d.len) as usize]);
        starts.push((start, d.len));
    }
    (arena, starts)
}
