//! "Did you mean": existing paths near one that does not exist, so a wrong
//! path costs an agent one call, not three.
//!
//! First the places the path almost names: the folders it reaches exist up to
//! some point; the names there that are close to the next component (a typo, a
//! case slip, a dropped or added extension) are tried, and the rest of the path
//! followed below them. Then names close to the last component anywhere in the
//! index. Closeness is the Damerau-Levenshtein similarity of the folded names
//! (`strsim`), on the whole name and on its stem.

use crate::hits::display_path;
use crate::names::fold_into;
use crate::store::EntryId;
use crate::{Index, orders::skipped};

/// Names this similar (0..1) or more count as close.
const CLOSE: f64 = 0.6;

fn similarity(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let stem = |s: &str| {
        s.rsplit_once('.')
            .map_or(s.to_string(), |(st, _)| st.to_string())
    };
    [
        strsim::normalized_damerau_levenshtein(&a, &b),
        strsim::normalized_damerau_levenshtein(&stem(&a), &stem(&b)),
        strsim::normalized_damerau_levenshtein(&stem(&a), &b),
    ]
    .into_iter()
    .fold(0.0, f64::max)
}

impl Index {
    /// Up to `limit` existing paths (as shown to agents) near `wanted`, a path
    /// that does not exist; best first.
    pub fn suggest(&self, wanted: &str, limit: usize) -> Vec<String> {
        let wanted = wanted.trim_start_matches("./").trim_matches('/');
        let parts: Vec<&str> = wanted
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.is_empty() || limit == 0 {
            return Vec::new();
        }
        let store = self.read_store();
        let (root, parts) = if store.roots().len() > 1 {
            match store
                .roots()
                .iter()
                .find(|&&r| store.name(r) == parts[0].as_bytes())
            {
                Some(&r) => (r, &parts[1..]),
                None => return Vec::new(),
            }
        } else {
            (store.roots()[0], &parts[..])
        };
        let mut found: Vec<(f64, String)> = Vec::new();
        // Where the path stops existing.
        let mut at = root;
        let mut depth = 0;
        while depth < parts.len() {
            match crate::hits::child_shown(&store, at, parts[depth]) {
                Some(c) => {
                    at = c;
                    depth += 1;
                }
                None => break,
            }
        }
        if depth < parts.len() {
            let mut buf = Vec::new();
            let mut want = Vec::new();
            fold_into(parts[depth].as_bytes(), &mut want);
            for &c in store.children(at) {
                fold_into(store.name(c), &mut buf);
                let sim = similarity(&buf, &want);
                if sim < CLOSE {
                    continue;
                }
                // Follow the rest of the path below the close name.
                let rest = &parts[depth + 1..];
                let target = if rest.is_empty() {
                    Some(c)
                } else {
                    crate::hits::lookup_shown(&store, c, &rest.join("/"))
                };
                if let Some(t) = target {
                    found.push((1.0 + sim, display_path(&store, t)));
                }
            }
        }
        // Close names anywhere.
        let last = parts[parts.len() - 1];
        let mut folded = Vec::new();
        fold_into(last.as_bytes(), &mut folded);
        let names = &store.names;
        let mut buf = Vec::new();
        let candidates: Vec<u32> = if folded.len() >= 4 {
            names.near(&folded, &mut |k| {
                fold_into(names.get(k), &mut buf);
                similarity(&buf, &folded) >= CLOSE
            })
        } else {
            Vec::new()
        };
        let wanted_folded = {
            let mut w = Vec::new();
            fold_into(wanted.as_bytes(), &mut w);
            w
        };
        let mut anywhere: Vec<(f64, EntryId)> = Vec::new();
        for k in candidates {
            for &id in &store.base.by_name[store.base.named(k)] {
                if !skipped(&store, id) {
                    anywhere.push((0.0, id));
                }
                if anywhere.len() > 200 {
                    break;
                }
            }
        }
        for item in &mut anywhere {
            fold_into(display_path(&store, item.1).as_bytes(), &mut buf);
            item.0 = similarity(&buf, &wanted_folded);
        }
        found.extend(
            anywhere
                .into_iter()
                .map(|(sim, id)| (sim, display_path(&store, id))),
        );
        drop(store);
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut out: Vec<String> = Vec::new();
        for (_, p) in found {
            if !out.contains(&p) && p != wanted {
                out.push(p);
            }
            if out.len() == limit {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IndexConfig, IndexRoot};

    #[test]
    fn near_paths_are_suggested() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "src/user_service.rs",
            "src/main.rs",
            "docs/Guide.md",
            "deep/a/b/config.toml",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", dir.path())]);
        config.watch = false;
        let index = Index::open(config).unwrap();
        index.build_now(None);
        assert!(index.with_store(|s| s.lookup(s.roots()[0], b"src/main.rs").is_some()));
        assert_eq!(
            index.suggest("src/user_servce.rs", 5)[0],
            "src/user_service.rs"
        );
        assert_eq!(index.suggest("srcc/main.rs", 5)[0], "src/main.rs");
        assert_eq!(index.suggest("docs/guide.md", 5)[0], "docs/Guide.md");
        assert_eq!(index.suggest("src/main", 5)[0], "src/main.rs");
        assert_eq!(index.suggest("confg.toml", 5)[0], "deep/a/b/config.toml");
        assert!(index.suggest("zzzzzz/qqqq", 5).is_empty());
        assert!(index.suggest("", 5).is_empty());
    }
}
