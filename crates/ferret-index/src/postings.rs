//! Sorted lists of `u32` ids, compressed, keyed by a `u32`: the trigram and
//! extension lists of the name dictionary.
//!
//! Written here rather than taken from a crate: the lists are built once (ids
//! arrive in increasing order), never changed, read by intersecting a few of them,
//! and must cost about a byte per id or less. `roaring` spends two bytes per id on
//! lists as sparse as trigram lists of names (measured: 37 bytes an entry on this
//! machine's own file system against 11 here), and `fst` maps keys, not id lists.
//!
//! Each list is its ids as *runs* of consecutive ids, all lists in one byte arena.
//! Names are numbered in name order, so the names sharing a start share its
//! trigrams and lie next to each other: on the 1M synthetic tree 13 of every 19
//! ids of a list follow the id before by one, and on `/usr` 64 of every 100
//! (docs/benchmarks.md). A run is one LEB128 varint, `gap << 1 | long`, where
//! `gap` is the run's first id (a list's first run) or its distance from the
//! last id of the run before less two (runs are maximal, so that distance is at
//! least two); a `long` run is followed by a second varint, its length less two.
//! At the first run that starts [`SKIP_EVERY`] ids or more after the last skip
//! entry (or the list's start), a skip entry records where that run's header
//! lies, the id before it and how many ids come before it, so
//! [`Cursor::seek`] jumps over blocks; within a run a seek is one subtraction.

use std::collections::HashMap;

use crate::arr::Arr;
use crate::wire::{Reader, SnapshotError, Writer};

/// About one skip entry per this many ids of a list (at run boundaries).
const SKIP_EVERY: u32 = 128;

#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Skip {
    /// The last id before the run the entry points at.
    value: u32,
    /// Where that run's header starts, from the list's start.
    offset: u32,
    /// How many ids of the list come before that run.
    before: u32,
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
fn get_varint(data: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = data[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
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
                run_left: 0,
                left: h.count,
                count: h.count,
                started: false,
                skip_at: 0,
            },
            None => Cursor::default(),
        }
    }

    /// Ids that cut the list of `key` into about `parts` runs of equal
    /// length (ascending, fewer when the list has fewer skip entries): read
    /// off its skip entries, nothing decoded.
    pub fn cuts(&self, key: u32, parts: u32) -> Vec<u32> {
        let Some(h) = self.head(key) else {
            return Vec::new();
        };
        let skips = &self.skips[h.skip as usize..(h.skip + h.skips) as usize];
        let each = (h.count / parts.max(1)).max(1);
        let mut cuts = Vec::new();
        let mut next = each;
        for s in skips {
            if s.before >= next {
                // The entry's run starts after `value`.
                cuts.push(s.value + 1);
                next = s.before + each;
            }
        }
        cuts
    }

    pub fn heap_bytes(&self) -> usize {
        self.heads.heap_bytes() + self.data.heap_bytes() + self.skips.heap_bytes()
    }

    /// How many parts [`Postings::adopt_part`] takes.
    pub const PARTS: usize = 3;

    /// [`Arr::adopt`] of part `k` (`0..PARTS`) of `other`; `None`
    /// past the last.
    pub fn adopt_part(&mut self, other: &mut Postings, k: usize, same: bool) -> Option<usize> {
        Some(match k {
            0 => self.heads.adopt(std::mem::take(&mut other.heads), same),
            1 => self.data.adopt(std::mem::take(&mut other.data), same),
            2 => self.skips.adopt(std::mem::take(&mut other.skips), same),
            _ => return None,
        })
    }

    /// The bytes of the array [`Postings::adopt_part`] takes as part `k`.
    pub fn part_bytes(&self, k: usize) -> Option<&[u8]> {
        Some(match k {
            0 => self.heads.bytes(),
            1 => self.data.bytes(),
            2 => self.skips.bytes(),
            _ => return None,
        })
    }

    /// [`Arr::share`] each array.
    pub fn share_arrays(&mut self) {
        self.heads.share();
        self.data.share();
        self.skips.share();
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
                || !list_is_whole(
                    &data[h.data as usize..end as usize],
                    &skips[h.skip as usize..skip_end as usize],
                    h.count,
                )
            {
                return Err(bad);
            }
        }
        Ok(Postings { heads, data, skips })
    }
}

/// Whether `data` and `skips` are a list of `count` ids as [`Postings::build`]
/// writes them: every varint whole and within the list, every id within
/// `u32`, every skip entry at a run's header with the id and count before it.
/// (A snapshot is read with this check unless it is trusted: a cursor reads
/// a list without checking.)
fn list_is_whole(data: &[u8], skips: &[Skip], count: u32) -> bool {
    fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..35).step_by(7) {
            let b = *data.get(*pos)?;
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }
    let (mut pos, mut ids, mut last, mut skip) = (0usize, 0u64, 0u64, 0usize);
    while pos < data.len() {
        if let Some(s) = skips.get(skip)
            && s.offset as usize == pos
        {
            if ids == 0 || u64::from(s.value) != last || u64::from(s.before) != ids {
                return false;
            }
            skip += 1;
        }
        let Some(head) = varint(data, &mut pos) else {
            return false;
        };
        let start = if ids == 0 {
            head >> 1
        } else {
            last + 2 + (head >> 1)
        };
        let len = if head & 1 == 1 {
            match varint(data, &mut pos) {
                Some(l) => l + 2,
                None => return false,
            }
        } else {
            1
        };
        last = start + len - 1;
        ids += len;
        if last > u64::from(u32::MAX) {
            return false;
        }
    }
    skip == skips.len() && ids == u64::from(count)
}

/// Reads one list in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    skips: &'a [Skip],
    pos: usize,
    /// The last id returned (after a jump, the last id before `pos`).
    cur: u32,
    /// Ids of the run `cur` is in that come after it.
    run_left: u32,
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
        if self.run_left > 0 {
            self.run_left -= 1;
            self.cur += 1;
            return Some(self.cur);
        }
        let head = get_varint(self.data, &mut self.pos);
        let gap = (head >> 1) as u32;
        self.cur = if self.started {
            self.cur + 2 + gap
        } else {
            gap
        };
        self.started = true;
        if head & 1 == 1 {
            self.run_left = get_varint(self.data, &mut self.pos) as u32 + 1;
        }
        Some(self.cur)
    }

    /// If `target` lies in the rest of the current run, stop there.
    #[inline]
    fn within_run(&mut self, target: u32) -> bool {
        let step = target - self.cur;
        if step > self.run_left {
            return false;
        }
        self.run_left -= step;
        self.left -= step;
        self.cur = target;
        true
    }

    /// The first id at or after `target` (from the current position on).
    pub fn seek(&mut self, target: u32) -> Option<u32> {
        if self.started {
            if self.cur >= target {
                return Some(self.cur);
            }
            if self.within_run(target) {
                return Some(target);
            }
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
            self.left = self.count - s.before;
            self.pos = s.offset as usize;
            self.cur = s.value;
            self.run_left = 0;
            self.started = true;
            self.skip_at = last_below + 1;
        }
        while let Some(v) = self.next_id() {
            if v >= target || self.within_run(target) {
                return Some(self.cur);
            }
            // Past the whole run.
            self.left -= self.run_left;
            self.cur += self.run_left;
            self.run_left = 0;
        }
        None
    }
}

fn varint_len(v: u64) -> u32 {
    (64 - (v | 1).leading_zeros()).div_ceil(7)
}

fn put_varint(data: &mut [u8], at: &mut u32, mut v: u64) {
    while v >= 0x80 {
        data[*at as usize] = (v as u8) | 0x80;
        *at += 1;
        v >>= 7;
    }
    data[*at as usize] = v as u8;
    *at += 1;
}

/// Where a list stands while it is built: its open run and what came before.
#[derive(Clone, Copy, Default)]
struct Tally {
    /// The open run's first id and length (0: no run yet).
    run_start: u32,
    run_len: u32,
    /// Ids before the open run, and the last of them.
    before: u32,
    before_last: u32,
    /// Ids before the run the last skip entry points at (0: none yet).
    last_skip: u32,
    /// Pass one: bytes so far. Pass two: where the next run's header goes.
    at: u32,
    /// Pass one: skip entries so far. Pass two: where the next one goes.
    skip_at: u32,
}

/// A closed run as it is written: its header, its length varint if it is
/// long, and the skip entry pointing at it if one is due (its offset left 0).
struct Closed {
    head: u64,
    len: Option<u64>,
    skip: Option<Skip>,
}

impl Tally {
    /// Add `id` (ascending for the list; a repeat of the last is dropped).
    /// When `id` does not extend the open run, the run is closed first and
    /// handed to `close`.
    #[inline]
    fn add(&mut self, id: u32, close: &mut impl FnMut(&mut Tally, Closed)) {
        if self.run_len > 0 {
            let last = self.run_start + (self.run_len - 1);
            if id == last {
                return;
            }
            debug_assert!(id > last, "ids must increase");
            if id == last + 1 {
                self.run_len += 1;
                return;
            }
            let closed = self.close();
            close(self, closed);
        }
        self.run_start = id;
        self.run_len = 1;
    }

    /// Close the open run (there is one).
    fn close(&mut self) -> Closed {
        let gap = if self.before == 0 {
            u64::from(self.run_start)
        } else {
            u64::from(self.run_start - self.before_last - 2)
        };
        let skip = (self.before >= self.last_skip + SKIP_EVERY).then(|| {
            self.last_skip = self.before;
            Skip {
                value: self.before_last,
                offset: 0,
                before: self.before,
            }
        });
        let long = self.run_len > 1;
        let closed = Closed {
            head: gap << 1 | u64::from(long),
            len: long.then(|| u64::from(self.run_len - 2)),
            skip,
        };
        self.before += self.run_len;
        self.before_last = self.run_start + (self.run_len - 1);
        self.run_len = 0;
        closed
    }

    fn count(&self) -> u32 {
        self.before + self.run_len
    }
}

impl Postings {
    /// Build the lists from the `(key, id)` pairs `emit` produces, ids ascending
    /// for each key (a repeat of the last id of a key is dropped). `emit` is run
    /// twice: once to size every list, once to write it in place, so the lists
    /// are laid out in two exact arrays with no per-list buffers to grow and
    /// free (which left the allocator holding tens of megabytes after a build).
    pub fn build(emit: impl Fn(&mut dyn FnMut(u32, u32))) -> Postings {
        fn size(t: &mut Tally, c: Closed) {
            t.at += varint_len(c.head) + c.len.map_or(0, varint_len);
            t.skip_at += u32::from(c.skip.is_some());
        }
        let mut tally: HashMap<u32, Tally> = HashMap::new();
        emit(&mut |key, id| tally.entry(key).or_default().add(id, &mut size));
        for t in tally.values_mut() {
            let c = t.close();
            size(t, c);
        }
        let mut keys: Vec<u32> = tally.keys().copied().collect();
        keys.sort_unstable();
        let mut heads = Vec::with_capacity(keys.len());
        let (mut data_len, mut skips_len) = (0u32, 0u32);
        for &key in &keys {
            let t = tally.get_mut(&key).expect("tallied");
            heads.push(Head {
                key,
                data: data_len,
                len: t.at,
                count: t.count(),
                skip: skips_len,
                skips: t.skip_at,
            });
            data_len += t.at;
            skips_len += t.skip_at;
            *t = Tally {
                at: data_len - t.at,
                skip_at: skips_len - t.skip_at,
                ..Tally::default()
            };
        }
        drop(keys);
        let mut data = vec![0u8; data_len as usize];
        let mut skips = vec![Skip::default(); skips_len as usize];
        let starts: HashMap<u32, u32> = heads.iter().map(|h| (h.key, h.data)).collect();
        {
            let mut write = |key: u32, t: &mut Tally, c: Closed| {
                if let Some(mut s) = c.skip {
                    s.offset = t.at - starts[&key];
                    skips[t.skip_at as usize] = s;
                    t.skip_at += 1;
                }
                put_varint(&mut data, &mut t.at, c.head);
                if let Some(len) = c.len {
                    put_varint(&mut data, &mut t.at, len);
                }
            };
            emit(&mut |key, id| {
                let t = tally.get_mut(&key).expect("tallied");
                t.add(id, &mut |t, c| write(key, t, c));
            });
            for (&key, t) in tally.iter_mut() {
                let c = t.close();
                write(key, t, c);
            }
        }
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
#[cfg(test)]
pub(crate) fn intersect_range<O>(
    postings: &Postings,
    keys: &[u32],
    range: std::ops::Range<u32>,
    keep: &dyn Fn(u32) -> Option<O>,
) -> Vec<O> {
    let mut out = Vec::new();
    intersect_into(postings, keys, range, keep, &mut out);
    out
}

/// [`intersect_range`], what `keep` gives added to `out` (which the caller
/// sizes: grown as it is filled, a common word's list was copied again at
/// each doubling, a tenth of its search).
pub(crate) fn intersect_into<O>(
    postings: &Postings,
    keys: &[u32],
    range: std::ops::Range<u32>,
    keep: &dyn Fn(u32) -> Option<O>,
    out: &mut Vec<O>,
) {
    let mut keys = keys.to_vec();
    keys.sort_unstable_by_key(|&k| postings.count(k));
    keys.dedup();
    let Some((&first, rest)) = keys.split_first() else {
        return;
    };
    let mut driver = postings.cursor(first);
    let mut others: Vec<Cursor<'_>> = rest.iter().map(|&k| postings.cursor(k)).collect();
    let Some(mut want) = driver.seek(range.start) else {
        return;
    };
    loop {
        if want >= range.end {
            return;
        }
        // Leapfrog: every list seeks to `want`; one that overshoots sets a new want.
        let mut agreed = true;
        for c in &mut others {
            match c.seek(want) {
                None => return,
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
            None => return,
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

    #[test]
    fn cuts_share_a_list_out_evenly() {
        // Every third id up to 30,000: 10,000 ids, runs of one.
        let ids: Vec<u32> = (0..10_000).map(|i| i * 3).collect();
        let p = build(&[(7, ids.clone())]);
        let cuts = p.cuts(7, 4);
        assert!((2..=4).contains(&cuts.len()), "{cuts:?}");
        let mut from = 0;
        for &c in cuts.iter().chain(std::iter::once(&u32::MAX)) {
            let share = ids.iter().filter(|&&i| i >= from && i < c).count();
            assert!(
                (2_000..=3_000).contains(&share) || c == u32::MAX,
                "{share} below {c}"
            );
            from = c;
        }
        assert!(cuts.windows(2).all(|w| w[0] < w[1]));
        assert!(p.cuts(8, 4).is_empty());
        // One part: no cut.
        assert!(p.cuts(7, 1).is_empty());
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

    /// Lists of runs of every length, gaps of every varint length, and ids at
    /// the top of `u32`.
    fn random_list(below: &mut impl FnMut(usize) -> usize) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut next: u64 = below(3) as u64 * (below(300) as u64);
        let n = below(2_000) as u64;
        while (ids.len() as u64) < n {
            let run = match below(4) as u64 {
                0 => 1,
                1 => 2,
                2 => below(10) as u64 + 1,
                _ => below(400) as u64 + 1,
            };
            for _ in 0..run {
                if next > u64::from(u32::MAX) {
                    return ids;
                }
                ids.push(next as u32);
                next += 1;
            }
            next += match below(5) as u64 {
                0 => 1,
                1 => below(126) as u64 + 1,
                2 => below(20_000) as u64 + 1,
                3 => below(5_000_000) as u64 + 1,
                _ => below(3) as u64 + 1,
            };
            if below(200) == 0 {
                next = u64::from(u32::MAX) - below(600) as u64;
            }
        }
        ids
    }

    #[test]
    fn runs_read_back_and_seek_as_the_ids_they_hold() {
        let mut below = crate::testing::below(0x9e37_79b9_7f4a_7c15);
        for round in 0..60 {
            let lists: Vec<(u32, Vec<u32>)> =
                (0..8).map(|k| (k, random_list(&mut below))).collect();
            let p = build(&lists);
            for (k, want) in &lists {
                assert_eq!(ids(p.cursor(*k)), *want, "round {round} list {k}");
                assert_eq!(p.count(*k) as usize, want.len());
                // Seeks forward to random targets, some inside runs, some
                // before the first id, some past the last.
                let mut c = p.cursor(*k);
                let mut target = 0u64;
                let mut at = 0usize;
                loop {
                    let step = [3, 700, 3_000_000][below(3)];
                    target += below(step) as u64;
                    let t = target.min(u64::from(u32::MAX)) as u32;
                    while at < want.len() && want[at] < t {
                        at += 1;
                    }
                    assert_eq!(
                        c.seek(t),
                        want.get(at).copied(),
                        "round {round} list {k} seek {t}"
                    );
                    // `next_id` goes on from there.
                    if below(4) == 0 && at < want.len() {
                        at += 1;
                        assert_eq!(c.next_id(), want.get(at).copied());
                        target = u64::from(want.get(at).copied().unwrap_or(u32::MAX));
                    }
                    if at >= want.len() || target >= u64::from(u32::MAX) {
                        break;
                    }
                }
            }
            let keys: Vec<u32> = (0..3).map(|_| below(8) as u32).collect();
            let want: Vec<u32> = lists[keys[0] as usize]
                .1
                .iter()
                .copied()
                .filter(|id| {
                    keys.iter()
                        .all(|&k| lists[k as usize].1.binary_search(id).is_ok())
                })
                .collect();
            assert_eq!(intersect(&p, &keys), want, "round {round} keys {keys:?}");
            // What a snapshot reader checks holds for every list built, and
            // fails for a list cut short or with a byte changed into a
            // varint's continuation.
            for h in p.heads.iter() {
                let data = &p.data[h.data as usize..(h.data + h.len) as usize];
                let skips = &p.skips[h.skip as usize..(h.skip + h.skips) as usize];
                assert!(list_is_whole(data, skips, h.count));
                if !data.is_empty() {
                    assert!(!list_is_whole(&data[..data.len() - 1], skips, h.count));
                    let mut bad = data.to_vec();
                    *bad.last_mut().unwrap() |= 0x80;
                    assert!(!list_is_whole(&bad, skips, h.count));
                    assert!(!list_is_whole(data, skips, h.count + 1));
                }
            }
        }
    }

    #[test]
    fn a_run_of_consecutive_ids_costs_a_few_bytes() {
        let long: Vec<u32> = (1_000..101_000).collect();
        let p = build(&[(3, long.clone()), (4, vec![5, 6, 7, 9, 11, 12])]);
        assert_eq!(ids(p.cursor(3)), long);
        assert_eq!(ids(p.cursor(4)), [5, 6, 7, 9, 11, 12]);
        // One header (1,000 as a gap: two bytes) and one length (three).
        assert_eq!(p.heads[0].len, 5);
        let mut c = p.cursor(3);
        assert_eq!(c.seek(50_000), Some(50_000));
        assert_eq!(c.next_id(), Some(50_001));
        assert_eq!(c.seek(100_999), Some(100_999));
        assert_eq!(c.next_id(), None);
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
