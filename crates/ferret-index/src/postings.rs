//! Sorted lists of `u32` ids, compressed, keyed by a `u32`: the trigram and
//! extension lists of the name dictionary.
//!
//! Written here rather than taken from a crate: the lists are built once (ids
//! arrive in increasing order), never changed, read by intersecting a few of them,
//! and must cost about a byte per id. `roaring` spends two bytes per id on lists as
//! sparse as trigram lists of names (measured: 37 bytes an entry on this machine's
//! own file system against 11 here), and `fst` maps keys, not id lists.
//!
//! Each list is its ids as gaps (the first id as itself), each gap a LEB128 varint,
//! all lists in one byte arena. Every [`SKIP_EVERY`] ids a skip entry records an id
//! and where the list continues after it, so [`Cursor::seek`] jumps over blocks.

use std::collections::HashMap;

use crate::arr::Arr;
use crate::wire::{Reader, SnapshotError, Writer};

/// One skip entry per this many ids of a list.
const SKIP_EVERY: u32 = 128;

#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Skip {
    /// An id of the list.
    value: u32,
    /// Where the gap of the id after it starts (skip entry `k` of a list comes
    /// after its `(k + 1) * SKIP_EVERY`th id).
    offset: u32,
}

#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Head {
    key: u32,
    data: u32,
    len: u32,
    count: u32,
    skip: u32,
    skips: u32,
}

/// Immutable posting lists.
#[derive(Debug, Clone, Default)]
pub(crate) struct Postings {
    /// Sorted by key.
    heads: Arr<Head>,
    data: Arr<u8>,
    skips: Arr<Skip>,
}

#[inline]
fn get_varint(data: &[u8], pos: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    loop {
        let b = data[*pos];
        *pos += 1;
        v |= u32::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl Postings {
    /// How many ids the list of `key` holds (0 when there is none).
    pub fn count(&self, key: u32) -> u32 {
        self.head(key).map_or(0, |h| h.count)
    }

    fn head(&self, key: u32) -> Option<&Head> {
        self.heads
            .binary_search_by_key(&key, |h| h.key)
            .ok()
            .map(|i| &self.heads[i])
    }

    /// A cursor over the list of `key` (empty when there is none).
    pub fn cursor(&self, key: u32) -> Cursor<'_> {
        match self.head(key) {
            Some(h) => Cursor {
                data: &self.data[h.data as usize..(h.data + h.len) as usize],
                skips: &self.skips[h.skip as usize..(h.skip + h.skips) as usize],
                pos: 0,
                cur: 0,
                left: h.count,
                count: h.count,
                started: false,
                skip_at: 0,
            },
            None => Cursor::default(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.heads.heap_bytes() + self.data.heap_bytes() + self.skips.heap_bytes()
    }

    pub fn write_to(&self, w: &mut Writer) {
        w.array(&self.heads);
        w.array(&self.data);
        w.array(&self.skips);
    }

    /// Read what [`Postings::write_to`] wrote; every list's bytes and skip
    /// entries are checked to lie inside the arenas (unless the reader
    /// trusts the file: see [`Reader::deep`]).
    pub fn read_from(r: &mut Reader<'_>) -> Result<Postings, SnapshotError> {
        let heads: Arr<Head> = r.array()?;
        let data: Arr<u8> = r.array()?;
        let skips: Arr<Skip> = r.array()?;
        if !r.deep {
            return Ok(Postings { heads, data, skips });
        }
        let bad = SnapshotError::Corrupt("posting lists");
        if heads.windows(2).any(|w| w[0].key >= w[1].key) {
            return Err(bad);
        }
        for h in heads.iter() {
            let end = h.data as u64 + h.len as u64;
            let skip_end = h.skip as u64 + h.skips as u64;
            if end > data.len() as u64
                || skip_end > skips.len() as u64
                || h.count > h.len
                || data[h.data as usize..end as usize]
                    .last()
                    .is_some_and(|&b| b >= 0x80)
                || h.skips != h.count / SKIP_EVERY
                || skips[h.skip as usize..skip_end as usize]
                    .iter()
                    .any(|s| s.offset > h.len)
            {
                return Err(bad);
            }
        }
        Ok(Postings { heads, data, skips })
    }
}

/// Reads one list in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    skips: &'a [Skip],
    pos: usize,
    cur: u32,
    /// Ids not yet returned.
    left: u32,
    count: u32,
    started: bool,
    /// Skip entries before this one lie behind the position.
    skip_at: usize,
}

impl Cursor<'_> {
    /// The next id.
    #[inline]
    pub fn next_id(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let gap = get_varint(self.data, &mut self.pos);
        self.cur = if self.started { self.cur + gap } else { gap };
        self.started = true;
        Some(self.cur)
    }

    /// The first id at or after `target` (from the current position on).
    pub fn seek(&mut self, target: u32) -> Option<u32> {
        if self.started && self.cur >= target {
            return Some(self.cur);
        }
        let skips = self.skips;
        while self.skip_at < skips.len() && skips[self.skip_at].offset as usize <= self.pos {
            self.skip_at += 1;
        }
        // Jump only when the target lies beyond the next skip point: gallop to
        // the last skip entry below it.
        if self.skip_at < skips.len() && skips[self.skip_at].value < target {
            let mut lo = self.skip_at;
            let mut step = 1;
            while lo + step < skips.len() && skips[lo + step].value < target {
                lo += step;
                step *= 2;
            }
            let hi = (lo + step).min(skips.len());
            let last_below = lo + skips[lo..hi].partition_point(|s| s.value < target) - 1;
            let s = skips[last_below];
            self.left = self.count - (last_below as u32 + 1) * SKIP_EVERY;
            self.pos = s.offset as usize;
            self.cur = s.value;
            self.started = true;
            self.skip_at = last_below + 1;
        }
        while let Some(v) = self.next_id() {
            if v >= target {
                return Some(v);
            }
        }
        None
    }
}

fn varint_len(v: u32) -> u32 {
    match v {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
}

/// Where a list stands while it is built.
#[derive(Clone, Copy, Default)]
struct Tally {
    last: u32,
    count: u32,
    /// Pass one: bytes so far. Pass two: where the next gap goes.
    at: u32,
    /// Pass two: where the next skip entry goes.
    skip_at: u32,
}

impl Postings {
    /// Build the lists from the `(key, id)` pairs `emit` produces, ids ascending
    /// for each key (a repeat of the last id of a key is dropped). `emit` is run
    /// twice: once to size every list, once to write it in place, so the lists
    /// are laid out in two exact arrays with no per-list buffers to grow and
    /// free (which left the allocator holding tens of megabytes after a build).
    pub fn build(emit: impl Fn(&mut dyn FnMut(u32, u32))) -> Postings {
        let mut tally: HashMap<u32, Tally> = HashMap::new();
        emit(&mut |key, id| {
            let t = tally.entry(key).or_default();
            if t.count > 0 && t.last == id {
                return;
            }
            debug_assert!(t.count == 0 || id > t.last, "ids must increase");
            t.at += varint_len(if t.count > 0 { id - t.last } else { id });
            t.count += 1;
            t.last = id;
        });
        let mut keys: Vec<u32> = tally.keys().copied().collect();
        keys.sort_unstable();
        let mut heads = Vec::with_capacity(keys.len());
        let (mut data_len, mut skips_len) = (0u32, 0u32);
        for &key in &keys {
            let t = tally.get_mut(&key).expect("tallied");
            let skips = t.count / SKIP_EVERY;
            heads.push(Head {
                key,
                data: data_len,
                len: t.at,
                count: t.count,
                skip: skips_len,
                skips,
            });
            *t = Tally {
                at: data_len,
                skip_at: skips_len,
                ..Tally::default()
            };
            data_len += heads.last().map_or(0, |h| h.len);
            skips_len += skips;
        }
        drop(keys);
        let mut data = vec![0u8; data_len as usize];
        let mut skips = vec![Skip::default(); skips_len as usize];
        let starts: HashMap<u32, u32> = heads.iter().map(|h| (h.key, h.data)).collect();
        emit(&mut |key, id| {
            let t = tally.get_mut(&key).expect("tallied");
            if t.count > 0 && t.last == id {
                return;
            }
            let mut v = if t.count > 0 { id - t.last } else { id };
            while v >= 0x80 {
                data[t.at as usize] = (v as u8) | 0x80;
                t.at += 1;
                v >>= 7;
            }
            data[t.at as usize] = v as u8;
            t.at += 1;
            t.count += 1;
            t.last = id;
            if t.count.is_multiple_of(SKIP_EVERY) {
                skips[t.skip_at as usize] = Skip {
                    value: id,
                    offset: t.at - starts[&key],
                };
                t.skip_at += 1;
            }
        });
        Postings {
            heads: heads.into(),
            data: data.into(),
            skips: skips.into(),
        }
    }
}

/// The ids in every one of `keys`' lists (ascending), driven by the shortest.
#[cfg(test)]
pub(crate) fn intersect(postings: &Postings, keys: &[u32]) -> Vec<u32> {
    intersect_range(postings, keys, 0..u32::MAX, &Some)
}

/// The ids within `range` in every one of `keys`' lists for which `keep`
/// holds, ascending. Several ranges can run on several threads.
pub(crate) fn intersect_range<O>(
    postings: &Postings,
    keys: &[u32],
    range: std::ops::Range<u32>,
    keep: &dyn Fn(u32) -> Option<O>,
) -> Vec<O> {
    let mut keys = keys.to_vec();
    keys.sort_unstable_by_key(|&k| postings.count(k));
    keys.dedup();
    let Some((&first, rest)) = keys.split_first() else {
        return Vec::new();
    };
    let mut driver = postings.cursor(first);
    let mut others: Vec<Cursor<'_>> = rest.iter().map(|&k| postings.cursor(k)).collect();
    let mut out = Vec::new();
    let Some(mut want) = driver.seek(range.start) else {
        return out;
    };
    loop {
        if want >= range.end {
            return out;
        }
        // Leapfrog: every list seeks to `want`; one that overshoots sets a new want.
        let mut agreed = true;
        for c in &mut others {
            match c.seek(want) {
                None => return out,
                Some(v) if v > want => {
                    want = v;
                    agreed = false;
                    break;
                }
                Some(_) => {}
            }
        }
        let next = if agreed {
            if let Some(o) = keep(want) {
                out.push(o);
            }
            driver.next_id()
        } else {
            driver.seek(want)
        };
        match next {
            Some(v) => want = v,
            None => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(lists: &[(u32, Vec<u32>)]) -> Postings {
        // Interleave keys, as the dictionary does.
        let mut all: Vec<(u32, u32)> = lists
            .iter()
            .flat_map(|(k, ids)| ids.iter().map(move |&i| (i, *k)))
            .collect();
        all.sort();
        Postings::build(|emit| {
            for &(id, key) in &all {
                emit(key, id);
                emit(key, id); // repeats are dropped
            }
        })
    }

    fn ids(mut c: Cursor<'_>) -> Vec<u32> {
        std::iter::from_fn(|| c.next_id()).collect()
    }

    #[test]
    fn lists_round_trip_and_seek() {
        let long: Vec<u32> = (0..10_000).map(|i| i * 7 + (i % 3)).collect();
        let p = build(&[
            (5, vec![0, 1, 2, 300, 70_000]),
            (9, long.clone()),
            (1, vec![42]),
        ]);
        assert_eq!(ids(p.cursor(5)), [0, 1, 2, 300, 70_000]);
        assert_eq!(ids(p.cursor(9)), long);
        assert_eq!(ids(p.cursor(1)), [42]);
        assert_eq!(ids(p.cursor(2)), Vec::<u32>::new());
        assert_eq!(p.count(9), 10_000);
        let mut c = p.cursor(9);
        for target in [0, 5, 6, 700, 701, 35_000, 69_990] {
            let want = long.iter().copied().find(|&v| v >= target);
            assert_eq!(c.seek(target), want, "seek {target}");
        }
        assert_eq!(c.seek(u32::MAX), None);
        // Under a byte an id for a dense list.
        assert!(p.heap_bytes() < 10_000 * 2);
    }

    #[test]
    fn intersection_equals_the_set_intersection() {
        let a: Vec<u32> = (0..50_000).filter(|i| i % 3 == 0).collect();
        let b: Vec<u32> = (0..50_000).filter(|i| i % 5 == 0).collect();
        let c: Vec<u32> = (0..50_000).filter(|i| i % 7 == 1).collect();
        let p = build(&[(1, a.clone()), (2, b.clone()), (3, c.clone())]);
        let want: Vec<u32> = a
            .iter()
            .copied()
            .filter(|x| b.contains(x) && c.contains(x))
            .collect();
        assert_eq!(intersect(&p, &[1, 2, 3]), want);
        assert_eq!(
            intersect(&p, &[3, 1]),
            a.iter().copied().filter(|x| x % 7 == 1).collect::<Vec<_>>()
        );
        assert_eq!(intersect(&p, &[1, 99]), Vec::<u32>::new());
        assert_eq!(intersect(&p, &[2]), b);
        // Split into ranges (as threads do), with a filter: the same, in pieces.
        let pieces: Vec<u32> = [0..10_000, 10_000..33_333, 33_333..u32::MAX]
            .into_iter()
            .flat_map(|r| intersect_range(&p, &[1, 2, 3], r, &|id| (id % 2 == 0).then_some(id)))
            .collect();
        let even: Vec<u32> = want.iter().copied().filter(|id| id % 2 == 0).collect();
        assert_eq!(pieces, even);
    }
}
