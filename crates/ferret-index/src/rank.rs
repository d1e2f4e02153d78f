//! Relevance: which of a search's matches is most likely the one meant.
//!
//! The order, most relevant first:
//! 1. entries outside generated or vendored folders (`node_modules`, `target`,
//!    `vendor`, `dist`, `build`, `__pycache__`, `.git`, virtual environments …)
//!    before those inside;
//! 2. how the name answers the query's words: the exact name (or its stem,
//!    `main` for `main.rs`, `libc` for `libc.so.6`), then names that start with
//!    the word, then the word at a word or camelCase boundary (`_`, `-`, `.`,
//!    space, `aB`), then anywhere;
//! 3. a score: recently modified files and files used lately through ferret
//!    (read, edited, matched; [`crate::uses`]) up, deep and long paths down.
//!
//! Each hit carries a single `score` (higher is better) that sums these.

use crate::names::fold_into;
use crate::store::{EntryId, Kind, NONE, Store};
use crate::uses::Uses;

/// Folders whose contents are generated or vendored.
const GENERATED: &[&[u8]] = &[
    b"node_modules",
    b"target",
    b"vendor",
    b"dist",
    b"build",
    b"__pycache__",
    b".git",
    b".venv",
    b"venv",
    b"site-packages",
    b".tox",
    b".gradle",
    b".next",
    b".nuxt",
    b"bower_components",
    b"Pods",
    b"DerivedData",
    b".terraform",
    b".cache",
];

/// How a name answers a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum NameFit {
    Exact = 0,
    Prefix = 1,
    Boundary = 2,
    Anywhere = 3,
}

/// How `name` answers `word` (folded), best of all its occurrences.
pub(crate) fn name_fit(name: &[u8], word: &[u8], buf: &mut Vec<u8>) -> NameFit {
    fold_into(name, buf);
    let folded = &buf[..];
    if word.is_empty() {
        return NameFit::Anywhere;
    }
    // `main` is the exact name of `main.rs`, and `libc` of `libc.so.6`.
    let stem = match memchr::memrchr(b'.', folded) {
        Some(i) if i > 0 => &folded[..i],
        _ => folded,
    };
    let first = match memchr::memchr(b'.', folded) {
        Some(i) if i > 0 => &folded[..i],
        _ => folded,
    };
    if folded == word || stem == word || first == word {
        return NameFit::Exact;
    }
    if folded.starts_with(word) {
        return NameFit::Prefix;
    }
    let finder = memchr::memmem::find_iter(folded, word);
    for at in finder {
        let before = folded[at - 1];
        let camel = name.len() == folded.len()
            && name[at].is_ascii_uppercase()
            && name[at - 1].is_ascii_lowercase();
        if matches!(before, b'_' | b'-' | b'.' | b' ' | b'/' | b'@' | b'+') || camel {
            return NameFit::Boundary;
        }
    }
    NameFit::Anywhere
}

/// An entry's place in the relevance order: compare with `Ord` (less is more
/// relevant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Relevance {
    pub fit: NameFit,
    pub generated: bool,
    /// Higher is better.
    pub bonus: f32,
}

impl Relevance {
    pub fn cmp(&self, other: &Relevance) -> std::cmp::Ordering {
        self.generated
            .cmp(&other.generated)
            .then(self.fit.cmp(&other.fit))
            .then(other.bonus.total_cmp(&self.bonus))
    }

    /// One number for agents and people: higher is better.
    pub fn score(&self) -> f32 {
        let fit = (3 - self.fit as i32) as f32 * 100.0;
        let generated = if self.generated { -400.0 } else { 0.0 };
        ((fit + generated + self.bonus) * 10.0).round() / 10.0
    }
}

/// Ranks entries for one query.
pub(crate) struct Ranker<'a> {
    /// The query's name words, folded, longest first.
    words: Vec<Vec<u8>>,
    now: i64,
    uses: Option<&'a Uses>,
}

impl<'a> Ranker<'a> {
    pub fn new(mut words: Vec<Vec<u8>>, now: i64, uses: Option<&'a Uses>) -> Ranker<'a> {
        words.sort_by_key(|w| std::cmp::Reverse(w.len()));
        Ranker { words, now, uses }
    }

    /// The longest word (what the prefix shortcut looks for).
    pub fn main_word(&self) -> Option<&[u8]> {
        self.words.first().map(Vec::as_slice)
    }

    pub fn rank(&self, store: &Store, id: EntryId, buf: &mut Vec<u8>) -> Relevance {
        let name = store.name(id);
        let fit = self
            .words
            .iter()
            .map(|w| name_fit(name, w, buf))
            .min()
            .unwrap_or(NameFit::Anywhere);
        // Climb once: depth, path length, generated folders above.
        let (mut depth, mut len, mut generated) = (0u32, name.len(), false);
        let mut at = store.parent(id);
        while at != NONE && store.parent(at) != NONE {
            depth += 1;
            let n = store.name(at);
            len += n.len() + 1;
            generated |= GENERATED.contains(&n);
            at = store.parent(at);
        }
        let meta = store.meta(id);
        let age_days = (self.now - meta.mtime).max(0) as f32 / 86_400.0;
        let recency = if store.kind(id) == Kind::Dir {
            0.0
        } else if age_days < 1.0 {
            3.0
        } else if age_days < 7.0 {
            2.0
        } else if age_days < 31.0 {
            1.0
        } else {
            0.0
        };
        let used = match self.uses {
            Some(u) if !u.is_empty() => {
                let path = crate::hits::display_path(store, id);
                (1.0 + u.score(&path, self.now) as f32).ln() * 4.0
            }
            _ => 0.0,
        };
        let bonus = recency + used - depth as f32 * 1.5 - len as f32 / 40.0;
        Relevance {
            fit,
            generated,
            bonus,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits() {
        let mut b = Vec::new();
        assert_eq!(name_fit(b"libc.so.6", b"libc", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"libcurl.so", b"libc", &mut b), NameFit::Prefix);
        assert_eq!(name_fit(b"libc", b"libc", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"Main.rs", b"main", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"main.rs", b"main.rs", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"x86-libc.a", b"libc", &mut b), NameFit::Boundary);
        assert_eq!(name_fit(b"myLibc.h", b"libc", &mut b), NameFit::Boundary);
        assert_eq!(
            name_fit(b"armv7-uclibceabi.html", b"libc", &mut b),
            NameFit::Anywhere
        );
        assert!(NameFit::Exact < NameFit::Anywhere);
    }
}
