//! The planner: where a search's candidates can come from. A query splits
//! into its name terms (answered once per distinct name) and the rest; the
//! *driver* is the smallest exact source of candidates (the entries bearing
//! the matching names, a run of the size or time order, the subtrees below a
//! path term's folders, or everything), and the [`Plan`] says what the driver
//! does not guarantee, so that each candidate is checked for that alone.

use ferret_query::{Query, Range};

use crate::cores::threads_for;
pub(crate) use crate::names::{extension, fold_into};
use crate::orders::{self as base, skipped};
use crate::request::SearchRequest;
use crate::stop::Halt;
use crate::store::{EntryId, Kind, NONE, PathedEntry, Store, UNKNOWN_SECS};

/// Below this many candidates, checking runs on one thread.
pub(crate) const PARALLEL_FROM: usize = 40_000;

/// The sorted names matching a name-only query, as a list and a bit set, with
/// how many entries of the orders bear them.
pub(crate) struct NameSet {
    pub(crate) ids: Vec<u32>,
    pub(crate) bits: Vec<u64>,
    pub(crate) entries: usize,
    /// When asked for (relevance with one word): the word, and how each name
    /// of `ids` answers it (`NameFit as u8 + 1`; 0 where the check did not
    /// tell), found by the same pass that checked the names.
    pub(crate) fits: Option<(Vec<u8>, Vec<u8>)>,
}

/// Its vectors kept for a later search (see `scratch`).
impl Drop for NameSet {
    fn drop(&mut self) {
        crate::scratch::give_words(std::mem::take(&mut self.bits));
        crate::scratch::give_ids(std::mem::take(&mut self.ids));
    }
}

impl NameSet {
    #[inline]
    pub(crate) fn contains(&self, name: u32) -> bool {
        self.bits
            .get(name as usize / 64)
            .is_some_and(|w| w & (1 << (name % 64)) != 0)
    }
}

/// Order only the first `k` items (selection, then a sort of those k).
pub(crate) fn top_k<T>(
    items: &mut Vec<T>,
    k: usize,
    mut cmp: impl FnMut(&T, &T) -> std::cmp::Ordering,
) {
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

/// `f` over `items` in chunks, on several threads from `from` items on; the
/// results in order.
pub(crate) fn par_chunks<T: Sync, R: Send>(
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
        crate::names::concat(parts.into_iter().map(|h| h.join().unwrap_or_default()))
    })
}

pub(crate) fn par_filter(ids: Vec<u32>, keep: impl Fn(u32) -> bool + Sync) -> Vec<u32> {
    par_chunks(&ids, PARALLEL_FROM, |part| {
        part.iter().copied().filter(|&i| keep(i)).collect()
    })
}

/// The sorted names for which `name_q` holds (partial once `halt` stops);
/// with `fit_word`, the query's one word as relevance ranks by, each name's
/// fit to it where the check can tell.
pub(crate) fn match_names(
    store: &Store,
    name_q: &Query,
    halt: &Halt,
    fit_word: Option<&[u8]>,
) -> NameSet {
    let names = &store.names;
    let sorted = names.sorted_len();
    let literals: Vec<Vec<u8>> = name_q.required_name_literals();
    // One list narrows enough; checking the names does the rest. The extension
    // lists are exact but for hash collisions; a trigram bound is an upper bound.
    let exts = name_q.required_extensions();
    let ext_count = exts.as_ref().map(|e| names.with_extensions_count(e));
    let trigram_bound = names.candidates_bound(&literals);
    // The commonest query, one plain substring, is checked in place on ASCII
    // names (other names go through the query itself), and its fit found on
    // the way when relevance will ask for it.
    let plain = name_q.plain_name_literal().filter(|l| !l.is_empty());
    // That substring when it is the word whose fit is asked (and ASCII).
    let fitted = plain.filter(|l| l.is_ascii() && fit_word == Some(*l));
    let fitting = fitted.is_some();
    let verify = |k: u32| -> Option<(u32, u8)> {
        if !halt.go() {
            return None;
        }
        let name = names.get(k);
        match plain {
            Some(needle) if name.is_ascii() && fitting => {
                crate::rank::ascii_fit(name, needle).map(|f| (k, f as u8 + 1))
            }
            Some(needle) if name.is_ascii() => contains_ascii_ci(name, needle).then_some((k, 0)),
            _ => name_q.matches_name(name).then_some((k, 0)),
        }
    };
    let verify_all = |ids: &[u32]| -> Vec<(u32, u8)> {
        par_chunks(ids, PARALLEL_FROM, |part| {
            part.iter().filter_map(|&k| verify(k)).collect()
        })
    };
    // A glob ending in an extension (`*.h`): that extension, and how many
    // names its list holds.
    let glob_ext = name_q.glob_extension().map(|(e, exact)| {
        let e = [e];
        let count = names.with_extensions_count(&e);
        (e, exact, count)
    });
    let glob_count = glob_ext.as_ref().map(|g| g.2);
    // An extension's list of `listed` names is checked whole, rather than
    // the trigram lists intersected, while it is at most twice the rarest.
    let list_taken = |listed: usize| trigram_bound.is_none_or(|b| listed <= b as usize * 2);
    // A glob starting with literal bytes (`report*`, `invoice-*.csv`): the
    // sorted names starting with them (and those whose fold may). A glob of
    // one literal takes them when they are fewer than any list would give.
    // One of several keeps the trigram lists, which narrow by every literal
    // (`main_*.rs`: the run was longer than their intersection), but takes
    // the run over a whole extension list to check (`invoice-*.csv` on the
    // 10M tree checked every `.csv` name, 39.6 ms; this way 1.2 ms).
    let prefix_listed = name_q.glob_start().and_then(|(p, literals)| {
        let runs = names.folded_prefix_runs(&p);
        let count: usize = runs.iter().map(|r| r.len()).sum();
        let fewer = if literals == 1 {
            [ext_count, trigram_bound.map(|b| b as usize), glob_count]
                .into_iter()
                .flatten()
                .all(|c| count < c)
        } else {
            // The extension list the plan below would check whole.
            [ext_count, glob_count]
                .into_iter()
                .flatten()
                .min()
                .is_some_and(|listed| count < listed && list_taken(listed))
        };
        fewer.then(|| {
            // With an extension after the start (not a dot: a name whose
            // fold starts with its only dot has none), every match is in
            // that extension's list: only its names within the runs.
            let ext = glob_ext
                .as_ref()
                .filter(|_| literals > 1 && !p.starts_with(b"."));
            let ids = match ext {
                Some((e, _, _)) => names.with_extension_in(&e[0], &runs),
                None => {
                    let mut ids: Vec<u32> = runs.into_iter().flatten().collect();
                    ids.sort_unstable();
                    ids.dedup();
                    ids
                }
            };
            verify_all(&ids)
        })
    });
    // A glob ending in an extension (`*.h`) has no trigram to narrow it; its
    // extension's list does, with the names that may have no extension.
    let glob_listed = match (&exts, glob_ext) {
        (None, Some((e, exact, count))) if prefix_listed.is_none() => {
            list_taken(count).then(|| {
                let listed = names.with_extensions(&e);
                let dotted: Vec<u32> = names.maybe_dotted().collect();
                let mut tagged: Vec<(u32, u8)> = if exact {
                    listed.iter().map(|&k| (k, 0)).collect()
                } else {
                    verify_all(&listed)
                };
                tagged.extend(verify_all(&dotted));
                tagged.sort_unstable_by_key(|t| t.0);
                tagged.dedup_by_key(|t| t.0);
                tagged
            })
        }
        _ => None,
    };
    // In parts where the check made them so (read once below, never copied
    // into one vector), else one.
    let tagged: Vec<Vec<(u32, u8)>> = match (exts, ext_count, trigram_bound) {
        _ if let Some(listed) = prefix_listed => vec![listed],
        _ if let Some(listed) = glob_listed => vec![listed],
        (Some(e), Some(c), _) if list_taken(c) => {
            let listed = names.with_extensions(&e);
            // An extension list is exactly the names with that extension.
            vec![if name_q.is_extension_list() {
                listed.into_iter().map(|k| (k, 0)).collect()
            } else {
                verify_all(&listed)
            }]
        }
        (_, _, Some(_)) => {
            // The names starting with a plain word (one run of the sorted
            // names) hold it: their fit is read off their start, with no list
            // to intersect and no search of the name. (Half of `report`'s
            // 65,000 names on the 1M synthetic tree.) Names past ASCII go
            // through the query, as everywhere.
            let word = fitted.unwrap_or_default();
            let starts = |k: u32| -> Option<(u32, u8)> {
                let name = names.get(k);
                if !name.is_ascii() {
                    return verify(k);
                }
                let fit = crate::rank::start_fit(name, word.len());
                halt.go().then_some((k, fit as u8 + 1))
            };
            let known = (!word.is_empty())
                .then(|| names.prefix_run(word))
                .filter(|run| !run.is_empty())
                .map(|ids| crate::names::Known { ids, keep: &starts });
            names
                .matching_in_parts(&literals, &verify, known)
                .unwrap_or_default()
        }
        // One letter (or `.`) whose fit is not asked: read off the masks.
        _ if !fitting
            && plain
                .is_some_and(|l| l.len() == 1 && (l[0].is_ascii_lowercase() || l[0] == b'.')) =>
        {
            let b = plain.unwrap_or_default()[0];
            vec![names.with_byte(b, &|k| halt.go() && name_q.matches_name(names.get(k)))]
        }
        // A star and a literal too short for the trigram lists (`*.`): each
        // name's end compared in place.
        _ if let Some(suffix) = name_q.glob_suffix().filter(|s| s.len() < 3) => {
            vec![names.with_suffix(&suffix, &|k| halt.go() && name_q.matches_name(names.get(k)))]
        }
        // A word too short for the trigram lists: one pass over the names.
        _ if plain.is_some_and(|l| l.is_ascii()) => {
            let needle = plain.unwrap_or_default();
            vec![names.scan(
                needle,
                &|k| halt.go() && name_q.matches_name(names.get(k)),
                &|name| match fitting {
                    true => crate::rank::ascii_fit(name, needle).map_or(0, |f| f as u8 + 1),
                    false => 0,
                },
            )]
        }
        _ => vec![verify_all(&(0..sorted).collect::<Vec<u32>>())],
    };
    let mut bits = crate::scratch::zeroed_words((sorted as usize).div_ceil(64));
    let mut entries = 0;
    let found: usize = tagged.iter().map(Vec::len).sum();
    let mut ids = crate::scratch::ids_with_capacity(found);
    let mut fits = Vec::with_capacity(if fitting { found } else { 0 });
    for &(k, fit) in tagged.iter().flatten() {
        bits[k as usize / 64] |= 1 << (k % 64);
        entries += store.base.named(k).len();
        ids.push(k);
        if fitting {
            fits.push(fit);
        }
    }
    let fits = fitted.map(|word| (word.to_vec(), fits));
    NameSet {
        ids,
        bits,
        entries,
        fits,
    }
}

/// Whether `hay` holds `needle` (ASCII lowercase) ignoring ASCII case: `memchr2`
/// finds each place the first byte occurs in either case, then the rest is
/// compared. (What the query's own literal does, without the evaluator.)
pub(crate) fn contains_ascii_ci(hay: &[u8], needle: &[u8]) -> bool {
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
pub(crate) enum Driver {
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
pub(crate) enum Order {
    Name,
    Mtime,
    Size,
}

/// A range term's bounds in the units the records use.
pub(crate) fn mtime_bounds(lo: i64, hi: i64) -> Option<(u32, u32)> {
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
pub(crate) fn size_run(store: &Store, lo: u64, hi: u64) -> std::ops::Range<usize> {
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
pub(crate) fn base_is_dir(store: &Store, id: EntryId) -> bool {
    match store.stale.get(&id) {
        Some(k) if skipped(store, id) => k.dir,
        _ => store.kind(id) == Kind::Dir,
    }
}

/// The planner's view of one search.
pub(crate) struct Plan<'a> {
    pub(crate) store: &'a Store,
    pub(crate) request: &'a SearchRequest<'a>,
    pub(crate) name_q: Query,
    pub(crate) rest: Query,
    pub(crate) names: Option<NameSet>,
    pub(crate) driver: Driver,
    /// What the driver does not guarantee (besides the name part and `under`).
    pub(crate) residual: Query,
    /// For a names driver with a path term left: where the term holds.
    pub(crate) inside: Option<Inside>,
    /// Whether the driver guarantees the name part.
    pub(crate) names_guaranteed: bool,
    /// Asked in every long loop; once it stops, the plan's answers are
    /// partial (see [`Halt::result`]).
    pub(crate) halt: Halt<'a>,
}

impl<'a> Plan<'a> {
    pub(crate) fn new(
        store: &'a Store,
        request: &'a SearchRequest<'a>,
        stop: crate::stop::Stop<'a>,
    ) -> Plan<'a> {
        let halt = Halt::new(stop);
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
            || name_q.glob_extension().is_some()
            || store
                .names
                .candidates_bound(&name_q.required_name_literals())
                .is_some();
        let sorted = store.names.sorted_len() as usize;
        let names = (!name_q.is_match_all()
            && (listed || best.as_ref().is_none_or(|(c, _)| *c > sorted / 4)))
        .then(|| {
            // Relevance: each name's fit to the name term's word is found as
            // it is checked (the one word, or one of several: `src/ main`).
            let words = match request.sort {
                crate::request::SortKey::Relevance => request.query.name_words(),
                _ => Vec::new(),
            };
            let fit_word = match words.as_slice() {
                [word] => Some(word.as_slice()),
                _ => name_q
                    .plain_name_literal()
                    .filter(|l| words.iter().any(|w| w == l)),
            };
            match_names(store, &name_q, &halt, fit_word)
        });
        if let Some(set) = &names {
            let card = set.entries;
            if best.as_ref().is_none_or(|(c, _)| card <= *c) {
                best = Some((card, Driver::Names));
            }
        }
        let small = |c: usize| c <= n / 16;
        if best.as_ref().is_none_or(|(c, _)| !small(*c)) {
            if let Some(anchors) = anchors(store, &rest, &halt) {
                best = Some((0, Driver::Subtrees(anchors)));
            } else if let Some(u) = request.under.filter(|&u| restricts(store, u))
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
        // Many named candidates and a path term to check: the term's folders
        // first, then each candidate by its parent.
        let inside = match (&driver, &names) {
            (Driver::Names, Some(set))
                if set.entries >= INSIDE_FROM && !residual.is_match_all() =>
            {
                Inside::of(store, &residual, &halt)
            }
            _ => None,
        };
        Plan {
            store,
            request,
            name_q,
            rest,
            names,
            driver,
            residual,
            inside,
            names_guaranteed,
            halt,
        }
    }

    /// Whether the driver's walk sees the live tree (delta entries included).
    pub(crate) fn covers_delta(&self) -> bool {
        matches!(self.driver, Driver::Subtrees(_))
    }

    /// Whether `under` restricts anything (it is not the only root).
    pub(crate) fn under(&self) -> Option<EntryId> {
        self.request.under.filter(|&u| restricts(self.store, u))
    }

    pub(crate) fn name_ok(&self, id: EntryId) -> bool {
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

    /// Whether `id` lies below `under` (not `under` itself: a search under a
    /// folder answers what it holds, as `in:` does).
    pub(crate) fn under_ok(&self, id: EntryId) -> bool {
        self.under()
            .is_none_or(|u| id != u && self.store.is_within(id, u))
    }

    /// Whether a base entry produced by the driver matches (false for every
    /// entry once the plan stops).
    pub(crate) fn accept(&self, id: EntryId) -> bool {
        if !self.halt.go() {
            return false;
        }
        if !self.names_guaranteed && !self.name_ok(id) {
            return false;
        }
        if !matches!(self.driver, Driver::Subtrees(_)) && !self.under_ok(id) {
            return false;
        }
        let residual = match &self.inside {
            Some(inside) if !inside.holds(self.store, id) => return false,
            Some(inside) => &inside.rest,
            None => &self.residual,
        };
        residual.is_match_all() || residual.matches(&self.store.entry(id))
    }

    /// Whether nothing but the driver's own condition is left to check.
    pub(crate) fn exact(&self) -> bool {
        self.residual.is_match_all()
            && self.under().is_none()
            && (self.names_guaranteed || self.name_q.is_match_all())
            && matches!(
                self.driver,
                Driver::Names | Driver::Run { .. } | Driver::All
            )
    }

    /// Delta entries that match, in id order.
    pub(crate) fn delta_matches(&self) -> Vec<EntryId> {
        let store = self.store;
        store
            .delta_entries()
            .take_while(|_| self.halt.go())
            .filter(|&id| self.name_ok(id))
            .filter(|&id| self.under_ok(id))
            .filter(|&id| self.rest.is_match_all() || self.rest.matches(&store.entry(id)))
            .collect()
    }

    /// The driver's base entries that match (order unspecified).
    pub(crate) fn base_matches(&self) -> Vec<EntryId> {
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
    pub(crate) fn subtree_matches(&self, tops: &[EntryId]) -> Vec<EntryId> {
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
            // Below a top at or inside `under`, everything is inside it.
            let all_inside = self.under().is_none_or(|u| store.is_within(top, u));
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
            if below.is_match_all()
                && all_inside
                && self.names.is_none()
                && self.name_q.is_match_all()
            {
                // Everything below matches (`share/doc/` below each `doc` in
                // `share`): whole child lists are taken, and only folders are
                // stepped into, without a step or a path per entry.
                let mut dirs = vec![top];
                while let Some(d) = dirs.pop() {
                    if !self.halt.go() {
                        return out;
                    }
                    let kids = store.children(d);
                    out.extend_from_slice(kids);
                    dirs.extend(kids.iter().filter(|&&c| store.dir_slot(c).is_some()));
                }
                continue;
            }
            // (entry, depth, path length before its name)
            let mut stack: Vec<(EntryId, u32, usize)> = store
                .children(top)
                .iter()
                .rev()
                .map(|&c| (c, depth + 1, path.len()))
                .collect();
            while let Some((id, d, cut)) = stack.pop() {
                if !self.halt.go() {
                    return out;
                }
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
    pub(crate) fn exact_total(&self, delta: usize) -> usize {
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

pub(crate) fn is_root_entry(store: &Store, id: EntryId) -> bool {
    store.parent(id) == NONE
}

/// For a query with a path term (and no better source): the entries at or
/// below which every match lies. Where a literal names a component from its
/// start (`doc` in `share/doc/`, `rust` in `share/doc/rust`), the entries
/// with that name whose parent's path ends as the literal does before it:
/// below them the term holds for everything, so the walk checks no path.
/// Otherwise the entries whose own name holds the literals' longest `/`-free
/// piece.
pub(crate) fn anchors(store: &Store, rest: &Query, halt: &Halt) -> Option<Vec<EntryId>> {
    let literals = rest.required_path_literals();
    if let Some(c) = component(&literals) {
        return Some(with_component(store, &c, halt));
    }
    let piece = literals
        .iter()
        .flat_map(|lit| lit.split(|&b| b == b'/'))
        .filter(|p| !p.is_empty())
        .max_by_key(|p| p.len())
        .map(<[u8]>::to_vec)?;
    Some(entries_named(
        store,
        &piece,
        halt,
        |folded| memchr::memmem::find(folded, &piece).is_some(),
        |_| true,
    ))
}

/// The entries (base and delta, sorted) whose folded name passes `name_ok`
/// and which pass `entry_ok`, the names asked being those the trigram lists
/// give for `piece` (every sorted name when it has no trigram).
fn entries_named(
    store: &Store,
    piece: &[u8],
    halt: &Halt,
    name_ok: impl Fn(&[u8]) -> bool,
    mut entry_ok: impl FnMut(EntryId) -> bool,
) -> Vec<EntryId> {
    let names = &store.names;
    let candidates = names
        .candidates(&[piece.to_vec()])
        .unwrap_or_else(|| (0..names.sorted_len()).collect());
    let mut buf = Vec::new();
    let mut named = |name: &[u8]| {
        fold_into(name, &mut buf);
        name_ok(&buf)
    };
    let mut out: Vec<EntryId> = Vec::new();
    for k in candidates {
        if !halt.go() {
            break;
        }
        if named(names.get(k)) {
            out.extend(
                store.base.by_name[store.base.named(k)]
                    .iter()
                    .copied()
                    .filter(|&id| !skipped(store, id) && entry_ok(id)),
            );
        }
    }
    for id in store.delta_entries() {
        if named(store.name(id)) && entry_ok(id) {
            out.push(id);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Where a literal names a component (a `/` after it, or before it), every
/// path holding the literal has an entry whose folded name is that piece (a
/// `/` on each side), starts with it (a `/` before it, at the literal's end)
/// or ends with it (a `/` after it, at the literal's start), and whose
/// parent's path (`/` + its path + `/`) ends with the literal up to the
/// piece. Below that entry the literal up to the piece's end holds.
struct Component {
    piece: Vec<u8>,
    fit: PieceFit,
    parent_ends: Vec<u8>,
    /// The literal ends with the piece (and its `/`): at and below the
    /// entries that have the component, the whole literal holds.
    implied: bool,
    literal: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq)]
enum PieceFit {
    Whole,
    Prefix,
    Suffix,
}

/// The component of `literals` (folded path literals) that covers the most of
/// its literal (the fewest entries have it, and below them the walk checks no
/// path), of three bytes or more (shorter ones have no trigram list).
fn component(literals: &[Vec<u8>]) -> Option<Component> {
    let mut best: Option<(usize, Component)> = None;
    for lit in literals {
        // Pieces with a `/` before them, and the one the literal starts with
        // when a `/` follows it.
        let starts = std::iter::once(0).chain(memchr::memchr_iter(b'/', lit).map(|s| s + 1));
        for i in starts {
            let j = memchr::memchr(b'/', &lit[i..]).map_or(lit.len(), |k| i + k);
            let fit = match (i > 0, j < lit.len()) {
                (true, true) => PieceFit::Whole,
                (true, false) => PieceFit::Prefix,
                (false, true) => PieceFit::Suffix,
                (false, false) => continue,
            };
            if j - i < 3 || best.as_ref().is_some_and(|(covered, _)| *covered >= j) {
                continue;
            }
            let c = Component {
                piece: lit[i..j].to_vec(),
                fit,
                parent_ends: lit[..i].to_vec(),
                implied: j + 1 >= lit.len(),
                literal: lit.clone(),
            };
            best = Some((j, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The entries (base and delta) that have component `c`, sorted.
fn with_component(store: &Store, c: &Component, halt: &Halt) -> Vec<EntryId> {
    // The parent's own name is told first, before its path is made: the
    // component of `parent_ends` before its last `/` (which the parent's name
    // ends with, or is when a `/` comes before it too).
    let tail = &c.parent_ends[..c.parent_ends.len().saturating_sub(1)];
    let (parent_name, parent_whole) = match memchr::memrchr(b'/', tail) {
        Some(k) => (&tail[k + 1..], true),
        None => (tail, false),
    };
    let (mut name_buf, mut path, mut folded) = (Vec::new(), Vec::new(), Vec::new());
    let parent_ends = |id: EntryId| {
        let parent = store.parent(id);
        if parent == NONE {
            return false;
        }
        if c.parent_ends.is_empty() || c.parent_ends == b"/" {
            return true;
        }
        // A root's own path is `/`, which ends with nothing longer.
        if is_root_entry(store, parent) {
            return false;
        }
        if !parent_name.is_empty() || parent_whole {
            fold_into(store.name(parent), &mut name_buf);
            let named = if parent_whole {
                name_buf == parent_name
            } else {
                name_buf.ends_with(parent_name)
            };
            if !named {
                return false;
            }
        }
        path.clear();
        path.push(b'/');
        store.rel_path_into(parent, &mut path);
        path.push(b'/');
        fold_into(&path, &mut folded);
        folded.ends_with(&c.parent_ends)
    };
    let name_ok = |folded: &[u8]| match c.fit {
        PieceFit::Whole => folded == c.piece.as_slice(),
        PieceFit::Prefix => folded.starts_with(&c.piece),
        PieceFit::Suffix => folded.ends_with(&c.piece),
    };
    entries_named(store, &c.piece, halt, name_ok, parent_ends)
}

/// Checking a path term by building each candidate's path costs a climb to
/// the root and a copy of every name on the way: below this many candidates
/// it is cheaper than finding the term's folders first.
const INSIDE_FROM: usize = if cfg!(test) { 1 } else { 2048 };

/// The entries a path literal holds for, found from its folders instead of
/// each entry's path: the entries that have the literal's last component (see
/// [`Component`]; the literal ends with it) and everything below them.
pub(crate) struct Inside {
    /// Folders inside, by folder slot.
    dirs: Vec<u64>,
    /// Files that have the component themselves (a name the literal's end
    /// starts), sorted.
    files: Vec<EntryId>,
    /// The rest of the query, the literals the component implies left out.
    pub(crate) rest: Query,
}

impl Inside {
    /// For `residual` (a plan's query past its driver) when one of its path
    /// literals ends with a component; `None` otherwise, or when stopped.
    fn of(store: &Store, residual: &Query, halt: &Halt) -> Option<Inside> {
        let c = component(&residual.required_path_literals()).filter(|c| c.implied)?;
        let anchors = with_component(store, &c, halt);
        let mut dirs = vec![0u64; store.dirs.len().div_ceil(64)];
        let mut files = Vec::new();
        let mut stack = Vec::new();
        for a in anchors {
            match store.kind(a) {
                Kind::Dir => stack.push(a),
                // A file's path has no `/` after its name: it holds a literal
                // that ends with a `/` only below a folder.
                _ if c.fit == PieceFit::Prefix => files.push(a),
                _ => {}
            }
        }
        while let Some(d) = stack.pop() {
            if !halt.go() {
                return None;
            }
            let Some(slot) = store.dir_slot(d) else {
                continue;
            };
            let (w, bit) = (slot / 64, 1u64 << (slot % 64));
            if dirs.get(w).is_none_or(|x| x & bit != 0) {
                continue;
            }
            dirs[w] |= bit;
            stack.extend(
                store
                    .children(d)
                    .iter()
                    .copied()
                    .filter(|&k| store.kind(k) == Kind::Dir),
            );
        }
        files.sort_unstable();
        Some(Inside {
            dirs,
            files,
            rest: residual.assuming_path_prefix(&c.literal),
        })
    }

    fn dir_in(&self, store: &Store, dir: EntryId) -> bool {
        store.dir_slot(dir).is_some_and(|s| {
            self.dirs
                .get(s / 64)
                .is_some_and(|w| w & (1 << (s % 64)) != 0)
        })
    }

    /// Whether `id` is at or below an entry with the component.
    pub(crate) fn holds(&self, store: &Store, id: EntryId) -> bool {
        let parent = store.parent(id);
        self.dir_in(store, id)
            || (parent != NONE && self.dir_in(store, parent))
            || self.files.binary_search(&id).is_ok()
    }
}

/// Whether a search below `under` leaves anything out: all but below the
/// only root. (With several roots, the root a `path` names is one of them:
/// taking every root for "nothing to restrict" answered `path: "two"` with
/// the other roots' entries too.)
fn restricts(store: &Store, under: EntryId) -> bool {
    store.roots() != [under]
}
