//! Path completion from the index: what an agent or a client's UI may type next
//! after a partial path. Names only; nothing is read from disk.

use crate::{Index, store::Kind};

/// Completions of a partial path, best first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// Full paths (folders end in `/`), at most the limit asked for.
    pub values: Vec<String>,
    /// How many entries matched in all.
    pub total: usize,
}

impl Index {
    /// Complete `partial`, a path as shown to agents (with several roots it starts
    /// with a root's name). The part after the last `/` is matched against the
    /// names in the folder before it: names that start with it first (ignoring
    /// ASCII case), then names that merely contain it. `dirs_only` keeps folders.
    pub fn complete_path(&self, partial: &str, dirs_only: bool, limit: usize) -> Completion {
        let partial = partial.trim_start_matches("./");
        let (folder, stem) = match partial.rfind('/') {
            Some(i) => (&partial[..i], &partial[i + 1..]),
            None => ("", partial),
        };
        let store = self.read_store();
        if folder.is_empty() && store.roots().len() > 1 {
            // The first component names a root.
            return rank(
                store.roots().iter().map(|&r| (true, store.name(r))),
                "",
                stem,
                limit,
            );
        }
        drop(store);
        let Some(folder_id) = self.folder(folder) else {
            return Completion::default();
        };
        let store = self.read_store();
        let names = store
            .children(folder_id)
            .iter()
            .copied()
            .filter(|&c| !dirs_only || store.kind(c) == Kind::Dir)
            .map(|c| (store.kind(c) == Kind::Dir, store.name(c)));
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        rank(names, &prefix, stem, limit)
    }

    /// Complete `partial`, a path relative to root number `root` (as in a
    /// resource URI), whatever the number of roots.
    pub fn complete_in_root(&self, root: usize, partial: &str, limit: usize) -> Completion {
        let roots = &self.shared.config.roots;
        let Some(r) = roots.get(root) else {
            return Completion::default();
        };
        if roots.len() == 1 {
            return self.complete_path(partial, false, limit);
        }
        let prefix = format!("{}/", r.name);
        let mut done = self.complete_path(&format!("{prefix}{partial}"), false, limit);
        for v in &mut done.values {
            if let Some(rest) = v.strip_prefix(&prefix) {
                *v = rest.to_string();
            }
        }
        done
    }
}

/// Order `names` (with whether each is a folder) for the typed `stem`: names
/// that start with it first (in name order), then the names it fits as a
/// subsequence, best fit first (the fuzzy search's scoring, `nucleo-matcher`),
/// so `usrsvc` completes to `user_service.rs`. Names are borrowed, and only
/// the `limit` shown are ordered and written out: a folder of a million
/// entries is one pass over its names.
fn rank<'a>(
    names: impl Iterator<Item = (bool, &'a [u8])>,
    prefix: &str,
    stem: &str,
    limit: usize,
) -> Completion {
    use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
    use nucleo_matcher::{Config, Matcher, Utf32Str};
    use std::borrow::Cow;
    use std::cmp::Ordering;
    let lower_stem = stem.to_ascii_lowercase();
    let atom = Atom::new(
        stem,
        CaseMatching::Ignore,
        Normalization::Smart,
        AtomKind::Fuzzy,
        false,
    );
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buf = Vec::new();
    let mut starts: Vec<(bool, Cow<'a, str>)> = Vec::new();
    let mut fits: Vec<(u16, bool, Cow<'a, str>)> = Vec::new();
    for (is_dir, bytes) in names {
        let name = ferret_names::shown(bytes);
        let head = name.as_bytes().get(..lower_stem.len());
        if head.is_some_and(|h| h.eq_ignore_ascii_case(lower_stem.as_bytes())) {
            starts.push((is_dir, name));
        } else if !lower_stem.is_empty()
            && let Some(score) = atom.score(Utf32Str::new(&name, &mut buf), &mut matcher)
        {
            fits.push((score, is_dir, name));
        }
    }
    // By name ignoring ASCII case, then by name.
    let order = |a: &str, b: &str| {
        a.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
            .then_with(|| a.cmp(b))
    };
    let total = starts.len() + fits.len();
    // The first `n` of `items` in `cmp`'s order, sorted.
    fn first<T>(items: &mut Vec<T>, n: usize, cmp: impl Fn(&T, &T) -> Ordering) {
        if items.len() > n && n > 0 {
            items.select_nth_unstable_by(n - 1, &cmp);
        }
        items.truncate(n);
        items.sort_by(cmp);
    }
    // (Names in one folder differ; the kind only makes the order total.)
    first(&mut starts, limit, |a, b| {
        order(&a.1, &b.1).then(a.0.cmp(&b.0))
    });
    first(&mut fits, limit.saturating_sub(starts.len()), |a, b| {
        b.0.cmp(&a.0)
            .then_with(|| order(&a.2, &b.2))
            .then(a.1.cmp(&b.1))
    });
    let values = starts
        .into_iter()
        .chain(fits.into_iter().map(|(_, d, n)| (d, n)))
        .map(|(is_dir, name)| {
            let slash = if is_dir { "/" } else { "" };
            format!("{prefix}{name}{slash}")
        })
        .collect();
    Completion { values, total }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IndexConfig, IndexRoot};

    fn index_of(files: &[&str]) -> (tempfile::TempDir, Index) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if f.ends_with('/') {
                std::fs::create_dir_all(&p).unwrap();
            } else {
                std::fs::write(&p, b"x").unwrap();
            }
        }
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", dir.path())]);
        config.watch = false;
        let index = Index::open(config).unwrap();
        index.build_now(None);
        (dir, index)
    }

    #[test]
    fn completes_names_in_the_folder_typed_prefix_first() {
        let (_d, index) = index_of(&[
            "src/main.rs",
            "src/Makefile",
            "src/lib.rs",
            "src/domain/x.rs",
            "README.md",
        ]);
        let c = index.complete_path("src/ma", false, 100);
        assert_eq!(c.values, ["src/main.rs", "src/Makefile", "src/domain/"]);
        assert_eq!(c.total, 3);
        // Subsequences too, after the prefixes: `lb` fits `lib.rs`.
        assert_eq!(
            index.complete_path("src/lb", false, 100).values,
            ["src/lib.rs"]
        );
        let c = index.complete_path("", false, 100);
        assert_eq!(c.values, ["README.md", "src/"]);
        let c = index.complete_path("s", true, 100);
        assert_eq!(c.values, ["src/"]);
        assert_eq!(
            index.complete_path("nowhere/x", false, 100),
            Completion::default()
        );
    }

    #[test]
    fn tally_counts_below_a_folder() {
        let (_d, index) = index_of(&["a/x.txt", "a/b/y.txt", "z.md"]);
        let all = index.tally(None);
        assert_eq!((all.files, all.dirs, all.bytes), (3, 2, 3));
        let a = index.tally(index.folder("a"));
        assert_eq!((a.files, a.dirs, a.bytes), (2, 1, 2));
    }

    #[test]
    fn only_the_shown_are_ordered_yet_they_are_the_first_of_every_match() {
        // Names that start alike in both cases, and ones a stem only fits:
        // each page is the front of the whole order (sorted as it was before
        // only the shown were ordered).
        let mut names = Vec::new();
        let mut x = 7u32;
        for i in 0..400 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let word = ["Ab", "ab", "aB", "ba", "xab", "a_b", "AB"][(x >> 16) as usize % 7];
            names.push((i % 5 == 0, format!("{word}{}", (x >> 8) % 50)));
        }
        for stem in ["", "a", "ab", "AB", "b1", "x"] {
            let every = rank(
                names.iter().map(|(d, n)| (*d, n.as_bytes())),
                "p/",
                stem,
                usize::MAX,
            );
            for limit in [0, 1, 3, 50, 1000] {
                let page = rank(
                    names.iter().map(|(d, n)| (*d, n.as_bytes())),
                    "p/",
                    stem,
                    limit,
                );
                assert_eq!(page.total, every.total, "{stem} {limit}");
                assert_eq!(
                    page.values[..],
                    every.values[..limit.min(every.values.len())],
                    "{stem} {limit}"
                );
            }
            // The whole order: starts by name (case ignored first), then fits.
            let starts: Vec<&String> = every
                .values
                .iter()
                .take_while(|v| {
                    v[2..]
                        .to_ascii_lowercase()
                        .starts_with(&stem.to_ascii_lowercase())
                })
                .collect();
            assert!(
                starts.windows(2).all(|w| {
                    let (x, y) = (w[0].trim_end_matches('/'), w[1].trim_end_matches('/'));
                    let (a, b) = (x.to_ascii_lowercase(), y.to_ascii_lowercase());
                    a < b || (a == b && x <= y)
                }),
                "{stem}"
            );
        }
    }

    #[test]
    fn the_limit_caps_values_not_the_total() {
        let files: Vec<String> = (0..150).map(|i| format!("f{i:03}.txt")).collect();
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_d, index) = index_of(&refs);
        let c = index.complete_path("f", false, 100);
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.total, 150);
        assert_eq!(c.values[0], "f000.txt");
    }
}
