//! The name dictionary: every distinct name once, in name order, with trigram
//! and extension lists for finding the names that hold a piece of text.
//!
//! Real trees repeat names (`mod.rs`, `index.html`, `.gitignore`): on this
//! machine's own file system 404,000 entries have 180,000 distinct names, so one
//! copy per distinct name halves the name bytes, and a name term is tested once
//! per distinct name rather than once per entry.
//!
//! Names `0..sorted_len()` are unique and in name order (so their ids compare like
//! the names); names added after the last [`Names::rebuild`] are appended as they
//! come (ids from `sorted_len()` on) until the next one.

use crate::arr::Arr;
use std::cmp::Ordering;

use crate::postings::{Postings, intersect_into};
use crate::wire::{Reader, SnapshotError, Writer};

/// Name order: ASCII letters compared without case, then the raw bytes (so the
/// order is total and `README` sorts beside `readme`).
pub fn name_order(a: &[u8], b: &[u8]) -> Ordering {
    let folded = a
        .iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase));
    folded.then_with(|| a.cmp(b))
}

/// The extension the query language means (`ferret_query`'s rule): after the
/// last `.`, when that dot is neither the first nor the last character.
pub(crate) fn extension(name: &[u8]) -> Option<&[u8]> {
    match memchr::memrchr(b'.', name) {
        Some(i) if i > 0 && i + 1 < name.len() => Some(&name[i + 1..]),
        _ => None,
    }
}

/// Sorted names known to match (see [`Names::matching_known`]), and what
/// is kept of each.
pub struct Known<'a, O> {
    pub ids: std::ops::Range<u32>,
    pub keep: &'a (dyn Fn(u32) -> Option<O> + Sync),
}

/// Extension keys live above the 24-bit trigram keys: the top bit and the
/// extension's place in [`Names::exts`], so an extension's list holds exactly the
/// names with that (folded) extension.
const EXT_KEY: u32 = 0x8000_0000;

#[inline]
fn trigram_key(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

/// The [`byte_mask`] of `name` folded.
fn folded_mask(name: &[u8]) -> u32 {
    if name.is_ascii() {
        name.iter()
            .fold(0, |m, b| m | byte_bit(b.to_ascii_lowercase()))
    } else {
        byte_mask(&ferret_query::fold_case(name))
    }
}

/// `name` folded as the query language folds it, into `buf`.
pub(crate) fn fold_into(name: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    if name.is_ascii() {
        buf.extend(name.iter().map(u8::to_ascii_lowercase));
    } else {
        buf.extend_from_slice(&ferret_query::fold_case(name));
    }
}

/// Which kinds of byte a folded name holds, a bit each: the 26 letters,
/// digits in three groups, `.`, the word separators `-`, `_` and space, and
/// everything else. A word can be a subsequence of a name only if every bit
/// of its mask is in the name's, so fuzzy search rejects most names with one
/// `and` instead of reading them (no crate keeps such a mask beside a
/// dictionary of ours; it is a few lines).
pub(crate) fn byte_mask(folded: &[u8]) -> u32 {
    folded.iter().fold(0, |m, &b| m | byte_bit(b))
}

#[inline]
pub(crate) fn byte_bit(b: u8) -> u32 {
    1 << match b {
        b'a'..=b'z' => u32::from(b - b'a'),
        b'0'..=b'9' => 26 + u32::from(b - b'0') % 3,
        b'.' => 29,
        b'-' | b'_' | b' ' => 30,
        _ => 31,
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    arena: Arr<u8>,
    /// Each name's [`byte_mask`], folded.
    masks: Arr<u32>,
    /// Where each name starts; one more than there are names (the arena's end).
    offsets: Arr<u32>,
    sorted: u32,
    /// Trigram lists (24-bit keys) and extension lists (keys with the top bit) of
    /// the sorted names.
    postings: Postings,
    /// The distinct folded extensions of the sorted names, sorted.
    exts: Vec<Box<[u8]>>,
    /// The sorted names that hold bytes other than ASCII (Unicode case folding
    /// can make them match where an ASCII comparison does not).
    non_ascii: Vec<u32>,
}

/// Heap copies of the arrays of [`Names`] a change would copy first: see
/// [`Names::copies_for_change`].
pub(crate) type NameCopies = (Option<Vec<u8>>, Option<Vec<u32>>, Option<Vec<u32>>);

/// The lists built for the sorted names: see [`Names::lists`].
pub(crate) struct Lists {
    postings: Postings,
    exts: Vec<Box<[u8]>>,
    non_ascii: Vec<u32>,
}

impl Names {
    pub fn new() -> Names {
        Names {
            arena: Arr::default(),
            masks: Arr::default(),
            offsets: vec![0].into(),
            sorted: 0,
            postings: Postings::default(),
            exts: Vec::new(),
            non_ascii: Vec::new(),
        }
    }

    fn extension_key(&self, ext_folded: &[u8]) -> Option<u32> {
        self.exts
            .binary_search_by(|e| (**e).cmp(ext_folded))
            .ok()
            .map(|i| EXT_KEY | i as u32)
    }

    pub fn len(&self) -> u32 {
        (self.offsets.len() - 1) as u32
    }

    /// Every name's [`byte_mask`], by key.
    pub fn masks(&self) -> &[u32] {
        &self.masks
    }

    /// The name's [`byte_mask`] (all bits when unknown, which rejects nothing).
    #[inline]
    pub fn mask(&self, id: u32) -> u32 {
        self.masks.get(id as usize).copied().unwrap_or(u32::MAX)
    }

    pub fn sorted_len(&self) -> u32 {
        self.sorted
    }

    #[inline]
    pub fn get(&self, id: u32) -> &[u8] {
        let (a, b) = (
            self.offsets[id as usize] as usize,
            self.offsets[id as usize + 1] as usize,
        );
        &self.arena[a..b]
    }

    /// The first sorted name whose ASCII-folded form is not below `word`
    /// (ASCII, folded): where the names starting with `word` begin.
    pub fn lower_bound_folded(&self, word: &[u8]) -> u32 {
        let (mut lo, mut hi) = (0u32, self.sorted);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let below = self
                .get(mid)
                .iter()
                .map(u8::to_ascii_lowercase)
                .lt(word.iter().copied());
            if below { lo = mid + 1 } else { hi = mid }
        }
        lo
    }

    /// The end of the run of sorted names from `from` whose ASCII-folded form
    /// starts with `word`.
    pub fn prefix_end_folded(&self, word: &[u8], from: u32) -> u32 {
        let starts = |id: u32| {
            let n = self.get(id);
            n.len() >= word.len() && n[..word.len()].eq_ignore_ascii_case(word)
        };
        let (mut lo, mut hi) = (from, self.sorted);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if starts(mid) { lo = mid + 1 } else { hi = mid }
        }
        lo
    }

    /// The id of `name` among the sorted names.
    pub fn find_sorted(&self, name: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, self.sorted);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match name_order(self.get(mid), name) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The id of `name`: a sorted one when it exists, else a new appended one.
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        if let Some(id) = self.find_sorted(name) {
            return id;
        }
        self.push(name)
    }

    /// Append `name` without looking for it (the initial build).
    pub fn push(&mut self, name: &[u8]) -> u32 {
        let id = self.len();
        self.arena.to_mut().extend_from_slice(name);
        let end = self.arena.len() as u32;
        self.offsets.to_mut().push(end);
        self.masks.to_mut().push(folded_mask(name));
        id
    }

    /// Name order of two ids.
    #[inline]
    pub fn cmp(&self, a: u32, b: u32) -> Ordering {
        if a < self.sorted && b < self.sorted {
            a.cmp(&b)
        } else {
            name_order(self.get(a), self.get(b))
        }
    }

    /// Sorted names that may hold every one of `literals` (already folded), from
    /// the trigram lists; `None` when no literal has three bytes.
    pub fn candidates(&self, literals: &[Vec<u8>]) -> Option<Vec<u32>> {
        self.matching(literals, &Some)
    }

    /// What `keep` makes of the [`Names::candidates`] it keeps (in name
    /// order), the work split across the machine's cores when the lists are
    /// long.
    pub fn matching<O: Send>(
        &self,
        literals: &[Vec<u8>],
        keep: &(dyn Fn(u32) -> Option<O> + Sync),
    ) -> Option<Vec<O>> {
        self.matching_known(literals, keep, None)
    }

    /// [`Names::matching`] where the sorted names of `known` are known to
    /// hold every literal: each is given to its `keep` (the second), and the
    /// lists are intersected only outside them.
    pub fn matching_known<O: Send>(
        &self,
        literals: &[Vec<u8>],
        keep: &(dyn Fn(u32) -> Option<O> + Sync),
        known: Option<Known<'_, O>>,
    ) -> Option<Vec<O>> {
        self.matching_in_parts(literals, keep, known)
            .map(|parts| concat(parts.into_iter()))
    }

    /// [`Names::matching_known`] in parts, in order, as they were found (each
    /// a range of the sorted names): a caller that reads them once need not
    /// copy them into one vector (for `report` at 1M, 520 KB of fresh memory
    /// a call).
    pub fn matching_in_parts<O: Send>(
        &self,
        literals: &[Vec<u8>],
        keep: &(dyn Fn(u32) -> Option<O> + Sync),
        known: Option<Known<'_, O>>,
    ) -> Option<Vec<Vec<O>>> {
        let mut keys: Vec<u32> = literals
            .iter()
            .flat_map(|l| l.windows(3).map(trigram_key))
            .collect();
        if keys.is_empty() {
            return None;
        }
        keys.sort_unstable();
        keys.dedup();
        // The rarest few lists narrow enough; checking the names does the rest.
        keys.sort_unstable_by_key(|&k| self.postings.count(k));
        keys.truncate(4);
        let known_len = known.as_ref().map_or(0, |k| k.ids.len());
        let work = self.postings.count(keys[0]) as usize + known_len;
        let threads = crate::cores::threads_for(work, 20_000);
        // Parts of the sorted names taken in turn by whichever thread is free,
        // the known run cut apart as well: it is read name after name, with
        // no list, and was a part of its own that took half the time
        // (`report` at 1M).
        let mut cuts: Vec<u32> = Vec::new();
        if threads > 1 {
            // At even shares of the rarest list (the names it gives are
            // the work), not of the names: lists crowd where names share a
            // start.
            let (n, each) = (threads as u32 * 8, threads as u32 * 4);
            cuts.extend(self.postings.cuts(keys[0], n));
            if let Some(k) = &known {
                let run = k.ids.end - k.ids.start;
                cuts.extend((0..=each).map(|i| k.ids.start + run / each * i));
                cuts.push(k.ids.end);
            }
            cuts.sort_unstable();
            cuts.dedup();
            cuts.retain(|&c| c > 0 && c < self.sorted);
        }
        let parts = cuts.len() + 1;
        let share = work / parts + 1;
        // The ids of part `i`: the known ones kept as they are, the others
        // from the lists. Sized at once for what the range can hold (its
        // share of the rarest list, and its known ids), so nothing is copied
        // as it grows.
        let part = |i: usize| -> Vec<O> {
            let start = if i == 0 { 0 } else { cuts[i - 1] };
            let range = start..cuts.get(i).copied().unwrap_or(u32::MAX);
            let Some(known) = &known else {
                let mut out = Vec::with_capacity(share);
                intersect_into(&self.postings, &keys, range, keep, &mut out);
                return out;
            };
            let (lo, hi) = (known.ids.start, known.ids.end);
            let run = range.start.max(lo)..range.end.min(hi);
            let mut out = Vec::with_capacity(share + run.len());
            intersect_into(
                &self.postings,
                &keys,
                range.start..range.end.min(lo),
                keep,
                &mut out,
            );
            out.extend(run.filter_map(known.keep));
            intersect_into(
                &self.postings,
                &keys,
                range.start.max(hi)..range.end,
                keep,
                &mut out,
            );
            out
        };
        Some(crate::cores::in_parts(parts, threads, part))
    }

    /// Sorted names that may be within one edit of `word` (folded, four bytes or
    /// more), for which `keep` holds: a substitution, insertion or deletion
    /// removes at most three of the word's trigrams, so such a name holds at
    /// least one of any four of them; the four rarest lists are merged. (Two
    /// neighbours swapped can remove four: the caller looks those up by name.)
    pub fn near(&self, word: &[u8], keep: &mut dyn FnMut(u32) -> bool) -> Vec<u32> {
        let mut keys: Vec<u32> = word.windows(3).map(trigram_key).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.sort_unstable_by_key(|&k| self.postings.count(k));
        keys.truncate(4);
        // The lists merged as they are read (each is in key order), so each
        // name is kept or not once, and nothing is sorted: gathered and
        // sorted, four common trigrams' lists (a word's start on the 1M
        // tree, 300,000 names) cost more than the rest of a fuzzy call.
        let mut cursors: Vec<_> = keys.iter().map(|&k| self.postings.cursor(k)).collect();
        let mut heads: Vec<Option<u32>> = cursors.iter_mut().map(|c| c.next_id()).collect();
        let mut out = Vec::new();
        while let Some(least) = heads.iter().flatten().min().copied() {
            for (head, c) in heads.iter_mut().zip(&mut cursors) {
                if *head == Some(least) {
                    *head = c.next_id();
                }
            }
            if keep(least) {
                out.push(least);
            }
        }
        out
    }

    /// How many sorted names the rarest trigram of `literals` allows (a cheap
    /// bound for planning); `None` when no literal has three bytes.
    pub fn candidates_bound(&self, literals: &[Vec<u8>]) -> Option<u32> {
        literals
            .iter()
            .flat_map(|l| l.windows(3).map(trigram_key))
            .map(|k| self.postings.count(k))
            .min()
    }

    /// How many ids [`Names::with_extensions`] gives.
    pub fn with_extensions_count(&self, exts: &[Vec<u8>]) -> usize {
        let mut keys: Vec<u32> = exts.iter().filter_map(|e| self.extension_key(e)).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.iter().map(|&k| self.postings.count(k) as usize).sum()
    }

    /// The sorted names within `ranges` whose folded extension is `ext`
    /// (folded, no dot), ascending: the extension's list read only there,
    /// each range found by a seek.
    pub fn with_extension_in(&self, ext: &[u8], ranges: &[std::ops::Range<u32>]) -> Vec<u32> {
        let Some(key) = self.extension_key(ext) else {
            return Vec::new();
        };
        let mut ranges = ranges.to_vec();
        ranges.sort_unstable_by_key(|r| r.start);
        let mut c = self.postings.cursor(key);
        let mut out = Vec::new();
        // The cursor only moves forward: ranges that overlap give no id twice.
        for r in ranges {
            let mut next = c.seek(r.start);
            while let Some(id) = next.filter(|&id| id < r.end) {
                out.push(id);
                next = c.next_id();
            }
        }
        out
    }

    /// Sorted names whose folded form may start with a dot: those that start
    /// with one, and those that start past ASCII (the fold drops a combining
    /// accent, which can stand before the dot). What a glob's extension list
    /// misses (see `Query::glob_extension`).
    pub fn maybe_dotted(&self) -> impl Iterator<Item = u32> {
        let dots = self.lower_bound_folded(b".")..self.lower_bound_folded(b"/");
        dots.chain(self.lower_bound_folded(&[0x80])..self.sorted)
    }

    /// The run of sorted names whose bytes start with `prefix` (ASCII, lower
    /// case), ignoring ASCII case.
    pub fn prefix_run(&self, prefix: &[u8]) -> std::ops::Range<u32> {
        let lo = self.lower_bound_folded(prefix);
        lo..self.prefix_end_folded(prefix, lo)
    }

    /// The runs of sorted names whose fold may start with `prefix` (ASCII,
    /// lower case): those whose bytes do, ignoring ASCII case, and, for each
    /// shorter start of it, those that go on with a byte past ASCII there
    /// (its fold may drop an accent or turn a letter into the next bytes of
    /// `prefix`: `Ínvoice`, `e` and a combining accent). Names sort by their
    /// ASCII-lowered bytes ([`name_order`]), so each is one run.
    pub fn folded_prefix_runs(&self, prefix: &[u8]) -> Vec<std::ops::Range<u32>> {
        let mut runs = Vec::with_capacity(prefix.len() + 1);
        runs.push(self.prefix_run(prefix));
        let mut start = Vec::with_capacity(prefix.len() + 1);
        for k in 0..prefix.len() {
            start.clear();
            start.extend_from_slice(&prefix[..k]);
            start.push(0x80);
            let from = self.lower_bound_folded(&start);
            runs.push(from..self.prefix_end_folded(&prefix[..k], from));
        }
        runs.retain(|r| !r.is_empty());
        runs
    }

    /// Sorted names whose folded extension is one of `exts` (folded, no dot).
    pub fn with_extensions(&self, exts: &[Vec<u8>]) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut keys: Vec<u32> = exts.iter().filter_map(|e| self.extension_key(e)).collect();
        keys.sort_unstable();
        keys.dedup();
        for &k in &keys {
            let mut c = self.postings.cursor(k);
            while let Some(id) = c.next_id() {
                out.push(id);
            }
        }
        if keys.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        out
    }

    /// Bytes of the names themselves (arena and offsets), and of their lists.
    pub fn heap_parts(&self) -> (usize, usize) {
        (
            self.arena.heap_bytes() + self.offsets.heap_bytes() + self.masks.heap_bytes(),
            self.postings.heap_bytes() + self.exts.iter().map(|e| e.len() + 16).sum::<usize>(),
        )
    }

    /// How many parts [`Names::adopt_part`] takes.
    pub const PARTS: usize = 3 + Postings::PARTS;

    /// [`Arr::adopt`] of part `k` (`0..PARTS`) of `other` (the
    /// names' arrays, then their lists'); `None` past the last.
    pub fn adopt_part(&mut self, other: &mut Names, k: usize, same: bool) -> Option<usize> {
        Some(match k {
            0 => self.arena.adopt(std::mem::take(&mut other.arena), same),
            1 => self.offsets.adopt(std::mem::take(&mut other.offsets), same),
            2 => self.masks.adopt(std::mem::take(&mut other.masks), same),
            k => return self.postings.adopt_part(&mut other.postings, k - 3, same),
        })
    }

    /// The bytes of the array [`Names::adopt_part`] takes as part `k`.
    pub fn part_bytes(&self, k: usize) -> Option<&[u8]> {
        Some(match k {
            0 => self.arena.bytes(),
            1 => self.offsets.bytes(),
            2 => self.masks.bytes(),
            k => return self.postings.part_bytes(k - 3),
        })
    }

    /// [`Arr::copy_if_borrowed`] of the arrays a new name is added to.
    pub fn copies_for_change(&self) -> NameCopies {
        (
            self.arena.copy_if_borrowed(),
            self.offsets.copy_if_borrowed(),
            self.masks.copy_if_borrowed(),
        )
    }

    /// [`Arr::take_copy`] of each of [`Names::copies_for_change`].
    pub fn take_copies(&mut self, (arena, offsets, masks): NameCopies) {
        self.arena.take_copy(arena);
        self.offsets.take_copy(offsets);
        self.masks.take_copy(masks);
    }

    /// [`Arr::share`] each array.
    pub fn share_arrays(&mut self) {
        self.arena.share();
        self.offsets.share();
        self.masks.share();
        self.postings.share_arrays();
    }

    pub fn write_to(&self, w: &mut Writer) {
        w.array(&self.arena);
        w.array(&self.offsets);
        w.array(&self.masks);
        w.u32(self.sorted);
        self.postings.write_to(w);
        w.u64(self.exts.len() as u64);
        for e in &self.exts {
            w.bytes(e);
        }
        w.u32s(&self.non_ascii);
    }

    pub fn read_from(r: &mut Reader<'_>) -> Result<Names, SnapshotError> {
        let arena: Arr<u8> = r.array()?;
        let offsets: Arr<u32> = r.array()?;
        let masks: Arr<u32> = r.array()?;
        let sorted = r.u32()?;
        let postings = Postings::read_from(r)?;
        let n = r.len()?;
        let mut exts = Vec::with_capacity(n);
        for _ in 0..n {
            exts.push(Box::<[u8]>::from(r.bytes()?));
        }
        let non_ascii = r.u32s()?;
        let bad = SnapshotError::Corrupt("names");
        if non_ascii.iter().any(|&k| k >= sorted) || non_ascii.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad);
        }
        if offsets.first() != Some(&0)
            || offsets.last().map(|&o| o as usize) != Some(arena.len())
            || (r.deep && offsets.windows(2).any(|w| w[0] > w[1]))
            || sorted as usize >= offsets.len()
            || masks.len() + 1 != offsets.len()
            || exts.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad);
        }
        Ok(Names {
            arena,
            masks,
            offsets,
            sorted,
            postings,
            exts,
            non_ascii,
        })
    }

    /// Bytes of all names (each distinct sorted name once).
    pub fn name_bytes(&self) -> usize {
        self.arena.len()
    }

    /// A new dictionary holding the names for which `used` is true, sorted and
    /// unique (its lists still empty: see [`Names::lists`] and
    /// [`Names::set_lists`]); and for every old id its new one (`u32::MAX` for
    /// names not kept).
    pub fn rebuild(&self, used: &[bool]) -> (Names, Vec<u32>) {
        let n = self.len() as usize;
        debug_assert_eq!(used.len(), n);
        let sorted = self.sorted as usize;
        // The appended names, ordered (equal names side by side).
        let mut fresh: Vec<u32> = (sorted..n).filter(|&i| used[i]).map(|i| i as u32).collect();
        sort_by_name(self, &mut fresh);
        let mut map = vec![u32::MAX; n];
        let mut out = Names::new();
        let kept: usize = (0..sorted).filter(|&i| used[i]).count();
        out.offsets.to_mut().reserve(kept + fresh.len());
        let mut old_sorted = (0..sorted as u32).filter(|&i| used[i as usize]).peekable();
        let mut fresh = fresh.into_iter().peekable();
        loop {
            let take_old = match (old_sorted.peek(), fresh.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(&a), Some(&b)) => self.cmp(a, b) != Ordering::Greater,
            };
            let id = if take_old {
                old_sorted.next()
            } else {
                fresh.next()
            }
            .unwrap_or_default();
            let name = self.get(id);
            let last = out.len();
            if last > 0 && out.get(last - 1) == name {
                map[id as usize] = last - 1;
            } else {
                map[id as usize] = out.push(name);
            }
        }
        out.sorted = out.len();
        out.arena.shrink_to_fit();
        out.offsets.shrink_to_fit();
        out.masks.shrink_to_fit();
        (out, map)
    }

    /// The trigram and extension lists of the sorted names, the extensions,
    /// and which names are not ASCII.
    pub fn lists(&self) -> Lists {
        let (postings, exts) = build_postings(self);
        let non_ascii = (0..self.sorted)
            .filter(|&k| !self.get(k).is_ascii())
            .collect();
        Lists {
            postings,
            exts,
            non_ascii,
        }
    }

    pub fn set_lists(&mut self, lists: Lists) {
        self.postings = lists.postings;
        self.exts = lists.exts;
        self.non_ascii = lists.non_ascii;
    }

    /// Sorted names that hold the byte `b` (an ASCII lowercase letter or `.`)
    /// ignoring ASCII case, read off the names' folded [`byte_mask`]s, where
    /// such a byte has a bit of its own: no name is read. Names that are not
    /// ASCII are decided by `other` when their mask holds the bit (a name's
    /// fold holds the byte only then). Tagged 0. For a one-letter word whose
    /// fit is not asked (the first keystroke of a search sorted by name):
    /// [`Names::scan`] reads the names at each of the letter's places, some
    /// 20 MB on the 1M synthetic tree.
    pub fn with_byte(&self, b: u8, other: &(dyn Fn(u32) -> bool + Sync)) -> Vec<(u32, u8)> {
        debug_assert!(b.is_ascii_lowercase() || b == b'.');
        let bit = byte_bit(b);
        let sorted = self.sorted as usize;
        // At most every name: reserved at once (the pages only touched as
        // they are filled), never copied as it grows.
        let mut out = Vec::with_capacity(sorted);
        let mut slow = self.non_ascii.iter().copied().peekable();
        for (k, &m) in self.masks[..sorted].iter().enumerate() {
            if m & bit == 0 {
                continue;
            }
            let k = k as u32;
            while slow.next_if(|&s| s < k).is_some() {}
            if slow.peek() == Some(&k) {
                if other(k) {
                    out.push((k, 0));
                }
            } else {
                out.push((k, 0));
            }
        }
        out
    }

    /// Sorted names that end with `suffix` (ASCII, lowercase) ignoring ASCII
    /// case, each compared in place at its end (a glob `*.` or `*_v2`, whose
    /// literal names no extension and is too short for the trigram lists:
    /// the glob itself on every name took 14 ms on the 1M synthetic tree).
    /// Names that are not ASCII are decided by `other`. Tagged 0.
    pub fn with_suffix(
        &self,
        suffix: &[u8],
        other: &(dyn Fn(u32) -> bool + Sync),
    ) -> Vec<(u32, u8)> {
        debug_assert!(suffix.is_ascii());
        let sorted = self.sorted as usize;
        let arena = &self.arena[..];
        let offsets = &self.offsets[..=sorted];
        let mut out = Vec::new();
        let mut slow = self.non_ascii.iter().copied().peekable();
        for (k, ends) in offsets.windows(2).enumerate() {
            let (start, end) = (ends[0] as usize, ends[1] as usize);
            let k = k as u32;
            let fits = end - start >= suffix.len()
                && arena[end - suffix.len()..end].eq_ignore_ascii_case(suffix);
            while slow.next_if(|&s| s < k).is_some() {}
            if slow.peek() == Some(&k) {
                if other(k) {
                    out.push((k, 0));
                }
            } else if fits {
                out.push((k, 0));
            }
        }
        out
    }

    /// Sorted names that hold `needle` (ASCII, lowercase) ignoring ASCII case:
    /// one pass of `memchr2` over the names' bytes, end to end, each hit mapped
    /// to its name; a hit across two names is none. Names that are not ASCII
    /// are decided by `other` instead. For needles too short for the trigram
    /// lists; split across the machine's cores.
    /// Each name found is given with what `tag` makes of it (ASCII names;
    /// those `other` decides are tagged 0).
    pub fn scan(
        &self,
        needle: &[u8],
        other: &(dyn Fn(u32) -> bool + Sync),
        tag: &(dyn Fn(&[u8]) -> u8 + Sync),
    ) -> Vec<(u32, u8)> {
        debug_assert!(needle.is_ascii() && !needle.is_empty());
        let sorted = self.sorted;
        let threads = crate::cores::threads_for(sorted as usize, 100_000) as u32;
        let step = sorted.div_ceil(threads).max(1);
        let range_scan = |lo: u32, hi: u32| -> Vec<(u32, u8)> {
            if lo >= hi {
                return Vec::new();
            }
            // At most one each of the range's names (as `with_byte`).
            let mut out = Vec::with_capacity((hi - lo) as usize);
            let start = self.offsets[lo as usize] as usize;
            let end = self.offsets[hi as usize] as usize;
            let hay = &self.arena[start..end];
            let (first, upper) = (needle[0], needle[0].to_ascii_uppercase());
            let mut name = lo;
            let mut at = 0;
            while let Some(i) = memchr::memchr2(first, upper, &hay[at..]) {
                let pos = start + at + i;
                // Move to the name that holds `pos`.
                while self.offsets[name as usize + 1] as usize <= pos {
                    name += 1;
                }
                let name_end = self.offsets[name as usize + 1] as usize;
                if pos + needle.len() <= name_end
                    && self.arena[pos..pos + needle.len()].eq_ignore_ascii_case(needle)
                {
                    out.push((
                        name,
                        tag(&self.arena[self.offsets[name as usize] as usize..name_end]),
                    ));
                    // Next name.
                    at = name_end - start;
                    name += 1;
                    if name >= hi {
                        break;
                    }
                } else {
                    at += i + 1;
                }
                if at >= hay.len() {
                    break;
                }
            }
            // Names that are not ASCII: decided by the caller's own test.
            let a = self.non_ascii.partition_point(|&k| k < lo);
            let b = self.non_ascii.partition_point(|&k| k < hi);
            let mut slow: Vec<(u32, u8)> = self.non_ascii[a..b]
                .iter()
                .copied()
                .filter(|&k| out.binary_search_by_key(&k, |o| o.0).is_err() && other(k))
                .map(|k| (k, 0))
                .collect();
            if !slow.is_empty() {
                out.append(&mut slow);
                out.sort_unstable();
            }
            out
        };
        if threads == 1 {
            return range_scan(0, sorted);
        }
        std::thread::scope(|scope| {
            let parts: Vec<_> = (0..threads)
                .map(|t| {
                    let range_scan = &range_scan;
                    scope.spawn(move || range_scan(t * step, ((t + 1) * step).min(sorted)))
                })
                .collect();
            concat(parts.into_iter().map(|h| h.join().unwrap_or_default()))
        })
    }
}

/// The parts one after the other: the first grown once to hold the rest
/// (collected through an iterator of unknown length, a common word's names
/// were copied again at each doubling).
pub(crate) fn concat<T>(parts: impl Iterator<Item = Vec<T>>) -> Vec<T> {
    let mut parts = parts;
    let mut all = parts.next().unwrap_or_default();
    let rest: Vec<Vec<T>> = parts.collect();
    all.reserve(rest.iter().map(Vec::len).sum());
    for p in rest {
        all.extend(p);
    }
    all
}

/// Sort name ids by name order; equal names keep ascending ids. Compares an
/// 8-byte folded prefix first, so most comparisons never touch the arena.
fn sort_by_name(names: &Names, ids: &mut Vec<u32>) {
    let prefix = |id: u32| -> u64 {
        let mut buf = [0u8; 8];
        for (d, s) in buf.iter_mut().zip(names.get(id)) {
            *d = s.to_ascii_lowercase();
        }
        u64::from_be_bytes(buf)
    };
    let mut keyed: Vec<(u64, u32)> = ids.iter().map(|&i| (prefix(i), i)).collect();
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| name_order(names.get(a.1), names.get(b.1)))
            .then(a.1.cmp(&b.1))
    });
    ids.clear();
    ids.extend(keyed.into_iter().map(|(_, i)| i));
}

fn build_postings(names: &Names) -> (Postings, Vec<Box<[u8]>>) {
    // The distinct extensions first: their keys follow their sorted order.
    let mut buf = Vec::new();
    let mut exts: std::collections::HashSet<Box<[u8]>> = std::collections::HashSet::new();
    for id in 0..names.sorted_len() {
        fold_into(names.get(id), &mut buf);
        if let Some(ext) = extension(&buf)
            && !exts.contains(ext)
        {
            exts.insert(ext.into());
        }
    }
    let mut exts: Vec<Box<[u8]>> = exts.into_iter().collect();
    exts.sort_unstable();
    let postings = Postings::build(|emit| {
        let mut buf = Vec::new();
        for id in 0..names.sorted_len() {
            fold_into(names.get(id), &mut buf);
            for t in buf.windows(3) {
                emit(trigram_key(t), id);
            }
            if let Some(ext) = extension(&buf)
                && let Ok(i) = exts.binary_search_by(|e| (**e).cmp(ext))
            {
                emit(EXT_KEY | i as u32, id);
            }
        }
    });
    (postings, exts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(words: &[&str]) -> Names {
        let mut n = Names::new();
        for w in words {
            n.push(w.as_bytes());
        }
        let used = vec![true; n.len() as usize];
        let mut d = n.rebuild(&used).0;
        d.set_lists(d.lists());
        d
    }

    /// Names known to hold the literals (those starting with the word) give
    /// what the lists and the check give, in order, on one thread and split
    /// across threads (past 20,000 ids in the rarest list), whichever
    /// thread's range the run falls in or straddles.
    #[test]
    fn names_known_to_match_give_what_the_lists_give() {
        let mut owned: Vec<String> = Vec::new();
        for i in 0..9_000 {
            owned.push(format!("report-{i}.md"));
            owned.push(format!("Report{i}"));
            owned.push(format!("a_report_{i}.rs"));
            owned.push(format!("reprt{i}"));
        }
        owned.extend(
            [
                "report",
                "report.md",
                "REPORT.tar.gz",
                "report\u{c9}.md",
                "zreport",
            ]
            .map(String::from),
        );
        let words: Vec<&str> = owned.iter().map(String::as_str).collect();
        let d = dict(&words);
        let word = b"report";
        let check = |k: u32| -> Option<(u32, u8)> {
            let lower = d.get(k).to_ascii_lowercase();
            let at = memchr::memmem::find(&lower, word)?;
            Some((k, u8::from(at == 0)))
        };
        let starts = |k: u32| -> Option<(u32, u8)> { Some((k, 1)) };
        let lists = d.matching(&[word.to_vec()], &check).unwrap();
        let run = d.prefix_run(word);
        assert!(run.len() >= 18_000, "{run:?}");
        let known = d
            .matching_known(
                &[word.to_vec()],
                &check,
                Some(Known {
                    ids: run.clone(),
                    keep: &starts,
                }),
            )
            .unwrap();
        assert_eq!(known, lists);
        // Both equal a check of every name, in order: the parts, cut at the
        // rarest list's shares and across the run, leave none out, none twice.
        let every: Vec<(u32, u8)> = (0..d.sorted_len()).filter_map(check).collect();
        assert_eq!(lists, every);
        assert_eq!(lists.iter().filter(|t| t.1 == 1).count(), run.len());
        // One thread: a rarer word, whose lists are short.
        let few = b"report-1";
        let lists = d.matching(&[few.to_vec()], &Some).unwrap();
        let known = d
            .matching_known(
                &[few.to_vec()],
                &Some,
                Some(Known {
                    ids: d.prefix_run(few),
                    keep: &Some,
                }),
            )
            .unwrap();
        assert_eq!(known, lists);
        assert!(!lists.is_empty());
    }

    #[test]
    fn rebuild_sorts_deduplicates_and_maps() {
        let mut n = Names::new();
        for w in ["b.rs", "A.txt", "b.rs", "a.txt", "c"] {
            n.push(w.as_bytes());
        }
        let (d, map) = n.rebuild(&[true, true, true, true, false]);
        let all: Vec<&[u8]> = (0..d.len()).map(|i| d.get(i)).collect();
        assert_eq!(all, [&b"A.txt"[..], b"a.txt", b"b.rs"]);
        assert_eq!(map, [2, 0, 2, 1, u32::MAX]);
        assert_eq!(d.find_sorted(b"a.txt"), Some(1));
        assert_eq!(d.find_sorted(b"zz"), None);
        // A second rebuild merges appended names with the sorted ones.
        let mut d = d;
        let x = d.intern(b"aa");
        assert_eq!(x, 3);
        assert_eq!(d.intern(b"b.rs"), 2, "existing names are found");
        let (e, map) = d.rebuild(&[true, false, true, true]);
        let all: Vec<&[u8]> = (0..e.len()).map(|i| e.get(i)).collect();
        assert_eq!(all, [&b"A.txt"[..], b"aa", b"b.rs"]);
        assert_eq!(map, [0, u32::MAX, 2, 1]);
    }

    #[test]
    fn trigram_and_extension_candidates() {
        let d = dict(&[
            "Report-2026.pdf",
            "notes.md",
            "reporter.rs",
            "x.PDF",
            "y.pdfx",
        ]);
        let ids = |v: Vec<u32>| -> Vec<String> {
            v.into_iter()
                .map(|i| String::from_utf8_lossy(d.get(i)).into_owned())
                .collect()
        };
        assert_eq!(
            ids(d.candidates(&[b"report".to_vec()]).unwrap()),
            ["Report-2026.pdf", "reporter.rs"]
        );
        assert_eq!(
            ids(d.candidates(&[b"zzz".to_vec()]).unwrap()),
            Vec::<String>::new()
        );
        assert!(d.candidates(&[b"re".to_vec()]).is_none());
        assert_eq!(
            ids(d.with_extensions(&[b"pdf".to_vec()])),
            ["Report-2026.pdf", "x.PDF"]
        );
        assert_eq!(d.candidates_bound(&[b"report".to_vec()]), Some(2));
        // Short needles: one pass over the names, across name boundaries never.
        assert_eq!(
            ids(scanned(d.scan(b"pd", &|_| false, &|_| 0))),
            ["Report-2026.pdf", "x.PDF", "y.pdfx"]
        );
        assert_eq!(
            ids(scanned(d.scan(b"fr", &|_| false, &|_| 0))),
            Vec::<String>::new(),
            "`…pdf` + `reporter` is not a match"
        );
        assert_eq!(
            ids(scanned(d.scan(b"x", &|_| false, &|_| 0))),
            ["x.PDF", "y.pdfx"]
        );
        // Each name found comes with its tag, made from its own bytes.
        assert_eq!(
            d.scan(b"x", &|_| false, &|name| name.len() as u8),
            [
                (d.find_sorted(b"x.PDF").unwrap(), 5),
                (d.find_sorted(b"y.pdfx").unwrap(), 6)
            ]
        );
    }

    #[test]
    fn one_letter_read_off_the_masks_finds_what_the_scan_finds() {
        let mut n = Names::new();
        let mut rng = 0x9e37_79b9_u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        let alphabet: Vec<char> = "abcxyzABCXYZ._-1é".chars().collect();
        for _ in 0..3000 {
            let len = 1 + next(8) as usize;
            let name: String = (0..len)
                .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                .collect();
            n.push(name.as_bytes());
        }
        n.push("ÉCOLE.txt".as_bytes());
        n.push("Ångström".as_bytes());
        let used = vec![true; n.len() as usize];
        let mut n = n.rebuild(&used).0;
        // As every rebuild is followed: the lists, and which names are not
        // ASCII (`Ångström` holds no byte `a`, but folds to `angstrom`).
        let lists = n.lists();
        n.set_lists(lists);
        let folded_holds = |k: u32, b: u8| ferret_query::fold_case(n.get(k)).contains(&b);
        for b in b"abcdeoxyz.".iter().copied() {
            let masks = scanned(n.with_byte(b, &|k| folded_holds(k, b)));
            let scan = scanned(n.scan(&[b], &|k| folded_holds(k, b), &|_| 0));
            assert_eq!(masks, scan, "{}", b as char);
        }
    }

    fn scanned(found: Vec<(u32, u8)>) -> Vec<u32> {
        found.into_iter().map(|f| f.0).collect()
    }
}
