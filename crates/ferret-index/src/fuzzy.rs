//! Fuzzy search: the query's words matched as subsequences of names and paths,
//! scored fzf-style with path-aware bonuses (word boundaries, camelCase, `/`,
//! consecutive runs) by `nucleo-matcher` (Helix's matcher), with one-letter
//! typos forgiven, filters applied, best first.
//!
//! Candidates need no shared trigram: each word is matched greedily, as a
//! subsequence, down the folders once per query (how far it gets through each
//! folder's path, a byte per folder), then the rest of it against each entry's
//! name, in parallel; so words match anywhere in the path, in any order, and
//! initials and word parts match across folders. Typos: a word of five
//! characters or more also brings the names within one edit of it
//! (Damerau-Levenshtein, on the name and on its stem), found through the
//! trigram lists: a name within one edit of a word keeps all but at most three
//! of the word's trigrams, so it holds at least one of any four of them. At
//! most [`MAX_SCORED`] candidates (those whose names hold the most words) are
//! then scored on their whole path, word by word, and ranked with the plain
//! search's rules (exact name and prefix first, generated folders lower).

use std::sync::Mutex;

use ferret_query::Query;
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::hits::{Hit, display_path, hit};
use crate::names::fold_into;
use crate::rank::{NameFit, Places, Ranker};
use crate::search::{SearchOutcome, SearchRequest, SortKey};
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

/// The matcher for names: path bonuses, and a bonus for matching near the
/// start (people type a name from its beginning).
fn name_matcher() -> Matcher {
    let mut config = Config::DEFAULT.match_paths();
    config.prefer_prefix = true;
    Matcher::new(config)
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
    if work < 20_000 {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |p| p.get())
            .min(8)
    }
}

/// Score `haystack` with `atom`, reusing `buf` for non-ASCII text.
fn score(atom: &Atom, haystack: &[u8], matcher: &mut Matcher, buf: &mut Vec<char>) -> Option<u16> {
    let text = String::from_utf8_lossy(haystack);
    atom.score(Utf32Str::new(&text, buf), matcher)
}

pub fn fuzzy(store: &Store, request: &FuzzyRequest<'_>, uses: Option<&Uses>) -> SearchOutcome {
    let words: Vec<String> = request
        .words
        .iter()
        .map(|w| w.chars().take(MAX_WORD).collect::<String>())
        .filter(|w| !w.trim().is_empty())
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
        return crate::search::search_with(
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
        );
    }
    let now = chrono::Utc::now().timestamp();
    let folded: Vec<Vec<u8>> = words
        .iter()
        .map(|w| {
            let mut f = Vec::new();
            fold_into(w.as_bytes(), &mut f);
            f
        })
        .collect();
    let atoms: Vec<Atom> = words.iter().map(|w| atom(w)).collect();
    let mut matcher = name_matcher();
    let mut chars = Vec::new();
    // A perfect match of each word: the scale its typos are scored on.
    let perfect: Vec<f32> = atoms
        .iter()
        .zip(&words)
        .map(|(a, w)| score(a, w.as_bytes(), &mut matcher, &mut chars).unwrap_or(1) as f32)
        .collect();

    // 1. Candidates: the entries whose path holds every word as a
    // subsequence (folders included, so initials and word parts match
    // across them: `tucdec` for `tokio-util/src/codec/decoder.rs`), or
    // whose name is one edit away from a word of five characters or more.
    let near = near_names(store, &folded, &words);
    let walk = Walk::new(store, &folded, &near);
    let found = walk.candidates(store, &folded, &near);
    let total_found = found.len();
    let mut found = found;
    if found.len() > MAX_SCORED {
        // Bounded work: the entries whose own names hold the most words.
        found.select_nth_unstable_by(MAX_SCORED - 1, |a, b| b.pre.cmp(&a.pre));
        found.truncate(MAX_SCORED);
    }

    // 2. Scored on the whole path, word by word (any order: the scores add
    // up), then ranked as plain searches are: the exact name and a name's
    // start keep their lead, generated folders lower, and recency, use,
    // depth and length decide among equals, the same for every path.
    let mut ranker = Ranker::new(folded.clone(), now, uses);
    ranker.prepare(store, found.len());
    let mut places = Places::default();
    let mut buf = Vec::new();
    let mut scored: Vec<(f32, String, EntryId)> = Vec::with_capacity(found.len());
    for c in found {
        let id = c.id;
        if request.under.is_some_and(|u| !store.is_within(id, u))
            || !(request.filter.is_match_all() || request.filter.matches(&store.entry(id)))
        {
            continue;
        }
        let path = display_path(store, id);
        let mut total = 0.0;
        let mut fits = true;
        for (w, a) in atoms.iter().enumerate() {
            let typo = c.typo & (1 << w) != 0;
            let s = if typo {
                None
            } else {
                a.score(Utf32Str::new(&path, &mut chars), &mut matcher)
            };
            match s {
                Some(s) => total += s as f32,
                None if typo || near[w].is_some() => total += perfect[w] * TYPO_WEIGHT,
                None => {
                    fits = false;
                    break;
                }
            }
        }
        if !fits {
            continue;
        }
        let rel = ranker.rank(store, id, &mut places, &mut buf);
        total += match rel.fit {
            NameFit::Exact => EXACT_BONUS,
            NameFit::Prefix => PREFIX_BONUS,
            _ => 0.0,
        };
        if rel.generated {
            total -= GENERATED_PENALTY;
        }
        if store.kind(id) == crate::store::Kind::File {
            // A guess at a name is most often a file's: `uring` means
            // `driver/uring.rs` more often than the folder `driver/uring/`.
            total += FILE_BONUS;
        }
        total += rel.bonus;
        scored.push((total, path, id));
    }
    let total = if total_found > MAX_SCORED {
        total_found
    } else {
        scored.len()
    };
    let wanted = request
        .offset
        .saturating_add(request.limit)
        .min(scored.len());
    let cmp = |a: &(f32, String, EntryId), b: &(f32, String, EntryId)| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.len().cmp(&b.1.len()))
            .then_with(|| a.1.cmp(&b.1))
    };
    if wanted < scored.len() && wanted > 0 {
        scored.select_nth_unstable_by(wanted - 1, cmp);
        scored.truncate(wanted);
    }
    scored.sort_unstable_by(cmp);
    SearchOutcome {
        hits: scored
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .map(|(s, _, id)| Hit {
                score: Some((s * 10.0).round() / 10.0),
                ..hit(store, id)
            })
            .collect(),
        groups: None,
        total: total as u64,
    }
}

/// At most this many candidates are scored on their whole path (a short
/// guess is a subsequence of most paths in a deep tree); `total` still
/// counts them all.
const MAX_SCORED: usize = 3_000;

/// What an exact name (or stem) and a name's start add: more than any
/// subsequence score, so they keep their lead.
const EXACT_BONUS: f32 = 1000.0;
const PREFIX_BONUS: f32 = 400.0;
/// What a generated or vendored folder takes away: a near tie goes to the
/// files outside, a clearly better match inside still wins (fzf knows no such
/// folders; a tree served for its vendored code, a Python installation's
/// `site-packages`, must still answer).
const GENERATED_PENALTY: f32 = 60.0;
/// What a file has over a folder of the same fit (a tie-break, a folder
/// level's worth and a little more).
const FILE_BONUS: f32 = 4.0;

/// A candidate: its entry, how many words its own name holds (what bounded
/// work keeps first), and which words matched only by a typo.
struct Found {
    id: EntryId,
    pre: i32,
    typo: u64,
}

/// How far each word gets, as a subsequence, through each folder's path.
struct Walk {
    /// By folder slot, a byte per word: how many of its bytes the folder's
    /// path (as shown) holds in order, matched greedily from the left.
    consumed: Vec<u8>,
    words: usize,
    /// By folder slot, the words one of the folders of its path (itself
    /// included) is one edit away from (a typo in a folder's name).
    typos: Vec<u64>,
    /// By folder slot, how deep it lies (what bounded work weighs).
    depth: Vec<u16>,
    /// One root: its name is not part of the paths shown.
    single: bool,
}

/// Greedily match `word` from `from` over `name` (after a `/` when `sep`).
fn advance(word: &[u8], mut from: usize, sep: bool, name: &[u8]) -> usize {
    if sep && word.get(from) == Some(&b'/') {
        from += 1;
    }
    for &b in name {
        if from == word.len() {
            break;
        }
        if word[from] == b {
            from += 1;
        }
    }
    from
}

impl Walk {
    fn new(store: &Store, words: &[Vec<u8>], near: &[Option<Near>]) -> Walk {
        let n = words.len();
        let single = store.roots().len() == 1;
        let mut consumed = vec![0u8; store.dirs.len() * n];
        let any_near = near.iter().any(Option::is_some);
        let mut typos = vec![0u64; if any_near { store.dirs.len() } else { 0 }];
        let mut depth = vec![0u16; store.dirs.len()];
        let mut stack = Vec::new();
        let mut buf = Vec::new();
        let mut here = vec![0u8; n];
        for &top in store.roots() {
            let Some(slot) = store.dir_slot(top) else {
                continue;
            };
            fold_into(store.name(top), &mut buf);
            for (w, word) in words.iter().enumerate() {
                consumed[slot * n + w] = if single {
                    0
                } else {
                    advance(word, 0, false, &buf) as u8
                };
            }
            stack.push(top);
        }
        while let Some(folder) = stack.pop() {
            let Some(slot) = store.dir_slot(folder) else {
                continue;
            };
            here.copy_from_slice(&consumed[slot * n..slot * n + n]);
            let sep = !(single && store.parent(folder) == crate::store::NONE);
            let typo_here = typos.get(slot).copied().unwrap_or(0);
            for &child in store.children(folder) {
                let Some(cs) = store.dir_slot(child) else {
                    continue;
                };
                fold_into(store.name(child), &mut buf);
                for (w, word) in words.iter().enumerate() {
                    consumed[cs * n + w] = advance(word, here[w] as usize, sep, &buf) as u8;
                }
                depth[cs] = depth[slot].saturating_add(1);
                if any_near {
                    let mut mask = typo_here;
                    for (w, near) in near.iter().enumerate() {
                        if let Some(nr) = near
                            && nr.holds(store, child, &buf, &words[w])
                        {
                            mask |= 1 << w;
                        }
                    }
                    typos[cs] = mask;
                }
                stack.push(child);
            }
        }
        Walk {
            consumed,
            words: n,
            typos,
            depth,
            single,
        }
    }

    /// Every live entry whose path holds each word (or whose name is one edit
    /// from it), looked at in parallel where there are many.
    fn candidates(&self, store: &Store, words: &[Vec<u8>], near: &[Option<Near>]) -> Vec<Found> {
        let cap = store.capacity_ids();
        let threads = threads_for(cap);
        let step = cap.div_ceil(threads).max(1);
        let out: Mutex<Vec<Found>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for t in 0..threads {
                let out = &out;
                scope.spawn(move || {
                    let mut buf = Vec::new();
                    let mut mine = Vec::new();
                    for id in t * step..((t + 1) * step).min(cap) {
                        let id = id as EntryId;
                        if let Some(f) = self.check(store, id, words, near, &mut buf) {
                            mine.push(f);
                        }
                    }
                    out.lock().unwrap_or_else(|p| p.into_inner()).extend(mine);
                });
            }
        });
        out.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    fn check(
        &self,
        store: &Store,
        id: EntryId,
        words: &[Vec<u8>],
        near: &[Option<Near>],
        buf: &mut Vec<u8>,
    ) -> Option<Found> {
        if !store.is_live(id) {
            return None;
        }
        let parent = store.parent(id);
        if parent == crate::store::NONE {
            return None;
        }
        let slot = store.dir_slot(parent)?;
        let sep = !(self.single && store.parent(parent) == crate::store::NONE);
        fold_into(store.name(id), buf);
        // What bounded work keeps first: the words the name holds (whole, or
        // at its start), then shallow paths and short names.
        let mut found = Found {
            id,
            pre: -(buf.len() as i32) - 16 * i32::from(self.depth[slot]),
            typo: 0,
        };
        for (w, word) in words.iter().enumerate() {
            let from = self.consumed[slot * self.words + w] as usize;
            if advance(word, from, sep, buf) == word.len() {
                if buf.starts_with(word) {
                    found.pre += 2000;
                } else if memchr::memmem::find(buf, word).is_some() {
                    found.pre += 1500;
                } else if advance(word, 0, false, buf) == word.len() {
                    found.pre += 1000;
                }
                continue;
            }
            let in_folder = self.typos.get(slot).is_some_and(|m| m & (1 << w) != 0);
            match &near[w] {
                Some(n) if in_folder || n.holds(store, id, buf, word) => {
                    found.typo |= 1 << w;
                    found.pre += 500;
                }
                _ => return None,
            }
        }
        Some(found)
    }
}

/// The names one edit away from a word (typos): from the trigram lists for
/// the names the orders know, checked directly for the rest.
struct Near {
    keys: Vec<u32>,
}

impl Near {
    fn holds(&self, store: &Store, id: EntryId, folded_name: &[u8], word: &[u8]) -> bool {
        let k = store.names_of[id as usize];
        if k < store.names.sorted_len() {
            self.keys.binary_search(&k).is_ok()
        } else {
            within_one_edit(folded_name, word)
        }
    }
}

/// For each word of five characters or more (counted in characters), the
/// names within one edit of it.
fn near_names(store: &Store, folded: &[Vec<u8>], words: &[String]) -> Vec<Option<Near>> {
    let names = &store.names;
    folded
        .iter()
        .zip(words)
        .enumerate()
        .map(|(i, (f, w))| {
            if i >= 64 || w.chars().count() < MIN_TYPO_WORD || w.contains('/') {
                return None;
            }
            let mut buf = Vec::new();
            let mut keys = names.near(f, &mut |k| {
                fold_into(names.get(k), &mut buf);
                within_one_edit(&buf, f)
            });
            keys.sort_unstable();
            Some(Near { keys })
        })
        .collect()
}

/// Whether `a` is within one edit (insert, delete, substitute, swap of two
/// neighbours) of `b`, on the whole name or on its stem.
pub(crate) fn within_one_edit(name: &[u8], word: &[u8]) -> bool {
    let stem = match memchr::memrchr(b'.', name) {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    };
    [name, stem].into_iter().any(|n| {
        n.len().abs_diff(word.len()) <= 1 && strsim::generic_damerau_levenshtein(n, word) <= 1
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, Meta};
    use ferret_query::{Clock, Options};

    fn store(paths: &[&str]) -> Store {
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
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
        crate::orders::rebuild_store(&mut s);
        s
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
        // One letter: the names holding it, recent first; nothing typed: all.
        assert_eq!(find(&s, "y").len(), 2);
        assert_eq!(find(&s, "").len(), 5);
        let long = "x".repeat(500);
        assert!(find(&s, &long).is_empty());
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
        assert_eq!(
            find(&s, "copy")[..2],
            ["tokio/src/fs/copy.rs", "target/debug/build/copy.rs"],
            "an exact name in a generated folder still beats a name holding the word"
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
        // The same answer every time (ties broken by the path).
        assert_eq!(find(&s, "rs"), find(&s, "rs"));
    }

    #[test]
    fn a_typo_counts_below_the_exact_name() {
        let s = store(&["a/service.rs", "b/servixe.rs"]);
        assert_eq!(find(&s, "servixe"), ["b/servixe.rs", "a/service.rs"]);
        assert_eq!(find(&s, "service"), ["a/service.rs", "b/servixe.rs"]);
    }

    #[test]
    fn one_edit() {
        assert!(within_one_edit(b"service.rs", b"servce"));
        assert!(within_one_edit(b"service.rs", b"serivce"));
        assert!(within_one_edit(b"service", b"servixe"));
        assert!(!within_one_edit(b"service", b"sxrvixe"));
    }
}
