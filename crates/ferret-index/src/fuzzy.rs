//! Fuzzy search: the query's words matched as subsequences of names and paths,
//! scored fzf-style with path-aware bonuses (word boundaries, camelCase, `/`,
//! consecutive runs) by `nucleo-matcher` (Helix's matcher), with one-letter
//! typos forgiven, filters applied, best first.
//!
//! The last word (its last `/` piece) is matched against every distinct name
//! once, in parallel; the entries bearing the names it fits are then scored on
//! their whole path against all the words. Typos: a word of six letters or
//! more also brings the names within one edit of it (Damerau-Levenshtein, on
//! the name and on its stem), found through the trigram lists: a name within
//! one edit of a word keeps all but at most three of the word's trigrams, so it
//! holds at least one of any four of them.

use std::sync::Mutex;

use ferret_query::Query;
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::hits::{Hit, display_path, hit};
use crate::names::fold_into;
use crate::orders::skipped;
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

/// Words shorter than this forgive no typo.
const MIN_TYPO_WORD: usize = 6;

/// How good a near-miss (one edit away) counts, against a perfect match.
const TYPO_WEIGHT: f32 = 0.9;

/// The matcher for names: path bonuses, and a bonus for matching near the
/// start (people type a name from its beginning).
fn name_matcher() -> Matcher {
    let mut config = Config::DEFAULT.match_paths();
    config.prefer_prefix = true;
    Matcher::new(config)
}

/// How the key word fits a name beyond the matcher's score: the whole name or
/// its stem (a large bonus), or its start.
fn fit_bonus(name: &[u8], key: &[u8], perfect: f32, buf: &mut Vec<u8>) -> f32 {
    fold_into(name, buf);
    let stem = match memchr::memrchr(b'.', buf) {
        Some(i) if i > 0 => &buf[..i],
        _ => &buf[..],
    };
    if buf == key || stem == key {
        perfect
    } else if buf.starts_with(key) {
        perfect * 0.8
    } else {
        0.0
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
    fuzzy_until(store, request, uses, Stop::NEVER).unwrap_or_default()
}

/// [`fuzzy`], given up as [`Stopped`] once `stop` says so.
pub fn fuzzy_until(
    store: &Store,
    request: &FuzzyRequest<'_>,
    uses: Option<&Uses>,
    stop: Stop<'_>,
) -> Result<SearchOutcome, Stopped> {
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
        );
    }
    let halt = Halt::new(stop);
    let last = words.last().cloned().unwrap_or_default();
    let key = last
        .rsplit('/')
        .find(|p| !p.is_empty())
        .unwrap_or(&last)
        .to_string();
    let key_atom = atom(&key);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut chars = Vec::new();
    // A perfect match of the key word, the scale typos are scored on.
    let perfect = score(&key_atom, key.as_bytes(), &mut matcher, &mut chars).unwrap_or(1);
    let names = &store.names;
    let sorted = names.sorted_len();
    let mut folded_key = Vec::new();
    fold_into(key.as_bytes(), &mut folded_key);

    // 1. Names the key word fits, as a subsequence.
    let fitted: Mutex<Vec<(u32, f32)>> = Mutex::new(Vec::new());
    let threads = threads_for(sorted as usize) as u32;
    let step = sorted.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (key_atom, fitted, halt) = (&key_atom, &fitted, &halt);
            let folded_key = &folded_key;
            scope.spawn(move || {
                let mut matcher = name_matcher();
                let mut chars = Vec::new();
                let mut buf = Vec::new();
                let mut mine = Vec::new();
                for k in t * step..((t + 1) * step).min(sorted) {
                    if !halt.go() {
                        break;
                    }
                    let name = names.get(k);
                    if let Some(s) = score(key_atom, name, &mut matcher, &mut chars) {
                        let bonus = fit_bonus(name, folded_key, perfect as f32, &mut buf);
                        mine.push((k, s as f32 + bonus));
                    }
                }
                fitted
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(mine);
            });
        }
    });
    let mut fitted = fitted.into_inner().unwrap_or_else(|p| p.into_inner());
    fitted.sort_unstable_by_key(|&(k, _)| k);

    // 2. Names one edit away (typos), from the trigram lists: for words of six
    // letters or more (one edit from a shorter word is too many names).
    if folded_key.len() >= MIN_TYPO_WORD {
        let mut buf = Vec::new();
        let near = names.near(&folded_key, &mut |k| {
            if !halt.go() {
                return false;
            }
            fold_into(names.get(k), &mut buf);
            within_one_edit(&buf, &folded_key)
        });
        // One edit away from the whole name (or stem) ranks just below it,
        // above names the word merely fits as a subsequence.
        let near_score = perfect as f32 * (1.0 + TYPO_WEIGHT);
        for k in near {
            match fitted.binary_search_by_key(&k, |&(id, _)| id) {
                Ok(i) => fitted[i].1 = fitted[i].1.max(near_score),
                Err(_) => fitted.push((k, near_score)),
            }
        }
        fitted.sort_unstable_by_key(|&(k, _)| k);
    }

    // 3. Their entries, filtered, scored on the whole path.
    let pattern = Pattern::parse(&words.join(" "), CaseMatching::Ignore, Normalization::Smart);
    let whole_path = words.len() > 1 || last.contains('/');
    let b = &store.base;
    let now = chrono::Utc::now().timestamp();
    let mut scored: Vec<(f32, EntryId)> = Vec::new();
    let mut consider = |id: EntryId, name_score: f32, scored: &mut Vec<(f32, EntryId)>| {
        if request.under.is_some_and(|u| !store.is_within(id, u))
            || !(request.filter.is_match_all() || request.filter.matches(&store.entry(id)))
        {
            return;
        }
        let path = display_path(store, id);
        let base = if whole_path {
            let Some(s) = pattern.score(Utf32Str::new(&path, &mut chars), &mut matcher) else {
                // A typo in the key word: the path does not fit as a whole.
                if name_score > perfect as f32 {
                    scored.push((name_score + boost(store, id, &path, now, uses), id));
                }
                return;
            };
            s as f32 + name_score
        } else {
            name_score
        };
        scored.push((base + boost(store, id, &path, now, uses), id));
    };
    for &(k, s) in &fitted {
        for &id in &b.by_name[b.named(k)] {
            if !halt.go() {
                break;
            }
            if !skipped(store, id) {
                consider(id, s, &mut scored);
            }
        }
    }
    // Entries changed since the orders were built.
    let delta: Vec<EntryId> = store.delta_entries().collect();
    for id in delta {
        if !halt.go() {
            break;
        }
        let name = store.name(id);
        let s = score(
            &key_atom,
            name,
            &mut Matcher::new(Config::DEFAULT.match_paths()),
            &mut Vec::new(),
        )
        .map(|s| s as f32)
        .or_else(|| {
            let mut f = Vec::new();
            fold_into(name, &mut f);
            (folded_key.len() >= MIN_TYPO_WORD && within_one_edit(&f, &folded_key))
                .then_some(perfect as f32 * (1.0 + TYPO_WEIGHT))
        });
        if let Some(s) = s {
            consider(id, s, &mut scored);
        }
    }
    let total = scored.len();
    let wanted = request.offset.saturating_add(request.limit).min(total);
    let cmp = |a: &(f32, EntryId), b: &(f32, EntryId)| {
        b.0.total_cmp(&a.0).then_with(|| {
            store
                .names
                .cmp(store.names_of[a.1 as usize], store.names_of[b.1 as usize])
                .then(a.1.cmp(&b.1))
        })
    };
    if wanted < scored.len() && wanted > 0 {
        scored.select_nth_unstable_by(wanted - 1, cmp);
        scored.truncate(wanted);
    }
    scored.sort_unstable_by(cmp);
    halt.result(SearchOutcome {
        hits: scored
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .map(|(s, id)| Hit {
                score: Some((s * 10.0).round() / 10.0),
                ..hit(store, id)
            })
            .collect(),
        groups: None,
        total: total as u64,
    })
}

/// What lifts one of several equally fitting entries: an exact name, a short
/// path, recent changes, recent use.
fn boost(store: &Store, id: EntryId, path: &str, now: i64, uses: Option<&Uses>) -> f32 {
    let depth = path.matches('/').count() as f32 * 0.25;
    let age_days = (now - store.meta(id).mtime).max(0) as f32 / 86_400.0;
    let recency = if age_days < 1.0 {
        6.0
    } else if age_days < 7.0 {
        4.0
    } else if age_days < 31.0 {
        2.0
    } else {
        0.0
    };
    let used = uses.map_or(0.0, |u| (1.0 + u.score(path, now) as f32).ln() * 8.0);
    recency + used - depth * 2.0 - path.len() as f32 / 40.0
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

    #[test]
    fn one_edit() {
        assert!(within_one_edit(b"service.rs", b"servce"));
        assert!(within_one_edit(b"service.rs", b"serivce"));
        assert!(within_one_edit(b"service", b"servixe"));
        assert!(!within_one_edit(b"service", b"sxrvixe"));
    }
}
