//! The page in relevance order without ranking every match: a threshold
//! algorithm over the rank order ([`crate::base::RankOrder`]).
//!
//! A match's relevance is its name's fit to the query's words (worked out
//! once per distinct name), whether it lies in a generated folder, and a
//! bonus: recency and use up, depth and path length down. All of it but the
//! fit and the use score is in the rank order's key, which bounds the bonus
//! of every entry unchanged since the order was built (recency only falls
//! as time passes). So the matches are split by fit into *tiers*; a small
//! tier is ranked whole, and the large ones are read off the rank order as
//! a bit set per tier, ranking only the members met, until the page's last
//! entry is better than anything the rest of the order can hold for any tier
//! not yet exhausted. What the order cannot vouch for is ranked apart, whole:
//! the delta, entries whose path changed since (`Store::moved`), and entries
//! with a use score. The answer equals ranking every match
//! (`search::tests::relevance_read_off_the_rank_order_equals_ranking_every_match`).

use std::collections::HashSet;

use crate::orders::skipped;
use crate::plan::{Driver, Plan};
use crate::rank::{NameFit, Places, Ranker, Relevance};
use crate::store::{EntryId, NONE, Store};

/// More entries than this below the moved ones and the order is not read.
const SHIFTED_MAX: usize = 20_000;

/// Reading one entry of the order costs about this share of ranking one
/// match: past this many entries read per match of the large tiers, ranking
/// them all is cheaper and the walk gives up.
const WALK_PER_MATCH: usize = 48;

#[cfg(test)]
thread_local! {
    /// Tests set the largest tier ranked whole, to send small stores through
    /// the walk.
    pub(crate) static DIRECT_MAX: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// The largest tier ranked whole rather than read off the order: where
/// ranking `c` matches (a few cache misses each) costs about what reading the
/// order until `wanted` of them appear does, were they spread evenly.
fn direct_max(wanted: usize, entries: usize) -> usize {
    #[cfg(test)]
    if let Some(m) = DIRECT_MAX.with(|d| d.get()) {
        return m;
    }
    (wanted.max(1).saturating_mul(entries) / WALK_PER_MATCH)
        .isqrt()
        .max(256)
}

/// The fits, best first, as `NameFit as usize` counts them.
const FITS: [NameFit; 4] = [
    NameFit::Exact,
    NameFit::Prefix,
    NameFit::Boundary,
    NameFit::Anywhere,
];

/// The page's order: relevance, then path.
pub(crate) type Compare<'a> =
    dyn Fn(&(Relevance, EntryId), &(Relevance, EntryId)) -> std::cmp::Ordering + 'a;

/// One fit's matches among the base entries.
struct Tier {
    fit: NameFit,
    /// How many entries its bit set holds.
    count: usize,
    /// How many of them the walk has met.
    met: usize,
    /// Whether no member the walk has not met can enter the page (or none
    /// is left).
    done: bool,
    bits: Vec<u64>,
}

impl Tier {
    #[inline]
    fn holds(&self, id: EntryId) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set(&mut self, id: EntryId) {
        if let Some(w) = self.bits.get_mut(id as usize / 64) {
            *w |= 1 << (id % 64);
        }
    }

    /// The entries its bit set holds, in id order.
    fn members(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let id = (w * 64) as EntryId + word.trailing_zeros();
                    word &= word - 1;
                    id
                })
            })
        })
    }
}

/// A fit's matches too many to rank whole, before their bit set is made:
/// when the page is settled by the ranked ones alone it never is (`test`
/// on a real `/`: its 39 exact names fill the page, and the 100,000 entries
/// of the prefix and part tiers need only be counted).
enum Large {
    /// Made as the matches were found.
    Built(Tier),
    /// An exact plan's names of this fit: all their entries (the changed
    /// ones are passed over in the walk), so many in all.
    Named(NameFit, Vec<u32>, usize),
    /// The entries the plan accepted.
    Kept(NameFit, Vec<EntryId>),
}

impl Large {
    fn fit(&self) -> NameFit {
        match self {
            Large::Built(t) => t.fit,
            Large::Named(fit, ..) | Large::Kept(fit, _) => *fit,
        }
    }

    fn build(self, store: &Store, slots: usize) -> Tier {
        match self {
            Large::Built(t) => t,
            Large::Named(fit, names, size) => {
                let b = &store.base;
                let mut t = tier(fit, slots);
                for k in names {
                    for &id in &b.by_name[b.named(k)] {
                        t.set(id);
                    }
                }
                t.count = size;
                t
            }
            Large::Kept(fit, ids) => {
                let mut t = tier(fit, slots);
                t.count = ids.len();
                for id in ids {
                    t.set(id);
                }
                t
            }
        }
    }
}

/// The first `wanted` matches of `plan` in relevance order (ascending: best
/// first), with how many match in all; `None` when the rank order cannot
/// answer (descending, the clock gone back, too much moved) and every match
/// must be ranked.
pub(crate) fn page(
    plan: &Plan<'_>,
    ranker: &mut Ranker,
    wanted: usize,
    delta: &[EntryId],
    cmp: &Compare<'_>,
) -> Option<(Vec<(Relevance, EntryId)>, usize)> {
    let store = plan.store;
    let order = &store.base.rank;
    if plan.request.descending
        || wanted == 0
        || ranker.now() < order.at
        || order.ids.len() != store.base.by_name.len()
    {
        return None;
    }
    let shifted = shifted(store)?;
    let names = &store.names;
    let b = &store.base;
    let slots = store.capacity_ids().div_ceil(64);
    let limit = direct_max(wanted, order.ids.len());
    let (mut places, mut buf) = (Places::default(), Vec::new());
    let mut pool: Vec<(Relevance, EntryId)> = Vec::new();
    let mut large: Vec<Large> = Vec::new();
    let total;
    match (&plan.driver, &plan.names) {
        (Driver::Names, Some(set)) => {
            // Each name's fit, once; its entries by tier.
            let exact = plan.exact();
            let mut by_fit: [Vec<u32>; 4] = Default::default();
            // Fits the name check found (for one word), else each worked out
            // (a name is read only then: each is a cache miss).
            let found = set
                .fits
                .as_ref()
                .filter(|(word, _)| ranker.words().contains(word));
            // With several words (`src/ main`), the others' fits from the
            // dictionary's lists, so that no name need be read for them.
            let others = found
                .filter(|_| ranker.only_word().is_none())
                .and_then(|(word, _)| {
                    let rest = ranker.words().iter().filter(|w| *w != word);
                    WordFits::of(store, rest, set.ids.len(), &plan.halt)
                });
            let found = found.map(|(_, fits)| fits.as_slice());
            for (i, &k) in set.ids.iter().enumerate() {
                if i % 4096 == 0 && !plan.halt.go() {
                    return Some((pool, 0));
                }
                let fit = match found.and_then(|f| f.get(i)) {
                    Some(&f) if f > 0 && ranker.only_word().is_some() => FITS[usize::from(f - 1)],
                    Some(&f)
                        if f > 0
                            && let Some(rest) = others.as_ref().and_then(|o| o.fit_name(k)) =>
                    {
                        FITS[usize::from(f - 1)].min(rest)
                    }
                    _ => ranker.fit(names.get(k), &mut buf),
                };
                by_fit[fit as usize].push(k);
            }
            let mut counted = 0;
            for (f, named) in by_fit.into_iter().enumerate() {
                let fit = FITS[f];
                let runs = || {
                    named.iter().flat_map(|&k| {
                        let len = names.get(k).len();
                        b.by_name[b.named(k)].iter().map(move |&id| (id, len))
                    })
                };
                // Entries the plan accepts (all but those changed since, for
                // an exact plan: their bits are passed over in the walk).
                let size: usize = named.iter().map(|&k| b.named(k).len()).sum();
                if size <= limit || !exact {
                    let kept: Vec<(EntryId, usize)> = runs()
                        .filter(|&(id, _)| !skipped(store, id) && plan.accept(id))
                        .collect();
                    counted += kept.len();
                    if kept.len() <= limit {
                        for (id, len) in kept {
                            pool.push((ranker.rank_fitted(store, id, (fit, len), &mut places), id));
                        }
                    } else {
                        large.push(Large::Kept(
                            fit,
                            kept.into_iter().map(|(id, _)| id).collect(),
                        ));
                    }
                } else {
                    large.push(Large::Named(fit, named, size));
                }
            }
            total = if exact {
                plan.exact_total(delta.len())
            } else {
                counted + delta.len()
            };
        }
        _ => {
            // Any other plan: its matches, each name's fit read off the entry.
            let all = plan.base_matches();
            total = all.len() + delta.len();
            // (A walk of subtrees meets changed entries too: they are put
            // apart below, from the delta's side.)
            let fits = (all.len() > limit)
                .then(|| WordFits::of(store, ranker.words().iter(), all.len(), &plan.halt))
                .flatten();
            // The matches that fit no better than anywhere (most of a path
            // term's: the files below `share/doc/`) go straight to their bit
            // set when they may be many, not through a list.
            let mut anywhere = (all.len() > limit).then(|| tier(NameFit::Anywhere, slots));
            let mut by_fit: [Vec<EntryId>; 4] = Default::default();
            for id in all {
                let fit = if !ranker.has_words() {
                    NameFit::Anywhere
                } else if let Some(fit) = fits.as_ref().and_then(|f| f.fit(store, id)) {
                    fit
                } else {
                    ranker.fit(store.name(id), &mut buf)
                };
                match anywhere.as_mut() {
                    Some(t) if fit == NameFit::Anywhere => {
                        t.set(id);
                        t.count += 1;
                    }
                    _ => by_fit[fit as usize].push(id),
                }
            }
            for (fit, ids) in FITS.into_iter().zip(by_fit) {
                let rank =
                    |id: EntryId, pool: &mut Vec<(Relevance, EntryId)>, places: &mut Places| {
                        let fit = (fit, store.name(id).len());
                        pool.push((ranker.rank_fitted(store, id, fit, places), id));
                    };
                if let Some(t) = anywhere.take_if(|_| fit == NameFit::Anywhere) {
                    if t.count > limit {
                        large.push(Large::Built(t));
                    } else {
                        for id in t.members() {
                            rank(id, &mut pool, &mut places);
                        }
                    }
                } else if ids.len() <= limit {
                    for id in ids {
                        rank(id, &mut pool, &mut places);
                    }
                } else {
                    large.push(Large::Kept(fit, ids));
                }
            }
        }
    }
    for &id in delta {
        pool.push((ranker.rank(store, id, &mut places, &mut buf), id));
    }
    if large.is_empty() {
        return Some(finish(pool, wanted, cmp, total));
    }
    // What the order cannot vouch for among the large tiers' members: ranked
    // here, passed over in the walk.
    if ranker.has_uses() {
        ranker.prepare(store, usize::MAX);
    }
    // A tier's bits hold changed entries as they are now only where a walk
    // of subtrees met them (the delta was not asked for apart): those are
    // ranked here too. (Elsewhere the bits may hold them as the orders knew
    // them, name and all; the walk passes them over for the delta's own.)
    let changed = plan
        .covers_delta()
        .then(|| store.delta_entries())
        .into_iter()
        .flatten();
    let odd: Vec<EntryId> = ranker
        .used_entries()
        .chain(shifted)
        .filter(|&id| !skipped(store, id))
        .chain(changed)
        .collect();
    let generated = order.generated as usize;
    // The best an unread member of a tier of `fit` can be at position `at`.
    let unread = |fit: NameFit, at: usize| Relevance {
        fit,
        generated: at >= generated,
        // (A tool's output ranks lower still: the bound holds for it.)
        built: false,
        // (f32 addition is monotonic: a bound plus the most the query's
        // folder words can add bounds every later bonus.)
        bonus: order.bound(at) + ranker.folder_words_max(),
    };
    // What the walk's first block would find, before any bit set is made: a
    // tier whose best member the page's last entry already beats is never
    // made (with nothing to rank apart, which needs every tier's bits; the
    // tiers hold disjoint entries, so the walk passes its members over).
    if odd.is_empty() && pool.len() >= wanted {
        let kth = cut_to_page(&mut pool, wanted, cmp);
        large.retain(|l| kth.cmp(&unread(l.fit(), 0)) != std::cmp::Ordering::Less);
        if large.is_empty() {
            return Some(finish(pool, wanted, cmp, total));
        }
    }
    // With nothing to rank apart, the large tiers are walked one at a time,
    // best fit first, and a tier's bits are made only when the page's last
    // entry does not already beat its best member (`report` on the 1M
    // synthetic tree: its 33,000 prefix names fill the page, and the bits of
    // its 32,000 boundary names are never made). Else all at once: what is
    // ranked apart needs every tier's bits.
    let mut pending = std::collections::VecDeque::new();
    if odd.is_empty() && large.len() > 1 {
        large.sort_by_key(Large::fit);
        pending.extend(large.drain(1..));
    }
    let mut tiers: Vec<Tier> = large.into_iter().map(|l| l.build(store, slots)).collect();
    let mut apart: HashSet<EntryId, foldhash::fast::FixedState> = HashSet::default();
    for id in odd {
        if apart.contains(&id) {
            continue;
        }
        if let Some(t) = tiers.iter().find(|t| t.holds(id)) {
            let fit = (t.fit, store.name(id).len());
            pool.push((ranker.rank_fitted(store, id, fit, &mut places), id));
            apart.insert(id);
        }
    }
    let mut cands = pool;
    let mut kth: Option<Relevance> = None;
    let slack = wanted.max(crate::base::RANK_BLOCK);
    loop {
        let mut gave_up = false;
        for (at, &id) in order.ids.iter().enumerate() {
            let in_generated = at >= generated;
            let block_start = if in_generated {
                (at - generated).is_multiple_of(crate::base::RANK_BLOCK)
            } else {
                at.is_multiple_of(crate::base::RANK_BLOCK)
            };
            if block_start {
                if !plan.halt.go() {
                    return Some((cands, total));
                }
                // Cut the candidates back to the page now and then (when they
                // first fill it, then each time they double): the page's last
                // entry then, a little worse than the true one in between, still
                // bounds what can enter it.
                if cands.len() >= wanted && (kth.is_none() || cands.len() >= wanted + slack) {
                    kth = Some(cut_to_page(&mut cands, wanted, cmp));
                }
                // A tier none of whose members not yet met can beat the page's
                // last entry, even with the block's bound for a bonus, is done
                // with: its members are passed over from here on.
                let mut live = 0;
                for t in tiers.iter_mut().filter(|t| !t.done) {
                    t.done = t.met == t.count
                        || kth
                            .is_some_and(|k| k.cmp(&unread(t.fit, at)) == std::cmp::Ordering::Less);
                    if !t.done {
                        live += t.count;
                    }
                }
                if live == 0 {
                    break;
                }
                // Reading on costs more than ranking what can still enter.
                if at
                    > live
                        .saturating_mul(WALK_PER_MATCH)
                        .max(4 * crate::base::RANK_BLOCK)
                {
                    gave_up = true;
                    break;
                }
            }
            let Some(t) = tiers.iter_mut().find(|t| t.holds(id)) else {
                continue;
            };
            t.met += 1;
            if t.done || skipped(store, id) || apart.contains(&id) {
                continue;
            }
            let fit = (t.fit, store.name(id).len());
            let r = ranker.rank_fitted(store, id, fit, &mut places);
            if kth.is_some_and(|k| r.cmp(&k) == std::cmp::Ordering::Greater) {
                continue;
            }
            cands.push((r, id));
        }
        if gave_up {
            // Past the budget: rank whole the members of the tiers that can still
            // enter the page (what the walk met again with them; ranking is
            // exact, so twice is harmless once deduplicated).
            let mut seen: HashSet<EntryId, foldhash::fast::FixedState> =
                cands.iter().map(|c| c.1).collect();
            for t in tiers.iter().filter(|t| !t.done) {
                for id in t.members() {
                    if skipped(store, id) || apart.contains(&id) || !seen.insert(id) {
                        continue;
                    }
                    let fit = (t.fit, store.name(id).len());
                    cands.push((ranker.rank_fitted(store, id, fit, &mut places), id));
                }
            }
        }
        // The next tier, unless the page's last entry beats its best member
        // (and so every member of the worse tiers after it).
        let Some(next) = pending.pop_front() else {
            break;
        };
        if cands.len() >= wanted {
            let k = cut_to_page(&mut cands, wanted, cmp);
            kth = Some(k);
            if k.cmp(&unread(next.fit(), 0)) == std::cmp::Ordering::Less {
                break;
            }
        }
        tiers = vec![next.build(store, slots)];
    }
    Some(finish(cands, wanted, cmp, total))
}

/// How the sorted names that hold each of the query's words answer it, found
/// from the dictionary's trigram lists: a match's fit is then read off its
/// name id, not its name (a path term's matches, each a cache miss to read,
/// mostly hold none of the words: `share/doc/` and the 126,000 files below).
/// A name no list names holds no word: it fits anywhere, as `name_fit` says
/// of a name without the word.
struct WordFits {
    /// Per word: the names holding it (a bit each) and their fits.
    words: Vec<(
        Vec<u64>,
        std::collections::HashMap<u32, NameFit, foldhash::fast::FixedState>,
    )>,
    sorted: u32,
}

impl WordFits {
    /// `None` where a word has no trigram (shorter than three bytes) or is
    /// held by more names than there are matches to read.
    fn of<'w>(
        store: &Store,
        query_words: impl Iterator<Item = &'w Vec<u8>>,
        matches: usize,
        halt: &crate::stop::Halt,
    ) -> Option<WordFits> {
        let names = &store.names;
        let sorted = names.sorted_len();
        let mut words = Vec::new();
        for word in query_words {
            let lit = std::slice::from_ref(word);
            if names.candidates_bound(lit)? as usize > matches {
                return None;
            }
            let found: Vec<(u32, NameFit)> = names.matching(lit, &|k| {
                if !halt.go() {
                    return None;
                }
                let fit = crate::rank::name_fit(names.get(k), word, &mut Vec::new());
                (fit != NameFit::Anywhere).then_some((k, fit))
            })?;
            let mut bits = vec![0u64; (sorted as usize).div_ceil(64)];
            for &(k, _) in &found {
                bits[k as usize / 64] |= 1 << (k % 64);
            }
            words.push((bits, found.into_iter().collect()));
        }
        Some(WordFits { words, sorted })
    }

    /// The fit of `id`'s name, best over the words; `None` for a name the
    /// dictionary's lists do not cover (new since the rebuild).
    fn fit(&self, store: &Store, id: EntryId) -> Option<NameFit> {
        self.fit_name(store.names_of[id as usize])
    }

    /// The fit of name `k`, best over the words; `None` for a name the
    /// dictionary's lists do not cover.
    fn fit_name(&self, k: u32) -> Option<NameFit> {
        if k >= self.sorted {
            return None;
        }
        let (w, bit) = (k as usize / 64, 1u64 << (k % 64));
        Some(
            self.words
                .iter()
                .filter(|(bits, _)| bits[w] & bit != 0)
                .filter_map(|(_, fits)| fits.get(&k).copied())
                .min()
                .unwrap_or(NameFit::Anywhere),
        )
    }
}

fn tier(fit: NameFit, slots: usize) -> Tier {
    Tier {
        fit,
        count: 0,
        met: 0,
        done: false,
        bits: crate::scratch::zeroed_words(slots),
    }
}

/// Its bits kept for a later search (see `scratch`).
impl Drop for Tier {
    fn drop(&mut self) {
        crate::scratch::give_words(std::mem::take(&mut self.bits));
    }
}

/// The best `wanted` of `cands` (at least that many), in no order, and the
/// last of them: what bounds every entry that can still enter the page.
fn cut_to_page(
    cands: &mut Vec<(Relevance, EntryId)>,
    wanted: usize,
    cmp: &Compare<'_>,
) -> Relevance {
    cands.select_nth_unstable_by(wanted - 1, |a, b| cmp(a, b));
    cands.truncate(wanted);
    cands[wanted - 1].0
}

fn finish(
    mut cands: Vec<(Relevance, EntryId)>,
    wanted: usize,
    cmp: &Compare<'_>,
    total: usize,
) -> (Vec<(Relevance, EntryId)>, usize) {
    let k = wanted.min(cands.len());
    crate::plan::top_k(&mut cands, k, cmp);
    (cands, total)
}

/// The live entries at or below those moved since the rank order was built:
/// their keys are not the order's. `None` past [`SHIFTED_MAX`].
fn shifted(store: &Store) -> Option<Vec<EntryId>> {
    let mut out: HashSet<EntryId, foldhash::fast::FixedState> = HashSet::default();
    for &top in &store.moved {
        if !store.is_live(top) || store.parent(top) == NONE || out.contains(&top) {
            continue;
        }
        let mut stack = vec![top];
        while let Some(at) = stack.pop() {
            if out.insert(at) {
                if out.len() > SHIFTED_MAX {
                    return None;
                }
                stack.extend_from_slice(store.children(at));
            }
        }
    }
    Some(out.into_iter().collect())
}
