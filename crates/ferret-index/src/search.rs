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

use ferret_query::Range;

pub use crate::hits::{Hit, display_path, hit, rfc3339};
use crate::orders::skipped;
use crate::plan::{Driver, Order, PARALLEL_FROM, Plan, extension, fold_into, par_chunks, top_k};
use crate::rank::{self, Places, Ranker, Relevance};
pub use crate::request::{Group, GroupBy, SearchOutcome, SearchRequest, SortKey};
use crate::stop::Halt;
pub use crate::stop::{Stop, Stopped};
use crate::store::{EntryId, Kind, NONE, Store, UNKNOWN_SECS, UNKNOWN_TIME};
use crate::uses::Uses;

/// Ranking costs about a microsecond an entry (cache misses): worth threads
/// far sooner than filtering.
const RANK_PARALLEL_FROM: usize = PARALLEL_FROM / 5;

/// A match to rank: its id, and its name's fit and length when already known.
type Cand = (EntryId, Option<(rank::NameFit, usize)>);

/// Every candidate with its relevance (partial once `halt` stops).
fn rank_all(
    store: &Store,
    ranker: &Ranker,
    cands: Vec<Cand>,
    halt: &Halt,
) -> Vec<(Relevance, EntryId)> {
    par_chunks(&cands, RANK_PARALLEL_FROM, |part| {
        let (mut places, mut buf) = (Places::default(), Vec::new());
        part.iter()
            .take_while(|_| halt.go())
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
            if !plan.halt.go() {
                break;
            }
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

/// Whether `name` is exactly one of `words` (case folded), or its stem
/// (`main` for `main.rs`, `libc` for `libc.so.6`): the fit relevance puts
/// first.
pub fn name_is_exact(name: &str, words: &[String]) -> bool {
    let mut buf = Vec::new();
    let mut word = Vec::new();
    words.iter().any(|w| {
        crate::names::fold_into(w.as_bytes(), &mut word);
        rank::name_fit(name.as_bytes(), &word, &mut buf) == rank::NameFit::Exact
    })
}

/// Whether `name` holds `word` (ASCII case aside) only inside its words:
/// at no start of one (the name's start; after a byte that is not a letter
/// or digit; a lower-to-upper case change; an acronym's last capital before
/// a lower-case letter; a change between letters and digits).
/// `nullsubexpr.toml` holds `ubexp` only inside, `sha256.rs` holds `256` at
/// a start. `false` where it is not so plainly: the name does not
/// hold the word as written, either is past ASCII, or the word starts with
/// neither a letter nor a digit (it brings its own boundary) or holds a `/`
/// (a path's word, not a name's).
pub fn word_only_inside(name: &str, word: &str) -> bool {
    let (name, word) = (name.as_bytes(), word.as_bytes());
    if !name.is_ascii()
        || !word.is_ascii()
        || word.contains(&b'/')
        || !word.first().is_some_and(u8::is_ascii_alphanumeric)
        || word.len() > name.len()
    {
        return false;
    }
    let starts = |at: usize| {
        let (prev, here) = (name[at - 1], name[at]);
        !prev.is_ascii_alphanumeric()
            || (prev.is_ascii_lowercase() && here.is_ascii_uppercase())
            // The last capital of an acronym starts the next word:
            // `Parser` in `XMLParser.java`.
            || (prev.is_ascii_uppercase()
                && here.is_ascii_uppercase()
                && name.get(at + 1).is_some_and(u8::is_ascii_lowercase))
            || prev.is_ascii_digit() != here.is_ascii_digit()
    };
    let mut found = false;
    for at in 0..=name.len() - word.len() {
        if name[at..at + word.len()].eq_ignore_ascii_case(word) {
            if at == 0 || starts(at) {
                return false;
            }
            found = true;
        }
    }
    found
}

/// Whether some name the store holds is exactly one of `words`, or its stem,
/// as [`name_is_exact`] asks of a hit: asked of the name dictionary, not of
/// every entry. Such a name starts with the word (folded), so it is among
/// the sorted names that do: those equal to the word, those going on with a
/// dot, and the runs past ASCII whose fold may start so; or among the names
/// added since the orders were built. `true` as well when the question
/// cannot be settled cheaply (a word past ASCII, more than a few thousand
/// names to read): the answer is only ever a reason to look further.
pub(crate) fn holds_exact_name(store: &Store, words: &[String]) -> bool {
    let names = &store.names;
    let sorted = names.sorted_len();
    let mut budget = 4096usize;
    let mut buf = Vec::new();
    let mut folded = Vec::new();
    let mut exact = |k: u32, word: &[u8], budget: &mut usize| {
        *budget = budget.saturating_sub(1);
        rank::name_fit(names.get(k), word, &mut buf) == rank::NameFit::Exact
    };
    for w in words {
        fold_into(w.as_bytes(), &mut folded);
        if folded.is_empty() {
            continue;
        }
        if !folded.is_ascii() {
            return true;
        }
        // The names equal to the word (in any case) open its run.
        let lo = names.lower_bound_folded(&folded);
        let hi = names.prefix_end_folded(&folded, lo);
        for k in lo..hi {
            if names.get(k).len() != folded.len() {
                break;
            }
            if exact(k, &folded, &mut budget) {
                return true;
            }
        }
        // Then those going on with a dot, those going on past ASCII (whose
        // fold may put a dot there), and the runs past ASCII before the
        // word's end.
        let mut next = folded.clone();
        next.push(b'.');
        let dots = names.lower_bound_folded(&next);
        let dots = dots..names.prefix_end_folded(&next, dots);
        *next.last_mut().expect("pushed") = 0x80;
        let wide = names.lower_bound_folded(&next).max(lo)..hi;
        let runs = [dots, wide].into_iter().chain(
            names
                .folded_prefix_runs(&folded)
                .into_iter()
                .filter(|r| *r != (lo..hi)),
        );
        for run in runs {
            for k in run {
                if exact(k, &folded, &mut budget) {
                    return true;
                }
                if budget == 0 {
                    return true;
                }
            }
        }
        for k in sorted..names.len() {
            if exact(k, &folded, &mut budget) || budget == 0 {
                return true;
            }
        }
    }
    false
}

pub fn search(store: &Store, request: &SearchRequest) -> SearchOutcome {
    search_with(store, request, None)
}

/// [`search`], with the use scores that relevance boosts by.
pub fn search_with(store: &Store, request: &SearchRequest, uses: Option<&Uses>) -> SearchOutcome {
    search_until(store, request, uses, Stop::NEVER).unwrap_or_default()
}

/// [`search_with`], given up as [`Stopped`] once `stop` says so.
pub fn search_until(
    store: &Store,
    request: &SearchRequest,
    uses: Option<&Uses>,
    stop: Stop<'_>,
) -> Result<SearchOutcome, Stopped> {
    if request.query.is_match_none() {
        return Ok(SearchOutcome::default());
    }
    let (plan, delta) = planned(store, request, stop);
    let answer = if let Some(by) = request.group_by {
        let mut all = plan.base_matches();
        all.extend_from_slice(&delta);
        group(store, &all, by, request, &plan.halt)
    } else {
        let wanted = request.offset.saturating_add(request.limit);
        if request.sort == SortKey::Relevance {
            by_relevance(&plan, wanted, delta, uses)
        } else {
            let (ordered, total) = sorted(&plan, wanted, delta);
            outcome(store, ordered, request, total)
        }
    };
    plan.halt.result(answer)
}

/// The plan of a search, and the matches among the entries changed since
/// the orders were built (none when the plan's source covers them).
fn planned<'a>(
    store: &'a Store,
    request: &'a SearchRequest<'a>,
    stop: Stop<'a>,
) -> (Plan<'a>, Vec<EntryId>) {
    let plan = Plan::new(store, request, stop);
    let delta = if plan.covers_delta() {
        Vec::new()
    } else {
        plan.delta_matches()
    };
    (plan, delta)
}

/// The first `wanted` matches of a plan in its request's order (not
/// relevance), and how many match in all.
fn sorted(plan: &Plan<'_>, wanted: usize, delta: Vec<EntryId>) -> (Vec<EntryId>, usize) {
    let (store, request) = (plan.store, plan.request);
    let cmp = |a: &EntryId, b: &EntryId| {
        let o = compare(store, request.sort, *a, *b);
        if request.descending { o.reverse() } else { o }
    };
    if plan.exact() {
        let total = plan.exact_total(delta.len());
        let wanted = wanted.min(total);
        let page = if wanted == 0 {
            Vec::new()
        } else if let Some(page) = walk_order(plan, wanted, &delta, &cmp) {
            page
        } else {
            let mut all = plan.base_matches();
            all.extend_from_slice(&delta);
            top_k(&mut all, wanted, cmp);
            all
        };
        return (page, total);
    }
    let mut all = plan.base_matches();
    all.extend_from_slice(&delta);
    let total = all.len();
    top_k(&mut all, wanted.min(total), cmp);
    (all, total)
}

/// A match as callers that want many of them need it: its shown path, its
/// modification time (Unix seconds; 0 when unknown) and its size, without
/// the strings of a [`Hit`] (a whole-tree grep gathers every file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub path: String,
    pub mtime: i64,
    pub size: u64,
}

/// Every match of `request.query` (below `request.under`) as a [`Fact`], in
/// no particular order: `sort`, `offset` and `limit` are not read. For
/// callers that keep only some of the matches and order those (a grep
/// narrowed by the content index): ordering them all would cost more than
/// the search. Each folder's shown path is built once, not once per file.
pub fn matching_facts_until(
    store: &Store,
    request: &SearchRequest,
    stop: Stop<'_>,
) -> Result<Vec<Fact>, Stopped> {
    if request.query.is_match_none() {
        return Ok(Vec::new());
    }
    let (plan, delta) = planned(store, request, stop);
    let mut ids = plan.base_matches();
    ids.extend_from_slice(&delta);
    let single = store.roots().len() == 1;
    let mut folders: HashMap<EntryId, String> = HashMap::new();
    let mut facts = Vec::with_capacity(ids.len());
    for (i, id) in ids.into_iter().enumerate() {
        if i % 4096 == 0 && !plan.halt.go() {
            break;
        }
        let parent = store.parent(id);
        let path = if parent == NONE {
            display_path(store, id)
        } else {
            let prefix = folders
                .entry(parent)
                .or_insert_with(|| display_path(store, parent));
            let name = ferret_names::shown(store.name(id));
            if single && prefix == "." {
                name.into_owned()
            } else {
                let mut p = String::with_capacity(prefix.len() + 1 + name.len());
                p.push_str(prefix);
                p.push('/');
                p.push_str(&name);
                p
            }
        };
        let meta = store.meta(id);
        facts.push(Fact {
            path,
            mtime: if meta.mtime == UNKNOWN_TIME {
                0
            } else {
                meta.mtime
            },
            size: store.size(id),
        });
    }
    plan.halt.result(facts)
}

/// The page in relevance order. When the query has one word and the
/// matching names that start with it already fill the page, only those
/// entries are ranked (every other name fits worse); otherwise every match
/// is.
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
    let cmp = |a: &(Relevance, EntryId), b: &(Relevance, EntryId)| {
        let o =
            a.0.cmp(&b.0)
                .then_with(|| compare(store, SortKey::Path, a.1, b.1));
        if request.descending { o.reverse() } else { o }
    };
    if let Some((page, total)) = crate::threshold::page(plan, &mut ranker, wanted, &delta, &cmp) {
        return relevance_outcome(store, page, request, total);
    }
    let exact = plan.exact();
    let mut buf = Vec::new();
    let mut ranked: Option<Vec<(Relevance, EntryId)>> = None;
    // (Only for exact plans: otherwise counting the total visits every match
    // anyway; and only best first: turned around, the page is the worst.)
    if let (Some(word), Some(set), true) = (ranker.only_word(), &plan.names, exact)
        && word.is_ascii()
        && !request.descending
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
        // Names that are or start with the word come before every other
        // fit, wherever they are: the shortcut holds when enough of them
        // match.
        ranker.prepare(store, first.len());
        let first = rank_all(store, &ranker, first, &plan.halt);
        if first.iter().filter(|(r, _)| r.leads()).count() >= wanted {
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
            (rank_all(store, &ranker, all, &plan.halt), total)
        }
    };
    let k = wanted.min(ranked.len());
    top_k(&mut ranked, k, cmp);
    relevance_outcome(store, ranked, request, total)
}

/// A page of ranked matches as hits with their scores.
fn relevance_outcome(
    store: &Store,
    ranked: Vec<(Relevance, EntryId)>,
    request: &SearchRequest,
    total: usize,
) -> SearchOutcome {
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
        scattered: false,
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
        scattered: false,
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
    for id in ids
        .take_while(|_| plan.halt.go())
        .filter(|&id| !skipped(store, id) && member(id))
    {
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
    halt: &Halt,
) -> SearchOutcome {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut buf = Vec::new();
    for &id in matched.iter().take_while(|_| halt.go()) {
        let kind = store.kind(id);
        let key = group_key(
            by,
            kind.name(),
            kind == Kind::Dir,
            store.name(id),
            &mut buf,
            || display_path(store, store.parent(id)),
        );
        *counts.entry(key).or_default() += 1;
    }
    page_groups(counts, request.offset, request.limit)
}

/// Hits (already found, e.g. kept by a content filter) grouped as a
/// search with `group_by` groups its matches, one page of the groups.
pub fn group_hits(hits: &[Hit], by: GroupBy, offset: usize, limit: usize) -> SearchOutcome {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut buf = Vec::new();
    for h in hits {
        let (folder, name) = h.path.rsplit_once('/').unwrap_or((".", &h.path));
        let is_dir = h.kind == ferret_query::Kind::Dir;
        // The name's own bytes, as the index groups them.
        let raw = ferret_names::escaped_bytes(name);
        let key = group_key(
            by,
            h.kind.as_str(),
            is_dir,
            raw.as_deref().unwrap_or(name.as_bytes()),
            &mut buf,
            || folder.to_string(),
        );
        *counts.entry(key).or_default() += 1;
    }
    page_groups(counts, offset, limit)
}

/// The group an entry falls in: its kind; its extension, folded (folders
/// and names without one in groups of their own); or its folder.
fn group_key(
    by: GroupBy,
    kind: &str,
    is_dir: bool,
    name: &[u8],
    buf: &mut Vec<u8>,
    folder: impl FnOnce() -> String,
) -> String {
    match by {
        GroupBy::Kind => kind.to_string(),
        GroupBy::Extension if is_dir => "(folder)".to_string(),
        GroupBy::Extension => {
            fold_into(name, buf);
            match extension(buf) {
                Some(ext) => ferret_names::shown(ext).into_owned(),
                None => "(none)".to_string(),
            }
        }
        GroupBy::Folder => folder(),
    }
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
        scattered: false,
    }
}

#[cfg(test)]
mod tests {
    //! The planner must give exactly what checking every entry gives, whatever
    //! source it picks and whatever changed since the orders were built.

    use super::*;
    use crate::names::name_order;
    use crate::plan::Plan;
    use crate::store::{Meta, UNKNOWN_TIME};
    use ferret_query::Query;
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
        // Names a glob's extension list leaves out: a dot first, or an accent
        // the fold drops before it.
        const ODD: &[&str] = &[
            ".md",
            ".MD",
            "\u{301}.md",
            ".c",
            "é.md.c",
            ".tar.gz",
            "x.MD",
            "a.gz",
            // An accent after an ASCII start: `rep*` must find it.
            "rÉport9.md",
            // One after a whole word: `report` reads it through the query.
            "reportÉ.md",
            // Ending past ASCII: `*ï` and `*É` are the query's to decide.
            "naï",
            "CAFÉ",
        ];
        if rng.below(12) == 0 {
            return ODD[rng.below(ODD.len() as u64) as usize]
                .as_bytes()
                .to_vec();
        }
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
        random_store_in(rng, entries, &[b"r"])
    }

    /// [`random_store`] with these roots.
    fn random_store_in(rng: &mut Rng, entries: usize, roots: &[&[u8]]) -> Store {
        let mut s = Store::new();
        let mut dirs: Vec<EntryId> = roots
            .iter()
            .map(|r| s.add_root(r, Meta::default()))
            .collect();
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

    #[test]
    fn a_word_only_inside_the_names_words() {
        for (name, word) in [
            ("nullsubexpr.toml", "ubexp"),
            ("arithmetic.rs", "HMET"),
            ("serde_json.rs", "de"),
            ("overview.rs", "view.rs"),
            // Every place is inside, the second one too.
            ("abab", "ba"),
            ("XMLParser.java", "lparser"),
            ("HTTPServer.java", "tpserv"),
        ] {
            assert!(word_only_inside(name, word), "{name} {word}");
        }
        for (name, word) in [
            ("explicit.rs", "exp"),
            ("x_explicit.rs", "explicit"),
            ("c14nQnameXpathElem.xml", "xpath"),
            ("sha256.rs", "256"),
            ("XMLParser.java", "parser"),
            ("HTTPServer.java", "Server"),
            ("x86avx", "avx"),
            // A later place at a start is enough.
            ("repo_report.txt", "report"),
            // Not held at all, or not plainly: no claim.
            ("main.rs", "lib"),
            ("main.rs", ".rs"),
            ("a/b", "src/main"),
            ("caf\u{e9}s.txt", "fes"),
            ("ab", "abc"),
            ("ab", ""),
        ] {
            assert!(!word_only_inside(name, word), "{name} {word}");
        }
    }

    /// The name dictionary tells whether some entry's name is exactly a word
    /// (or its stem) as checking every entry does: never "no" when one is,
    /// and, while every name it holds is an entry's, never "yes" when none
    /// is (words past ASCII are answered "yes" unread).
    #[test]
    fn an_exact_name_is_found_in_the_dictionary_as_in_every_entry() {
        let words = [
            "report0",
            "REPORT0",
            "report0.md",
            "report",
            "main1",
            "readme2",
            "data_2",
            "a",
            "a0",
            "a.gz",
            "zz3",
            "notes1.tar",
            "notes1.tar.gz",
            "tar",
            "gz",
            "md",
            ".md",
            "x",
            "rÉport9",
            "report9",
            "ünï1",
            "uni1",
            "é",
            "e",
            "c",
            "zyzzyva",
            "",
            "fresh7",
            "solo5",
        ];
        for seed in 1..40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut s = random_store(&mut rng, 300);
            let root = s.roots()[0];
            // A name whose fold puts a dot right after the word: an accent
            // the fold drops, past ASCII.
            if seed % 2 == 0 {
                s.insert_new(
                    root,
                    "solo5\u{301}.c".as_bytes(),
                    Kind::File,
                    meta(&mut rng),
                );
            }
            crate::orders::rebuild_store(&mut s);
            for churned in [false, true] {
                if churned {
                    churn(&mut s, &mut rng, 30);
                    // A name the orders have not seen.
                    s.insert_new(root, b"Fresh7.rs", Kind::File, meta(&mut rng));
                }
                for w in words {
                    let ws = vec![w.to_string()];
                    let every = (0..s.capacity_ids() as EntryId)
                        .filter(|&i| s.is_live(i) && s.parent(i) != NONE)
                        .any(|i| name_is_exact(&String::from_utf8_lossy(s.name(i)), &ws));
                    let told = holds_exact_name(&s, &ws);
                    assert!(told || !every, "seed {seed}: `{w}` is an entry's name");
                    if !churned && w.is_ascii() {
                        assert_eq!(told, every, "seed {seed}: `{w}`");
                    }
                }
            }
        }
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
            .filter(|&i| under.is_none_or(|u| i != u && s.is_within(i, u)))
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
                    let request = SearchRequest {
                        query: &q,
                        under,
                        sort,
                        descending,
                        offset,
                        limit,
                        group_by: None,
                    };
                    // The facts grep gathers name the same entries (in no
                    // order), with the hits' sizes.
                    if offset == 0 && limit == usize::MAX / 4 {
                        let mut facts: Vec<(String, u64)> =
                            matching_facts_until(s, &request, Stop::NEVER)
                                .unwrap()
                                .into_iter()
                                .map(|f| (f.path, f.size))
                                .collect();
                        let mut hits: Vec<(String, u64)> = got
                            .hits
                            .iter()
                            .map(|h| (h.path.clone(), h.size.unwrap_or(0)))
                            .collect();
                        facts.sort();
                        hits.sort();
                        assert_eq!(facts, hits, "seed {seed}: facts of {query:?}");
                    }
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
        "*.MD",
        "case:*.MD",
        "*.c",
        "?.md",
        "*a*.md",
        "*.tar.gz",
        "report*.pdf",
        "*.md size:>400",
        // Stars alone; a star and a literal too short for the trigram lists
        // (each name's end compared in place, names past ASCII by the query).
        "*",
        "**",
        "*.",
        "*c",
        "*D",
        "*.C",
        "*ï",
        "*É",
        "*1 size:>400",
        // Globs that start with literal bytes: the sorted names starting
        // with them, and those whose fold may (an accent first, or before
        // the bytes differ: `é.md.c`, `Ünï`, a combining accent).
        "rep*",
        "re*",
        "rÉ*.md",
        "REP*.md",
        "case:Rep*",
        "ün*",
        "e*.c",
        "e.m*",
        "m*.md",
        "unï*",
        "a?*",
        "x.*",
        ".m*",
        "notes1*.md dm:thisyear",
        "size:>400",
        "size:0..20",
        "size:<10",
        "dm:today",
        "dm:lastyear",
        "report dm:today",
        // Several words: a name's fit is its best over them all.
        "rep a",
        "a report",
        "ext:pdf size:>1000",
        "file:",
        "folder:",
        "zz !file:",
        "/notes",
        "notes1/",
        // Whole components: the folders of that name, their paths' ends.
        "/zz1/",
        "zz2/",
        "main1/zz0/",
        "/notes2/a1",
        "report0/zz1/",
        "x/report0/zz1/",
        "Ünï1/",
        "/uni2/",
        "readme3/zz0/ report",
        // A rare name and a path term: the term's folders found first.
        "notes2.md zz1/",
        "readme1 /zz0/",
        "main3.rs report0/zz1/",
        "data_21 ünï2/",
        "zz0.c report1/ size:>400",
        "a2.rs case:Main1/",
        "notes1 zz2/re",
        // Files of the folder's name are not below it.
        "zz1 zz1/",
        "report2 /report2/",
        "ünï",
        "regex:^re.*t[0-9]",
        "a|zz",
        "tar.gz",
        "len:<6",
    ];

    /// Relevance pages equal ranking every match with the ranker and sorting.
    fn check_relevance(s: &Store, query: &str, seed: u64) {
        check_relevance_under(s, query, None, seed);
    }

    fn check_relevance_under(s: &Store, query: &str, under: Option<EntryId>, seed: u64) {
        let q = Query::compile(query, &Options::default(), &CLOCK).unwrap();
        let ranker = Ranker::new(q.name_words(), chrono::Utc::now().timestamp(), None);
        let (mut buf, mut places) = (Vec::new(), Places::default());
        let mut all: Vec<(Relevance, EntryId)> = (0..s.capacity_ids() as EntryId)
            .filter(|&i| s.is_live(i) && s.parent(i) != NONE && q.matches(&s.entry(i)))
            .filter(|&i| under.is_none_or(|u| i != u && s.is_within(i, u)))
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
                    under,
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

    /// A search whose caller went away, or that spent its CPU budget, ends
    /// early and says so, in every order and path through the planner.
    #[test]
    fn a_stopped_search_answers_stopped() {
        let mut rng = Rng(7);
        let mut s = random_store(&mut rng, 3000);
        crate::orders::rebuild_store(&mut s);
        let gone = std::sync::atomic::AtomicBool::new(true);
        for query in [
            "report",
            "a|zz|notes",
            "/notes",
            "regex:^re",
            "size:>400",
            "",
        ] {
            let q = Query::compile(query, &Options::default(), &CLOCK).unwrap();
            for sort in [SortKey::Name, SortKey::Relevance, SortKey::Path] {
                let request = SearchRequest {
                    query: &q,
                    under: None,
                    sort,
                    descending: false,
                    offset: 0,
                    limit: 10,
                    group_by: None,
                };
                assert_eq!(
                    search_until(&s, &request, None, Stop::on(&gone)).unwrap_err(),
                    Stopped::Cancelled,
                    "{query:?} {sort:?}"
                );
                let never = search_until(&s, &request, None, Stop::NEVER).unwrap();
                assert_eq!(never.total, search(&s, &request).total);
            }
        }
        // Past its budget: hundreds of terms no name holds, and one on the
        // path, so that every entry is checked.
        let many: Vec<String> = (0..250).map(|i| format!("qx{i}")).collect();
        let q = Query::compile(
            &format!("{}|in:nowhere", many.join("|")),
            &Options::default(),
            &CLOCK,
        )
        .unwrap();
        let request = SearchRequest {
            query: &q,
            under: None,
            sort: SortKey::Name,
            descending: false,
            offset: 0,
            limit: 10,
            group_by: None,
        };
        let budget = Stop::NEVER.within_cpu(std::time::Duration::from_nanos(1));
        assert_eq!(
            search_until(&s, &request, None, budget).unwrap_err(),
            Stopped::OverBudget
        );
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

    /// With several roots, a search below one of them (a `path` naming a
    /// root) holds only its entries, in every order, before and after
    /// changes. (It held every root's: a root was taken to restrict nothing.)
    #[test]
    fn a_search_below_one_of_several_roots_holds_only_its_entries() {
        for seed in [3u64, 11, 2027] {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut s = random_store_in(&mut rng, 400, &[b"r", b"s", b"t"]);
            crate::orders::rebuild_store(&mut s);
            let roots = s.roots().to_vec();
            for q in QUERIES {
                for &r in &roots {
                    check(&s, q, Some(r), seed);
                    check_relevance_under(&s, q, Some(r), seed);
                }
            }
            churn(&mut s, &mut rng, 120);
            for q in QUERIES {
                for &r in &roots {
                    check(&s, q, Some(r), seed);
                    check_relevance_under(&s, q, Some(r), seed);
                }
            }
        }
    }

    /// A glob of several literals starting with one (`rep*.md`) reads the
    /// extension's list only within the names starting so, every run of
    /// them: those whose bytes do, and those whose fold does (an accent
    /// after the start), while the extension's list is long and the
    /// trigram lists no shorter; and checks each (`x?.md`: 401 names start
    /// with `x` and end `.md`, ten match).
    #[test]
    fn a_globs_start_and_extension_find_every_match() {
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let mut names: Vec<String> = (0..400).map(|i| format!("x{i}.md")).collect();
        names.extend((0..30).map(|i| format!("rep{i}.md")));
        names.extend((0..30).map(|i| format!("rep{i}.txt")));
        names.extend(
            [
                "r\u{c9}port.md",
                "REPORT.MD",
                "re\u{301}p.md",
                "rep.md.txt",
                "rep",
                "xrep.md",
            ]
            .map(String::from),
        );
        for n in &names {
            s.insert_new(root, n.as_bytes(), Kind::File, Meta::default());
        }
        crate::orders::rebuild_store(&mut s);
        for q in [
            "rep*.md",
            "REP*.MD",
            "r*.md",
            "rep*p.md",
            "re*.md ext:md",
            "x?.md",
        ] {
            check(&s, q, None, 0);
        }
        let q = Query::compile("rep*.md", &Options::default(), &CLOCK).unwrap();
        let found = search(
            &s,
            &SearchRequest {
                query: &q,
                under: None,
                sort: SortKey::Name,
                descending: false,
                offset: 0,
                limit: 100,
                group_by: None,
            },
        );
        // The thirty `repN.md`, `REPORT.MD`, and past ASCII `rÉport.md` and
        // `re\u{301}p.md` (the combining accent folds away).
        assert_eq!(found.total, 33);
    }

    /// A tree for relevance: generated folders, nested folders, recency of
    /// every tier (counted from the real clock, as the ranking counts it).
    fn ranked_store(rng: &mut Rng, entries: usize, now: i64) -> Store {
        const FOLDERS: &[&str] = &[
            "src",
            "vendor",
            "node_modules",
            "docs",
            "a",
            "reports",
            "target",
            "__pycache__",
        ];
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let mut dirs = vec![root];
        for _ in 0..entries {
            let parent = dirs[rng.below(dirs.len() as u64) as usize];
            let (name, kind) = if rng.below(6) == 0 {
                let f = FOLDERS[rng.below(FOLDERS.len() as u64) as usize];
                (
                    format!("{f}{}", ["", "1", "_x"][rng.below(3) as usize]).into_bytes(),
                    Kind::Dir,
                )
            } else {
                (random_name(rng), Kind::File)
            };
            if s.child(parent, &name).is_some() {
                continue;
            }
            let id = s.insert_new(parent, &name, kind, recent_meta(rng, now));
            if kind == Kind::Dir {
                dirs.push(id);
            }
        }
        s
    }

    /// Times away from the recency tiers' edges, from now and from two days
    /// and an hour before (when the rank order is built in these tests).
    fn recent_meta(rng: &mut Rng, now: i64) -> Meta {
        const H: i64 = 3600;
        Meta {
            size: rng.below(5000),
            mtime: now
                - [0, 5 * H, 30 * H, 3 * 24 * H, 20 * 24 * H, 400 * 24 * H][rng.below(6) as usize],
            btime: UNKNOWN_TIME,
            mode: 0o644,
        }
    }

    /// Every match ranked, sorted: what a relevance page must equal.
    fn ranked_every_match(s: &Store, q: &Query, uses: Option<&Uses>) -> Vec<(f32, String)> {
        let ranker = Ranker::new(q.name_words(), chrono::Utc::now().timestamp(), uses);
        let (mut buf, mut places) = (Vec::new(), Places::default());
        let mut all: Vec<(Relevance, EntryId)> = (0..s.capacity_ids() as EntryId)
            .filter(|&i| s.is_live(i) && s.parent(i) != NONE && q.matches(&s.entry(i)))
            .map(|i| (ranker.rank(s, i, &mut places, &mut buf), i))
            .collect();
        all.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| reference_cmp(s, SortKey::Path, a.1, b.1))
        });
        all.into_iter()
            .map(|(r, id)| (r.score(), display_path(s, id)))
            .collect()
    }

    /// The page read off the rank order (walks forced by ranking no tier
    /// whole) equals ranking every match: pages, totals and scores, with the
    /// order built two days ago (recency fallen since), changes since in the
    /// delta, folders moved and renamed (their subtrees' keys stale), use
    /// scores, and generated folders.
    #[test]
    fn relevance_read_off_the_rank_order_equals_ranking_every_match() {
        const QUERIES: &[&str] = &[
            "report",
            "rep",
            "a",
            "main",
            "main.rs",
            "rep a",
            "a report",
            "src report",
            "docs reports a",
            "vendor main",
            "notes zz",
            "ext:pdf",
            "*.md",
            "report size:>400",
            "report dm:thisyear",
            "/src",
            "vendor/",
            "/vendor/src/",
            "docs/src/",
            "notes2.md src/",
            "readme1 /vendor/src/",
            "main3.rs reports1/",
            "data_21 docs/src/re",
            "notes1 notes1/",
            "src/ report",
            "file:",
            "regex:^re.*t[0-9]",
            "a|zz",
            "data_2",
            "ünï",
            "tie",
            "ain",
            "ata_",
            "eport",
            "tie0",
            "ties/",
            "/ties/ tie",
            "ties/ tie0",
            // Words too short for the trigram lists below a path term: the
            // matches are most or all of the folder, nearly all fitting well.
            "/ties/ ti",
            "ties/ t",
            "fit",
            "fits/ fit",
            // A name term's word beside a path term's: a name holding the
            // one may fit the other better (`report1.md`: inside `eport`,
            // a prefix of `report1`).
            "eport report1/",
            "ain vendor/main",
        ];
        let now = chrono::Utc::now().timestamp();
        let built = now - 2 * 86_400 - 3600;
        let mut walked = 0;
        for seed in [3u64, 42, 2026] {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut s = ranked_store(&mut rng, 900, now);
            // Ties: names of one length in one folder, one time, added out
            // of name order: equal relevance, told apart by path alone.
            let root = s.roots()[0];
            let ties = s.insert_new(root, b"ties", Kind::Dir, Meta::default());
            for _ in 0..300 {
                let name = format!("tie{:03}.txt", rng.below(1000));
                if s.child(ties, name.as_bytes()).is_none() {
                    s.insert_new(
                        ties,
                        name.as_bytes(),
                        Kind::File,
                        Meta {
                            mtime: now - 7200,
                            ..Meta::default()
                        },
                    );
                }
            }
            // One word fitting three ways: many names start with it, a few
            // hold it at a part's start, many inside; a page of the few is
            // settled only after the many that start with it are read.
            let fits = s.insert_new(root, b"fits", Kind::Dir, Meta::default());
            for (n, form) in [(20, "fit{}.txt"), (3, "a_fit{}.txt"), (20, "xfit{}.txt")] {
                for i in 0..n {
                    let name = form.replace("{}", &i.to_string());
                    s.insert_new(fits, name.as_bytes(), Kind::File, meta(&mut rng));
                }
            }
            let rebuilt = crate::orders::rebuild_at(&s, built);
            s.install(rebuilt);
            let mut uses = Uses::default();
            for round in 0..3 {
                if round == 1 {
                    churn(&mut s, &mut rng, 60);
                    // Folders moved and renamed: their subtrees' paths change
                    // without entering the delta.
                    let dirs: Vec<EntryId> = (0..s.capacity_ids() as EntryId)
                        .filter(|&i| s.is_live(i) && s.parent(i) != NONE && s.kind(i) == Kind::Dir)
                        .collect();
                    for _ in 0..6 {
                        let (d, to) = (
                            dirs[rng.below(dirs.len() as u64) as usize],
                            dirs[rng.below(dirs.len() as u64) as usize],
                        );
                        if s.is_live(d) && s.is_live(to) && !s.is_within(to, d) {
                            let name = if rng.below(2) == 0 {
                                s.name(d).to_vec()
                            } else {
                                b"vendor".to_vec()
                            };
                            if s.child(to, &name).is_none() {
                                s.rename(d, to, &name);
                            }
                        }
                    }
                }
                if round == 2 {
                    let files: Vec<EntryId> = (0..s.capacity_ids() as EntryId)
                        .filter(|&i| s.is_live(i) && s.kind(i) == Kind::File)
                        .collect();
                    for _ in 0..40 {
                        let f = files[rng.below(files.len() as u64) as usize];
                        uses.record(
                            &display_path(&s, f),
                            [0.2, 1.0, 30.0][rng.below(3) as usize],
                            now,
                        );
                    }
                }
                let uses_now = (round == 2).then_some(&uses);
                for query in QUERIES {
                    let q = Query::compile(query, &Options::default(), &CLOCK).unwrap();
                    let want = ranked_every_match(&s, &q, uses_now);
                    for direct in [Some(0), Some(7), None] {
                        crate::threshold::DIRECT_MAX.with(|d| d.set(direct));
                        for (offset, limit) in [(0, 1), (0, 5), (4, 10), (0, usize::MAX / 4)] {
                            let request = SearchRequest {
                                query: &q,
                                under: None,
                                sort: SortKey::Relevance,
                                descending: false,
                                offset,
                                limit,
                                group_by: None,
                            };
                            let plan = Plan::new(&s, &request, Stop::NEVER);
                            let delta = if plan.covers_delta() {
                                Vec::new()
                            } else {
                                plan.delta_matches()
                            };
                            let mut ranker = Ranker::new(
                                q.name_words(),
                                chrono::Utc::now().timestamp(),
                                uses_now,
                            );
                            let cmp = |a: &(Relevance, EntryId), b: &(Relevance, EntryId)| {
                                a.0.cmp(&b.0)
                                    .then_with(|| compare(&s, SortKey::Path, a.1, b.1))
                            };
                            let read_off = crate::threshold::page(
                                &plan,
                                &mut ranker,
                                offset.saturating_add(limit),
                                &delta,
                                &cmp,
                            );
                            walked += usize::from(read_off.is_some());
                            let got = search_with(&s, &request, uses_now);
                            assert_eq!(
                                got.total as usize,
                                want.len(),
                                "seed {seed}: total of {query:?}"
                            );
                            let got: Vec<(f32, String)> = got
                                .hits
                                .into_iter()
                                .map(|h| (h.score.unwrap_or(f32::NAN), h.path))
                                .collect();
                            let page: Vec<(f32, String)> =
                                want.iter().skip(offset).take(limit).cloned().collect();
                            assert_eq!(
                                got, page,
                                "seed {seed} round {round} direct {direct:?}: {query:?} page {offset}+{limit}"
                            );
                            // Turned around: the worst first, whatever the
                            // names that start with the word.
                            let got = search_with(
                                &s,
                                &SearchRequest {
                                    descending: true,
                                    ..request
                                },
                                uses_now,
                            );
                            let got: Vec<(f32, String)> = got
                                .hits
                                .into_iter()
                                .map(|h| (h.score.unwrap_or(f32::NAN), h.path))
                                .collect();
                            let page: Vec<(f32, String)> = want
                                .iter()
                                .rev()
                                .skip(offset)
                                .take(limit)
                                .cloned()
                                .collect();
                            assert_eq!(
                                got, page,
                                "seed {seed} round {round} direct {direct:?}: {query:?} descending page {offset}+{limit}"
                            );
                        }
                    }
                    crate::threshold::DIRECT_MAX.with(|d| d.set(None));
                }
            }
        }
        assert!(walked > 1000, "the rank order answered {walked} pages");
    }
}
