//! Evaluating a compiled query over the store: pick where the matches can come
//! from, read a page off a sorted order where one applies, count without
//! building the matches where the query allows it.
//!
//! A query splits into its name terms (answered once per distinct name, from the
//! trigram and extension lists of the dictionary) and the rest. The *driver* is
//! the smallest exact source of candidates: the entries bearing the matching
//! names, a run of the size or time order (`size:`, `dm:`), the subtrees below
//! the folders a path term names, or everything. When nothing but the driver's
//! own condition remains, the total is the driver's size (corrected for entries
//! changed since the orders were built) and the page is read off the requested
//! order, stopping after `offset + limit` matches. Otherwise the driver's entries
//! are checked one by one. Entries changed since the last rebuild (the delta) are
//! always checked one by one and merged in.

use std::{cmp::Ordering, collections::HashMap};

use ferret_query::{Query, Range};

pub use crate::hits::{Hit, display_path, hit, rfc3339};
use crate::names::{extension, fold_into};
use crate::orders::{self as base, skipped};
use crate::rank::{self, Places, Ranker, Relevance};
use crate::store::{EntryId, FLAG_DELTA, Kind, NONE, PathedEntry, Store, UNKNOWN_SECS};
use crate::uses::Uses;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    Name,
    /// Folder by folder, each folder's entries in name order (as a file manager's
    /// tree shows them).
    Path,
    Size,
    Modified,
    Created,
    Extension,
    /// Most likely meant first (see [`crate::rank`]); each hit carries its score.
    Relevance,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Extension,
    Kind,
    Folder,
}

/// What to look for, already compiled.
pub struct SearchRequest<'q> {
    pub query: &'q Query,
    /// Only entries at or below this folder (a root's record, or any folder).
    pub under: Option<EntryId>,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    pub group_by: Option<GroupBy>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Group {
    pub group: String,
    pub count: u64,
}

#[derive(Debug, Default)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    pub groups: Option<Vec<Group>>,
    /// All matches (or all groups with `group_by`).
    pub total: u64,
}

/// Below this many candidates, checking runs on one thread.
const PARALLEL_FROM: usize = 40_000;

/// The sorted names matching a name-only query, as a list and a bit set, with
/// how many entries of the orders bear them.
struct NameSet {
    ids: Vec<u32>,
    bits: Vec<u64>,
    entries: usize,
}

impl NameSet {
    #[inline]
    fn contains(&self, name: u32) -> bool {
        self.bits
            .get(name as usize / 64)
            .is_some_and(|w| w & (1 << (name % 64)) != 0)
    }
}

/// Ranking costs about a microsecond an entry (cache misses): worth threads
/// far sooner than filtering.
const RANK_PARALLEL_FROM: usize = PARALLEL_FROM / 5;

/// A match to rank: its id, and its name's fit and length when already known.
type Cand = (EntryId, Option<(rank::NameFit, usize)>);

/// How many threads for `n` pieces of work, worth threads from `from` on.
fn threads_for(n: usize, from: usize) -> usize {
    if n < from {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |p| p.get())
            .min(8)
    }
}

/// `f` over `items` in chunks, on several threads from `from` items on; the
/// results in order.
fn par_chunks<T: Sync, R: Send>(
    items: &[T],
    from: usize,
    f: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    let threads = threads_for(items.len(), from);
    if threads == 1 {
        return f(items);
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || f(part))
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Every candidate with its relevance.
fn rank_all(store: &Store, ranker: &Ranker, cands: Vec<Cand>) -> Vec<(Relevance, EntryId)> {
    par_chunks(&cands, RANK_PARALLEL_FROM, |part| {
        let (mut places, mut buf) = (Places::default(), Vec::new());
        part.iter()
            .map(|&(id, known)| {
                let r = match known {
                    Some(fit) => ranker.rank_fitted(store, id, fit, &mut places),
                    None => ranker.rank(store, id, &mut places, &mut buf),
                };
                (r, id)
            })
            .collect()
    })
}

/// The base entries of the names `keys` (sorted name ids) that the plan
/// accepts, each with its name's fit worked out once per name.
fn fitted_matches(plan: &Plan<'_>, ranker: &Ranker, keys: &[u32]) -> Vec<Cand> {
    let store = plan.store;
    let b = &store.base;
    par_chunks(keys, RANK_PARALLEL_FROM, |part| {
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for &k in part {
            let name = store.names.get(k);
            let fit = (ranker.fit(name, &mut buf), name.len());
            out.extend(
                b.by_name[b.named(k)]
                    .iter()
                    .copied()
                    .filter(|&id| !skipped(store, id) && plan.accept(id))
                    .map(|id| (id, Some(fit))),
            );
        }
        out
    })
}

fn par_filter(ids: Vec<u32>, keep: impl Fn(u32) -> bool + Sync) -> Vec<u32> {
    par_chunks(&ids, PARALLEL_FROM, |part| {
        part.iter().copied().filter(|&i| keep(i)).collect()
    })
}

/// The sorted names for which `name_q` holds.
fn match_names(store: &Store, name_q: &Query) -> NameSet {
    let names = &store.names;
    let sorted = names.sorted_len();
    let literals: Vec<Vec<u8>> = name_q.required_name_literals();
    // One list narrows enough; checking the names does the rest. The extension
    // lists are exact but for hash collisions; a trigram bound is an upper bound.
    let exts = name_q.required_extensions();
    let ext_count = exts.as_ref().map(|e| names.with_extensions_count(e));
    let trigram_bound = names.candidates_bound(&literals);
    // The commonest query, one plain substring, is checked in place on ASCII
    // names (other names go through the query itself).
    let plain = name_q.plain_name_literal().filter(|l| !l.is_empty());
    let verify = |k: u32| {
        let name = names.get(k);
        match plain {
            Some(needle) if name.is_ascii() => contains_ascii_ci(name, needle),
            _ => name_q.matches_name(name),
        }
    };
    let ids = match (exts, ext_count, trigram_bound) {
        (Some(e), Some(c), bound) if bound.is_none_or(|b| c <= b as usize * 2) => {
            let listed = names.with_extensions(&e);
            // An extension list is exactly the names with that extension.
            if name_q.is_extension_list() {
                listed
            } else {
                par_filter(listed, verify)
            }
        }
        (_, _, Some(_)) => names.matching(&literals, &verify).unwrap_or_default(),
        // A word too short for the trigram lists: one pass over the names.
        _ if plain.is_some_and(|l| l.is_ascii()) => names.scan(plain.unwrap_or_default(), &|k| {
            name_q.matches_name(names.get(k))
        }),
        _ => par_filter((0..sorted).collect(), verify),
    };
    let mut bits = vec![0u64; (sorted as usize).div_ceil(64)];
    let mut entries = 0;
    for &k in &ids {
        bits[k as usize / 64] |= 1 << (k % 64);
        entries += store.base.named(k).len();
    }
    NameSet { ids, bits, entries }
}

/// Whether `hay` holds `needle` (ASCII lowercase) ignoring ASCII case: `memchr2`
/// finds each place the first byte occurs in either case, then the rest is
/// compared. (What the query's own literal does, without the evaluator.)
fn contains_ascii_ci(hay: &[u8], needle: &[u8]) -> bool {
    let n = needle.len();
    if n > hay.len() {
        return false;
    }
    let first = needle[0];
    let upper = first.to_ascii_uppercase();
    let last = hay.len() - n;
    let mut at = 0;
    while let Some(i) = memchr::memchr2(first, upper, &hay[at..=last]) {
        let start = at + i;
        if hay[start..start + n].eq_ignore_ascii_case(needle) {
            return true;
        }
        at = start + 1;
        if at > last {
            return false;
        }
    }
    false
}

/// Where the candidates come from.
enum Driver {
    /// The entries bearing these names.
    Names,
    /// A run of an order (`by_mtime` or `by_size`), from a range term.
    Run {
        order: Order,
        span: std::ops::Range<usize>,
        range: Range,
        conjunct: usize,
    },
    /// The subtrees below these entries (a path term's anchors, or `under`).
    Subtrees(Vec<EntryId>),
    All,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Name,
    Mtime,
    Size,
}

/// A range term's bounds in the units the records use.
fn mtime_bounds(lo: i64, hi: i64) -> Option<(u32, u32)> {
    if hi < 0 || lo > UNKNOWN_SECS as i64 - 1 {
        return None;
    }
    Some((
        lo.clamp(0, UNKNOWN_SECS as i64 - 1) as u32,
        hi.clamp(0, UNKNOWN_SECS as i64 - 1) as u32,
    ))
}

/// Folder entries sort before files of the same size in the size order (they
/// have none); this many lead `by_size`'s run of size 0.
fn size_run(store: &Store, lo: u64, hi: u64) -> std::ops::Range<usize> {
    let span = base::size_positions(store, lo, hi);
    if lo > 0 {
        return span;
    }
    // Skip the folders at the start of the run.
    let o = &store.base.by_size;
    let first_file = o[span.clone()].partition_point(|&id| base_is_dir(store, id));
    span.start + first_file..span.end
}

#[inline]
fn base_is_dir(store: &Store, id: EntryId) -> bool {
    match store.stale.get(&id) {
        Some(k) if skipped(store, id) => k.dir,
        _ => store.kind(id) == Kind::Dir,
    }
}

/// The planner's view of one search.
struct Plan<'a> {
    store: &'a Store,
    request: &'a SearchRequest<'a>,
    name_q: Query,
    rest: Query,
    names: Option<NameSet>,
    driver: Driver,
    /// What the driver does not guarantee (besides the name part and `under`).
    residual: Query,
    /// Whether the driver guarantees the name part.
    names_guaranteed: bool,
}

impl<'a> Plan<'a> {
    fn new(store: &'a Store, request: &'a SearchRequest<'a>) -> Plan<'a> {
        let (name_q, rest) = request.query.split_name_terms();
        let n = store.base.by_name.len().max(1);
        let mut best: Option<(usize, Driver)> = None;
        for (conjunct, range) in rest.ranges() {
            let (order, span) = match range {
                Range::Size { lo, hi } => (Order::Size, size_run(store, lo, hi)),
                Range::Modified { lo, hi } => match mtime_bounds(lo, hi) {
                    Some((lo, hi)) => (Order::Mtime, base::mtime_positions(store, lo, hi)),
                    None => (Order::Mtime, 0..0),
                },
            };
            let card = span.len();
            if best.as_ref().is_none_or(|(c, _)| card < *c) {
                best = Some((
                    card,
                    Driver::Run {
                        order,
                        span,
                        range,
                        conjunct,
                    },
                ));
            }
        }
        // Name terms are answered per distinct name. Without a list to narrow
        // them (no literal of three bytes, no extension) that means testing every
        // name: skip it when a small run drives anyway (names are then tested on
        // the run's entries).
        let listed = name_q.required_extensions().is_some()
            || store
                .names
                .candidates_bound(&name_q.required_name_literals())
                .is_some();
        let sorted = store.names.sorted_len() as usize;
        let names = (!name_q.is_match_all()
            && (listed || best.as_ref().is_none_or(|(c, _)| *c > sorted / 4)))
        .then(|| match_names(store, &name_q));
        if let Some(set) = &names {
            let card = set.entries;
            if best.as_ref().is_none_or(|(c, _)| card <= *c) {
                best = Some((card, Driver::Names));
            }
        }
        let small = |c: usize| c <= n / 16;
        if best.as_ref().is_none_or(|(c, _)| !small(*c)) {
            if let Some(anchors) = anchors(store, &rest) {
                best = Some((0, Driver::Subtrees(anchors)));
            } else if let Some(u) = request.under.filter(|u| !store.roots().contains(u))
                && best.as_ref().is_none_or(|(c, _)| *c > n / 4)
            {
                best = Some((0, Driver::Subtrees(vec![u])));
            }
        }
        let driver = best.map_or(Driver::All, |(_, d)| d);
        let (residual, names_guaranteed) = match &driver {
            Driver::Names => (rest.clone(), true),
            Driver::Run { conjunct, .. } => (rest.without_conjunct(*conjunct), false),
            Driver::Subtrees(_) | Driver::All => (rest.clone(), false),
        };
        Plan {
            store,
            request,
            name_q,
            rest,
            names,
            driver,
            residual,
            names_guaranteed,
        }
    }

    /// Whether the driver's walk sees the live tree (delta entries included).
    fn covers_delta(&self) -> bool {
        matches!(self.driver, Driver::Subtrees(_))
    }

    /// Whether `under` restricts anything (it is not a root).
    fn under(&self) -> Option<EntryId> {
        self.request
            .under
            .filter(|u| !self.store.roots().contains(u))
    }

    fn name_ok(&self, id: EntryId) -> bool {
        match &self.names {
            None if self.name_q.is_match_all() => true,
            None => self.name_q.matches_name(self.store.name(id)),
            Some(set) => {
                let k = self.store.names_of[id as usize];
                if k < self.store.names.sorted_len() {
                    set.contains(k)
                } else {
                    self.name_q.matches_name(self.store.name(id))
                }
            }
        }
    }

    fn under_ok(&self, id: EntryId) -> bool {
        self.under().is_none_or(|u| self.store.is_within(id, u))
    }

    /// Whether a base entry produced by the driver matches.
    fn accept(&self, id: EntryId) -> bool {
        if !self.names_guaranteed && !self.name_ok(id) {
            return false;
        }
        if let Some(u) = self.under()
            && !matches!(self.driver, Driver::Subtrees(_))
            && !self.store.is_within(id, u)
        {
            return false;
        }
        self.residual.is_match_all() || self.residual.matches(&self.store.entry(id))
    }

    /// Whether nothing but the driver's own condition is left to check.
    fn exact(&self) -> bool {
        self.residual.is_match_all()
            && self.under().is_none()
            && (self.names_guaranteed || self.name_q.is_match_all())
            && matches!(
                self.driver,
                Driver::Names | Driver::Run { .. } | Driver::All
            )
    }

    /// Delta entries that match, in id order.
    fn delta_matches(&self) -> Vec<EntryId> {
        let store = self.store;
        store
            .delta_entries()
            .filter(|&id| self.name_ok(id))
            .filter(|&id| self.under().is_none_or(|u| store.is_within(id, u)))
            .filter(|&id| self.rest.is_match_all() || self.rest.matches(&store.entry(id)))
            .collect()
    }

    /// The driver's base entries that match (order unspecified).
    fn base_matches(&self) -> Vec<EntryId> {
        let store = self.store;
        let b = &store.base;
        let ids: Vec<EntryId> = match &self.driver {
            Driver::Names => {
                let set = self.names.as_ref().map_or(&[][..], |s| &s.ids[..]);
                set.iter()
                    .flat_map(|&k| b.by_name[b.named(k)].iter().copied())
                    .filter(|&id| !skipped(store, id))
                    .collect()
            }
            Driver::Run { order, span, .. } => {
                let o = match order {
                    Order::Mtime => &b.by_mtime,
                    _ => &b.by_size,
                };
                o[span.clone()]
                    .iter()
                    .copied()
                    .filter(|&id| !skipped(store, id))
                    .collect()
            }
            Driver::All => b
                .by_name
                .iter()
                .copied()
                .filter(|&id| !skipped(store, id))
                .collect(),
            Driver::Subtrees(tops) => return self.subtree_matches(tops),
        };
        par_filter(ids, |id| self.accept(id))
    }

    /// Walk below `tops` (skipping tops inside other tops), building each entry's
    /// path on the way down; base and delta entries alike.
    fn subtree_matches(&self, tops: &[EntryId]) -> Vec<EntryId> {
        let store = self.store;
        let set: std::collections::HashSet<EntryId> = tops.iter().copied().collect();
        let mut out = Vec::new();
        let needs_path = self.residual.needs_path();
        for &top in tops {
            let mut up = store.parent(top);
            let mut nested = false;
            while up != NONE {
                if set.contains(&up) {
                    nested = true;
                    break;
                }
                up = store.parent(up);
            }
            if nested {
                continue;
            }
            let mut path = store.rel_path(top);
            let depth = store.depth(top);
            // Path terms the top's own path holds, every entry below holds too.
            let mut decorated = Vec::with_capacity(path.len() + 2);
            decorated.push(b'/');
            decorated.extend_from_slice(&path);
            if !path.is_empty() {
                decorated.push(b'/');
            }
            let below = self.residual.assuming_path_prefix(&decorated);
            let below_needs_path = below.needs_path();
            // Below a top inside `under`, everything is inside it.
            let all_inside = self.under_ok(top);
            if !is_root_entry(store, top) && self.name_ok(top) && self.under_ok(top) {
                let ok = self.residual.is_match_all()
                    || if needs_path {
                        self.residual.matches(&PathedEntry {
                            inner: store.entry(top),
                            rel: &path,
                            depth,
                        })
                    } else {
                        self.residual.matches(&store.entry(top))
                    };
                if ok {
                    out.push(top);
                }
            }
            // (entry, depth, path length before its name)
            let mut stack: Vec<(EntryId, u32, usize)> = store
                .children(top)
                .iter()
                .rev()
                .map(|&c| (c, depth + 1, path.len()))
                .collect();
            while let Some((id, d, cut)) = stack.pop() {
                if below_needs_path {
                    path.truncate(cut);
                    if cut > 0 {
                        path.push(b'/');
                    }
                    path.extend_from_slice(store.name(id));
                }
                let here = path.len();
                if self.name_ok(id) && (all_inside || self.under_ok(id)) {
                    let ok = if below.is_match_all() {
                        true
                    } else if below_needs_path {
                        below.matches(&PathedEntry {
                            inner: store.entry(id),
                            rel: &path,
                            depth: d,
                        })
                    } else {
                        below.matches(&store.entry(id))
                    };
                    if ok {
                        out.push(id);
                    }
                }
                for &c in store.children(id).iter().rev() {
                    stack.push((c, d + 1, here));
                }
            }
        }
        out
    }

    /// The total when [`Plan::exact`]: the driver's size from the orders, less
    /// the entries changed since, plus the delta's matches.
    fn exact_total(&self, delta: usize) -> usize {
        let store = self.store;
        let b = &store.base;
        let base = match &self.driver {
            Driver::Names => {
                let set = self.names.as_ref().expect("names drive");
                let runs = set.entries;
                let gone = store
                    .stale
                    .iter()
                    .filter(|(id, k)| skipped(store, **id) && set.contains(k.name))
                    .count();
                runs - gone
            }
            Driver::Run { span, range, .. } => {
                let gone = match *range {
                    Range::Size { lo, hi } => base::stale_in_size(store, lo, hi),
                    Range::Modified { lo, hi } => mtime_bounds(lo, hi)
                        .map_or(0, |(lo, hi)| base::stale_in_mtime(store, lo, hi)),
                };
                span.len() - gone.min(span.len())
            }
            Driver::All => {
                let gone = store.stale.keys().filter(|&&id| skipped(store, id)).count();
                b.by_name.len() - gone
            }
            Driver::Subtrees(_) => unreachable!("subtrees are never exact"),
        };
        base + delta
    }
}

fn is_root_entry(store: &Store, id: EntryId) -> bool {
    store.parent(id) == NONE
}

/// For a query with a path term (and no better source): the entries whose own
/// name holds the term's longest `/`-free piece. Every match lies at or below
/// one of them.
fn anchors(store: &Store, rest: &Query) -> Option<Vec<EntryId>> {
    let piece = rest
        .required_path_literals()
        .iter()
        .flat_map(|lit| lit.split(|&b| b == b'/'))
        .filter(|p| !p.is_empty())
        .max_by_key(|p| p.len())
        .map(<[u8]>::to_vec)?;
    let names = &store.names;
    let candidates = names
        .candidates(std::slice::from_ref(&piece))
        .unwrap_or_else(|| (0..names.sorted_len()).collect());
    let mut buf = Vec::new();
    let holds = |name: &[u8], buf: &mut Vec<u8>| {
        fold_into(name, buf);
        memchr::memmem::find(buf, &piece).is_some()
    };
    let mut out: Vec<EntryId> = Vec::new();
    for k in candidates {
        if holds(names.get(k), &mut buf) {
            out.extend(
                store.base.by_name[store.base.named(k)]
                    .iter()
                    .copied()
                    .filter(|&id| !skipped(store, id)),
            );
        }
    }
    for &id in &store.delta {
        let r = &store.records[id as usize];
        if r.flags & FLAG_DELTA != 0
            && r.kind != Kind::Free as u8
            && r.parent != NONE
            && holds(store.name(id), &mut buf)
        {
            out.push(id);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Compares two entries in a sort order (ascending); ties end on the id, so the
/// order is total and pages are stable.
fn compare(store: &Store, sort: SortKey, a: EntryId, b: EntryId) -> Ordering {
    let name = || {
        store
            .names
            .cmp(store.names_of[a as usize], store.names_of[b as usize])
            .then(a.cmp(&b))
    };
    let ra = &store.records[a as usize];
    let rb = &store.records[b as usize];
    match sort {
        SortKey::Name => name(),
        SortKey::Modified => ra.mtime.cmp(&rb.mtime).then_with(name),
        SortKey::Created => ra.btime.cmp(&rb.btime).then_with(name),
        SortKey::Size => store
            .size(a)
            .cmp(&store.size(b))
            .then_with(|| (ra.kind != Kind::Dir as u8).cmp(&(rb.kind != Kind::Dir as u8)))
            .then_with(name),
        SortKey::Extension => {
            let mut ea = Vec::new();
            let mut eb = Vec::new();
            fold_into(extension(store.name(a)).unwrap_or_default(), &mut ea);
            fold_into(extension(store.name(b)).unwrap_or_default(), &mut eb);
            ea.cmp(&eb).then_with(name)
        }
        SortKey::Path => path_cmp(store, a, b),
        // Ranked apart (relevance needs the query); here, a stable fallback.
        SortKey::Relevance => name(),
    }
}

/// Folder-by-folder order: the first differing ancestors decide, by name; an
/// ancestor comes before what lies below it; roots in name order.
fn path_cmp(store: &Store, a: EntryId, b: EntryId) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let chain = |mut id: EntryId| {
        let mut c = Vec::with_capacity(16);
        while id != NONE {
            c.push(id);
            id = store.parent(id);
        }
        c.reverse();
        c
    };
    let (ca, cb) = (chain(a), chain(b));
    for (x, y) in ca.iter().zip(&cb) {
        if x != y {
            return store
                .names
                .cmp(store.names_of[*x as usize], store.names_of[*y as usize])
                .then(x.cmp(y));
        }
    }
    ca.len().cmp(&cb.len())
}

/// Order only the first `k` items (selection, then a sort of those k).
fn top_k<T>(items: &mut Vec<T>, k: usize, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if k == 0 {
        items.clear();
        return;
    }
    if k < items.len() {
        items.select_nth_unstable_by(k - 1, &mut cmp);
        items.truncate(k);
    }
    items.sort_unstable_by(cmp);
}

pub fn search(store: &Store, request: &SearchRequest) -> SearchOutcome {
    search_with(store, request, None)
}

/// [`search`], with the use scores that relevance boosts by.
pub fn search_with(store: &Store, request: &SearchRequest, uses: Option<&Uses>) -> SearchOutcome {
    if request.query.is_match_none() {
        return SearchOutcome::default();
    }
    let plan = Plan::new(store, request);
    let delta = if plan.covers_delta() {
        Vec::new()
    } else {
        plan.delta_matches()
    };
    if let Some(by) = request.group_by {
        let mut all = plan.base_matches();
        all.extend_from_slice(&delta);
        return group(store, &all, by, request);
    }
    let wanted = request.offset.saturating_add(request.limit);
    if request.sort == SortKey::Relevance {
        return by_relevance(&plan, wanted, delta, uses);
    }
    let cmp = |a: &EntryId, b: &EntryId| {
        let o = compare(store, request.sort, *a, *b);
        if request.descending { o.reverse() } else { o }
    };
    if plan.exact() {
        let total = plan.exact_total(delta.len());
        let wanted = wanted.min(total);
        let page = if wanted == 0 {
            Vec::new()
        } else if let Some(page) = walk_order(&plan, wanted, &delta, &cmp) {
            page
        } else {
            let mut all = plan.base_matches();
            all.extend_from_slice(&delta);
            top_k(&mut all, wanted, cmp);
            all
        };
        return outcome(store, page, request, total);
    }
    let mut all = plan.base_matches();
    all.extend_from_slice(&delta);
    let total = all.len();
    top_k(&mut all, wanted.min(total), cmp);
    outcome(store, all, request, total)
}

/// The page in relevance order. When the query has a word and the matching
/// names that start with it already fill the page, only those entries are
/// ranked (every other name fits worse); otherwise every match is.
fn by_relevance(
    plan: &Plan<'_>,
    wanted: usize,
    delta: Vec<EntryId>,
    uses: Option<&Uses>,
) -> SearchOutcome {
    let store = plan.store;
    let request = plan.request;
    let now = chrono::Utc::now().timestamp();
    let mut ranker = Ranker::new(request.query.name_words(), now, uses);
    let exact = plan.exact();
    let mut buf = Vec::new();
    let mut ranked: Option<Vec<(Relevance, EntryId)>> = None;
    // (Only for exact plans: otherwise counting the total visits every match
    // anyway.)
    if let (Some(word), Some(set), true) = (ranker.main_word(), &plan.names, exact)
        && word.is_ascii()
    {
        let names = &store.names;
        let lo = names.lower_bound_folded(word);
        let hi = names.prefix_end_folded(word, lo);
        let keys =
            &set.ids[set.ids.partition_point(|&k| k < lo)..set.ids.partition_point(|&k| k < hi)];
        let mut first = fitted_matches(plan, &ranker, keys);
        first.extend(
            delta
                .iter()
                .copied()
                .filter(|&id| {
                    rank::name_fit(store.name(id), word, &mut buf) <= rank::NameFit::Prefix
                })
                .map(|id| (id, None)),
        );
        // Generated folders come last whatever the fit: the shortcut holds
        // when enough of these are outside them.
        ranker.prepare(store, first.len());
        let first = rank_all(store, &ranker, first);
        if first.iter().filter(|(r, _)| !r.generated).count() >= wanted {
            ranked = Some(first);
        }
    }
    let (mut ranked, total) = match ranked {
        Some(r) => (r, plan.exact_total(delta.len())),
        None => {
            let mut all: Vec<Cand> = match (&plan.driver, &plan.names) {
                (Driver::Names, Some(set)) => fitted_matches(plan, &ranker, &set.ids),
                _ => plan
                    .base_matches()
                    .into_iter()
                    .map(|id| (id, None))
                    .collect(),
            };
            let total = if exact {
                plan.exact_total(delta.len())
            } else {
                all.len() + delta.len()
            };
            all.extend(delta.iter().map(|&id| (id, None)));
            ranker.prepare(store, all.len());
            (rank_all(store, &ranker, all), total)
        }
    };
    let cmp = |a: &(Relevance, EntryId), b: &(Relevance, EntryId)| {
        let o =
            a.0.cmp(&b.0)
                .then_with(|| compare(store, SortKey::Path, a.1, b.1));
        if request.descending { o.reverse() } else { o }
    };
    let k = wanted.min(ranked.len());
    top_k(&mut ranked, k, cmp);
    SearchOutcome {
        hits: ranked
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .map(|(r, id)| Hit {
                score: Some(r.score()),
                ..hit(store, id)
            })
            .collect(),
        groups: None,
        total: total as u64,
    }
}

fn outcome(
    store: &Store,
    ordered: Vec<EntryId>,
    request: &SearchRequest,
    total: usize,
) -> SearchOutcome {
    SearchOutcome {
        hits: ordered
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .map(|id| hit(store, id))
            .collect(),
        groups: None,
        total: total as u64,
    }
}

/// For an exact plan: read the first `wanted` matches off the requested order
/// (when one is kept), merged with the delta's. `None` when collecting and
/// selecting is cheaper (few matches) or no order is kept for the sort.
fn walk_order(
    plan: &Plan<'_>,
    wanted: usize,
    delta: &[EntryId],
    cmp: &dyn Fn(&EntryId, &EntryId) -> Ordering,
) -> Option<Vec<EntryId>> {
    let store = plan.store;
    let b = &store.base;
    let order = match plan.request.sort {
        SortKey::Name => Order::Name,
        SortKey::Modified => Order::Mtime,
        SortKey::Size => Order::Size,
        _ => return None,
    };
    let n = b.by_name.len().max(1);
    // The driver's own order is a straight read. Walking another order pays only
    // when matches are dense enough to fill the page soon.
    let natural = match &plan.driver {
        Driver::Names => order == Order::Name,
        Driver::Run { order: o, .. } => *o == order,
        Driver::All => true,
        Driver::Subtrees(_) => return None,
    };
    let card = plan.exact_total(0).max(1);
    if !natural && card.saturating_mul(card) < wanted.saturating_mul(n) {
        return None;
    }
    let whole = |o: Order| -> &[EntryId] {
        match o {
            Order::Name => &b.by_name,
            Order::Mtime => &b.by_mtime,
            Order::Size => &b.by_size,
        }
    };
    let forward: Box<dyn DoubleEndedIterator<Item = EntryId> + '_> = match &plan.driver {
        Driver::Names if natural => {
            let set = plan.names.as_ref()?;
            Box::new(
                set.ids
                    .iter()
                    .flat_map(move |&k| b.by_name[b.named(k)].iter().copied()),
            )
        }
        Driver::Run { span, .. } if natural => Box::new(whole(order)[span.clone()].iter().copied()),
        _ => Box::new(whole(order).iter().copied()),
    };
    let ids: Box<dyn Iterator<Item = EntryId> + '_> = if plan.request.descending {
        Box::new(forward.rev())
    } else {
        forward
    };
    let member = |id: EntryId| -> bool {
        if natural {
            return true;
        }
        match &plan.driver {
            Driver::Names => plan.name_ok(id),
            Driver::Run { range, .. } => match *range {
                Range::Size { lo, hi } => {
                    store.kind(id) != Kind::Dir && (lo..=hi).contains(&store.size(id))
                }
                Range::Modified { lo, hi } => {
                    let t = store.records[id as usize].mtime;
                    t != UNKNOWN_SECS && (lo..=hi).contains(&(t as i64))
                }
            },
            Driver::All | Driver::Subtrees(_) => true,
        }
    };
    let mut pending = delta.to_vec();
    pending.sort_unstable_by(cmp);
    let mut pending = pending.into_iter().peekable();
    let mut page = Vec::with_capacity(wanted);
    for id in ids.filter(|&id| !skipped(store, id) && member(id)) {
        while page.len() < wanted
            && pending
                .peek()
                .is_some_and(|d| cmp(d, &id) == Ordering::Less)
        {
            page.extend(pending.next());
        }
        if page.len() >= wanted {
            break;
        }
        page.push(id);
    }
    page.extend(pending.take(wanted - page.len().min(wanted)));
    page.truncate(wanted);
    Some(page)
}

fn group(
    store: &Store,
    matched: &[EntryId],
    by: GroupBy,
    request: &SearchRequest,
) -> SearchOutcome {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut buf = Vec::new();
    for &id in matched {
        let key = match by {
            GroupBy::Kind => store.kind(id).name().to_string(),
            GroupBy::Extension => {
                if store.kind(id) == Kind::Dir {
                    "(folder)".to_string()
                } else {
                    fold_into(store.name(id), &mut buf);
                    match extension(&buf) {
                        Some(ext) => String::from_utf8_lossy(ext).into_owned(),
                        None => "(none)".to_string(),
                    }
                }
            }
            GroupBy::Folder => display_path(store, store.parent(id)),
        };
        *counts.entry(key).or_default() += 1;
    }
    page_groups(counts, request.offset, request.limit)
}

/// Groups ordered by count (largest first, then by name), one page of them.
pub fn page_groups(
    counts: impl IntoIterator<Item = (String, u64)>,
    offset: usize,
    limit: usize,
) -> SearchOutcome {
    let mut groups: Vec<Group> = counts
        .into_iter()
        .map(|(group, count)| Group { group, count })
        .collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.group.cmp(&b.group)));
    let total = groups.len() as u64;
    let groups = groups.into_iter().skip(offset).take(limit).collect();
    SearchOutcome {
        hits: Vec::new(),
        groups: Some(groups),
        total,
    }
}

#[cfg(test)]
mod tests {
    //! The planner must give exactly what checking every entry gives, whatever
    //! source it picks and whatever changed since the orders were built.

    use super::*;
    use crate::names::name_order;
    use crate::store::{Meta, UNKNOWN_TIME};
    use ferret_query::{Clock, Options};

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    const CLOCK: Clock = Clock {
        now_utc: 1_780_000_000,
        utc_offset_secs: 0,
    };

    fn meta(rng: &mut Rng) -> Meta {
        Meta {
            size: [0, 10, 500, 4096, 70_000][rng.below(5) as usize] + rng.below(3),
            mtime: CLOCK.now_utc - [0, 60, 86_400 * 3, 86_400 * 400][rng.below(4) as usize],
            btime: UNKNOWN_TIME,
            mode: 0o644,
        }
    }

    fn random_name(rng: &mut Rng) -> Vec<u8> {
        const WORDS: &[&str] = &[
            "report", "Main", "notes", "a", "zz", "Ünï", "data_2", "README",
        ];
        const EXTS: &[&str] = &["rs", "PDF", "md", "", "tar.gz", "c"];
        let w = WORDS[rng.below(WORDS.len() as u64) as usize];
        let e = EXTS[rng.below(EXTS.len() as u64) as usize];
        let n = rng.below(4);
        if e.is_empty() {
            format!("{w}{n}").into_bytes()
        } else {
            format!("{w}{n}.{e}").into_bytes()
        }
    }

    fn random_store(rng: &mut Rng, entries: usize) -> Store {
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let mut dirs = vec![root];
        for _ in 0..entries {
            let parent = dirs[rng.below(dirs.len() as u64) as usize];
            let name = random_name(rng);
            if s.child(parent, &name).is_some() {
                continue;
            }
            let kind = if rng.below(5) == 0 {
                Kind::Dir
            } else {
                Kind::File
            };
            let id = s.insert_new(parent, &name, kind, meta(rng));
            if kind == Kind::Dir {
                dirs.push(id);
            }
        }
        s
    }

    /// Random changes after the last rebuild: they land in the delta.
    fn churn(s: &mut Store, rng: &mut Rng, steps: usize) {
        for _ in 0..steps {
            let ids: Vec<EntryId> = (0..s.capacity_ids() as EntryId)
                .filter(|&i| s.is_live(i) && s.parent(i) != NONE)
                .collect();
            if ids.is_empty() {
                return;
            }
            let id = ids[rng.below(ids.len() as u64) as usize];
            match rng.below(4) {
                0 => {
                    let m = meta(rng);
                    s.set_meta(id, m);
                }
                1 => {
                    s.remove(id);
                }
                2 => {
                    let dirs: Vec<EntryId> = ids
                        .iter()
                        .copied()
                        .chain(s.roots().iter().copied())
                        .filter(|&d| s.kind(d) == Kind::Dir && !s.is_within(d, id))
                        .collect();
                    let to = dirs[rng.below(dirs.len() as u64) as usize];
                    let name = random_name(rng);
                    s.rename(id, to, &name);
                }
                _ => {
                    let parent = s.parent(id);
                    let name = random_name(rng);
                    if s.child(parent, &name).is_none() {
                        let m = meta(rng);
                        s.insert_new(parent, &name, Kind::File, m);
                    }
                }
            }
        }
    }

    fn reference_cmp(s: &Store, sort: SortKey, a: EntryId, b: EntryId) -> Ordering {
        let name = || name_order(s.name(a), s.name(b)).then(a.cmp(&b));
        let (ma, mb) = (s.meta(a), s.meta(b));
        match sort {
            SortKey::Name | SortKey::Relevance => name(),
            SortKey::Modified => ma.mtime.cmp(&mb.mtime).then_with(name),
            SortKey::Created => ma.btime.cmp(&mb.btime).then_with(name),
            SortKey::Size => ma
                .size
                .cmp(&mb.size)
                .then_with(|| (s.kind(a) != Kind::Dir).cmp(&(s.kind(b) != Kind::Dir)))
                .then_with(name),
            SortKey::Extension => {
                let ext = |id| {
                    extension(s.name(id))
                        .map(|e| ferret_query::fold_case(e).into_owned())
                        .unwrap_or_default()
                };
                ext(a).cmp(&ext(b)).then_with(name)
            }
            SortKey::Path => {
                let chain = |mut id: EntryId| {
                    let mut c = Vec::new();
                    while id != NONE {
                        c.push(id);
                        id = s.parent(id);
                    }
                    c.reverse();
                    c
                };
                let (ca, cb) = (chain(a), chain(b));
                for (x, y) in ca.iter().zip(&cb) {
                    if x != y {
                        return name_order(s.name(*x), s.name(*y)).then(x.cmp(y));
                    }
                }
                ca.len().cmp(&cb.len())
            }
        }
    }

    fn check(s: &Store, query: &str, under: Option<EntryId>, seed: u64) {
        let q = Query::compile(query, &Options::default(), &CLOCK).unwrap();
        let mut all: Vec<EntryId> = (0..s.capacity_ids() as EntryId)
            .filter(|&i| s.is_live(i) && s.parent(i) != NONE)
            .filter(|&i| under.is_none_or(|u| s.is_within(i, u)))
            .filter(|&i| q.matches(&s.entry(i)))
            .collect();
        for sort in [
            SortKey::Name,
            SortKey::Modified,
            SortKey::Size,
            SortKey::Path,
            SortKey::Extension,
        ] {
            for descending in [false, true] {
                all.sort_by(|&a, &b| {
                    let o = reference_cmp(s, sort, a, b);
                    if descending { o.reverse() } else { o }
                });
                for (offset, limit) in [(0, 5), (3, 7), (0, usize::MAX / 4)] {
                    let got = search(
                        s,
                        &SearchRequest {
                            query: &q,
                            under,
                            sort,
                            descending,
                            offset,
                            limit,
                            group_by: None,
                        },
                    );
                    let want: Vec<String> = all
                        .iter()
                        .skip(offset)
                        .take(limit)
                        .map(|&id| display_path(s, id))
                        .collect();
                    let got_paths: Vec<String> = got.hits.into_iter().map(|h| h.path).collect();
                    assert_eq!(
                        (got.total as usize, &got_paths),
                        (all.len(), &want),
                        "seed {seed}: {query:?} sort {sort:?} desc {descending} page {offset}+{limit}"
                    );
                }
            }
        }
    }

    const QUERIES: &[&str] = &[
        "",
        "report",
        "rep",
        "a",
        "main.rs",
        "ext:pdf",
        "ext:rs;c",
        "*.md",
        "size:>400",
        "size:0..20",
        "size:<10",
        "dm:today",
        "dm:lastyear",
        "report dm:today",
        "ext:pdf size:>1000",
        "file:",
        "folder:",
        "zz !file:",
        "/notes",
        "notes1/",
        "ünï",
        "regex:^re.*t[0-9]",
        "a|zz",
        "tar.gz",
        "len:<6",
    ];

    /// Relevance pages equal ranking every match with the ranker and sorting.
    fn check_relevance(s: &Store, query: &str, seed: u64) {
        let q = Query::compile(query, &Options::default(), &CLOCK).unwrap();
        let ranker = Ranker::new(q.name_words(), chrono::Utc::now().timestamp(), None);
        let (mut buf, mut places) = (Vec::new(), Places::default());
        let mut all: Vec<(Relevance, EntryId)> = (0..s.capacity_ids() as EntryId)
            .filter(|&i| s.is_live(i) && s.parent(i) != NONE && q.matches(&s.entry(i)))
            .map(|i| (ranker.rank(s, i, &mut places, &mut buf), i))
            .collect();
        all.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| reference_cmp(s, SortKey::Path, a.1, b.1))
        });
        for (offset, limit) in [(0, 3), (2, 5), (0, usize::MAX / 4)] {
            let got = search(
                s,
                &SearchRequest {
                    query: &q,
                    under: None,
                    sort: SortKey::Relevance,
                    descending: false,
                    offset,
                    limit,
                    group_by: None,
                },
            );
            let want: Vec<String> = all
                .iter()
                .skip(offset)
                .take(limit)
                .map(|&(_, id)| display_path(s, id))
                .collect();
            let paths: Vec<String> = got.hits.iter().map(|h| h.path.clone()).collect();
            assert_eq!(
                (got.total as usize, paths),
                (all.len(), want),
                "seed {seed}: {query:?} relevance page {offset}+{limit}"
            );
            assert!(
                got.hits
                    .windows(2)
                    .all(|w| w[0].score >= w[1].score || w[0].score.is_some())
            );
        }
    }

    #[test]
    fn every_plan_equals_checking_every_entry() {
        for seed in [1u64, 7, 42, 99, 2026] {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut s = random_store(&mut rng, 400);
            crate::orders::rebuild_store(&mut s);
            let some_dir = (0..s.capacity_ids() as EntryId)
                .find(|&i| s.is_live(i) && s.kind(i) == Kind::Dir && s.parent(i) != NONE);
            for q in QUERIES {
                check(&s, q, None, seed);
                check_relevance(&s, q, seed);
            }
            // Changes after the rebuild: the delta and the stale keys at work.
            churn(&mut s, &mut rng, 120);
            let some_dir = some_dir.filter(|&d| s.is_live(d) && s.kind(d) == Kind::Dir);
            for q in QUERIES {
                check(&s, q, None, seed);
                check(&s, q, some_dir, seed);
                check_relevance(&s, q, seed);
            }
            // And once more after they are folded in.
            crate::orders::rebuild_store(&mut s);
            for q in QUERIES {
                check(&s, q, some_dir, seed);
            }
        }
    }
}
