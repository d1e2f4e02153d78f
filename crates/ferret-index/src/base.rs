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
use crate::arr::Arr;
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
    pub by_name: Arr<EntryId>,
    /// `by_name[name_start[k]..name_start[k + 1]]` are the entries named `k`.
    pub name_start: Arr<u32>,
    /// Entries by modification time (unknown last), then name, then id.
    pub by_mtime: Arr<EntryId>,
    /// Entries by size, folders first among those of size 0, then name, then id.
    pub by_size: Arr<EntryId>,
    /// How many slots the store had when this was built.
    pub(crate) ids: usize,
    /// The static part of relevance, as an order.
    pub rank: RankOrder,
}

/// Entries by the part of their relevance no query changes, so that a page in
/// relevance order is read off the front instead of ranking every match
/// (`crate::threshold`). Each entry's key is its bonus as
/// [`crate::rank::bonus`] gives it with no use score and the recency it had
/// at `at`: as time passes an unchanged entry's recency only falls, so the
/// key bounds its bonus at any later time. Entries outside generated folders
/// come first, each segment by key, highest first. Entries whose path has
/// changed since (moved, or below a moved or renamed folder) are named by
/// `Store::moved` and ranked apart; entries changed otherwise are in the
/// delta, as for the other orders.
#[derive(Debug, Clone, Default)]
pub(crate) struct RankOrder {
    pub ids: Arr<EntryId>,
    /// `ids[..generated]` lie outside generated folders, the rest inside.
    pub generated: u32,
    /// The key of the first entry of every block of [`RANK_BLOCK`] entries,
    /// each segment's blocks counted from its own start: a bound for every
    /// key of the block.
    pub block_keys: Arr<f32>,
    /// The time (Unix seconds) recency was counted from.
    pub at: i64,
}

/// Entries a rank order's block key bounds.
pub(crate) const RANK_BLOCK: usize = 64;

impl RankOrder {
    /// Where block keys for the generated segment begin.
    pub fn generated_blocks(&self) -> usize {
        (self.generated as usize).div_ceil(RANK_BLOCK)
    }

    /// A bound for the key of the entry at position `at`.
    #[inline]
    pub fn bound(&self, at: usize) -> f32 {
        let g = self.generated as usize;
        let block = if at < g {
            at / RANK_BLOCK
        } else {
            self.generated_blocks() + (at - g) / RANK_BLOCK
        };
        self.block_keys.get(block).copied().unwrap_or(f32::INFINITY)
    }

    /// Block keys for `keys` (the keys of `ids`, in order).
    pub fn blocks(keys: &[f32], generated: usize) -> Arr<f32> {
        let (outside, inside) = keys.split_at(generated.min(keys.len()));
        outside
            .iter()
            .step_by(RANK_BLOCK)
            .chain(inside.iter().step_by(RANK_BLOCK))
            .copied()
            .collect::<Vec<f32>>()
            .into()
    }

    pub fn heap_bytes(&self) -> usize {
        self.ids.heap_bytes() + self.block_keys.heap_bytes()
    }

    fn write_to(&self, w: &mut Writer) {
        w.array(&self.ids);
        w.u32(self.generated);
        w.array(&self.block_keys);
        w.u64(self.at as u64);
    }

    fn read_from(r: &mut Reader<'_>) -> Result<RankOrder, SnapshotError> {
        Ok(RankOrder {
            ids: r.array()?,
            generated: r.u32()?,
            block_keys: r.array()?,
            at: r.u64()? as i64,
        })
    }

    /// Whether the order is whole: ids within `n` slots, its segments and
    /// blocks consistent.
    pub fn check(&self, n: u64) -> bool {
        self.generated as usize <= self.ids.len()
            && self.ids.iter().all(|&id| u64::from(id) < n)
            && self.block_keys.len()
                == self.generated_blocks()
                    + (self.ids.len() - self.generated as usize).div_ceil(RANK_BLOCK)
    }
}

impl Base {
    /// Ids below this may be in the orders.
    pub fn ids(&self) -> usize {
        self.ids
    }

    pub fn heap_bytes(&self) -> usize {
        self.by_name.heap_bytes()
            + self.name_start.heap_bytes()
            + self.by_mtime.heap_bytes()
            + self.by_size.heap_bytes()
            + self.rank.heap_bytes()
    }

    /// [`Arr::adopt`] of part `k` of `other` (the orders, then the
    /// rank order's arrays); `None` past the last.
    pub fn adopt_part(&mut self, other: &mut Base, k: usize, same: bool) -> Option<usize> {
        use std::mem::take;
        Some(match k {
            0 => self.by_name.adopt(take(&mut other.by_name), same),
            1 => self.name_start.adopt(take(&mut other.name_start), same),
            2 => self.by_mtime.adopt(take(&mut other.by_mtime), same),
            3 => self.by_size.adopt(take(&mut other.by_size), same),
            4 => self.rank.ids.adopt(take(&mut other.rank.ids), same),
            5 => self
                .rank
                .block_keys
                .adopt(take(&mut other.rank.block_keys), same),
            _ => return None,
        })
    }

    /// The bytes of the array [`Base::adopt_part`] takes as part `k`.
    pub fn part_bytes(&self, k: usize) -> Option<&[u8]> {
        Some(match k {
            0 => self.by_name.bytes(),
            1 => self.name_start.bytes(),
            2 => self.by_mtime.bytes(),
            3 => self.by_size.bytes(),
            4 => self.rank.ids.bytes(),
            5 => self.rank.block_keys.bytes(),
            _ => return None,
        })
    }

    /// [`Arr::share`] each array.
    pub fn share_arrays(&mut self) {
        self.by_name.share();
        self.name_start.share();
        self.by_mtime.share();
        self.by_size.share();
        self.rank.ids.share();
        self.rank.block_keys.share();
    }

    pub fn write_to(&self, w: &mut Writer) {
        w.array(&self.by_name);
        w.array(&self.name_start);
        w.array(&self.by_mtime);
        w.array(&self.by_size);
        w.u64(self.ids as u64);
        self.rank.write_to(w);
    }

    pub fn read_from(r: &mut Reader<'_>) -> Result<Base, SnapshotError> {
        Ok(Base {
            by_name: r.array()?,
            name_start: r.array()?,
            by_mtime: r.array()?,
            by_size: r.array()?,
            ids: r.u64()? as usize,
            rank: RankOrder::read_from(r)?,
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
