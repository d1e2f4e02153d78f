//! Building the base orders from the store, and reading them against it: which
//! entries an order still holds truly, and the keys it was sorted by (see
//! [`crate::base`]).

use crate::base::{Base, Children, RankOrder, Rebuilt};
use crate::rank::{self, Places, Ranker};
use crate::store::{EntryId, FLAG_DELTA, Kind, NONE, Record, Store, UNKNOWN_SECS};

/// Rebuild the store's orders and lists now, in this thread.
pub(crate) fn rebuild_store(store: &mut Store) {
    let rebuilt = rebuild(store);
    store.install(rebuilt);
}

/// Whether the orders hold the entry of `r`: live, and not a root.
fn ordered(r: &Record) -> bool {
    r.kind != Kind::Free as u8 && r.parent != NONE
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
    rebuild_at(store, chrono::Utc::now().timestamp())
}

/// The rank order (see [`RankOrder`]), recency counted at `now`.
fn rank_order(store: &Store, now: i64) -> RankOrder {
    let mut places = Places::default();
    let mut keyed: Vec<(u64, u32)> = Vec::with_capacity(store.len());
    for (i, r) in store.records.iter().enumerate() {
        if !ordered(r) {
            continue;
        }
        let id = i as EntryId;
        let place = Ranker::place(store, r.parent, &mut places, &[]);
        let kind = Kind::from_u8(r.kind);
        let key = rank::bonus(
            rank::recency(kind, crate::store::from_secs(r.mtime), now),
            0.0,
            place,
            store.name(id).len(),
        );
        // Highest key first: the key's bits made to sort as numbers do,
        // then turned around; the generated segment after the other.
        let bits = key.to_bits();
        let ascending = if bits >> 31 == 1 {
            !bits
        } else {
            bits | 1 << 31
        };
        keyed.push((
            (u64::from(place.generated) << 32) | u64::from(!ascending),
            id,
        ));
    }
    keyed.sort_unstable();
    let generated = keyed.partition_point(|&(k, _)| k >> 32 == 0);
    let keys: Vec<f32> = keyed
        .iter()
        .map(|&(k, _)| {
            let ascending = !(k as u32);
            f32::from_bits(if ascending >> 31 == 1 {
                ascending & !(1 << 31)
            } else {
                !ascending
            })
        })
        .collect();
    RankOrder {
        block_keys: RankOrder::blocks(&keys, generated),
        ids: keyed.into_iter().map(|(_, id)| id).collect(),
        generated: generated as u32,
        at: now,
    }
}

/// [`rebuild`], the rank order's recency counted at `now`.
pub(crate) fn rebuild_at(store: &Store, now: i64) -> Rebuilt {
    let n = store.records.len();
    let live = |id: usize| ordered(&store.records[id]);
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
    let (lists, (by_mtime, by_size, children), (by_name, name_start), rank) =
        std::thread::scope(|scope| {
            let lists = scope.spawn(|| names.lists());
            // The rank order and the other orders one after the other, in
            // one thread: each sorts a key a little wider than itself per
            // entry (16 and 24 bytes), and made at once beside the new
            // names and lists, those keys were the build's peak.
            let orders = scope.spawn(|| {
                let orders = time_and_size_orders(store, &names_of);
                (orders, rank_order(store, now))
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
            let (orders, rank) = orders.join().expect("the order builder panicked");
            (
                lists.join().expect("the list builder panicked"),
                orders,
                (by_name, name_start),
                rank,
            )
        });
    names.set_lists(lists);
    Rebuilt {
        names,
        names_of,
        base: Base {
            by_name: by_name.into(),
            name_start: name_start.into(),
            by_mtime: by_mtime.into(),
            by_size: by_size.into(),
            ids: n,
            rank,
        },
        children,
    }
}

/// The entries in modification time order and in size order (ties by name,
/// then id), and the children arena compacted if it needs to be.
fn time_and_size_orders(
    store: &Store,
    names_of: &[u32],
) -> (Vec<EntryId>, Vec<EntryId>, Option<Children>) {
    let n = store.records.len();
    let live = |id: usize| ordered(&store.records[id]);
    let mut by_mtime: Vec<(u64, u32)> = (0..n)
        .filter(|&i| live(i))
        .map(|i| {
            let key = (u64::from(store.records[i].mtime) << 32) | u64::from(names_of[i]);
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
