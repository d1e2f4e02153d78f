//! The matches of a search among a few given paths, each looked up by its
//! path: for a caller that already knows which few files it wants (a grep
//! whose candidates the content index named), instead of a pass over every
//! entry. Added beside the planner, not part of it.

use std::collections::HashSet;

use crate::{
    hits::find_display_path,
    request::SearchRequest,
    search::Fact,
    stop::{Halt, Stop, Stopped},
    store::{EntryId, Kind, NONE, Store, UNKNOWN_TIME},
};

/// The files among `paths` (as shown to agents; a folder stands for every
/// file below it) that match `request.query` at or below `request.under`,
/// as [`Fact`]s, each once, in no order (`sort`, `offset` and `limit` are
/// not read). A path the index does not hold is passed over. What matches
/// is what [`crate::search::matching_facts_until`] would answer for the same
/// request, restricted to those paths.
pub fn facts_at(
    store: &Store,
    request: &SearchRequest,
    paths: &[&str],
    stop: Stop<'_>,
) -> Result<Vec<Fact>, Stopped> {
    let halt = Halt::new(stop);
    let mut seen: HashSet<EntryId> = HashSet::with_capacity(paths.len());
    let mut out = Vec::with_capacity(paths.len());
    if request.query.is_match_none() {
        return Ok(out);
    }
    let under = request.under;
    let single = store.roots().len() == 1;
    for &path in paths {
        if !halt.go() {
            break;
        }
        let Some(id) = find_display_path(store, path) else {
            continue;
        };
        if !store.is_live(id) {
            continue;
        }
        match store.kind(id) {
            Kind::File
                if under.is_none_or(|u| store.is_within(id, u))
                    && admits(store, request, id)
                    && seen.insert(id) =>
            {
                out.push(fact(store, id, path.to_string()));
            }
            Kind::Dir => {
                // Every file below it that is in scope: from the folder, or
                // from the scope's folder when that lies below it.
                let top = match under {
                    None => id,
                    Some(u) if store.is_within(id, u) => id,
                    Some(u) if store.is_within(u, id) => u,
                    Some(_) => continue,
                };
                let shown = if top == id {
                    path.to_string()
                } else {
                    crate::hits::display_path(store, top)
                };
                let mut stack: Vec<(EntryId, String)> = vec![(top, shown)];
                while let Some((dir, prefix)) = stack.pop() {
                    for &c in store.children(dir) {
                        if !halt.go() {
                            break;
                        }
                        let name = ferret_names::shown(store.name(c));
                        let p = if single && prefix == "." {
                            name.into_owned()
                        } else {
                            format!("{prefix}/{name}")
                        };
                        match store.kind(c) {
                            Kind::Dir => stack.push((c, p)),
                            Kind::File if admits(store, request, c) && seen.insert(c) => {
                                out.push(fact(store, c, p));
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    halt.result(out)
}

/// Whether the query takes this live entry (not a root).
fn admits(store: &Store, request: &SearchRequest, id: EntryId) -> bool {
    store.parent(id) != NONE && request.query.matches(&store.entry(id))
}

fn fact(store: &Store, id: EntryId, path: String) -> Fact {
    let meta = store.meta(id);
    Fact {
        path,
        mtime: if meta.mtime == UNKNOWN_TIME {
            0
        } else {
            meta.mtime
        },
        size: store.size(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Meta;
    use ferret_query::{Clock, Options, Query};

    fn meta(size: u64, mtime: i64) -> Meta {
        Meta {
            size,
            mtime,
            btime: UNKNOWN_TIME,
            mode: 0o644,
        }
    }

    /// A tree of folders and files with random sizes and times.
    fn store(seed: u64) -> Store {
        let mut rng = seed;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut s = Store::new();
        let root = s.add_root(b"r", meta(0, 0));
        let mut folders = vec![root];
        for i in 0..400 {
            let parent = folders[(next() % folders.len() as u64) as usize];
            if next() % 5 == 0 {
                let id = s.insert_new(parent, format!("d{i}").as_bytes(), Kind::Dir, meta(0, 0));
                folders.push(id);
            } else {
                let ext = ["rs", "md", "txt"][(next() % 3) as usize];
                let m = meta(next() % 5000, 1_700_000_000 + (next() % 1000) as i64);
                s.insert_new(parent, format!("f{i}.{ext}").as_bytes(), Kind::File, m);
            }
        }
        s
    }

    /// Among any paths (files, folders, missing, repeated), the facts equal
    /// those of a search over every entry restricted to the paths and what
    /// lies below the folders among them, for several queries and scopes.
    #[test]
    fn facts_at_paths_equal_a_search_over_every_entry_restricted_to_them() {
        let (mut rounds, mut found, mut below) = (0, 0, 0);
        for seed in [1u64, 7, 0x9E37_79B9_7F4A_7C15] {
            let s = store(seed);
            let all: Vec<EntryId> = (0..s.capacity_ids() as EntryId)
                .filter(|&i| s.is_live(i) && s.parent(i) != NONE)
                .collect();
            let folders: Vec<EntryId> = all
                .iter()
                .copied()
                .filter(|&i| s.kind(i) == Kind::Dir)
                .collect();
            let shown = |id: EntryId| crate::hits::display_path(&s, id);
            let mut rng = seed | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            for filter in [
                "file:",
                "file: ext:rs",
                "file: size:>2000",
                "file: f1",
                "file: !d3",
            ] {
                let q = Query::compile(filter, &Options::default(), &Clock::system()).unwrap();
                for round in 0..20 {
                    let under =
                        (round % 3 != 0).then(|| folders[(next() % folders.len() as u64) as usize]);
                    let mut paths: Vec<String> = (0..1 + next() % 12)
                        .map(|_| shown(all[(next() % all.len() as u64) as usize]))
                        .collect();
                    paths.push("no/such/file.rs".into());
                    if let Some(p) = paths.first().cloned() {
                        paths.push(p);
                    }
                    let request = SearchRequest {
                        query: &q,
                        under,
                        sort: crate::SortKey::Name,
                        descending: false,
                        offset: 0,
                        limit: usize::MAX,
                        group_by: None,
                    };
                    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
                    let mut got: Vec<(String, i64, u64)> =
                        facts_at(&s, &request, &refs, Stop::NEVER)
                            .unwrap()
                            .into_iter()
                            .map(|f| (f.path, f.mtime, f.size))
                            .collect();
                    got.sort();
                    let named: Vec<EntryId> = refs
                        .iter()
                        .filter_map(|p| find_display_path(&s, p))
                        .collect();
                    let mut want: Vec<(String, i64, u64)> = all
                        .iter()
                        .copied()
                        .filter(|&i| s.kind(i) == Kind::File)
                        .filter(|&i| under.is_none_or(|u| s.is_within(i, u)))
                        .filter(|&i| named.iter().any(|&n| s.is_within(i, n)))
                        .filter(|&i| q.matches(&s.entry(i)))
                        .map(|i| (shown(i), s.meta(i).mtime, s.size(i)))
                        .collect();
                    want.sort();
                    assert_eq!(
                        got, want,
                        "seed {seed}, `{filter}`, under {under:?}, {paths:?}"
                    );
                    rounds += 1;
                    found += usize::from(!got.is_empty());
                    below += usize::from(got.iter().any(|(p, _, _)| !paths.contains(p)));
                }
            }
        }
        // Worth something only if many found files, some below a folder.
        assert!(
            found * 3 > rounds && below * 5 > rounds,
            "{found} and {below} of {rounds}"
        );
    }
}
