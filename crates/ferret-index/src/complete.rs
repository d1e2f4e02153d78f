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
            let names: Vec<(bool, String)> = store
                .roots()
                .iter()
                .map(|&r| (true, String::from_utf8_lossy(store.name(r)).into_owned()))
                .collect();
            drop(store);
            return rank(names, "", stem, limit);
        }
        drop(store);
        let Some(folder_id) = self.folder(folder) else {
            return Completion::default();
        };
        let store = self.read_store();
        let names: Vec<(bool, String)> = store
            .children(folder_id)
            .iter()
            .copied()
            .filter(|&c| !dirs_only || store.kind(c) == Kind::Dir)
            .map(|c| {
                (
                    store.kind(c) == Kind::Dir,
                    String::from_utf8_lossy(store.name(c)).into_owned(),
                )
            })
            .collect();
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
/// so `usrsvc` completes to `user_service.rs`.
fn rank(names: Vec<(bool, String)>, prefix: &str, stem: &str, limit: usize) -> Completion {
    use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
    use nucleo_matcher::{Config, Matcher, Utf32Str};
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
    let mut starts = Vec::new();
    let mut fits = Vec::new();
    for (is_dir, name) in names {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with(&lower_stem) {
            starts.push((is_dir, name));
        } else if !lower_stem.is_empty()
            && let Some(score) = atom.score(Utf32Str::new(&name, &mut buf), &mut matcher)
        {
            fits.push((score, is_dir, name));
        }
    }
    let order = |a: &(bool, String), b: &(bool, String)| {
        a.1.to_ascii_lowercase()
            .cmp(&b.1.to_ascii_lowercase())
            .then_with(|| a.1.cmp(&b.1))
    };
    starts.sort_by(order);
    fits.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| order(&(a.1, a.2.clone()), &(b.1, b.2.clone())))
    });
    let total = starts.len() + fits.len();
    let values = starts
        .into_iter()
        .chain(fits.into_iter().map(|(_, d, n)| (d, n)))
        .take(limit)
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
