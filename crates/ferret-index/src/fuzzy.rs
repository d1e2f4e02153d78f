//! Fuzzy search: the query's words matched as subsequences of names and paths,
//! scored fzf-style with path-aware bonuses (word boundaries, camelCase, `/`,
//! consecutive runs) by `nucleo-matcher` (Helix's matcher), with one-letter
//! typos forgiven, filters applied, best first.
//!
//! Candidates need no shared trigram: one pass over the folders matches each
//! word greedily through each folder's path (its reach), each distinct name
//! is looked at once per query, in parallel (the longest end of each word it
//! holds in order; most names are told unread by their byte mask), and the
//! entries whose names hold the rest of each word past their folder's reach
//! are kept (read by name when few names can match, else every entry in id
//! order); so words match anywhere in the path, in any order, and
//! initials and word parts match across folders. Typos: a word of five
//! characters or more also brings the names within one edit of it
//! (Damerau-Levenshtein, on the name and on its stem), found through the
//! trigram lists: a name within one edit of a word keeps all but at most three
//! of the word's trigrams, so it holds at least one of any four of them. At
//! most [`MAX_SCORED`] candidates and [`MAX_SCORED_BYTES`] of their paths
//! (those whose names hold the most words first) are
//! then scored on their whole path, word by word, with a lead for the share
//! of the words a path spells out (its name equal to or starting with a run
//! of them, the rest equal to folders, or a word typed as an abbreviation of
//! the path: [`Cover`], [`ferret_abbrev`]), generated folders a little
//! lower, and recency, use, depth and length as plain searches rank them.
//! Only the page is kept: once it is full, a candidate whose best possible
//! score (its lead, bonus and folder, with each word's highest nucleo score)
//! cannot pass the page's last is not scored, and a word by word sum stops
//! where the words left cannot lift it (the page equals scoring every
//! candidate: a test compares the two).

use ferret_abbrev::Abbrev;
use ferret_query::Query;
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::folders::{FolderTable, ROOT, byte_bit64};
use crate::hits::{Hit, display_path_into, hit};
use crate::names::{byte_bit, byte_mask, fold_into};
use crate::rank::{NameFit, Place, Places, Ranker, exact_forms, folder_name_words, unversioned};
use crate::search::{SearchOutcome, SearchRequest, SortKey};
use crate::stop::{Halt, Stop, Stopped};
use crate::store::{EntryId, Store};
use crate::uses::Uses;

/// What to look for.
pub struct FuzzyRequest<'q> {
    /// The words to match (see `ferret_query::split_words`).
    pub words: &'q [String],
    /// The rest of the query: every result matches it.
    pub filter: &'q Query,
    pub under: Option<EntryId>,
    pub offset: usize,
    pub limit: usize,
}

/// Words are cut to this many characters (a pasted paragraph is not a name).
const MAX_WORD: usize = 64;

/// Words shorter than this (in characters) forgive no typo.
const MIN_TYPO_WORD: usize = 5;

/// How good a near-miss (one edit away) counts, against a perfect match.
const TYPO_WEIGHT: f32 = 0.9;

/// How good a name that holds every letter typed, with one more among them,
/// counts at the least (`sgar` for `sugar.rs`, `urng` for `uring.rs`): a
/// letter dropped in typing. The subsequence alone scores its gap as a
/// stranger's would (below a changed letter's [`TYPO_WEIGHT`], so
/// `swar.rs` came before `sugar.rs`), though such a name is spelled out
/// by every letter typed, as a changed or added letter's is not.
const DROPPED_WEIGHT: f32 = 0.92;

/// A word cut (at a character) so that folded it fits the byte offsets the
/// walk keeps (`u8`): 64 characters of four bytes each would not.
fn fit_folded_len(mut word: String) -> String {
    let mut folded = Vec::new();
    loop {
        fold_into(word.as_bytes(), &mut folded);
        if folded.len() <= usize::from(u8::MAX) {
            return word;
        }
        word.pop();
    }
}

fn atom(word: &str) -> Atom {
    Atom::new(
        word,
        CaseMatching::Ignore,
        Normalization::Smart,
        AtomKind::Fuzzy,
        false,
    )
}

fn threads_for(work: usize) -> usize {
    crate::cores::threads_for(work, 20_000)
}

/// Score `haystack` with `atom`, reusing `buf` for non-ASCII text.
fn score(atom: &Atom, haystack: &[u8], matcher: &mut Matcher, buf: &mut Vec<char>) -> Option<u16> {
    let text = String::from_utf8_lossy(haystack);
    atom.score(Utf32Str::new(&text, buf), matcher)
}

pub fn fuzzy(store: &Store, request: &FuzzyRequest<'_>, uses: Option<&Uses>) -> SearchOutcome {
    fuzzy_until(store, request, uses, Stop::NEVER).unwrap_or_default()
}

/// [`fuzzy`], given up as [`Stopped`] once `stop` says so.
pub fn fuzzy_until(
    store: &Store,
    request: &FuzzyRequest<'_>,
    uses: Option<&Uses>,
    stop: Stop<'_>,
) -> Result<SearchOutcome, Stopped> {
    let (first, first_as_typed) = fuzzy_with(store, request, uses, stop, true, None)?;
    // Code spells with `_` what folders spell with `-` (`tokio_util` is the
    // crate in `tokio-util-0.7.20/`), and a word's letters are matched as
    // typed, its `_` and `-` among them. When there is no match, or the
    // best does not hold every word as typed (only as an abbreviation,
    // `tokio-1.54.1/tests/io_util_empty.rs`, or scattered), the words are
    // asked again without the `_` and `-` inside them; that answer is
    // taken if its best holds every word as typed. (Decided on the best
    // match, whatever the page, so every page of one query agrees; asked
    // only then, since a word without its joiners is a subsequence of many
    // more paths, and only when some name holds each such word with its
    // joiners swapped or left out: else the second pass, as long as the
    // first, cannot be taken.)
    if !first_as_typed
        && let Some(loose) = without_joiners(request.words)
        && joined_in_some_name(store, request, uses, stop)?
    {
        let (second, second_as_typed) = fuzzy_with(
            store,
            &FuzzyRequest {
                words: &loose,
                ..*request
            },
            uses,
            stop,
            true,
            None,
        )?;
        if second_as_typed {
            return Ok(second);
        }
    }
    Ok(first)
}

/// Whether, for each word with a `_` or `-` inside it, some name (below
/// `request.under`) holds it with all of them `-`, all `_`, or none: read
/// off the names' trigram lists, as a plain search (`tokio_util`: the
/// folder `tokio-util-0.7.20`). A word with `"` is taken as held.
fn joined_in_some_name(
    store: &Store,
    request: &FuzzyRequest<'_>,
    uses: Option<&Uses>,
    stop: Stop<'_>,
) -> Result<bool, Stopped> {
    for word in request.words {
        if rejoined(word, None).is_none() || word.contains('"') {
            continue;
        }
        let mut held = false;
        for with in [Some('-'), Some('_'), None] {
            let form = rejoined(word, with).unwrap_or_default();
            let Ok(query) = Query::compile(
                &format!("\"{form}\""),
                &Default::default(),
                &ferret_query::Clock::system(),
            ) else {
                return Ok(true);
            };
            let found = crate::search::search_until(
                store,
                &SearchRequest {
                    query: &query,
                    under: request.under,
                    sort: SortKey::Name,
                    descending: false,
                    offset: 0,
                    limit: 1,
                    group_by: None,
                },
                uses,
                stop,
            )?;
            if found.total > 0 {
                held = true;
                break;
            }
        }
        if !held {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The words without the `_` and `-` between two other characters (those
/// a word starts or ends with are kept: `chrono_` asks for more after
/// `chrono`), or `None` when no word has one.
fn without_joiners(words: &[String]) -> Option<Vec<String>> {
    let any = words.iter().any(|w| rejoined(w, None).is_some());
    any.then(|| {
        words
            .iter()
            .map(|w| rejoined(w, None).unwrap_or_else(|| w.clone()))
            .collect()
    })
}

/// `word` with each `_` or `-` between two other characters made `with`
/// (left out for `None`), or `None` when it has none.
fn rejoined(word: &str, with: Option<char>) -> Option<String> {
    let bytes = word.as_bytes();
    let mut any = false;
    let mut out = String::with_capacity(word.len());
    for (i, c) in word.char_indices() {
        let inner = matches!(c, '_' | '-')
            && i > 0
            && i + 1 < bytes.len()
            && !matches!(bytes[i - 1], b'_' | b'-')
            && !matches!(bytes[i + 1], b'_' | b'-');
        if inner {
            any = true;
            out.extend(with);
        } else {
            out.push(c);
        }
    }
    any.then_some(out)
}

/// [`fuzzy_until`]; with `prune`, candidates that cannot reach the page are
/// passed over unscored, and scored in `threads` parts (or as many as they
/// are worth): the tests compare them all.
fn fuzzy_with(
    store: &Store,
    request: &FuzzyRequest<'_>,
    uses: Option<&Uses>,
    stop: Stop<'_>,
    prune: bool,
    threads: Option<usize>,
) -> Result<(SearchOutcome, bool), Stopped> {
    let words: Vec<String> = request
        .words
        .iter()
        .map(|w| w.chars().take(MAX_WORD).collect::<String>())
        .map(fit_folded_len)
        .filter(|w| !w.trim().is_empty())
        // A bit of a u64 per word marks its typos.
        .take(64)
        .collect();
    let typed: usize = words.iter().map(|w| w.chars().count()).sum();
    if typed < 2 {
        // Nothing (or one letter) to go by: what changed last comes first.
        let letter = words.first().map(|w| w.to_lowercase());
        let query = match &letter {
            Some(l) => Query::compile(l, &Default::default(), &ferret_query::Clock::system())
                .map(|q| q.and(request.filter.clone()))
                .unwrap_or_else(|_| request.filter.clone()),
            None => request.filter.clone(),
        };
        return crate::search::search_until(
            store,
            &SearchRequest {
                query: &query,
                under: request.under,
                sort: SortKey::Modified,
                descending: true,
                offset: request.offset,
                limit: request.limit,
                group_by: None,
            },
            uses,
            stop,
        )
        .map(|o| (o, true));
    }
    let halt = Halt::new(stop);
    let now = chrono::Utc::now().timestamp();
    let folded = fold_words(&words);
    // The words as names fold (accents dropped, `ł` as `l`), against paths
    // folded the same way where they are not ASCII: nucleo's own
    // normalisation knows `ó` but not `ł`, so `lodz` missed `Łódź.txt`.
    let atoms: Vec<Atom> = folded
        .iter()
        .map(|w| atom(&String::from_utf8_lossy(w)))
        .collect();
    // Paths are scored as paths (bonuses after `/`) with a lead for matches
    // near the start: initials are typed from the top folder down. Without
    // it, bench/retrieval.py's initials on the cargo registry fall from 42.0%
    // to 35.5% top-1 (the other kinds move by a point or less).
    let mut config = Config::DEFAULT.match_paths();
    config.prefer_prefix = true;
    let mut matcher = Matcher::new(config.clone());
    let mut chars = Vec::new();
    // A perfect match of each word: the scale its typos are scored on.
    let perfect: Vec<f32> = atoms
        .iter()
        .zip(&folded)
        .map(|(a, w)| score(a, w, &mut matcher, &mut chars).unwrap_or(1) as f32)
        .collect();

    // 1. Candidates: the entries whose path holds every word as a
    // subsequence (folders included, so initials and word parts match
    // across them: `tucdec` for `tokio-util/src/codec/decoder.rs`), or
    // whose name is one edit away from a word of five characters or more.
    let typo_words: Vec<bool> = words
        .iter()
        .enumerate()
        .map(|(i, w)| forgives_typo(i, w))
        .collect();
    // The names one edit from each word (read off the trigram lists) and
    // how far each word gets through each folder's path, side by side.
    let (near, reach) = if threads_for(store.len()) > 1 {
        std::thread::scope(|scope| {
            let near = scope.spawn(|| near_names(store, &folded, &words));
            let reach = Reach::new(store, &folded, &typo_words, &halt);
            (near.join().expect("a fuzzy typo pass panicked"), reach)
        })
    } else {
        (
            near_names(store, &folded, &words),
            Reach::new(store, &folded, &typo_words, &halt),
        )
    };
    let fits = NameFits::new(store, &folded, &near, &reach.bound, &halt);
    // Few entries bear a name that can match: read them by name, each with
    // its folder's reach; else every entry is read, in id order.
    // Bounded work: the entries whose own names hold the most words first
    // (at most MAX_SCORED of them, kept as they are found), until
    // MAX_SCORED_BYTES of paths (below their roots) have been weighed (a
    // short guess in a deep tree is a subsequence of nearly every path).
    let mut kept = Kept::new(MAX_SCORED);
    let pass = Pass {
        store,
        words: &folded,
        fits: &fits,
        reach: &reach,
        request,
        halt: &halt,
    };
    match fits.survivors(store) {
        Some(keys) => by_names(&pass, &keys, &mut kept),
        None => scan_all(&pass, &mut kept),
    }
    let total_found = kept.total;
    let found = kept.into_best();
    let mut bytes_left = MAX_SCORED_BYTES;
    let mut cut = false;

    // 2. Scored on the whole path, word by word (any order: the scores add
    // up), then: what the path spells out word for word keeps its lead
    // (`Cover`), generated folders lower, and recency, use, depth and length
    // decide among equals as in plain searches, the same for every path.
    // Only the page is kept; a candidate whose best possible score cannot
    // reach the page's last is passed over (see [`Page`]).
    let mut ranker = Ranker::new(folded.clone(), now, uses);
    ranker.prepare(store, found.len());
    let mut places = Places::default();
    let mut table_places = TablePlaces::new(&reach.table, ranker.folder_words());
    let mut buf = Vec::new();
    // The most the words from `w` on can add.
    let mut most_from = vec![0.0f32; atoms.len() + 1];
    for w in (0..atoms.len()).rev() {
        most_from[w] = most_from[w + 1] + most_score(&atoms[w]);
    }
    // More than any lead and the words' most, so a tool's output comes last.
    let built_penalty = EXACT_BONUS + most_from[0] + BUILT_MARGIN;
    // Each candidate's fixed part (folder, bonus), in order, until the
    // bytes run out.
    let mut fixed_parts: Vec<(EntryId, u64, f32)> = Vec::with_capacity(found.len());
    for c in found {
        if !halt.go() {
            break;
        }
        let id = c.id;
        // The fit is not asked (the lead is `Cover`'s): folder and bonus only.
        let fit = (NameFit::Anywhere, store.name(id).len());
        let (rel, len) = match table_places.place(store, store.parent(id)) {
            Some(place) => ranker.rank_placed(store, id, fit, place),
            None => ranker.rank_fitted_len(store, id, fit, &mut places),
        };
        // Charged whether or not the candidate is scored, so that passing
        // over changes no cut.
        if bytes_left < len {
            cut = true;
            break;
        }
        bytes_left -= len;
        let mut fixed = rel.bonus;
        if rel.generated {
            fixed -= GENERATED_PENALTY;
        }
        if rel.built {
            fixed -= built_penalty;
        }
        // (A file's lead over a folder is in the bonus: `rank::recency`.)
        fixed_parts.push((id, c.typo, fixed));
    }
    let scoring = Scoring {
        store,
        words: &words,
        folded: &folded,
        atoms: &atoms,
        perfect: &perfect,
        most_from: &most_from,
        typo_words: &typo_words,
        config: &config,
        keep: request.offset.saturating_add(request.limit),
        prune,
        halt: &halt,
    };
    // Scored in interleaved parts (the candidates come best named first, so
    // each part's page fills with good ones early), each part's page then
    // offered to the first's: the same page as one pass (a candidate passed
    // over in a part is beaten by a page of that part's).
    let parts = match threads {
        Some(t) => t.max(1),
        None => crate::cores::threads_for(fixed_parts.len(), SCORE_IN_PARTS_FROM),
    };
    let (page, rejected) = if parts == 1 {
        scoring.score(fixed_parts.iter())
    } else {
        let scoring = &scoring;
        let fixed_parts = &fixed_parts;
        std::thread::scope(|scope| {
            let others: Vec<_> = (1..parts)
                .map(|t| {
                    scope.spawn(move || scoring.score(fixed_parts.iter().skip(t).step_by(parts)))
                })
                .collect();
            let (mut page, mut rejected) = scoring.score(fixed_parts.iter().step_by(parts));
            for other in others {
                let (other, r) = other.join().expect("a fuzzy scoring part panicked");
                rejected += r;
                for (score, path, id, typo) in other.into_sorted() {
                    page.offer(score, &path, id, typo);
                }
            }
            (page, rejected)
        })
    };
    let cover = Cover::new(&words, &folded);
    let total = if total_found > MAX_SCORED || cut {
        total_found
    } else {
        total_found - rejected
    };
    let sorted = page.into_sorted();
    // (The page holds the best match first, whatever the offset.)
    let scattered = sorted
        .first()
        .is_some_and(|(_, path, _, typo)| cover.scatters(path, *typo, &mut buf));
    let as_typed = sorted
        .first()
        .is_some_and(|(_, path, _, typo)| cover.holds_every_word(path, *typo, &mut buf));
    let outcome = halt.result(SearchOutcome {
        hits: sorted
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .map(|(s, _, id, _)| Hit {
                score: Some((s * 10.0).round() / 10.0),
                ..hit(store, id)
            })
            .collect(),
        groups: None,
        total: total as u64,
        scattered,
    })?;
    Ok((outcome, as_typed))
}

/// Float error allowed for when a bound is compared with a score summed in
/// another order (scores run to a few thousand; `f32` keeps 7 digits).
const SLACK: f32 = 0.5;

/// The most `atom` can score on any path: nucleo-matcher 0.3's scoring
/// (`score.rs`, `fuzzy_optimal.rs`) gives a needle's first character at most
/// `SCORE_MATCH` (16) plus twice the largest boundary bonus (9, after a `/`
/// with `match_paths`) plus half the largest prefix bonus (16 / 2), and each
/// later one at most `SCORE_MATCH` plus that bonus: 42 + 25 for each more.
/// (The crate keeps these constants private; a test below holds the bound to
/// the scores of many paths made to score high.)
fn most_score(atom: &Atom) -> f32 {
    let chars = atom.needle_text().len().max(1) as f32;
    42.0 + 25.0 * (chars - 1.0)
}

/// The best `(score, path, entry)`s offered so far, at most `keep` of them,
/// in the answer's order (score, then the shorter path, then the path).
/// Once full, its last score is a floor: a candidate that cannot score
/// above it cannot enter, and is not scored whole (nor its path made).
struct Page {
    keep: usize,
    /// Whether the floor is used (the tests compare with it unused).
    prune: bool,
    heap: std::collections::BinaryHeap<Ranked>,
}

/// One scored entry, ordered best first (so the heap's top is the worst).
/// (Score, path, entry, and the words it holds only by a typo.)
struct Ranked((f32, String, EntryId, u64));

/// The answer's order of two scored paths: the higher score, then the
/// shorter path, then the path.
fn answer_order((sa, pa): (f32, &str), (sb, pb): (f32, &str)) -> std::cmp::Ordering {
    sb.total_cmp(&sa)
        .then_with(|| pa.len().cmp(&pb.len()))
        .then_with(|| pa.cmp(pb))
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let (a, b) = (&self.0, &other.0);
        answer_order((a.0, &a.1), (b.0, &b.1))
    }
}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ranked {}

impl Page {
    fn new(keep: usize, prune: bool) -> Page {
        Page {
            keep,
            prune,
            heap: std::collections::BinaryHeap::with_capacity(keep.min(4096) + 1),
        }
    }

    /// The score a candidate must beat to enter, once the page is full (and
    /// passing over is asked for).
    fn floor(&self) -> Option<f32> {
        if self.prune && self.keep > 0 && self.heap.len() >= self.keep {
            self.heap.peek().map(|r| r.0.0)
        } else {
            None
        }
    }

    /// `path` scored `score`: kept (its path copied) if it enters the page.
    fn offer(&mut self, score: f32, path: &str, id: EntryId, typo: u64) {
        if self.heap.len() < self.keep {
            self.heap.push(Ranked((score, path.to_string(), id, typo)));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && answer_order((score, path), (worst.0.0, &worst.0.1)).is_lt()
        {
            *worst = Ranked((score, path.to_string(), id, typo));
        }
    }

    /// Best first.
    fn into_sorted(self) -> Vec<(f32, String, EntryId, u64)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

/// Candidates this many or more are scored in parts, one a core.
const SCORE_IN_PARTS_FROM: usize = 2048;

/// What scoring a candidate's whole path reads: the query's words in each
/// form, their scales and bounds, and where the page stops.
struct Scoring<'a> {
    store: &'a Store,
    words: &'a [String],
    folded: &'a [Vec<u8>],
    atoms: &'a [Atom],
    perfect: &'a [f32],
    most_from: &'a [f32],
    typo_words: &'a [bool],
    config: &'a Config,
    keep: usize,
    prune: bool,
    halt: &'a Halt<'a>,
}

impl Scoring<'_> {
    /// The page of `candidates` (entry, typo mask, fixed part), and how many
    /// of them no word's matcher took.
    fn score<'c>(
        &self,
        candidates: impl Iterator<Item = &'c (EntryId, u64, f32)>,
    ) -> (Page, usize) {
        let store = self.store;
        let (atoms, most_from) = (self.atoms, self.most_from);
        let mut matcher = Matcher::new(self.config.clone());
        // `Cover` keeps scratch space: one a thread.
        let cover = Cover::new(self.words, self.folded);
        let mut page = Page::new(self.keep, self.prune);
        let mut rejected = 0usize;
        let (mut path, mut path_bytes, mut folded_path) = (String::new(), Vec::new(), Vec::new());
        let (mut folded_name, mut chars, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        'candidates: for &(id, typos, fixed) in candidates {
            if !self.halt.go() {
                break;
            }
            if let Some(floor) = page.floor() {
                // A root's shown name is not its own: never passed over.
                let lead = if store.parent(id) == crate::store::NONE {
                    EXACT_BONUS
                } else {
                    cover.lead_bound(store.name(id), typos, &mut buf)
                };
                if fixed + lead + most_from[0] + SLACK < floor {
                    continue;
                }
            }
            display_path_into(store, id, &mut path_bytes, &mut path);
            let mut total = fixed + cover.bonus(&path, typos, &mut buf);
            let haystack = if path.is_ascii() {
                Utf32Str::new(&path, &mut chars)
            } else {
                fold_into(path.as_bytes(), &mut folded_path);
                Utf32Str::new(
                    std::str::from_utf8(&folded_path).unwrap_or(&path),
                    &mut chars,
                )
            };
            for (w, a) in atoms.iter().enumerate() {
                if page
                    .floor()
                    .is_some_and(|floor| total + most_from[w] + SLACK < floor)
                {
                    // Cannot reach the page whatever the words left score.
                    continue 'candidates;
                }
                let typo = typos & (1 << w) != 0;
                let s = if typo {
                    None
                } else {
                    a.score(haystack, &mut matcher)
                };
                match s {
                    Some(s) => {
                        let floor = self.perfect[w] * DROPPED_WEIGHT;
                        total += if (s as f32) < floor
                            && self.typo_words[w]
                            && one_letter_more(store.name(id), &self.folded[w], &mut folded_name)
                        {
                            floor
                        } else {
                            s as f32
                        };
                    }
                    None if typo => total += self.perfect[w] * TYPO_WEIGHT,
                    None => {
                        rejected += 1;
                        continue 'candidates;
                    }
                }
            }
            page.offer(total, &path, id, typos);
        }
        (page, rejected)
    }
}

/// At most this many candidates are weighed for the page (a short guess is
/// a subsequence of most paths in a deep tree); `total` still counts them
/// all.
const MAX_SCORED: usize = 40_000;
/// And at most this many bytes of their paths (40,000 paths of 50 bytes;
/// about 3,000 of the 1M synthetic tree's 26-level paths).
const MAX_SCORED_BYTES: usize = 2_000_000;

/// What a path spelling out every word adds, its name exact (or its stem)
/// or starting with them: more than any subsequence score, so they keep
/// their lead (a share of it for a share of the words, [`Cover`]).
const EXACT_BONUS: f32 = 1000.0;
const PREFIX_BONUS: f32 = 400.0;
/// What a generated or vendored folder takes away: a tie-break, so a near
/// tie goes to the files outside while any better match inside wins (fzf
/// knows no such folders, and a tree served for its vendored code, a Python
/// installation's `site-packages`, must still answer: on bench/retrieval.py's
/// Python initials, 60 points gave 21.5% top-1, 20 gave 30.5%, 0 gave 34.0%).
const GENERATED_PENALTY: f32 = 10.0;
/// What a folder of a tool's output takes away (byte code in `__pycache__`,
/// build products in `target`, a version control's store in `.git`), beside
/// the most a lead and the query's words can score: as in plain searches,
/// they come after every other match, the file a name means being the one
/// they were made from, unless the bonuses of two paths differ by more than
/// this (one path 600 folders deeper than the other).
const BUILT_MARGIN: f32 = 1000.0;
/// What a word typed as an abbreviation of the path gets (initials and
/// word starts across folders, the last in the name: `tpurea` for
/// `tokio/src/process/unix/reap.rs`, [`ferret_abbrev`]) at no cost: below a
/// name that starts with the word, above the subsequence scores that tell
/// such a path from a compact scattering of its letters.
const ABBREV_BONUS: f32 = 0.6 * PREFIX_BONUS;
/// How many parts of a path (its name and the folders above it) an
/// abbreviation may span: `tucdec` spans five of
/// `tokio-util/src/codec/decoder.rs`.
const ABBREV_PARTS: usize = 8;

/// The lead of an abbreviation of this cost.
fn abbrev_lead(cost: u32) -> f32 {
    ABBREV_BONUS * ferret_abbrev::share(cost)
}

/// How much of the query a path spells out word for word, for the lead of
/// exact and prefix names: the name equal to a run of the words, joined
/// (`get parameter` is `get-parameter.rst`'s name, `fs copy` `fs_copy.rs`'s),
/// or starting with one, and the other words equal to folders on the way
/// (`ssm` in `examples/ssm/get-parameter.rst`). The lead is
/// [`EXACT_BONUS`] or [`PREFIX_BONUS`] times the share of the typed letters
/// so spelled out: a single word naming the file keeps all of it, and a
/// name equal to one word of several no longer outranks the path that holds
/// every one of them. A path where a word is only scattered (`init` across
/// `cfnlint/data/…/contactlist`) gets none: its name answers part of the
/// query and the rest is a guess. A name one edit from a word of five
/// characters or more (`astar.py` for `asar.py`) is nearly spelled out: it
/// gets [`NEAR_SHARE`] of the lead its word would give.
struct Cover {
    /// The words, folded, separators left out (see [`squeeze`]).
    words: Vec<Vec<u8>>,
    /// The words folded, as typed, and whether each is long enough to
    /// forgive a typo: a name one edit from such a word is nearly spelled out.
    typed: Vec<(Vec<u8>, bool)>,
    /// Their letters in all.
    letters: usize,
    /// Scratch for abbreviations and their leads (one `Cover` serves one
    /// thread).
    abbrev: RefCell<Abbrev>,
    leads: RefCell<Vec<f32>>,
    /// The last name asked whether it can end an abbreviation (by
    /// [`Cover::lead_bound`], then by [`Cover::bonus`] for the same
    /// candidate), the words passed over, and the answer: worked out once.
    ends: RefCell<(Vec<u8>, u64, bool)>,
    /// Scratch for a path as words are held in it as typed.
    held_in: RefCell<Typed>,
}

/// What a name one edit from a word (a letter dropped, added, changed or
/// two swapped: `astar.py` for `asar.py`) gets of the exact name's lead:
/// above most subsequence scores, below a name spelled right and below one
/// that starts with the word (`funct` means `functions.py` before `func.py`:
/// at half the lead, bench/retrieval.py's prefixes under `fuzzy` fell from
/// 33.0% to 31.0% top-1 on the Python tree).
const NEAR_SHARE: f32 = 0.35;

/// The query's words folded as names are.
fn fold_words(words: &[String]) -> Vec<Vec<u8>> {
    words
        .iter()
        .map(|w| {
            let mut f = Vec::new();
            fold_into(w.as_bytes(), &mut f);
            f
        })
        .collect()
}

/// A name's word separators, left out when words and names are compared.
fn is_separator(b: u8) -> bool {
    matches!(b, b'_' | b'-' | b'.' | b' ')
}

/// Whether the folder name `folder` (folded) is `word` (squeezed) with a
/// plural's `s` or `es` after it: `commands` for `command`, `tests` for
/// `test`, `classes` for `class`; what is typed names the folder's
/// subject, and folders are named in the plural as often as not.
fn plural_of(folder: &[u8], word: &[u8]) -> bool {
    if word.len() < 3 {
        return false;
    }
    // The folder's letters without separators, read as they come (this runs
    // for every folder on a candidate's path: nothing is copied).
    let mut letters = folder.iter().copied().filter(|&b| !is_separator(b));
    if !word.iter().all(|&w| letters.next() == Some(w)) {
        return false;
    }
    match [letters.next(), letters.next(), letters.next()] {
        [Some(b's'), None, _] => true,
        // `es` only where English puts it: `classes`, `boxes`, `matches`
        // (not `modes` for `mod`, `notes` for `not`).
        [Some(b'e'), Some(b's'), None] => [&b"s"[..], b"x", b"z", b"ch", b"sh"]
            .iter()
            .any(|end| word.ends_with(end)),
        _ => false,
    }
}

/// `bytes` without word separators.
fn squeeze(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|&b| !is_separator(b))
        .collect()
}

/// A word as it is held "as typed" ([`SearchOutcome::scattered`]): folded as
/// names are (case, accents: `Résumé` holds `resume`), word separators
/// (`_`, `-`, `.`, space) left out. What holds it: [`Typed::holds`].
pub fn typed_form(text: &str) -> Vec<u8> {
    let mut folded = Vec::new();
    fold_into(text.as_bytes(), &mut folded);
    squeeze(&folded)
}

/// A path or name as words are held in it "as typed": folded as names are,
/// word separators left out, each letter marked where a separator was left
/// out right before it.
#[derive(Default)]
pub struct Typed {
    squeezed: Vec<u8>,
    /// By byte of `squeezed`: a separator was left out right before it.
    cut: Vec<bool>,
}

impl Typed {
    /// `text` (as shown) folded and squeezed.
    pub fn of(text: &str) -> Typed {
        let mut folded = Vec::new();
        fold_into(text.as_bytes(), &mut folded);
        let mut typed = Typed::default();
        typed.set(&folded);
        typed
    }

    /// Made again from `folded` (folded already), keeping the room.
    fn set(&mut self, folded: &[u8]) {
        self.squeezed.clear();
        self.cut.clear();
        let mut after = false;
        for &b in folded {
            if is_separator(b) {
                after = !self.squeezed.is_empty();
            } else {
                self.squeezed.push(b);
                self.cut.push(std::mem::take(&mut after));
            }
        }
    }

    /// Whether it holds `word` (a [`typed_form`]): its letters side by side,
    /// within one part or from a part's start on (`python311` in
    /// `python3.11`, `getparam` in `get-parameter`, `fscopy` in
    /// `fs_copy.rs`, `ssl` in `lib/ssl.py` and `SSL_utils`), not from inside
    /// one part into the next (`ssl` is not in `glass.log`).
    pub fn holds(&self, word: &[u8]) -> bool {
        if word.is_empty() {
            return true;
        }
        let (sq, cut) = (&self.squeezed, &self.cut);
        // Every place it starts, overlapping ones too (`find_iter` skips
        // past each match: `pypy` in `numpy_pypy` starts at a part only
        // where the first place, inside `numpy`, was refused).
        let finder = memchr::memmem::Finder::new(word);
        let mut from = 0;
        while let Some(i) = finder.find(&sq[from..]) {
            let at = from + i;
            let starts = at == 0 || cut[at] || sq[at - 1] == b'/';
            if starts || !cut[at + 1..at + word.len()].contains(&true) {
                return true;
            }
            from = at + 1;
        }
        false
    }
}

impl Cover {
    /// For the query's `words` (as typed) and their `folded` forms.
    fn new(words: &[String], folded: &[Vec<u8>]) -> Cover {
        // Long enough to forgive a typo as `near_names` counts it.
        let typed = folded
            .iter()
            .zip(words)
            .map(|(f, w)| {
                (
                    f.clone(),
                    w.chars().count() >= MIN_TYPO_WORD && !w.contains('/'),
                )
            })
            .collect();
        let words: Vec<Vec<u8>> = folded.iter().map(|w| squeeze(w)).collect();
        let letters = words.iter().map(Vec::len).sum();
        Cover {
            words,
            typed,
            letters,
            abbrev: RefCell::default(),
            leads: RefCell::default(),
            ends: RefCell::default(),
            held_in: RefCell::default(),
        }
    }

    /// Whether the (folded) `name` is one edit from word `w`, a word of
    /// five characters or more.
    fn near(&self, w: usize, name: &[u8]) -> bool {
        let (typed, long) = &self.typed[w];
        *long && within_one_edit(name, typed)
    }

    /// Whether `path` (as shown) holds every word as typed (its letters
    /// side by side, case and word separators aside) or one typo off.
    fn holds_every_word(&self, path: &str, typo: u64, buf: &mut Vec<u8>) -> bool {
        self.not_held(path, typo, buf) == 0
    }

    /// The words (a bit each) `path` (as shown) holds neither as typed nor
    /// one typo off (matched by a typo: `typo`; or the name one edit from
    /// it). `buf` is left holding the path folded.
    fn not_held(&self, path: &str, typo: u64, buf: &mut Vec<u8>) -> u64 {
        let shown = path.trim_end_matches('/').as_bytes();
        fold_into(shown, buf);
        let name = buf.rsplit(|&b| b == b'/').next().unwrap_or_default();
        let mut whole = self.held_in.borrow_mut();
        whole.set(buf);
        let mut loose = 0u64;
        for (w, word) in self.words.iter().enumerate().take(64) {
            if !(typo & (1 << w) != 0 || whole.holds(word) || self.near(w, name)) {
                loose |= 1 << w;
            }
        }
        loose
    }

    /// Whether `path` (as shown) holds some word neither as typed (its
    /// letters side by side, case and word separators aside) nor one typo
    /// off (matched by a typo: `typo`; or the name one edit from it): only
    /// as letters scattered along it.
    fn scatters(&self, path: &str, typo: u64, buf: &mut Vec<u8>) -> bool {
        let shown = path.trim_end_matches('/').as_bytes();
        let mut loose = self.not_held(path, typo, buf);
        if loose == 0 {
            return false;
        }
        // Nor as an abbreviation of the path's last parts, as its lead reads
        // them (`tucdec`), or of one folder's name (`tu codec`:
        // `tokio-util/src/codec/mod.rs`).
        let name_from = memchr::memrchr(b'/', shown).map_or(0, |i| i + 1);
        let from = memchr::memrchr_iter(b'/', shown)
            .nth(ABBREV_PARTS - 1)
            .map_or(0, |i| i + 1);
        let mut leads = self.leads.borrow_mut();
        let passed = |leads: &[f32], loose: &mut u64| {
            for (w, &lead) in leads.iter().enumerate().take(64) {
                if lead > 0.0 {
                    *loose &= !(1 << w);
                }
            }
        };
        self.abbrevs(&shown[from..], name_from - from, !loose, false, &mut leads);
        passed(&leads, &mut loose);
        for folder in shown[from..name_from].split(|&b| b == b'/') {
            if loose == 0 {
                break;
            }
            if !folder.is_empty() {
                self.abbrevs(folder, 0, !loose, false, &mut leads);
                passed(&leads, &mut loose);
            }
        }
        loose != 0
    }

    /// Each word's lead as an abbreviation of `text` (its name from byte
    /// `name_from`; ASCII only, else none) into `out`, 0 where it is none
    /// and for the words in `typo` (those matched by a typo, or passed over);
    /// with `open`, the most any path ending in `text` can give
    /// ([`Abbrev::cost`]). Whether any word has one.
    fn abbrevs(
        &self,
        text: &[u8],
        name_from: usize,
        typo: u64,
        open: bool,
        out: &mut Vec<f32>,
    ) -> bool {
        out.clear();
        out.resize(self.words.len(), 0.0);
        let mut abbrev = self.abbrev.borrow_mut();
        let mut loaded = false;
        let mut any = false;
        for (w, word) in self.words.iter().enumerate() {
            if typo & (1 << w) != 0 || word.len() < 2 {
                continue;
            }
            if !loaded {
                if !abbrev.load(text, name_from) {
                    return false;
                }
                loaded = true;
            }
            if let Some(cost) = abbrev.cost(word, open) {
                out[w] = abbrev_lead(cost);
                any = true;
            }
        }
        any
    }

    /// The words the (folded, squeezed) name `sq` starts with, as bits: a
    /// way that starts there leads more than any abbreviation of the word
    /// can, so none is looked for.
    fn starting(&self, sq: &[u8], typo: u64) -> u64 {
        let mut bits = 0;
        for (w, word) in self.words.iter().enumerate().take(64) {
            if typo & (1 << w) == 0 && !word.is_empty() && sq.starts_with(word) {
                bits |= 1 << w;
            }
        }
        bits
    }

    /// Whether `name` (folded; squeezed: `sq`) can have a lead at all: most
    /// candidates hold the words scattered, no name starting with a word nor
    /// near one.
    fn some_way(&self, sq: &[u8], name: &[u8], typo: u64) -> bool {
        (0..self.words.len()).any(|w| {
            let word = &self.words[w];
            (typo & (1 << w) == 0 && !word.is_empty() && sq.starts_with(word)) || self.near(w, name)
        })
    }

    /// The most lead any path ending in an entry named `name` can have: the
    /// lead [`Cover::bonus`] gives if every word the name does not spell
    /// out were a folder on the way (0 when the name can have none: most
    /// names are told by their first letter). With one word it is the lead
    /// itself.
    fn lead_bound(&self, name: &[u8], typo: u64, buf: &mut Vec<u8>) -> f32 {
        if self.letters == 0 {
            return 0.0;
        }
        // Folded as the shown path is (a name that is not UTF-8 escaped).
        if name.is_ascii() {
            fold_into(name, buf);
        } else {
            fold_into(ferret_names::shown(name).as_bytes(), buf);
        }
        let first = buf.iter().copied().find(|&b| !is_separator(b));
        let starts = self.words.iter().enumerate().any(|(w, word)| {
            typo & (1 << w) == 0 && !word.is_empty() && word.first() == first.as_ref()
        });
        let sq = squeeze(buf);
        let mut abbrevs = self.leads.borrow_mut();
        let skip = if starts { self.starting(&sq, typo) } else { 0 };
        let abbreviated = self.abbrevs(name, 0, typo | skip, true, &mut abbrevs);
        let mut ends = self.ends.borrow_mut();
        ends.0.clear();
        ends.0.extend_from_slice(name);
        (ends.1, ends.2) = (typo | skip, abbreviated);
        drop(ends);
        if !starts && !self.typed.iter().any(|(_, long)| *long) && !abbreviated {
            return 0.0;
        }
        if !abbreviated && !self.some_way(&sq, buf, typo) {
            return 0.0;
        }
        self.best_way(buf, &sq, typo, |_| true, |w| abbrevs[w])
    }

    /// The lead of `path` (as shown; a folder's ends with `/`), whose words
    /// in `typo` matched only by a typo (they count as held, never as
    /// spelled out).
    fn bonus(&self, path: &str, typo: u64, buf: &mut Vec<u8>) -> f32 {
        if self.letters == 0 {
            return 0.0;
        }
        let shown = path.trim_end_matches('/').as_bytes();
        fold_into(shown, buf);
        let typoed = |w: usize| typo & (1 << w) != 0;
        let name = buf.rsplit(|&b| b == b'/').next().unwrap_or_default();
        let near = |w: usize| self.near(w, name);
        // The name without separators; its exact forms (`exact_forms`) are
        // prefixes of it, kept below as lengths.
        let sq = squeeze(name);
        let name_from = memchr::memrchr(b'/', shown).map_or(0, |i| i + 1);
        let mut abbrevs = self.leads.borrow_mut();
        // The name alone first (short; known when `lead_bound` just asked):
        // a path abbreviates a word only where its name could end one.
        let skip = typo | self.starting(&sq, typo);
        let own = &shown[name_from..];
        let ends = {
            let e = self.ends.borrow();
            (e.0 == own && e.1 == skip).then_some(e.2)
        };
        let ends = ends.unwrap_or_else(|| self.abbrevs(own, 0, skip, true, &mut abbrevs));
        // An abbreviation spans the last few parts of the path at most: the
        // work stays bounded in a deep tree.
        let abbreviated = ends && {
            let from = memchr::memrchr_iter(b'/', shown)
                .nth(ABBREV_PARTS - 1)
                .map_or(0, |i| i + 1);
            self.abbrevs(&shown[from..], name_from - from, skip, false, &mut abbrevs)
        };
        if !abbreviated {
            abbrevs.clear();
            abbrevs.resize(self.words.len(), 0.0);
        }
        if !abbreviated && !self.some_way(&sq, name, typo) {
            return 0.0;
        }
        // Every word held as typed or as an abbreviation (a typo's word, or
        // one the name is near, aside), else no lead.
        let held = {
            let mut whole = self.held_in.borrow_mut();
            whole.set(buf);
            self.words
                .iter()
                .enumerate()
                .all(|(w, word)| typoed(w) || whole.holds(word) || near(w) || abbrevs[w] > 0.0)
        };
        if !held {
            return 0.0;
        }
        // The other words, each equal to a folder on the way (as typed, or
        // without its version: `rustix` is the folder `rustix-1.1.6`, or
        // its plural).
        let in_folders = |word: &[u8]| {
            let mut parts = buf.split(|&b| b == b'/').rev().skip(1);
            parts.any(|f| {
                let bare = |f: &[u8]| {
                    f.iter()
                        .copied()
                        .filter(|&b| !is_separator(b))
                        .eq(word.iter().copied())
                };
                bare(f)
                    || bare(unversioned(f))
                    || plural_of(f, word)
                    || plural_of(unversioned(f), word)
            })
        };
        // And runs of words, each run a folder's whole name as typed
        // (`serde json de`: `serde_json-1.0.154/src/de.rs`).
        let runs = || {
            let mut covered = 0u64;
            if self.words.len() < 2 {
                return covered;
            }
            let n = self.words.len().min(64);
            let mut bare = Vec::new();
            for f in buf.split(|&b| b == b'/').rev().skip(1) {
                for form in [f, unversioned(f)] {
                    bare.clear();
                    bare.extend(form.iter().copied().filter(|&b| !is_separator(b)));
                    for i in 0..n {
                        let mut at = 0;
                        for j in i..n {
                            let word = &self.words[j];
                            if typoed(j)
                                || word.is_empty()
                                || bare.get(at..at + word.len()) != Some(word)
                            {
                                break;
                            }
                            at += word.len();
                            if at == bare.len() {
                                if j > i {
                                    covered |= (u64::MAX >> (63 - j)) & (u64::MAX << i);
                                }
                                break;
                            }
                        }
                    }
                }
            }
            covered
        };
        let mut found: Vec<Option<bool>> = vec![None; self.words.len()];
        let mut in_runs: Option<u64> = None;
        self.best_way(
            name,
            &sq,
            typo,
            |w| {
                *found[w].get_or_insert_with(|| {
                    in_folders(&self.words[w])
                        || (w < 64 && *in_runs.get_or_insert_with(runs) & (1 << w) != 0)
                })
            },
            |w| abbrevs[w],
        )
    }

    /// The best lead of the ways the (folded) `name` (squeezed: `sq`)
    /// spells out part of the query, each word outside a way counted where
    /// `in_folders` says it is a folder on the way; a word `abbrev` gives a
    /// lead (as an abbreviation of the path) is a way at that lead.
    fn best_way(
        &self,
        name: &[u8],
        sq: &[u8],
        typo: u64,
        mut in_folders: impl FnMut(usize) -> bool,
        abbrev: impl Fn(usize) -> f32,
    ) -> f32 {
        let typoed = |w: usize| typo & (1 << w) != 0;
        // The name as written, before its last or first dot, or without a
        // version (`tokio-util-0.7.20` is `tokio-util`'s folder, as
        // `rustix-1.1.6` is a folder on the way for `rustix`).
        let squeezed_len = |f: &[u8]| f.iter().filter(|&&b| !is_separator(b)).count();
        let [a, b, c] = exact_forms(name).map(squeezed_len);
        let forms = [a, b, c, squeezed_len(unversioned(name))];
        // The runs of words the name equals or starts with, and the words
        // the name is one edit from: each a way to spell out part of the
        // query, at its rate of the lead.
        let mut ways: Vec<(f32, usize, usize, usize)> = Vec::new();
        for i in 0..self.words.len() {
            let mut joined = 0;
            for j in i..self.words.len() {
                if typoed(j) {
                    break;
                }
                let word = &self.words[j];
                if sq.get(joined..joined + word.len()) != Some(word.as_slice()) {
                    break;
                }
                joined += word.len();
                if joined == 0 {
                    continue;
                }
                let rate = if forms.contains(&joined) {
                    EXACT_BONUS
                } else {
                    PREFIX_BONUS
                };
                ways.push((rate, joined, i, j));
            }
        }
        for w in (0..self.words.len()).filter(|&w| self.near(w, name)) {
            ways.push((NEAR_SHARE * EXACT_BONUS, self.words[w].len(), w, w));
        }
        for w in 0..self.words.len() {
            let lead = abbrev(w);
            if lead > 0.0 {
                ways.push((lead, self.words[w].len(), w, w));
            }
        }
        let mut best: f32 = 0.0;
        for (rate, run, i, j) in ways {
            let mut spelled = run;
            for (w, word) in self.words.iter().enumerate() {
                if (i..=j).contains(&w) || typoed(w) || word.is_empty() {
                    continue;
                }
                if in_folders(w) {
                    spelled += word.len();
                }
            }
            best = best.max(spelled as f32 / self.letters as f32 * rate);
        }
        best
    }
}

/// The candidates bounded work keeps, as they are found: the `cap` best by
/// [`Kept::order`], and how many were found in all. The list is cut back to
/// `cap` whenever it reaches twice that, and from then on a candidate below
/// the last one kept is counted and dropped: a million candidates cost a
/// list of at most `2 × cap`, not a million, and the same `cap` are kept.
struct Kept {
    found: Vec<Found>,
    total: usize,
    cap: usize,
    /// The worst candidate kept at the last cut.
    floor: Option<Found>,
}

impl Kept {
    fn new(cap: usize) -> Kept {
        Kept {
            found: Vec::new(),
            total: 0,
            cap: cap.max(1),
            floor: None,
        }
    }

    /// Most words held by the name first; the id breaks ties, so what is
    /// kept does not depend on the order the candidates were found in.
    fn order(a: &Found, b: &Found) -> std::cmp::Ordering {
        b.pre.cmp(&a.pre).then(a.id.cmp(&b.id))
    }

    fn push(&mut self, f: Found) {
        self.total += 1;
        self.offer(f);
    }

    /// Keep `f` if it can be among the best (counted by the caller).
    fn offer(&mut self, f: Found) {
        if let Some(floor) = &self.floor
            && Kept::order(&f, floor).is_gt()
        {
            return;
        }
        self.found.push(f);
        if self.found.len() >= self.cap.saturating_mul(2) {
            self.cut();
        }
    }

    fn cut(&mut self) {
        if self.found.len() > self.cap {
            self.found.select_nth_unstable_by(self.cap - 1, Kept::order);
            self.found.truncate(self.cap);
            self.floor = Some(self.found[self.cap - 1].clone());
        }
    }

    /// Take in what `other` kept and counted: the best `cap` of both, as
    /// if every candidate had been pushed here (what `other` dropped is
    /// below `cap` it kept).
    fn merge(&mut self, other: Kept) {
        self.total += other.total;
        for f in other.found {
            self.offer(f);
        }
    }

    /// The best `cap`, best first.
    fn into_best(mut self) -> Vec<Found> {
        self.cut();
        self.found.sort_unstable_by(Kept::order);
        self.found
    }
}

/// A candidate: its entry, how many words its own name holds (what bounded
/// work keeps first), and which words matched only by a typo.
#[derive(Clone)]
struct Found {
    id: EntryId,
    pre: i32,
    typo: u64,
}

/// What a name that can end an abbreviation of a word ([`TAIL`]) adds to
/// the order bounded work keeps candidates in: below a name that holds the
/// word, above the paths that merely spread it.
const TAIL_PRE: i32 = 800;

/// How each distinct name answers each word, worked out once per query in
/// the dictionary's order (sequential reads; an entry then costs a lookup).
struct NameFits {
    /// By name key and word: the least `from` such that the word's bytes
    /// from there on are a subsequence of the (folded) name.
    need: Vec<u8>,
    /// By name key and word: [`STARTS`], [`HOLDS`], [`NEAR`].
    flags: Vec<u8>,
    /// The names that can match, in key order (see [`may_match`]).
    maybe: Vec<u32>,
    /// The words (folded).
    words: Vec<Vec<u8>>,
}

/// The name starts with the word.
const STARTS: u8 = 1;
/// The name holds the word whole.
const HOLDS: u8 = 2;
/// The name (or its stem) is one edit from the word.
const NEAR: u8 = 4;
/// The name holds only an end of the word, and starts with two letters
/// side by side in it: it can end the word typed as an abbreviation
/// (`mount_unmount.rs` for `rmmou`), which bounded work weighs first.
const TAIL: u8 = 8;

/// Whether `name` (folded, or ASCII as it is) starts (its letters and
/// digits) with two bytes side by side in `end`.
fn starts_with_pair_of(name: &[u8], end: &[u8]) -> bool {
    let mut units = name
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(u8::to_ascii_lowercase);
    match (units.next(), units.next()) {
        (Some(a), Some(b)) => end.windows(2).any(|p| p == [a, b]),
        _ => false,
    }
}

impl NameFits {
    /// `bound[w]`: the most of word `w` any folder's path takes (its
    /// length where a folder is one edit from it): a name that needs more
    /// of the word than that can match no entry, so its `need` is set to
    /// the word's length without reading the name when its [`byte_mask`]
    /// lacks a byte of the part left to it (or the word's last byte, when
    /// that is exact: the name holds none of the word's end).
    fn new(
        store: &Store,
        words: &[Vec<u8>],
        near: &[Option<Near>],
        bound: &[usize],
        halt: &Halt,
    ) -> NameFits {
        let threads = threads_for(store.names.len() as usize * words.len());
        NameFits::with_threads(store, words, near, bound, halt, threads)
    }

    /// [`NameFits::new`] on `threads` threads (the tests ask for more than
    /// their small stores would get).
    fn with_threads(
        store: &Store,
        words: &[Vec<u8>],
        near: &[Option<Near>],
        bound: &[usize],
        halt: &Halt,
        threads: usize,
    ) -> NameFits {
        let n = words.len();
        if n == 0 {
            return NameFits {
                need: Vec::new(),
                flags: Vec::new(),
                maybe: Vec::new(),
                words: Vec::new(),
            };
        }
        let count = store.names.len() as usize;
        let sorted = (store.names.sorted_len() as usize).min(count);
        let step = count.div_ceil(threads).max(1);
        // What the name must hold of each word: the part past its bound
        // (and past a `/` there, which a folder boundary stands for), and
        // its last byte (without it, a name holds none of the word's end:
        // its `need` is the word's length, which the mask tells unread).
        let rests: Vec<&[u8]> = words
            .iter()
            .zip(bound)
            .map(|(w, &b)| {
                let b = if w.get(b) == Some(&b'/') { b + 1 } else { b };
                &w[b.min(w.len())..]
            })
            .collect();
        let rest_masks: Vec<u32> = words
            .iter()
            .zip(&rests)
            .map(|(w, rest)| byte_mask(rest) | w.last().map_or(0, |&l| byte_bit(l)))
            .collect();
        // The bytes of that part the mask cannot tell apart from others
        // (digits, `-`, `_`, space, other punctuation share bits), looked for
        // one by one in an ASCII name before it is read: a name of the 1M
        // tree holds most of a word's letters and some digit of each third,
        // and one guess read 55,000 names whole.
        let rest_exact: Vec<Vec<u8>> = rests
            .iter()
            .map(|rest| {
                let mut exact: Vec<u8> = rest
                    .iter()
                    .copied()
                    .filter(|&c| c.is_ascii() && !c.is_ascii_lowercase() && c != b'.')
                    .collect();
                exact.sort_unstable();
                exact.dedup();
                exact.truncate(4);
                exact
            })
            .collect();
        // A name the mask tells unread keeps the defaults: each word's
        // length as its `need`, no flags. Whether such a word still lets
        // the name match (a folder path that takes it whole):
        let unread_fits: Vec<bool> = words
            .iter()
            .zip(bound)
            .map(|(w, &b)| word_may_match(w, b, w.len() as u8, 0))
            .collect();
        // Written only for the names read, in place: most names are told
        // unread by their mask, and the flags' untouched pages are never
        // even made (one pass over a million names went from 8 ms to 2).
        let unread_fit = unread_fits.iter().all(|&f| f);
        let row: Vec<u8> = words.iter().map(|w| w.len() as u8).collect();
        let mut need = row.repeat(count);
        let mut flags = vec![0u8; count * n];
        // Made once: a searcher set up for each name read costs more than
        // the search.
        let finders: Vec<memchr::memmem::Finder<'_>> =
            words.iter().map(memchr::memmem::Finder::new).collect();
        let mut maybe: Vec<u32> = std::thread::scope(|scope| {
            let handles: Vec<_> = need
                .chunks_mut(step * n)
                .zip(flags.chunks_mut(step * n))
                .enumerate()
                .map(|(t, (need, flags))| {
                    let (rest_masks, rest_exact, unread_fits, finders) =
                        (&rest_masks, &rest_exact, &unread_fits, &finders);
                    scope.spawn(move || {
                        let from = t * step;
                        let to = from + need.len() / n;
                        // The names that can match by what they hold (the
                        // words one edit away are added after).
                        let mut maybe = Vec::new();
                        let mut buf = Vec::new();
                        let masks = store.names.masks();
                        let mut read = Vec::with_capacity(1024);
                        for at in (from..to).step_by(1024) {
                            if !halt.go() {
                                // Stopped: the answer is thrown away.
                                break;
                            }
                            let end = (at + 1024).min(to);
                            // The names whose masks hold some word's rest,
                            // in a loop that does nothing else: most names
                            // are told unread here, a few cycles each.
                            read.clear();
                            if unread_fit {
                                read.extend(at..end);
                            } else {
                                let known = &masks[at.min(masks.len())..end.min(masks.len())];
                                for (i, &m) in known.iter().enumerate() {
                                    if rest_masks.iter().any(|&r| r & !m == 0) {
                                        read.push(at + i);
                                    }
                                }
                                read.extend(at + known.len()..end);
                            }
                            for &k in &read {
                                let mask = store.names.mask(k as u32);
                                let row = (k - from) * n;
                                let mut fits = true;
                                let mut folded = false;
                                let mut ascii: Option<bool> = None;
                                let raw = store.names.get(k as u32);
                                for (w, word) in words.iter().enumerate() {
                                    if mask & rest_masks[w] != rest_masks[w]
                                        || (!rest_exact[w].is_empty()
                                            && *ascii.get_or_insert_with(|| raw.is_ascii())
                                            && rest_exact[w]
                                                .iter()
                                                .any(|&c| memchr::memchr(c, raw).is_none()))
                                    {
                                        // Holds too little of the word to match,
                                        // or none of its end: the defaults.
                                        fits &= unread_fits[w];
                                        continue;
                                    }
                                    // Greedy from the right: the longest end of
                                    // the word the name holds in order. (An
                                    // ASCII name is folded as it is read: most
                                    // names read here are not kept.)
                                    let i = if !folded
                                        && *ascii.get_or_insert_with(|| raw.is_ascii())
                                    {
                                        held_end(word, raw)
                                    } else {
                                        if !folded {
                                            fold_into(raw, &mut buf);
                                            folded = true;
                                        }
                                        held_end(word, &buf)
                                    };
                                    let mut f = 0;
                                    if i == 0 {
                                        if !folded {
                                            fold_into(raw, &mut buf);
                                            folded = true;
                                        }
                                        if buf.starts_with(word) {
                                            f |= STARTS | HOLDS;
                                        } else if finders[w].find(&buf).is_some() {
                                            f |= HOLDS;
                                        }
                                    } else if i + 2 <= word.len()
                                        && starts_with_pair_of(
                                            if folded { &buf } else { raw },
                                            &word[i..],
                                        )
                                    {
                                        f |= TAIL;
                                    }
                                    need[row + w] = i as u8;
                                    flags[row + w] = f;
                                    fits &= word_may_match(word, bound[w], i as u8, f);
                                }
                                if fits {
                                    maybe.push(k as u32);
                                }
                            }
                        }
                        maybe
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a fuzzy name pass panicked"))
                .collect()
        });
        // The names one edit from a word: from the trigram lists for the
        // names the orders know, read directly for the names added since.
        let mut near_keys = Vec::new();
        for (w, nr) in near.iter().enumerate() {
            let Some(nr) = nr else { continue };
            for &k in &nr.keys {
                if (k as usize) < sorted {
                    flags[k as usize * n + w] |= NEAR;
                    near_keys.push(k);
                }
            }
        }
        if near.iter().any(Option::is_some) {
            let mut buf = Vec::new();
            for k in sorted..count {
                fold_into(store.names.get(k as u32), &mut buf);
                for (w, word) in words.iter().enumerate() {
                    if near[w].is_some() && within_one_edit(&buf, word) {
                        flags[k * n + w] |= NEAR;
                        near_keys.push(k as u32);
                    }
                }
            }
        }
        let before = maybe.len();
        for &k in &near_keys {
            let at = k as usize * n..k as usize * n + n;
            if may_match(words, bound, &need[at.clone()], &flags[at]) {
                maybe.push(k);
            }
        }
        if maybe.len() > before {
            maybe.sort_unstable();
            maybe.dedup();
        }
        NameFits {
            need,
            flags,
            maybe,
            words: words.to_vec(),
        }
    }

    /// The names that can match, in key order, when their entries are few
    /// enough (an eighth of the index) to be read by name rather than by
    /// reading every entry.
    fn survivors(&self, store: &Store) -> Option<Vec<u32>> {
        if self.words.is_empty() {
            return None;
        }
        let limit = store.len() / 8;
        let mut entries = 0;
        for &k in &self.maybe {
            if k < store.names.sorted_len() {
                entries += store.base.named(k).len();
                if entries > limit {
                    return None;
                }
            }
        }
        Some(self.maybe.clone())
    }
}

/// Whether a name with these `need`s and `flags` (one each a word) can match
/// some entry: each word within its `bound` (counting a `/` a folder
/// boundary stands for) or one edit away.
fn may_match(words: &[Vec<u8>], bound: &[usize], need: &[u8], flags: &[u8]) -> bool {
    words
        .iter()
        .enumerate()
        .all(|(w, word)| word_may_match(word, bound[w], need[w], flags[w]))
}

/// [`may_match`] for one word.
#[inline]
fn word_may_match(word: &[u8], bound: usize, need: u8, flags: u8) -> bool {
    let need = need as usize;
    need <= bound || (need > 0 && word[need - 1] == b'/' && need - 1 <= bound) || flags & NEAR != 0
}

/// The least `i` such that `word[i..]` (folded) is a subsequence of `name`,
/// folded or an ASCII name as it is: greedy from the right, each byte
/// compared with the byte looked for in both ASCII cases (lowering each byte
/// first was most of a broad guess's pass over every name), that byte held
/// apart as in [`advance`].
#[inline]
fn held_end(word: &[u8], name: &[u8]) -> usize {
    let mut i = word.len();
    let Some(&last) = word.last() else {
        return 0;
    };
    let (mut lower, mut upper) = (last, last.to_ascii_uppercase());
    for &b in name.iter().rev() {
        if b == lower || b == upper {
            i -= 1;
            match i.checked_sub(1) {
                Some(j) => (lower, upper) = (word[j], word[j].to_ascii_uppercase()),
                None => break,
            }
        }
    }
    i
}

/// Greedily match `word` from `from` over `name` (after a `/` when `sep`).
fn advance(word: &[u8], mut from: usize, sep: bool, name: &[u8]) -> usize {
    if sep && word.get(from) == Some(&b'/') {
        from += 1;
    }
    // The byte looked for is held apart and changed only on a match: read
    // from the word at each byte, every step waited on a load (a folder
    // pass over the 1M tree's 100,000 folders spent most of its time so).
    let Some(&first) = word.get(from) else {
        return from;
    };
    let mut want = first;
    for &b in name {
        if b == want {
            from += 1;
            match word.get(from) {
                Some(&next) => want = next,
                None => break,
            }
        }
    }
    from
}

/// [`advance`] through a folder's name whose
/// [`byte_bits`](crate::folders::byte_bits) are `mask`: the
/// name is passed over unread when it lacks the byte the word looks for
/// next (most folders of a pass, once a word's start is used up).
#[inline]
fn advance_masked(word: &[u8], from: usize, sep: bool, name: &[u8], mask: u64) -> usize {
    let at = if sep && word.get(from) == Some(&b'/') {
        from + 1
    } else {
        from
    };
    match word.get(at) {
        Some(&b) if mask & byte_bit64(b) != 0 => advance(word, from, sep, name),
        _ => at,
    }
}

/// A folder still to read: how far each word got through its path, the
/// words a folder on its path is one edit from, its depth.
#[cfg(test)]
struct Pending {
    folder: EntryId,
    consumed: Vec<u8>,
    typos: u64,
    depth: u16,
}

/// Every live entry whose path holds each word as a subsequence (or whose
/// name, or a folder's above it, is one edit from it): one walk down the
/// folders, each word matched greedily through each folder's path, the rest
/// of it looked up in the entry's name's fits. The reference the tests hold
/// [`scan_all`] and [`by_names`] to.
#[cfg(test)]
fn candidates(
    store: &Store,
    words: &[Vec<u8>],
    fits: &NameFits,
    request: &FuzzyRequest<'_>,
    halt: &Halt,
    out: &mut Kept,
) {
    let n = words.len();
    let single = store.roots().len() == 1;
    let mut stack = Vec::new();
    let mut buf = Vec::new();
    for &top in store.roots() {
        fold_into(store.name(top), &mut buf);
        let consumed = words
            .iter()
            .map(|w| {
                if single {
                    0
                } else {
                    advance(w, 0, false, &buf) as u8
                }
            })
            .collect();
        stack.push(Pending {
            folder: top,
            consumed,
            typos: 0,
            depth: 0,
        });
    }
    while let Some(at) = stack.pop() {
        if !halt.go() {
            break;
        }
        let sep = !(single && store.parent(at.folder) == crate::store::NONE);
        for &child in store.children(at.folder) {
            let k = store.names_of[child as usize] as usize;
            let from = At {
                consumed: &at.consumed,
                typos: at.typos,
                depth: at.depth,
                sep,
            };
            let fit = (
                &fits.need[k * n..k * n + n],
                &fits.flags[k * n..k * n + n],
                store.name(child).len(),
            );
            if let Some(found) = test_entry(store, words, fit, child, &from, request) {
                out.push(found);
            }
            if store.kind(child) == crate::store::Kind::Dir {
                fold_into(store.name(child), &mut buf);
                let consumed = words
                    .iter()
                    .enumerate()
                    .map(|(w, word)| advance(word, at.consumed[w] as usize, sep, &buf) as u8)
                    .collect();
                let mut typos = at.typos;
                for (w, &f) in fits.flags[k * n..k * n + n].iter().enumerate() {
                    if f & NEAR != 0 && w < 64 {
                        typos |= 1 << w;
                    }
                }
                stack.push(Pending {
                    folder: child,
                    consumed,
                    typos,
                    depth: at.depth.saturating_add(1),
                });
            }
        }
    }
}

/// Where an entry's folder leaves the words: how far each got through its
/// path, the words a folder on the way is one edit from, its depth, and
/// whether a `/` stands between it and its entries.
struct At<'a> {
    consumed: &'a [u8],
    typos: u64,
    depth: u16,
    sep: bool,
}

/// Whether `child`, its name fitting the words so (`need`, `flags`, the
/// name's length), in a folder that leaves the words `at`, matches every
/// word (through its path or one edit away), below `under` and past the
/// filter; with the score bounded work keeps first.
fn test_entry(
    store: &Store,
    words: &[Vec<u8>],
    (need, flags, name_len): (&[u8], &[u8], usize),
    child: EntryId,
    at: &At<'_>,
    request: &FuzzyRequest<'_>,
) -> Option<Found> {
    let mut found = Found {
        id: child,
        pre: -16 * i32::from(at.depth),
        typo: 0,
    };
    for (w, word) in words.iter().enumerate() {
        let mut need = need[w] as usize;
        if at.sep && need > 0 && word[need - 1] == b'/' {
            need -= 1;
        }
        if at.consumed[w] as usize >= need {
            let f = flags[w];
            found.pre += if f & STARTS != 0 {
                2000
            } else if f & HOLDS != 0 {
                1500
            } else if need == 0 {
                1000
            } else if f & TAIL != 0 {
                TAIL_PRE
            } else {
                0
            };
        } else if flags[w] & NEAR != 0 || at.typos & (1 << w) != 0 {
            found.typo |= 1 << w;
            found.pre += 500;
        } else {
            return None;
        }
    }
    // Below `under` and past the filter before anything is cut, so
    // bounded work never spends itself on entries the answer drops.
    if in_scope(store, child, request) {
        found.pre -= name_len as i32;
        Some(found)
    } else {
        None
    }
}

/// How far each word gets through every folder's path (the folder's own
/// name included), the words a folder on the way is one edit from, and its
/// depth, by the folder's place in the [`FolderTable`]: one pass over the
/// table, each folder worked out from its parent's (kept by place, the
/// pass writes in order and reads a parent lately written: by slot, each
/// folder's writes and its parent's reads were cache misses). `bound` is
/// the most of each word any folder takes.
struct Reach {
    table: Arc<FolderTable>,
    consumed: Vec<u8>,
    typos: Vec<u64>,
    depth: Vec<u16>,
    /// The places worked out: all of them, unless stopped.
    done: usize,
    bound: Vec<usize>,
}

impl Reach {
    /// `typo_words[w]`: whether word `w` forgives a typo ([`forgives_typo`]).
    fn new(store: &Store, words: &[Vec<u8>], typo_words: &[bool], halt: &Halt) -> Reach {
        let table = folder_table(store);
        let threads = threads_for(table.len() * words.len().max(1));
        Reach::in_parts(store, table, words, typo_words, halt, threads)
    }

    /// [`Reach::new`] on `threads` threads. The table lists each folder's
    /// subtree right after it (it is made by a walk down from the roots), so
    /// a part of its places whose parent lies before the part has an
    /// ancestor of the part's first place for parent: each part works those
    /// few out first (the path down to its first place), then its own in
    /// order. One pass on one core, every name read, was 3.3–3.7 ms of the
    /// 1M tree's 100,000 folders, the most of an exact name's fuzzy query
    /// (with the folders' byte masks, 2.7 ms; in parts on two cores, 1.7).
    fn in_parts(
        store: &Store,
        table: Arc<FolderTable>,
        words: &[Vec<u8>],
        typo_words: &[bool],
        halt: &Halt,
        threads: usize,
    ) -> Reach {
        let n = words.len();
        let single = store.roots().len() == 1;
        // Parents before their folders, names folded, read in one sequence.
        let places = table.len();
        let mut consumed = vec![0u8; places * n];
        let mut typos = vec![0u64; places];
        let mut depth = vec![0u16; places];
        // Twice as many parts as threads: parts taken as threads come free
        // even out their costs.
        let parts = if threads > 1 { threads * 2 } else { 1 };
        let step = places.div_ceil(parts).max(1);
        let mut rows = &mut consumed[..];
        let slices: Vec<Mutex<Option<PartRows<'_>>>> = typos
            .chunks_mut(step)
            .zip(depth.chunks_mut(step))
            .map(|(t, d)| {
                let (c, rest) = std::mem::take(&mut rows).split_at_mut(t.len() * n);
                rows = rest;
                Mutex::new(Some((c, t, d)))
            })
            .collect();
        let table_ref = &table;
        let done_parts = crate::cores::in_parts(slices.len(), threads, |part| {
            let (consumed, typos, depth) = slices[part]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .expect("each part is taken once");
            let from = part * step;
            reach_part(
                table_ref, words, typo_words, single, halt, from, consumed, typos, depth,
            )
        });
        drop(slices);
        let mut bound = vec![0usize; n];
        let mut all_typos = 0u64;
        let mut done = places;
        for (part, (part_bound, part_typos, stopped)) in done_parts.into_iter().enumerate() {
            for (b, p) in bound.iter_mut().zip(part_bound) {
                *b = (*b).max(p);
            }
            all_typos |= part_typos;
            if let Some(at) = stopped {
                done = done.min(part * step + at);
            }
        }
        for (w, word) in words.iter().enumerate() {
            if w < 64 && all_typos & (1 << w) != 0 {
                bound[w] = word.len();
            }
        }
        Reach {
            table,
            consumed,
            typos,
            depth,
            done,
            bound,
        }
    }

    /// The place of the folder in `slot`, if worked out.
    fn place(&self, slot: usize) -> Option<usize> {
        self.table.place_of(slot).filter(|&p| p < self.done)
    }
}

/// A part's slices of a [`Reach`]'s rows, typos and depths.
type PartRows<'a> = (&'a mut [u8], &'a mut [u64], &'a mut [u16]);

/// One folder's row of a [`Reach`] worked out from its parent's
/// (`None` for a root): how far each word gets through its path, the words
/// a folder on the way is one edit from, its depth; each word's reach
/// widens `bound`, each typo is added to `all_typos`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn reach_row(
    words: &[Vec<u8>],
    typo_words: &[bool],
    single: bool,
    name: &[u8],
    mask: u64,
    parent: Option<(&[u8], u64, u16, bool)>,
    out: &mut [u8],
    bound: &mut [usize],
) -> (u64, u16) {
    let Some((from, parent_typos, parent_depth, parent_is_root)) = parent else {
        if !single {
            for (w, word) in words.iter().enumerate() {
                let c = advance(word, 0, false, name) as u8;
                out[w] = c;
                bound[w] = bound[w].max(c as usize);
            }
        }
        return (0, 0);
    };
    let sep = !(single && parent_is_root);
    let mut t = parent_typos;
    for (w, word) in words.iter().enumerate() {
        let c = advance_masked(word, from[w] as usize, sep, name, mask);
        out[w] = c as u8;
        bound[w] = bound[w].max(c);
        // Read from the folded name itself, not from the names one edit
        // away (`near_names`, the same set: a test checks it), so that the
        // two are worked out at once. One edit away needs a length within
        // one of the word's, for the name or its stem.
        if typo_words[w] && one_edit_long(name, word) && within_one_edit(name, word) {
            t |= 1 << w;
        }
    }
    (t, parent_depth.saturating_add(1))
}

/// The places `from..from + typos.len()` of a [`Reach`], written to the
/// part's own slices: each word's bound over them, the words some of them
/// are one edit from, and where the part stopped if `halt` said so.
#[allow(clippy::too_many_arguments)]
fn reach_part(
    table: &FolderTable,
    words: &[Vec<u8>],
    typo_words: &[bool],
    single: bool,
    halt: &Halt,
    from: usize,
    consumed: &mut [u8],
    typos: &mut [u64],
    depth: &mut [u16],
) -> (Vec<usize>, u64, Option<usize>) {
    let n = words.len();
    let mut bound = vec![0usize; n];
    let mut all_typos = 0u64;
    // The part's first place's ancestors, outermost first, each with its
    // row: the only parents before the part (see [`Reach::in_parts`]).
    let mut chain: Vec<usize> = Vec::new();
    if from < table.len() {
        let mut up = table.parents[from];
        while up != ROOT {
            chain.push(up as usize);
            up = table.parents[up as usize];
        }
        chain.reverse();
    }
    let mut chain_rows = vec![0u8; chain.len() * n];
    let mut chain_vals: Vec<(u64, u16)> = Vec::with_capacity(chain.len());
    // Their bounds and typos are their own parts' to count.
    let mut unused = vec![0usize; n];
    for (i, &place) in chain.iter().enumerate() {
        let (done, rest) = chain_rows.split_at_mut(i * n);
        let parent = (i > 0).then(|| {
            let pp = chain[i - 1];
            let (t, d) = chain_vals[i - 1];
            let is_root = table.parents[pp] == ROOT;
            (&done[(i - 1) * n..], t, d, is_root)
        });
        chain_vals.push(reach_row(
            words,
            typo_words,
            single,
            table.name(place),
            table.mask(place),
            parent,
            &mut rest[..n],
            &mut unused,
        ));
    }
    for i in 0..typos.len() {
        if (i & 4095) == 0 && !halt.go() {
            return (bound, all_typos, Some(i));
        }
        let place = from + i;
        let (before, row) = consumed.split_at_mut(i * n);
        let parent = match table.parents[place] as usize {
            p if p == ROOT as usize => None,
            p => {
                let (row, t, d) = match p.checked_sub(from) {
                    Some(pp) => (&before[pp * n..pp * n + n], typos[pp], depth[pp]),
                    None => {
                        let at = chain
                            .binary_search(&p)
                            .expect("a parent before a part is an ancestor of its first place");
                        let (t, d) = chain_vals[at];
                        (&chain_rows[at * n..at * n + n], t, d)
                    }
                };
                Some((row, t, d, table.parents[p] == ROOT))
            }
        };
        let (t, d) = reach_row(
            words,
            typo_words,
            single,
            table.name(place),
            table.mask(place),
            parent,
            &mut row[..n],
            &mut bound,
        );
        typos[i] = t;
        depth[i] = d;
        all_typos |= t;
    }
    (bound, all_typos, None)
}

/// The store's folders as [`Reach`] reads them: the table kept with the
/// store, made again (a walk down from the roots) when the folders changed.
fn folder_table(store: &Store) -> Arc<FolderTable> {
    store.folders.get(store.folder_stamp, || {
        let mut table = FolderTable::new(store.folder_stamp);
        let mut buf = Vec::new();
        let mut stack: Vec<(EntryId, u32)> =
            store.roots().iter().rev().map(|&r| (r, ROOT)).collect();
        while let Some((id, parent)) = stack.pop() {
            let Some(slot) = store.dir_slot(id) else {
                continue;
            };
            let name = store.name(id);
            fold_into(name, &mut buf);
            // A root's entries lie at its top: a root adds nothing to a place.
            let fixed = match parent {
                ROOT => Place::default(),
                p => Place::unpack(table.fixed(p as usize)).below(name),
            };
            let place = table.push(id, slot as u32, parent, &buf, fixed.pack());
            for &child in store.children(id) {
                if store.kind(child) == crate::store::Kind::Dir {
                    stack.push((child, place));
                }
            }
        }
        table
    })
}

/// The places of the candidates' folders ([`Ranker::place`]) read off the
/// folder table: its fixed part kept there, the query's words (with
/// several) worked out once per folder through the table's folded names.
/// Climbing the store's records and names instead, a cache miss a folder,
/// was a quarter of a name start's fuzzy query at 1M entries.
struct TablePlaces<'t> {
    table: &'t FolderTable,
    words: &'t [Vec<u8>],
    /// By table place: the words met on the way to it, with bit 16 set once
    /// known.
    met: Vec<u32>,
    chain: Vec<usize>,
}

const MET: u32 = 1 << 16;

impl<'t> TablePlaces<'t> {
    fn new(table: &'t FolderTable, words: &'t [Vec<u8>]) -> TablePlaces<'t> {
        TablePlaces {
            table,
            words,
            met: Vec::new(),
            chain: Vec::new(),
        }
    }

    /// The place of the folder `dir` as [`Ranker::place`] gives it for the
    /// ranker's folder words; `None` if the table does not hold it.
    fn place(&mut self, store: &Store, dir: EntryId) -> Option<Place> {
        if dir == crate::store::NONE {
            return Some(Place::default());
        }
        let at = self.table.place_of(store.dir_slot(dir)?)?;
        let fixed = Place::unpack(self.table.fixed(at));
        if self.words.is_empty() {
            return Some(fixed);
        }
        if self.met.is_empty() {
            self.met = vec![0; self.table.len()];
        }
        // Climb to a folder whose words are known (or to the root), then
        // work them out on the way back down.
        let mut from;
        let mut up = at;
        self.chain.clear();
        loop {
            if self.met[up] & MET != 0 {
                from = self.met[up];
                break;
            }
            match self.table.parents[up] {
                // A root's own name is not on its entries' way.
                ROOT => {
                    self.met[up] = MET;
                    from = MET;
                    break;
                }
                parent => {
                    self.chain.push(up);
                    up = parent as usize;
                }
            }
        }
        for &folder in self.chain.iter().rev() {
            from |= u32::from(folder_name_words(self.table.name(folder), self.words));
            self.met[folder] = from;
        }
        Some(fixed.with_words((from & !MET) as u16))
    }
}

/// What the candidates are tested against: the store, the words (folded),
/// each name's fits to them, how far they get through each folder, the
/// request, and when to give up.
struct Pass<'a> {
    store: &'a Store,
    words: &'a [Vec<u8>],
    fits: &'a NameFits,
    reach: &'a Reach,
    request: &'a FuzzyRequest<'a>,
    halt: &'a Halt<'a>,
}

/// [`candidates`] read by name: the entries bearing one of `keys` (the
/// names that can match, in key order), each tested against its folder's
/// reach; the same set the walk finds.
fn by_names(pass: &Pass<'_>, keys: &[u32], out: &mut Kept) {
    by_names_on(pass, keys, out, None);
}

/// [`by_names`] in `threads` parts, or as many as the work is worth.
fn by_names_on(pass: &Pass<'_>, keys: &[u32], out: &mut Kept, threads: Option<usize>) {
    let (store, halt) = (pass.store, pass.halt);
    let b = &store.base;
    // Every entry bearing one of the names, then tested in stages.
    let mut ids: Vec<EntryId> = Vec::new();
    for &k in keys {
        if k >= store.names.sorted_len() {
            // Names appended since the orders were built are the delta's.
            break;
        }
        if !halt.go() {
            return;
        }
        ids.extend_from_slice(&b.by_name[b.named(k)]);
    }
    let known = ids.len();
    ids.extend(
        store
            .delta_entries()
            .filter(|&id| keys.binary_search(&store.names_of[id as usize]).is_ok()),
    );
    // In parts on as many threads as they are worth, each keeping its own
    // best (a word's start on the 1M tree bears 30,000 entries).
    let threads = threads.unwrap_or_else(|| threads_for(ids.len()));
    let step = ids.len().div_ceil(threads).max(1);
    in_parts(out, ids.chunks(step).enumerate(), |(t, part), kept| {
        let known = known.saturating_sub(t * step).min(part.len());
        test_ids(pass, part, known, kept);
    });
}

/// `test` run on each of `parts`, each on its own thread (the calling one
/// when there is one part) with its own [`Kept`], the kept then merged into
/// `out`: the same best, and the same count, as one pass over them all.
fn in_parts<P: Send>(
    out: &mut Kept,
    parts: impl Iterator<Item = P>,
    test: impl Fn(P, &mut Kept) + Sync,
) {
    let mut parts = parts.peekable();
    let Some(first) = parts.next() else {
        return;
    };
    if parts.peek().is_none() {
        return test(first, out);
    }
    let cap = out.cap;
    let test = &test;
    let kept: Vec<Kept> = std::thread::scope(|scope| {
        let others: Vec<_> = parts
            .map(|p| {
                scope.spawn(move || {
                    let mut kept = Kept::new(cap);
                    test(p, &mut kept);
                    kept
                })
            })
            .collect();
        test(first, out);
        others
            .into_iter()
            .map(|h| h.join().expect("a fuzzy candidate pass panicked"))
            .collect()
    });
    for k in kept {
        out.merge(k);
    }
}

/// Every live entry, in id order, tested against its folder's reach as
/// [`by_names`] tests its entries: the same set the walk down the tree
/// finds ([`candidates`]), read in order rather than by chasing each
/// folder's children (a million entries, each record and name a cache
/// miss in the walk).
fn scan_all(pass: &Pass<'_>, out: &mut Kept) {
    scan_all_on(pass, out, None);
}

/// [`scan_all`] in `threads` parts, or as many as the work is worth (a
/// broad guess on the 1M tree spent 45 ms here on one).
fn scan_all_on(pass: &Pass<'_>, out: &mut Kept, threads: Option<usize>) {
    let store = pass.store;
    let count = store.records.len() as EntryId;
    let threads = threads.unwrap_or_else(|| threads_for(count as usize)) as EntryId;
    let step = count.div_ceil(threads).max(1);
    let parts = (0..threads).map(|t| t * step..count.min((t + 1).saturating_mul(step)));
    in_parts(out, parts, |part, kept| {
        let mut ids = Vec::with_capacity(4096);
        for from in part.clone().step_by(4096) {
            if !pass.halt.go() {
                return;
            }
            ids.clear();
            ids.extend(
                (from..part.end.min(from.saturating_add(4096)))
                    .filter(|&id| store.kind(id) != crate::store::Kind::Free),
            );
            test_ids(pass, &ids, 0, kept);
        }
    });
}

/// Test `ids` against their folders' reach, in stages: each stage's loads
/// are independent of one another, so many are in flight at once. (Entry
/// by entry, its record, its folder's record and the folder's place were
/// three cache misses in a row: a name's start on the 1M tree, 30,000
/// entries, spent 14 ms so.) The first `known` come from the orders: those
/// the orders no longer stand for are passed over. Roots are not tested.
fn test_ids(pass: &Pass<'_>, ids: &[EntryId], known: usize, out: &mut Kept) {
    use crate::store::NONE;
    let Pass {
        store,
        words,
        fits,
        reach,
        request,
        halt,
    } = *pass;
    let n = words.len();
    let single = store.roots().len() == 1;
    // The entry's folder (none for an entry the orders hold but no longer
    // stand for) and its name.
    let parents: Vec<(EntryId, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            if i < known && crate::orders::skipped(store, id) {
                (NONE, 0)
            } else {
                (store.parent(id), store.names_of[id as usize])
            }
        })
        .collect();
    // The folder's place in the reach, and whether a `/` stands between it
    // and its entries; the name's fits (`need`, then `flags`, copied) and
    // length.
    let mut rows = vec![0u8; parents.len() * 2 * n];
    let places: Vec<Option<(u32, bool, u16)>> = parents
        .iter()
        .zip(rows.chunks_mut(2 * n))
        .map(|(&(p, k), row)| {
            if p == NONE {
                return None;
            }
            let place = store.dir_slot(p).and_then(|ps| reach.place(ps))?;
            // (Byte by byte: a copy of a length not known until now was a
            // call to `memmove` per entry, an eighth of a broad guess.)
            let at = k as usize * n;
            #[allow(clippy::manual_memcpy)]
            for w in 0..n {
                row[w] = fits.need[at + w];
                row[n + w] = fits.flags[at + w];
            }
            let len = store.names.get(k).len().min(u16::MAX as usize) as u16;
            Some((place as u32, !(single && store.parent(p) == NONE), len))
        })
        .collect();
    for (i, (&id, place)) in ids.iter().zip(&places).enumerate() {
        if (i & 4095) == 0 && !halt.go() {
            return;
        }
        let Some((pp, sep, len)) = *place else {
            continue;
        };
        let pp = pp as usize;
        let at = At {
            consumed: &reach.consumed[pp * n..pp * n + n],
            typos: reach.typos[pp],
            depth: reach.depth[pp],
            sep,
        };
        let row = &rows[i * 2 * n..(i + 1) * 2 * n];
        let fit = (&row[..n], &row[n..], usize::from(len));
        if let Some(found) = test_entry(store, words, fit, id, &at, request) {
            out.push(found);
        }
    }
}

/// The names the orders know one edit away from a word (typos), in key
/// order, from the trigram lists.
struct Near {
    keys: Vec<u32>,
}

/// Whether the `i`th word forgives a typo: five characters or more
/// (counted in characters), no `/`, among the first 64 (a bit of a `u64`
/// marks each).
fn forgives_typo(i: usize, word: &str) -> bool {
    i < 64 && word.chars().count() >= MIN_TYPO_WORD && !word.contains('/')
}

/// At most this many entries bearing close names are ranked (a common
/// word's neighbours can be thousands: the first in name order are taken).
const CLOSE_MAX: usize = 4096;

/// The entries whose name (or its stem) is one edit from the one word of a
/// plain search that found few: a letter dropped, added or changed, or two
/// swapped (`views.rs` and `vie.rs` for `view.rs`). Past the filter and
/// below `under`, the paths in `skip` (the plain answer's) left out; at
/// most `request.limit`. Names with one letter more come first (the word
/// typed with a letter dropped, as [`DROPPED_WEIGHT`] reads it), then as
/// plain searches rank equals: outside generated folders, then the bonus
/// (a file's lead, recency, use, depth, length). Nothing for several
/// words, or a word that forgives no typo (under five characters). Read
/// off the trigram lists as the typo tier is, in proportion to the names
/// near the word.
pub fn close_until(
    store: &Store,
    request: &FuzzyRequest<'_>,
    skip: &[&str],
    uses: Option<&Uses>,
    stop: Stop<'_>,
) -> Result<Vec<Hit>, Stopped> {
    let [word] = request.words else {
        return Ok(Vec::new());
    };
    let word = fit_folded_len(word.chars().take(MAX_WORD).collect());
    if !forgives_typo(0, &word) || request.limit == 0 {
        return Ok(Vec::new());
    }
    let halt = Halt::new(stop);
    let words = [word];
    let folded = fold_words(&words);
    let Some(Some(near)) = near_names(store, &folded, &words).into_iter().next() else {
        return Ok(Vec::new());
    };
    let b = &store.base;
    let sorted = store.names.sorted_len();
    let mut ids: Vec<EntryId> = Vec::new();
    for &k in near.keys.iter().take_while(|&&k| k < sorted) {
        let run = &b.by_name[b.named(k)];
        let room = CLOSE_MAX.saturating_sub(ids.len());
        ids.extend(
            run.iter()
                .copied()
                .filter(|&id| !crate::orders::skipped(store, id))
                .take(room),
        );
        if ids.len() >= CLOSE_MAX {
            break;
        }
    }
    // Names added since the orders were built are not in the lists near_names
    // reads: their entries are the delta's, checked one by one.
    let mut buf = Vec::new();
    for id in store.delta_entries() {
        if ids.len() >= CLOSE_MAX {
            break;
        }
        let k = store.names_of[id as usize];
        let close = if k < sorted {
            near.keys.binary_search(&k).is_ok()
        } else {
            fold_into(store.name(id), &mut buf);
            within_one_edit(&buf, &folded[0])
        };
        if close {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if !halt.go() {
        return halt.result(Vec::new());
    }
    let now = chrono::Utc::now().timestamp();
    let mut ranker = Ranker::new(folded.clone(), now, uses);
    ranker.prepare(store, ids.len());
    let mut places = Places::default();
    let mut ranked: Vec<(bool, crate::rank::Relevance, String, EntryId)> = Vec::new();
    let (mut path, mut path_bytes) = (String::new(), Vec::new());
    for id in ids {
        if store.parent(id) == crate::store::NONE || !in_scope(store, id, request) {
            continue;
        }
        display_path_into(store, id, &mut path_bytes, &mut path);
        if skip.contains(&path.as_str()) {
            continue;
        }
        let (rel, _) = ranker.rank_fitted_len(
            store,
            id,
            (NameFit::Anywhere, store.name(id).len()),
            &mut places,
        );
        let more = one_letter_more(store.name(id), &folded[0], &mut buf);
        ranked.push((more, rel, path.clone(), id));
    }
    ranked.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.generated.cmp(&b.1.generated))
            .then(b.1.bonus.total_cmp(&a.1.bonus))
            .then_with(|| a.2.cmp(&b.2))
    });
    halt.result(
        ranked
            .into_iter()
            .take(request.limit)
            .map(|(_, _, _, id)| hit(store, id))
            .collect(),
    )
}

/// For each word that forgives a typo, the sorted names within one edit of
/// it (the names added since are read directly by [`NameFits`]).
fn near_names(store: &Store, folded: &[Vec<u8>], words: &[String]) -> Vec<Option<Near>> {
    let names = &store.names;
    folded
        .iter()
        .zip(words)
        .enumerate()
        .map(|(i, (f, w))| {
            if !forgives_typo(i, w) {
                return None;
            }
            let mut buf = Vec::new();
            let word_mask = byte_mask(f);
            let mut keep = |k: u32| {
                // One edit takes at most one of the word's bytes away, and
                // the stem holds no byte the name does not: a name whose
                // (folded) mask lacks two of the word's kinds of byte is
                // dropped from its mask alone, its bytes unread.
                if (word_mask & !names.mask(k)).count_ones() > 1 {
                    return false;
                }
                let name = names.get(k);
                // Neither the name nor its stem can be one edit away: the
                // length of one of them must be within one of the word's (an
                // ASCII name folds to as many bytes, its dot where it was;
                // the forms are `within_one_edit`'s).
                if name.is_ascii() && !one_edit_long(name, f) {
                    return false;
                }
                fold_into(name, &mut buf);
                within_one_edit(&buf, f)
            };
            let mut keys = names.near(f, &mut keep);
            // Two neighbours swapped can break four trigrams, all three of a
            // five-letter word's: a name (or its stem) that is the word with
            // two neighbours swapped starts with that spelling, so the run of
            // names starting with each such spelling is read too.
            // (A name whose fold starts so though its bytes do not, `Łódmźap`
            // for `lodzmap`, lies in the runs past ASCII: each read once.)
            if f.is_ascii() {
                let mut runs = Vec::new();
                for i in 0..f.len().saturating_sub(1) {
                    if f[i] == f[i + 1] {
                        continue;
                    }
                    let mut swapped = f.clone();
                    swapped.swap(i, i + 1);
                    runs.extend(names.folded_prefix_runs(&swapped));
                }
                runs.sort_unstable_by_key(|r| (r.start, r.end));
                let mut read_to = 0;
                for r in runs {
                    let from = r.start.max(read_to);
                    keys.extend((from..r.end).filter(|&k| keep(k)));
                    read_to = read_to.max(r.end);
                }
            }
            keys.sort_unstable();
            keys.dedup();
            Some(Near { keys })
        })
        .collect()
}

/// Whether `name` (folded) or its stem is long enough to be one edit from
/// `word`, and not too long: what [`within_one_edit`] asks first, cheaply.
fn one_edit_long(name: &[u8], word: &[u8]) -> bool {
    let within = |len: usize| len + 1 >= word.len() && len <= word.len() + 1;
    if name.len() + 1 < word.len() {
        // The stem is shorter still.
        return false;
    }
    // (A name is short: read from its end, not through `memrchr`'s setup,
    // a twelfth of a folder pass that asks this of every folder.)
    within(name.len())
        || name
            .iter()
            .rposition(|&b| b == b'.')
            .is_some_and(|i| i > 0 && within(i))
}

/// Whether `a` is within one edit (insert, delete, substitute, swap of two
/// neighbours) of `b`, on the whole name or on its stem.
/// Whether entry `id` lies below the request's `under` (not `under` itself)
/// and passes its filter.
fn in_scope(store: &Store, id: EntryId, request: &FuzzyRequest<'_>) -> bool {
    request
        .under
        .is_none_or(|u| id != u && store.is_within(id, u))
        && (request.filter.is_match_all() || request.filter.matches(&store.entry(id)))
}

/// Whether `name` (or its stem), folded, is `word` (folded) with one letter
/// more: the word typed with a letter dropped.
fn one_letter_more(name: &[u8], word: &[u8], buf: &mut Vec<u8>) -> bool {
    fold_into(name, buf);
    let [whole, stem, _] = exact_forms(buf);
    [whole, stem]
        .into_iter()
        .any(|n| n.len() == word.len() + 1 && one_edit(n, word))
}

pub(crate) fn within_one_edit(name: &[u8], word: &[u8]) -> bool {
    let [whole, stem, _] = exact_forms(name);
    [whole, stem].into_iter().any(|n| one_edit(n, word))
}

/// Damerau-Levenshtein distance at most one, in one pass: after the common
/// start, the rest must agree past one substituted, dropped or added byte,
/// or past two neighbours swapped. (`strsim` computes the whole distance, a
/// table and an allocation per name; the typo pass asks this of every name
/// a trigram list offers.)
fn one_edit(a: &[u8], b: &[u8]) -> bool {
    if a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if p == a.len() && p == b.len() {
        return true;
    }
    match a.len().cmp(&b.len()) {
        std::cmp::Ordering::Equal => {
            a[p + 1..] == b[p + 1..]
                || (p + 1 < a.len()
                    && a[p] == b[p + 1]
                    && a[p + 1] == b[p]
                    && a[p + 2..] == b[p + 2..])
        }
        std::cmp::Ordering::Less => a[p..] == b[p + 1..],
        std::cmp::Ordering::Greater => a[p + 1..] == b[p..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, Meta};
    use ferret_query::{Clock, Options};

    /// Guesses of every kind the randomized tests ask: names, typos,
    /// initials, words in either order, folder paths, nothing.
    const GUESSES: [&str; 29] = [
        "f12_read",
        "tokio-util",
        "f3 mod",
        "_1",
        "codec",
        "decoder",
        "decodr",
        "tucdec",
        "scd",
        "mod.rs",
        "mod",
        "src codec",
        "codec src",
        "read_buf",
        "readbuf",
        "readme",
        "fs copy",
        "copy fs",
        "copy",
        "f1",
        "x.py",
        "a/b",
        "/b",
        "src/",
        "nodmod",
        "tokio util",
        "renamed",
        "fresh mod",
        "zzz",
    ];

    /// The longest end of `word` that `name` (both folded) holds in order,
    /// read byte by byte: what the name pass's `need` is held to.
    fn end_held(word: &[u8], name: &[u8]) -> usize {
        let mut i = word.len();
        for &b in name.iter().rev() {
            if i > 0 && word[i - 1] == b {
                i -= 1;
            }
        }
        i
    }

    fn store(paths: &[&str]) -> Store {
        store_in(&[b"r"], paths)
    }

    /// A store of `paths` below each of `roots`, its orders built.
    fn store_in(roots: &[&[u8]], paths: &[&str]) -> Store {
        let mut s = Store::new();
        for root in roots {
            add_paths(&mut s, root, paths);
        }
        crate::orders::rebuild_store(&mut s);
        s
    }

    fn add_paths(s: &mut Store, root: &[u8], paths: &[&str]) {
        let root = s.add_root(root, Meta::default());
        for p in paths {
            let mut at = root;
            let parts: Vec<&str> = p.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let kind = if i + 1 == parts.len() {
                    Kind::File
                } else {
                    Kind::Dir
                };
                at = match s.child(at, part.as_bytes()) {
                    Some(id) => id,
                    None => s.insert_new(at, part.as_bytes(), kind, Meta::default()),
                };
            }
        }
    }

    fn find(s: &Store, q: &str) -> Vec<String> {
        let (rest, words) = ferret_query::split_words(q).unwrap();
        let filter = Query::compile(&rest, &Options::default(), &Clock::system()).unwrap();
        fuzzy(
            s,
            &FuzzyRequest {
                words: &words,
                filter: &filter,
                under: None,
                offset: 0,
                limit: 5,
            },
            None,
        )
        .hits
        .into_iter()
        .map(|h| h.path)
        .collect()
    }

    /// The close names of `word` below the store's root, `skip` left out.
    fn close(s: &Store, word: &str, filter: &str, skip: &[&str], limit: usize) -> Vec<String> {
        let filter = Query::compile(filter, &Options::default(), &Clock::system()).unwrap();
        close_until(
            s,
            &FuzzyRequest {
                words: &[word.to_string()],
                filter: &filter,
                under: None,
                offset: 0,
                limit,
            },
            skip,
            None,
            Stop::NEVER,
        )
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect()
    }

    /// A name typed with a letter dropped comes before one a letter off
    /// (`sgar.rs`: `sugar.rs` before `swar.rs`, though `swar.rs` lies higher),
    /// and both before a name that merely holds the letters in order.
    #[test]
    fn a_dropped_letter_ranks_above_a_changed_one() {
        let s = store(&["a/swar.rs", "b/c/d/sugar.rs", "b/c/d/sugarless_greater.rs"]);
        assert_eq!(
            find(&s, "sgar.rs"),
            ["b/c/d/sugar.rs", "a/swar.rs", "b/c/d/sugarless_greater.rs"]
        );
        let s = store(&["a/rng.rs", "b/c/d/uring.rs"]);
        assert_eq!(find(&s, "urng.rs"), ["b/c/d/uring.rs", "a/rng.rs"]);
    }

    /// An answer whose best match holds a word only as letters scattered
    /// along its path says so; one whose best holds every word as typed
    /// anywhere in it, one typo off, or as an abbreviation (initials of its
    /// last parts, or of one folder), does not.
    #[test]
    fn an_answer_says_when_its_best_holds_a_word_only_scattered() {
        let scattered = |s: &Store, q: &str| {
            let (rest, words) = ferret_query::split_words(q).unwrap();
            let filter = Query::compile(&rest, &Options::default(), &Clock::system()).unwrap();
            let request = FuzzyRequest {
                words: &words,
                filter: &filter,
                under: None,
                offset: 0,
                limit: 5,
            };
            let out = fuzzy(s, &request, None);
            assert!(out.total > 0, "{q}");
            out.scattered
        };
        let s = store(&["sites/lists/context.py", "mp/context.py"]);
        assert!(scattered(&s, "ssl context"));
        assert!(scattered(&s, "sls"));
        assert!(!scattered(&s, "context"));
        assert!(!scattered(&s, "lists context"));
        assert!(!scattered(&s, "contxet"), "one typo off is held");
        let s = store(&["tokio-util/src/codec/decoder.rs", "lib/ssl_context.py"]);
        assert!(!scattered(&s, "ssl context"));
        assert!(
            !scattered(&s, "tucdec"),
            "initials abbreviate the path: not scattered"
        );
        let s = store(&["tokio-util/src/codec/mod.rs"]);
        assert!(!scattered(&s, "tu codec"), "a folder's initials");
        // Both words inside the names, neither at a start: held as typed.
        let s = store(&["src/openssl/mycontext.c"]);
        assert!(!scattered(&s, "ssl context"));
        // Letters side by side only across a separator, from inside a part:
        // not the word as typed.
        let s = store(&["logs/glass.log/context.py"]);
        assert!(scattered(&s, "ssl context"));
    }

    /// A word is held as typed within one part of a path, or from a part's
    /// start on across separators left out, never from inside one part into
    /// the next.
    #[test]
    fn a_word_as_typed_starts_a_part_to_run_across_separators() {
        let holds = |text: &str, word: &str| Typed::of(text).holds(&typed_form(word));
        assert!(holds("lib/ssl.py", "ssl"));
        assert!(holds("SSL_utils", "ssl"));
        assert!(holds("src/openssl/x", "ssl"));
        assert!(holds("bin/python3.11", "python311"));
        assert!(holds("get-parameter.rst", "getparam"));
        assert!(holds("tests/fs_copy.rs", "fs_copy"));
        assert!(holds("tests/fs_copy.rs", "fscopy"));
        assert!(holds("a/Résumé.txt", "resume"));
        assert!(holds("a/b", ""));
        assert!(!holds("glass.log", "ssl"));
        assert!(!holds("x/fs_copy.rs", "scopy"));
        assert!(!holds("sites/lists", "ssl"));
        // Found again further on when its first place crosses a part, and
        // where it starts inside the place refused.
        assert!(holds("glass.log/ssl", "ssl"));
        assert!(holds("numpy_pypy", "pypy"));
        assert!(!holds("numpy_py", "pypy"));
        // A `/` typed is crossed as typed.
        assert!(holds("crates/ferret-index/src", "index/src"));
    }

    /// Close names: every name one edit from the word (its stem too), a
    /// letter more first, the plain answer's paths and the filter's misses
    /// left out, names added since the orders were built included; none for
    /// several words or a word too short to forgive a typo.
    #[test]
    fn close_names_are_one_edit_away() {
        let mut s = store(&[
            "x/overview.rs",
            "x/views.rs",
            "a/b/c/vie.rs",
            "view.md",
            "vuew.rs",
            "viwe.rs",
            "views_more.rs",
            "dir/viewx.rs/inner.txt",
        ]);
        assert_eq!(
            close(&s, "view.rs", "", &["x/overview.rs"], 10),
            [
                "x/views.rs",
                "dir/viewx.rs",
                "viwe.rs",
                "vuew.rs",
                "a/b/c/vie.rs"
            ],
        );
        // The stem is one edit away too: `view` against `vie.rs` and `views.rs`.
        assert_eq!(close(&s, "views", "", &[], 2), ["view.md", "x/views.rs"]);
        assert_eq!(
            close(&s, "view.rs", "file:", &["x/views.rs"], 10),
            ["viwe.rs", "vuew.rs", "a/b/c/vie.rs"],
            "the folder left out by the filter, the skipped path by `skip`"
        );
        assert_eq!(
            close(&s, "view.rs", "ext:md", &[], 10),
            Vec::<String>::new()
        );
        let root = s.roots()[0];
        s.insert_new(root, b"viewz.rs", Kind::File, Meta::default());
        assert!(close(&s, "view.rs", "", &[], 10).contains(&"viewz.rs".to_string()));
        assert!(
            close(&s, "view", "", &[], 10).is_empty(),
            "a word under five letters"
        );
        let filter = Query::compile("", &Options::default(), &Clock::system()).unwrap();
        let two = [String::from("view.rs"), String::from("x")];
        let request = FuzzyRequest {
            words: &two,
            filter: &filter,
            under: None,
            offset: 0,
            limit: 5,
        };
        assert!(
            close_until(&s, &request, &[], None, Stop::NEVER)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_folder_table_follows_every_change_to_the_folders() {
        // A clone of the store keeps no table: it makes one from the store
        // as it is, so each answer must equal its clone's.
        let check = |s: &Store, step: &str| {
            for q in [
                "albefile",
                "gamfile",
                "deltafile",
                "delta file",
                "beta",
                "alpha/beta",
                "fresh",
                "freshx",
            ] {
                assert_eq!(find(s, q), find(&s.clone(), q), "{step}: {q}");
            }
        };
        let mut s = store(&["alpha/beta/file.rs", "alpha/other.rs", "gamma/file.rs"]);
        check(&s, "built");
        let root = s.roots()[0];
        let alpha = s.child(root, b"alpha").unwrap();
        let beta = s.child(alpha, b"beta").unwrap();
        let fresh = s.insert_new(beta, b"fresh", Kind::Dir, Meta::default());
        s.insert_new(fresh, b"file.rs", Kind::File, Meta::default());
        check(&s, "a folder added");
        assert!(find(&s, "freshfile").contains(&"alpha/beta/fresh/file.rs".to_string()));
        s.rename(beta, root, b"delta");
        check(&s, "a folder moved and renamed");
        assert!(find(&s, "deltafile").contains(&"delta/fresh/file.rs".to_string()));
        let gamma = s.child(root, b"gamma").unwrap();
        s.remove(gamma);
        check(&s, "a folder removed");
        assert!(find(&s, "gamfile").is_empty());
        // Its slot taken by another folder.
        let again = s.insert_new(root, b"epsilon", Kind::Dir, Meta::default());
        s.insert_new(again, b"file.rs", Kind::File, Meta::default());
        check(&s, "a slot used again");
        crate::orders::rebuild_store(&mut s);
        check(&s, "the orders rebuilt");
    }

    /// The places read off the folder table equal the ranker's own climb
    /// through the store, for every folder, with no word, one, several and
    /// words that are folder names (plain, versioned, accented), under
    /// generated and built folders, in two roots, after the folders change.
    #[test]
    fn table_places_equal_the_rankers_climb() {
        let parts = [
            "src",
            "node_modules",
            "target",
            "__pycache__",
            "tokio-1.2.0",
            "Tokio",
            "Łódź",
            "codec",
            "x",
        ];
        let mut next = crate::testing::below(5);
        let mut s = Store::new();
        let roots = [
            s.add_root(b"/r/one", Meta::default()),
            s.add_root(b"/r/two", Meta::default()),
        ];
        for _ in 0..300 {
            let mut at = roots[next(2)];
            for _ in 0..next(7) {
                let part = parts[next(parts.len())];
                at = match s.child(at, part.as_bytes()) {
                    Some(id) if s.kind(id) == Kind::Dir => id,
                    Some(_) => break,
                    None => s.insert_new(at, part.as_bytes(), Kind::Dir, Meta::default()),
                };
            }
        }
        let word_sets: [&[&str]; 5] = [
            &[],
            &["src"],
            &["tokio", "codec"],
            &["lodz", "node_modules", "x"],
            &["target", "target"],
        ];
        let check = |s: &Store, step: &str| {
            let table = folder_table(s);
            let mut folders = 0;
            for words in word_sets {
                let words: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
                let mut at_table = TablePlaces::new(&table, &words);
                let mut places = Places::default();
                for id in 0..s.capacity_ids() as EntryId {
                    if s.is_live(id) && s.kind(id) == Kind::Dir {
                        let climbed = Ranker::place(s, id, &mut places, &words);
                        let read = at_table.place(s, id).expect("the table holds every folder");
                        assert_eq!(
                            read.pack(),
                            climbed.pack(),
                            "{step}: {:?}",
                            crate::hits::display_path(s, id)
                        );
                        folders += 1;
                    }
                }
            }
            assert!(folders > 100, "{step}: {folders} folders");
        };
        check(&s, "built");
        let src = s.child(roots[0], b"src").unwrap();
        s.rename(src, roots[1], b"node_modules-again");
        check(&s, "a folder moved and renamed");
        crate::orders::rebuild_store(&mut s);
        check(&s, "the orders rebuilt");
    }

    #[test]
    fn guesses_find_the_file() {
        let s = store(&[
            "src/auth_middleware.rs",
            "src/auth/mod.rs",
            "src/user_service.rs",
            "docs/middleware.md",
            "config/prod.yaml",
            "config/dev.yaml",
            "src/components/UserProfileCard.tsx",
        ]);
        assert_eq!(find(&s, "authmiddleware")[0], "src/auth_middleware.rs");
        assert_eq!(
            find(&s, "user_servce.rs")[0],
            "src/user_service.rs",
            "a dropped letter"
        );
        assert_eq!(
            find(&s, "usar_service")[0],
            "src/user_service.rs",
            "a wrong letter"
        );
        assert_eq!(find(&s, "cfg/prod")[0], "config/prod.yaml");
        assert_eq!(
            find(&s, "upc")[0],
            "src/components/UserProfileCard.tsx",
            "initials"
        );
        assert_eq!(find(&s, "middleware ext:md"), ["docs/middleware.md"]);
        assert!(find(&s, "zzzzqqq").is_empty());
        // Abbreviations before compact scatterings of their letters, whatever
        // the order the store holds them in.
        for paths in [
            [
                "typenum-1.20.1/README.md",
                "tokio-1.54.1/src/process/unix/reap.rs",
                "cc-1.11.3/src/detect_compiler_family.c",
                "clap_complete-4.6.12/examples/completion-derive.rs",
            ],
            [
                "clap_complete-4.6.12/examples/completion-derive.rs",
                "cc-1.11.3/src/detect_compiler_family.c",
                "tokio-1.54.1/src/process/unix/reap.rs",
                "typenum-1.20.1/README.md",
            ],
        ] {
            let s = store(&paths);
            assert_eq!(
                find(&s, "tpurea")[0],
                "tokio-1.54.1/src/process/unix/reap.rs"
            );
            let ccecom = find(&s, "ccecom");
            assert_eq!(
                ccecom[0],
                "clap_complete-4.6.12/examples/completion-derive.rs"
            );
        }
        // One letter: the names holding it, recent first; nothing typed: all.
        assert_eq!(find(&s, "y").len(), 2);
        assert_eq!(find(&s, "").len(), 5);
        let long = "x".repeat(500);
        assert!(find(&s, &long).is_empty());
    }

    /// A `_` typed where a path has `-` (or none), and the other way: code
    /// names a crate `tokio_util`, its folder is `tokio-util-0.7.20`. A
    /// path holding the word as typed comes first, and a word that ends
    /// with `_` still asks for more after it.
    #[test]
    fn underscores_and_hyphens_stand_for_each_other() {
        let s = store(&[
            "tokio-1.54.1/tests/io_util_empty.rs",
            "tokio-1.54.1/src/io/util/read_until.rs",
            "tokio-util-0.7.20/src/lib.rs",
            "proc-macro2-1.0.107/src/lib.rs",
            "zerovec/src/snapshots/zerovec__schemars__tests__schema_zerovec_u32.snap",
            "serde_json-1.0.154/src/de.rs",
            "tokio/tests/sync_rwlock.rs",
            "sharded/src/sync.rs",
            "chrono/src/chrono.rs",
            "tracing/src/chrono_crate.rs",
        ]);
        assert_eq!(find(&s, "tokio_util")[0], "tokio-util-0.7.20");
        assert_eq!(find(&s, "proc_macro2")[0], "proc-macro2-1.0.107");
        assert_eq!(find(&s, "serde-json")[0], "serde_json-1.0.154");
        assert_eq!(find(&s, "sync_r")[0], "tokio/tests/sync_rwlock.rs");
        assert_eq!(find(&s, "chrono_")[0], "tracing/src/chrono_crate.rs");
        // The second pass is asked only when some name holds the word
        // rejoined: never for a scattered guess (it would cost as much as
        // the first and could not be taken).
        let held = |q: &str| {
            let words = vec![q.to_string()];
            let filter = Query::match_all();
            let request = FuzzyRequest {
                words: &words,
                filter: &filter,
                under: None,
                offset: 0,
                limit: 5,
            };
            joined_in_some_name(&s, &request, None, Stop::NEVER).unwrap()
        };
        assert!(held("tokio_util") && held("proc_macro2") && held("sync-rwlock"));
        assert!(!held("rbc_dumbet") && !held("tokio_zzz"));
        assert_eq!(rejoined("a_b-c_", Some('.')).as_deref(), Some("a.b.c_"));
        assert_eq!(rejoined("__init__", None), None);
    }

    /// Words anywhere in the path and in any order, initials across folders
    /// and word parts, a typo in any word of five characters or more, and
    /// the exact name ahead of names that only hold the words.
    #[test]
    fn words_anywhere_initials_and_typos_in_every_word() {
        let s = store(&[
            "tokio-util/src/codec/decoder.rs",
            "tokio-util/src/codec/encoder.rs",
            "tokio/src/io/read_buf.rs",
            "tracing-subscriber/tests/same_len_filters.rs",
            "tracing/src/span.rs",
            "tokio/src/fs/copy.rs",
            "tokio/tests/fs_copy.rs",
            "target/debug/build/copy.rs",
            "vendor/lib/copy.rs",
            "tokio/src/runtime/io/driver/uring/mod.rs",
            "tokio/src/runtime/io/driver/uring.rs",
        ]);
        assert_eq!(
            find(&s, "tucdec")[0],
            "tokio-util/src/codec/decoder.rs",
            "initials"
        );
        assert_eq!(
            find(&s, "len tracing")[0],
            "tracing-subscriber/tests/same_len_filters.rs",
            "words in the other order, one in a folder"
        );
        assert_eq!(
            find(&s, "codec encoder")[0],
            "tokio-util/src/codec/encoder.rs"
        );
        // The exact name first; the same name in a generated folder after.
        let copy = find(&s, "fs copy");
        assert_eq!(copy[0], "tokio/src/fs/copy.rs", "{copy:?}");
        let copy = find(&s, "copy");
        assert_eq!(
            copy[..2],
            ["tokio/src/fs/copy.rs", "vendor/lib/copy.rs"],
            "an exact name in a generated folder still beats a name holding the word"
        );
        // A tool's output after every other match.
        assert_eq!(
            copy.last().unwrap(),
            "target/debug/build/copy.rs",
            "{copy:?}"
        );
        // A typo in the first word as well as in the last (five characters).
        assert_eq!(find(&s, "tracung span")[0], "tracing/src/span.rs");
        assert_eq!(
            find(&s, "decodr codec")[0],
            "tokio-util/src/codec/decoder.rs"
        );
        assert_eq!(find(&s, "spann tracing")[0], "tracing/src/span.rs");
        // A file before a folder of the same fit.
        assert_eq!(
            find(&s, "driver uring")[0],
            "tokio/src/runtime/io/driver/uring.rs"
        );
        // Ties are broken by the path (shorter, then in order), never by
        // where the walk put the entries.
        let s2 = store(&["b/x.rs", "a/x.rs", "c/x.rs"]);
        assert_eq!(find(&s2, "x.rs"), ["a/x.rs", "b/x.rs", "c/x.rs"]);
    }

    /// A word of 64 four-byte characters is longer than the walk's byte
    /// offsets reach: it is cut, never read as matched by every path.
    #[test]
    fn a_long_non_ascii_word_matches_nothing_it_should_not() {
        let s = store(&["a/b.rs", "c/d.txt"]);
        assert!(find(&s, &"😀".repeat(64)).is_empty());
        let s = store(&["a/😀😀😀.rs", "c/d.txt"]);
        assert_eq!(find(&s, &"😀".repeat(3)), ["a/😀😀😀.rs"]);
    }

    /// Guesses without the accents find accented names, whether nucleo's
    /// own normalisation knows the letter (`ó`) or not (`ł`), and accented
    /// guesses find plain names.
    #[test]
    fn guesses_need_no_accents() {
        let s = store(&[
            "docs/Łódź.txt",
            "docs/Re\u{301}sume\u{301}.pdf",
            "docs/naive-notes.md",
            "src/lib.rs",
        ]);
        assert_eq!(find(&s, "lodz"), ["docs/Łódź.txt"]);
        assert_eq!(find(&s, "ldz"), ["docs/Łódź.txt"]);
        assert_eq!(find(&s, "resme")[0], "docs/Re\u{301}sume\u{301}.pdf");
        assert_eq!(find(&s, "docs résumé")[0], "docs/Re\u{301}sume\u{301}.pdf");
        assert_eq!(find(&s, "naïve")[0], "docs/naive-notes.md");
    }

    /// `under` and the filter apply before the candidates are cut to
    /// MAX_SCORED: with more matches elsewhere than that, the few under the
    /// folder asked for are still found.
    #[test]
    fn under_and_the_filter_apply_before_bounded_work() {
        let mut paths: Vec<String> = (0..MAX_SCORED + 100)
            .map(|i| format!("crowd/report{i}.txt"))
            .collect();
        paths.push("deep/er/still/report.md".into());
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let s = store(&refs);
        assert_eq!(find(&s, "report ext:md"), ["deep/er/still/report.md"]);
        let words = vec!["report".to_string()];
        let all = Query::compile("", &Options::default(), &Clock::system()).unwrap();
        let under = s.lookup(s.roots()[0], b"deep").unwrap();
        let found = fuzzy(
            &s,
            &FuzzyRequest {
                words: &words,
                filter: &all,
                under: Some(under),
                offset: 0,
                limit: 5,
            },
            None,
        );
        assert_eq!(found.total, 1);
        assert_eq!(found.hits[0].path, "deep/er/still/report.md");
    }

    /// Bounded work weighs a name that can end an abbreviation before the
    /// shallower paths that merely spread the word over their folders: with
    /// more of those than it can weigh, the file the guess abbreviates is
    /// still found, and first.
    #[test]
    fn a_name_that_ends_an_abbreviation_is_weighed_first() {
        let pad = "x".repeat(40);
        let mut paths: Vec<String> = (0..MAX_SCORED + 100)
            .map(|i| format!("rm{pad}/mou{pad}/f{i}"))
            .collect();
        paths.push("a/b/c/d/rustix/src/mount/mount_unmount.rs".into());
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let s = store(&refs);
        assert_eq!(
            find(&s, "rmmou")[0],
            "a/b/c/d/rustix/src/mount/mount_unmount.rs"
        );
    }

    /// Reading the candidates by name finds exactly the set the walk down
    /// the tree finds, changes since the orders were built (new entries, a
    /// renamed folder) included, over many queries of every kind.
    /// The folders' reach worked out in parts, each from the path down to
    /// its first folder, equals one pass in order: every row, typo and
    /// depth, each word's bound, for one root and for two, and after the
    /// folders change (the table made again).
    #[test]
    fn reach_in_parts_equals_one_pass() {
        let parts = [
            "src",
            "codec",
            "tokio-util",
            "decoder",
            "a",
            "mod",
            "ReadBuf",
        ];
        let mut next = crate::testing::below(11);
        let mut paths = Vec::new();
        for _ in 0..300 {
            let depth = 1 + next(6);
            let p: Vec<&str> = (0..depth).map(|_| parts[next(parts.len())]).collect();
            paths.push(format!("{}/f{}.rs", p.join("/"), next(9)));
        }
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let one_root = store(&refs);
        let two_roots = store_in(&[b"/r/one", b"/r/two"], &refs[..150]);
        let mut changed = one_root.clone();
        let root = changed.roots()[0];
        let codec = changed.child(root, b"codec").unwrap();
        let src = changed.child(root, b"src").unwrap();
        changed.rename(codec, src, b"moved_codec");
        let fresh = changed.insert_new(root, b"tokio-utill", Kind::Dir, Meta::default());
        changed.insert_new(fresh, b"mod.rs", Kind::File, Meta::default());
        let halt = Halt::new(Stop::NEVER);
        for (which, s) in [
            ("one root", &one_root),
            ("two roots", &two_roots),
            ("changed", &changed),
        ] {
            assert!(folder_table(s).len() > 40, "{which}: folders to split");
            for q in GUESSES
                .iter()
                .chain(&["tokio-utol decodr", "src mod codec tokio"])
            {
                let words: Vec<String> = q.split(' ').map(String::from).collect();
                let folded = fold_words(&words);
                let typo_words: Vec<bool> = words
                    .iter()
                    .enumerate()
                    .map(|(i, w)| forgives_typo(i, w))
                    .collect();
                let whole = Reach::in_parts(s, folder_table(s), &folded, &typo_words, &halt, 1);
                assert_eq!(whole.done, whole.table.len());
                // Each folder's row against its path read word by word from
                // the top, every name read (no mask).
                let (t, n, single) = (&whole.table, folded.len(), s.roots().len() == 1);
                for place in 0..t.len() {
                    let mut path = vec![place];
                    while t.parents[*path.last().unwrap()] != ROOT {
                        path.push(t.parents[*path.last().unwrap()] as usize);
                    }
                    path.reverse();
                    for (w, word) in folded.iter().enumerate() {
                        let mut c = if single {
                            0
                        } else {
                            advance(word, 0, false, t.name(path[0]))
                        };
                        for (i, &p) in path.iter().enumerate().skip(1) {
                            let sep = !(single && i == 1);
                            c = advance(word, c, sep, t.name(p));
                        }
                        assert_eq!(whole.consumed[place * n + w] as usize, c, "{which}, {q}");
                    }
                    assert_eq!(whole.depth[place] as usize, path.len() - 1);
                }
                for threads in [2, 3, 5] {
                    let split =
                        Reach::in_parts(s, folder_table(s), &folded, &typo_words, &halt, threads);
                    let at = format!("{which}, {q}, {threads} threads");
                    assert_eq!(split.consumed, whole.consumed, "{at}");
                    assert_eq!(split.typos, whole.typos, "{at}");
                    assert_eq!(split.depth, whole.depth, "{at}");
                    assert_eq!(split.bound, whole.bound, "{at}");
                    assert_eq!(split.done, whole.done, "{at}");
                }
            }
        }
    }

    #[test]
    fn by_names_finds_what_the_walk_finds() {
        let parts = [
            "src",
            "codec",
            "tokio-util",
            "decoder",
            "mod.rs",
            "read_buf.rs",
            "a/b",
            "x.py",
            "ReadBuf.RS",
        ];
        let mut paths = Vec::new();
        let mut next = crate::testing::below(7);
        for _ in 0..400 {
            let depth = 1 + next(4);
            let p: Vec<&str> = (0..depth).map(|_| parts[next(parts.len())]).collect();
            paths.push(format!(
                "{}/f{}_{}",
                p.join("/"),
                next(50),
                parts[next(parts.len())]
            ));
        }
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut s = store(&refs);
        let root = s.roots()[0];
        let src = s.lookup(root, b"src").unwrap();
        s.insert_new(src, b"decodr.rs", Kind::File, Meta::default());
        let added = s.insert_new(root, b"fresh_codec", Kind::Dir, Meta::default());
        s.insert_new(added, b"mod.rs", Kind::File, Meta::default());
        let codec = s.lookup(root, b"codec").unwrap();
        s.rename(codec, src, b"renamed_codec");
        // A folder removed with all it held, and an entry added where it was.
        let gone = s.lookup(root, b"decoder").unwrap();
        s.remove(gone);
        s.insert_new(root, b"decoder", Kind::Dir, Meta::default());
        let all = Query::compile("", &Options::default(), &Clock::system()).unwrap();
        let queries = GUESSES;
        let halt = Halt::new(Stop::NEVER);
        for q in queries {
            let words: Vec<String> = q.split(' ').map(String::from).collect();
            let folded: Vec<Vec<u8>> = words
                .iter()
                .map(|w| {
                    let mut f = Vec::new();
                    fold_into(w.as_bytes(), &mut f);
                    f
                })
                .collect();
            let request = FuzzyRequest {
                words: &words,
                filter: &all,
                under: None,
                offset: 0,
                limit: 5,
            };
            let near = near_names(&s, &folded, &words);
            let typo_words: Vec<bool> = words
                .iter()
                .enumerate()
                .map(|(i, w)| forgives_typo(i, w))
                .collect();
            let reach = Reach::new(&s, &folded, &typo_words, &halt);
            let fits = NameFits::new(&s, &folded, &near, &reach.bound, &halt);
            let n = folded.len();
            let keys: Vec<u32> = (0..s.names.len())
                .filter(|&k| {
                    let at = k as usize * n..k as usize * n + n;
                    may_match(
                        &folded,
                        &reach.bound,
                        &fits.need[at.clone()],
                        &fits.flags[at],
                    )
                })
                .collect();
            assert_eq!(keys, fits.maybe, "the names the pass kept: {q}");
            // Each name's `need` is the longest end of each word it holds,
            // wherever that can let it match: a name told unread (by its mask
            // or a byte it lacks) could not have.
            let mut name = Vec::new();
            for k in 0..s.names.len() {
                fold_into(s.names.get(k), &mut name);
                for (w, word) in folded.iter().enumerate() {
                    let truth = end_held(word, &name) as u8;
                    let got = fits.need[k as usize * n + w];
                    if got != truth {
                        assert!(
                            got > truth && !word_may_match(word, reach.bound[w], truth, 0),
                            "{q}: {} needs {truth}, told {got}",
                            String::from_utf8_lossy(&name)
                        );
                    }
                }
            }
            // Each name one edit from a word that forgives a typo, and only
            // those, is marked so: those the orders know and those added.
            let mut name = Vec::new();
            for k in 0..s.names.len() {
                fold_into(s.names.get(k), &mut name);
                for (w, word) in folded.iter().enumerate() {
                    let near = forgives_typo(w, &words[w]) && within_one_edit(&name, word);
                    let flag = fits.flags[k as usize * n + w] & NEAR != 0;
                    assert_eq!(flag, near, "{q}: {}", String::from_utf8_lossy(&name));
                }
            }
            for threads in [2, 3, 7] {
                let parts =
                    NameFits::with_threads(&s, &folded, &near, &reach.bound, &halt, threads);
                assert_eq!(
                    (&parts.need, &parts.flags, &parts.maybe),
                    (&fits.need, &fits.flags, &fits.maybe),
                    "{threads} threads: {q}"
                );
            }
            let ids = |mut v: Vec<Found>| {
                v.sort_unstable_by_key(|f| f.id);
                v.into_iter()
                    .map(|f| (f.id, f.pre, f.typo))
                    .collect::<Vec<_>>()
            };
            // Every candidate (nothing cut), then the best 7 as bounded
            // work keeps them while the walk goes on.
            let walk = |fits: &NameFits, cap: usize| {
                let mut kept = Kept::new(cap);
                candidates(&s, &folded, fits, &request, &halt, &mut kept);
                (kept.total, kept.into_best())
            };
            let (total, all_found) = walk(&fits, usize::MAX);
            assert_eq!(total, all_found.len(), "{q}");
            let (capped_total, capped) = walk(&fits, 7);
            assert_eq!(capped_total, total, "{q}");
            let best: Vec<(EntryId, i32)> =
                all_found.iter().take(7).map(|f| (f.id, f.pre)).collect();
            let kept: Vec<(EntryId, i32)> = capped.iter().map(|f| (f.id, f.pre)).collect();
            assert_eq!(kept, best, "the best 7 kept as found: {q}");
            let walked = ids(all_found);
            let mut by_name = Kept::new(usize::MAX);
            let pass = Pass {
                store: &s,
                words: &folded,
                fits: &fits,
                reach: &reach,
                request: &request,
                halt: &halt,
            };
            by_names(&pass, &keys, &mut by_name);
            let named = ids(by_name.into_best());
            assert_eq!(walked, named, "{q}");
            // In parts on threads, each keeping its own best, merged: the
            // same best and count as one pass.
            for cap in [usize::MAX, 7, 1] {
                let walked = walk(&fits, cap);
                let walked = (walked.0, ids(walked.1));
                for threads in [None, Some(2), Some(3), Some(7)] {
                    let mut scanned = Kept::new(cap);
                    scan_all_on(&pass, &mut scanned, threads);
                    let scanned = (scanned.total, ids(scanned.into_best()));
                    assert_eq!(
                        scanned, walked,
                        "{q}: every entry read in order, cap {cap}, {threads:?} threads"
                    );
                    let mut by_name = Kept::new(cap);
                    by_names_on(&pass, &keys, &mut by_name, threads);
                    let named = (by_name.total, ids(by_name.into_best()));
                    assert_eq!(
                        named, walked,
                        "{q}: by name, cap {cap}, {threads:?} threads"
                    );
                }
            }
            // And the bound rejected nothing the walk would have found.
            let unbounded = NameFits::new(&s, &folded, &near, &vec![255; words.len()], &halt);
            // Unbounded, each name's `need` is the longest end of each word
            // it holds in order, read byte by byte.
            let mut name = Vec::new();
            for k in 0..s.names.len() {
                fold_into(s.names.get(k), &mut name);
                for (w, word) in folded.iter().enumerate() {
                    let i = end_held(word, &name);
                    assert_eq!(unbounded.need[k as usize * n + w] as usize, i, "{q}");
                }
            }
            let full = ids(walk(&unbounded, usize::MAX).1);
            assert_eq!(walked, full, "{q}");
        }
    }

    /// Passing over the candidates that cannot reach the page, and scoring
    /// them in parts, changes no answer: every page (offsets and limits of
    /// all sizes) and every total equal scoring each candidate whole in one
    /// pass, with recency, uses, generated folders, folders and files, typos
    /// and leads all in play.
    #[test]
    fn passing_over_keeps_every_page() {
        let parts = [
            "src",
            "codec",
            "tokio-util",
            "decoder",
            "node_modules",
            "mod.rs",
            "read_buf.rs",
            "Readme.md",
            "fs_copy.rs",
            "copy",
            "x.py",
        ];
        let mut next = crate::testing::below(11);
        let now = chrono::Utc::now().timestamp();
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let mut files = Vec::new();
        for _ in 0..600 {
            let depth = next(5);
            let mut at = root;
            let mut path = Vec::new();
            for _ in 0..depth {
                let part = parts[next(parts.len())];
                path.push(part.to_string());
                at = match s.child(at, part.as_bytes()) {
                    Some(id) if s.kind(id) == Kind::Dir => id,
                    Some(_) => break,
                    None => s.insert_new(at, part.as_bytes(), Kind::Dir, Meta::default()),
                };
            }
            let name = match next(3) {
                0 => parts[next(parts.len())].to_string(),
                1 => format!("{}_{}", parts[next(parts.len())], next(9)),
                _ => format!("f{}{}", next(30), parts[next(parts.len())]),
            };
            if s.child(at, name.as_bytes()).is_some() {
                continue;
            }
            // Some changed today, this week, this month, long ago.
            let age = [0, 3 * 86_400, 20 * 86_400, 400 * 86_400][next(4)];
            let meta = Meta {
                mtime: now - age,
                ..Meta::default()
            };
            s.insert_new(at, name.as_bytes(), Kind::File, meta);
            path.push(name);
            files.push(path.join("/"));
        }
        crate::orders::rebuild_store(&mut s);
        let mut uses = Uses::default();
        for f in files.iter().step_by(37) {
            uses.record(f, 1.0 + next(5) as f64, now);
        }
        let all = Query::compile("", &Options::default(), &Clock::system()).unwrap();
        let queries = GUESSES;
        let mut pages = 0;
        for q in queries {
            let words: Vec<String> = q.split(' ').map(String::from).collect();
            for (offset, limit) in [(0, 1), (0, 5), (2, 3), (0, 20), (7, 50), (0, 0)] {
                let request = FuzzyRequest {
                    words: &words,
                    filter: &all,
                    under: None,
                    offset,
                    limit,
                };
                for used in [None, Some(&uses)] {
                    let answer = |prune, threads| {
                        let out = fuzzy_with(&s, &request, used, Stop::NEVER, prune, threads)
                            .unwrap()
                            .0;
                        let hits: Vec<(String, Option<f32>)> =
                            out.hits.into_iter().map(|h| (h.path, h.score)).collect();
                        (hits, out.total)
                    };
                    let passed = answer(true, Some(1));
                    let whole = answer(false, Some(1));
                    assert_eq!(passed, whole, "{q} at {offset}+{limit}");
                    for parts in [2, 3, 7] {
                        let parted = answer(true, Some(parts));
                        assert_eq!(parted, whole, "{q} at {offset}+{limit} in {parts} parts");
                    }
                    pages += usize::from(!passed.0.is_empty());
                }
            }
        }
        assert!(pages > 150, "the queries answer: {pages} pages");
    }

    /// No path scores a word above [`most_score`]: the word placed where
    /// nucleo's bonuses are largest (the start, after `/`, a space, `_`,
    /// a case change, a digit), whole and with gaps, in upper and lower case.
    #[test]
    fn no_path_scores_a_word_above_its_bound() {
        let mut config = Config::DEFAULT.match_paths();
        config.prefer_prefix = true;
        let mut matcher = Matcher::new(config);
        let mut chars = Vec::new();
        let mut best = 0.0f32;
        for word in [
            "a",
            "ab",
            "rs",
            "mod",
            "Codec",
            "read_buf",
            "tokio-util",
            "x1y2z3",
            "éte",
        ] {
            let a = atom(word);
            let most = most_score(&a);
            let spread: String = word.chars().flat_map(|c| [c, '/']).collect();
            let camel: String = word
                .chars()
                .map(|c| format!("x{}", c.to_uppercase()))
                .collect();
            let upper = word.to_uppercase();
            let mut paths = vec![word.to_string(), upper.clone(), spread, camel];
            for before in ["", "/", " ", "_", "a/", "q ", "aB", "9", "-"] {
                for after in ["", "/", ".rs", " x"] {
                    paths.push(format!("{before}{word}{after}"));
                    paths.push(format!("{before}{upper}{after}"));
                    paths.push(format!("src/{before}{word}{after}/{word}"));
                }
            }
            for p in &paths {
                if let Some(sc) = score(&a, p.as_bytes(), &mut matcher, &mut chars) {
                    assert!(sc as f32 <= most, "{word} in {p}: {sc} > {most}");
                    best = best.max(sc as f32 / most);
                }
            }
        }
        // And the bound is not loose for nothing: some path comes near it.
        assert!(best > 0.85, "the best path scored {best} of the bound");
    }

    /// The lead goes to the share of the typed letters a path spells out:
    /// a name equal to a run of the words, the others equal to folders; a
    /// word only scattered along the path gives none.
    #[test]
    fn the_lead_is_what_the_path_spells_out() {
        let cover = |q: &[&str]| {
            let words: Vec<String> = q.iter().map(|w| w.to_string()).collect();
            Cover::new(&words, &fold_words(&words))
        };
        let mut buf = Vec::new();
        let get = cover(&["get", "parameter"]);
        assert_eq!(
            get.bonus("examples/ssm/get-parameter.rst", 0, &mut buf),
            EXACT_BONUS
        );
        // The name is one of the words and the other is nowhere: no lead.
        let half = get.bonus("src/get.rs", 0, &mut buf);
        assert!(half == 0.0, "parameter is not held: {half}");
        let lead = get.bonus("parameter/get.rs", 0, &mut buf);
        assert_eq!(lead, EXACT_BONUS, "the other word is a folder");
        let part = get.bonus("parameterstore/get.rs", 0, &mut buf);
        assert!(
            (part - EXACT_BONUS * 3.0 / 12.0).abs() < 1e-3,
            "the other word is only part of a folder: {part}"
        );
        // Folders are named in the plural as often as not.
        let plural = get.bonus("parameters/get.rs", 0, &mut buf);
        assert_eq!(plural, EXACT_BONUS, "the other word's plural is a folder");
        let pip = cover(&["pip", "install", "command"]);
        let commands = pip.bonus(
            "site-packages/pip/_internal/commands/install.py",
            0,
            &mut buf,
        );
        let other = pip.bonus("site-packages/setuptools/command/install.py", 0, &mut buf);
        assert!(commands > other, "{commands} {other}");
        assert!(plural_of(b"classes", b"class") && plural_of(b"tests", b"test"));
        assert!(plural_of(b"matches", b"match") && plural_of(b"boxes", b"box"));
        assert!(!plural_of(b"testss", b"test") && !plural_of(b"is", b"i"));
        assert!(!plural_of(b"modes", b"mod") && !plural_of(b"notes", b"not"));
        assert!(!plural_of(b"modules", b"modul"));
        let cases = cover(&["testcase", "run"]);
        assert_eq!(cases.bonus("test_cases/run.rs", 0, &mut buf), EXACT_BONUS);
        // A folder may be a run of the words (versioned or not), in order.
        let serde = cover(&["serde", "json", "de"]);
        assert_eq!(
            serde.bonus("serde_json-1.0.154/src/de.rs", 0, &mut buf),
            EXACT_BONUS
        );
        let other = serde.bonus("rusqlite/src/types/serde_json.rs", 0, &mut buf);
        assert!(other < EXACT_BONUS, "de is inside serde only: {other}");
        let reversed = cover(&["json", "serde", "de"]);
        let out_of_order = reversed.bonus("serde_json-1.0.154/src/de.rs", 0, &mut buf);
        assert!(
            out_of_order < EXACT_BONUS,
            "a run in the folder's order only: {out_of_order}"
        );
        let part = serde.bonus("serde_json_core/src/de.rs", 0, &mut buf);
        assert!(
            part < EXACT_BONUS,
            "a run is the folder's whole name: {part}"
        );
        let init = cover(&["idna", "init"]);
        let pkg = init.bonus("site-packages/idna/__init__.py", 0, &mut buf);
        let folder = init.bonus("site-packages/idna/", 0, &mut buf);
        assert_eq!(pkg, EXACT_BONUS);
        assert!(folder < pkg, "{folder} {pkg}");
        // `init` only scattered (`i`…`n`…`i`…`t`): no lead at all.
        assert_eq!(init.bonus("data/idna/contactlist.json", 0, &mut buf), 0.0);
        // A folder's version is not typed, or typed.
        let crate_mod = cover(&["mod", "rustix"]);
        assert_eq!(
            crate_mod.bonus("rustix-1.1.6/src/fs/mod.rs", 0, &mut buf),
            EXACT_BONUS
        );
        let versioned = cover(&["mod", "rustix-1.1.6"]);
        assert_eq!(
            versioned.bonus("rustix-1.1.6/src/fs/mod.rs", 0, &mut buf),
            EXACT_BONUS
        );
        // The way that gives most: every word as the name's start (400)
        // over the first word as its stem (3 letters of 12: 250).
        let start = cover(&["get", "parameter"]);
        assert_eq!(start.bonus("x/get.parameters", 0, &mut buf), PREFIX_BONUS);
        assert_eq!(unversioned(b"six-1.17.0.dist-info"), b"six");
        assert_eq!(unversioned(b"tokio-util"), b"tokio-util");
        assert_eq!(unversioned(b"x-v2"), b"x");
        // A prefix spelled out, and a word matched by a typo held but not
        // spelled out.
        let pre = cover(&["decod"]);
        assert_eq!(pre.bonus("codec/decoder.rs", 0, &mut buf), PREFIX_BONUS);
        let typo = cover(&["codec", "decodr"]);
        let t = typo.bonus("codec/decoder.rs", 0b10, &mut buf);
        assert_eq!(t, NEAR_SHARE * EXACT_BONUS, "the name is one edit away");
        let dropped = cover(&["asar.py"]);
        let near = dropped.bonus("shortest_paths/astar.py", 0, &mut buf);
        assert_eq!(near, NEAR_SHARE * EXACT_BONUS);
        assert_eq!(dropped.bonus("asyncio/staggered.py", 0, &mut buf), 0.0);
        // Too short a word forgives nothing.
        assert_eq!(cover(&["asar"]).bonus("x/astar", 0, &mut buf), 0.0);
        // An abbreviation spans eight parts of the path at most.
        let deep = "a/b/c/d/e/f/g/h/i/jx.rs";
        assert_eq!(cover(&["cdefghijx"]).bonus(deep, 0, &mut buf), ABBREV_BONUS);
        assert_eq!(cover(&["bcdefghijx"]).bonus(deep, 0, &mut buf), 0.0);
    }

    /// A name's bound is at least the lead of every path ending in it, and
    /// with one word it is that lead: random paths of parts that spell the
    /// words out, whole, joined, versioned, one edit away, in other cases.
    #[test]
    fn no_path_leads_above_its_names_bound() {
        let parts = [
            "get",
            "parameter",
            "get-parameter.rst",
            "get_parameters",
            "Get.rs",
            "rustix-1.1.6",
            "mod.rs",
            "decoder",
            "decodr.py",
            "astar.py",
            "x",
            "ÉTÉ",
            "été.md",
            "paramter",
            "tokio-1.54.1",
            "fs",
            "fs_copy.rs",
            "CopyFile.rs",
        ];
        let queries: [&[&str]; 12] = [
            &["get"],
            &["get", "parameter"],
            &["parameter", "get"],
            &["mod", "rustix"],
            &["decod"],
            &["decoder", "x"],
            &["asar.py"],
            &["ete", "get", "mod"],
            &["parameter"],
            &["tfcop"],
            &["fscop", "x"],
            &["tcf"],
        ];
        let mut next = crate::testing::below(14);
        let mut buf = Vec::new();
        let (mut leads, mut exact) = (0, 0);
        for q in queries {
            let words: Vec<String> = q.iter().map(|w| w.to_string()).collect();
            let cover = Cover::new(&words, &fold_words(&words));
            for _ in 0..400 {
                let depth = next(4);
                let path: Vec<&str> = (0..=depth).map(|_| parts[next(parts.len())]).collect();
                let name = path[depth];
                let mut path = path.join("/");
                if next(4) == 0 {
                    path.push('/');
                }
                let typo = if next(3) == 0 { next(8) as u64 } else { 0 };
                let lead = cover.bonus(&path, typo, &mut buf);
                let bound = cover.lead_bound(name.as_bytes(), typo, &mut buf);
                assert!(lead <= bound, "{q:?} {path} typo {typo}: {lead} > {bound}");
                // With one word the bound is the lead, but where it is an
                // abbreviation's: that bound takes the folders to spell the
                // rest of the word at no cost.
                let mut open = Vec::new();
                cover.abbrevs(name.as_bytes(), 0, typo, true, &mut open);
                if words.len() == 1 && typo == 0 {
                    if bound != open[0] {
                        assert_eq!(lead, bound, "{q:?} {path}: one word");
                    }
                    exact += usize::from(lead == bound);
                }
                leads += usize::from(lead > 0.0);
            }
        }
        assert!(leads > 300 && exact > 600, "{leads} leads, {exact} exact");
    }

    /// Two neighbours swapped in the middle of a five-letter word leave it
    /// no trigram of the name's, and the name is still found.
    #[test]
    fn a_swap_in_a_short_word_is_a_typo_too() {
        let s = store(&["src/parse.rs", "src/other.rs", "lib/spare.rs"]);
        assert_eq!(find(&s, "pasre")[0], "src/parse.rs");
        assert_eq!(find(&s, "otehr")[0], "src/other.rs");
    }

    #[test]
    fn a_typo_counts_below_the_exact_name() {
        let s = store(&["a/service.rs", "b/servixe.rs"]);
        assert_eq!(find(&s, "servixe"), ["b/servixe.rs", "a/service.rs"]);
        assert_eq!(find(&s, "service"), ["a/service.rs", "b/servixe.rs"]);
    }

    /// The one-pass check agrees with the full distance on every pair of
    /// short strings over a small alphabet.
    /// The names one edit from a word, read off four trigram lists and the
    /// runs of swapped spellings, are every sorted name one edit away (on
    /// the name or its stem), checked name by name: edits of every kind,
    /// stems and extensions, longer names, accents.
    #[test]
    fn near_names_are_every_name_one_edit_away() {
        let bases = ["decoder", "tokio_util", "readme", "Łódźmap", "parser"];
        let mut next = crate::testing::below(11);
        let mut paths = Vec::new();
        for i in 0..600 {
            let mut name: Vec<char> = bases[next(bases.len())].chars().collect();
            match next(6) {
                0 => {
                    let at = next(name.len());
                    name[at] = ['x', 'e', '_', 'ó'][next(4)];
                }
                1 => {
                    name.remove(next(name.len()));
                }
                2 => name.insert(next(name.len() + 1), ['q', 'd', '-'][next(3)]),
                3 => {
                    let at = next(name.len() - 1);
                    name.swap(at, at + 1);
                }
                4 => name.extend("_and_more".chars()),
                _ => {}
            }
            let ext = ["", ".rs", ".tar.gz", ".r"][next(4)];
            let name: String = name.into_iter().collect();
            paths.push(format!("d{}/{name}{ext}", i % 7));
        }
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let s = store(&refs);
        for w in bases
            .iter()
            .chain(&["decodr", "readme.rs", "parsers", "lodzmap"])
        {
            let words = vec![w.to_string()];
            let folded = fold_words(&words);
            let found = near_names(&s, &folded, &words)[0]
                .as_ref()
                .map(|n| n.keys.clone())
                .unwrap_or_default();
            let mut buf = Vec::new();
            let every: Vec<u32> = (0..s.names.sorted_len())
                .filter(|&k| {
                    fold_into(s.names.get(k), &mut buf);
                    within_one_edit(&buf, &folded[0])
                })
                .collect();
            assert!(!every.is_empty(), "{w}");
            assert_eq!(found, every, "{w}");
        }
    }

    #[test]
    fn one_edit_agrees_with_the_full_distance() {
        let mut words = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = words
                .iter()
                .filter(|w: &&Vec<u8>| w.len() == words.last().map_or(0, Vec::len))
                .flat_map(|w| {
                    b"abc".iter().map(move |&c| {
                        let mut w = w.clone();
                        w.push(c);
                        w
                    })
                })
                .collect();
            words.extend(longer);
        }
        for a in &words {
            for b in &words {
                assert_eq!(
                    super::one_edit(a, b),
                    strsim::generic_damerau_levenshtein(a, b) <= 1,
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn one_edit() {
        assert!(within_one_edit(b"service.rs", b"servce"));
        assert!(within_one_edit(b"service.rs", b"serivce"));
        assert!(within_one_edit(b"service", b"servixe"));
        assert!(!within_one_edit(b"service", b"sxrvixe"));
    }
}
