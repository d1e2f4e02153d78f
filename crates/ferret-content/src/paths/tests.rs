use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn all(p: &Paths) -> Vec<String> {
    (0..p.len() as u32).map(|id| p.path(id)).collect()
}

/// What `files_below` gives for the folder at `folder` (`None`: no such
/// folder), beside every number whose path, as `added` says it is, lies
/// below it.
fn below(p: &Paths, added: &[String], folder: &str) -> (Option<Vec<u32>>, Option<Vec<u32>>) {
    let got = p.folder_of(folder).map(|f| {
        let mut got = p.files_below(f);
        got.sort_unstable();
        got
    });
    let want = (0..added.len() as u32)
        .filter(|&id| added[id as usize].starts_with(&format!("{folder}/")))
        .collect();
    (got, Some(want))
}

#[test]
fn paths_come_back_as_they_were_added() {
    let mut p = Paths::new();
    let list = [
        "README.md",
        "src/main.rs",
        "src/deep/er/still/x.rs",
        "src/deep/er/y.rs",
        "src/deep",
        "docs/ü/ñame with spaces.md",
        "a\u{FFFD}b/\u{FFFD}",
        "",
        "a//b",
        "/abs",
        "trailing/",
        "root-a/.hidden/.x",
        "back\\slash/new\nline",
    ];
    for (i, path) in list.iter().enumerate() {
        assert_eq!(p.push(path), Some(i as u32), "{path:?}");
    }
    assert_eq!(all(&p), list);
    for (i, path) in list.iter().enumerate() {
        assert_eq!(p.get(path), Some(i as u32), "{path:?}");
    }
    assert_eq!(p.live(), list.len());
    // Folders are held once: src, deep, er, still, docs, ü, a�b, a and the
    // empty one in it ("a//b"), the empty one of "/abs", trailing, root-a,
    // .hidden, back\slash; and the top.
    assert_eq!(p.folder_count(), 1 + 14);
    let mut near = Near::default();
    for (i, path) in list.iter().enumerate() {
        assert_eq!(p.get_near(path, &mut near), Some(i as u32), "{path:?}");
    }
    for missing in [
        "src",
        "src/",
        "main.rs",
        "src/main.r",
        "rc/main.rs",
        "/src/main.rs",
        "src//main.rs",
        "src/deep/er",
        "deep/er/y.rs",
        "a/b",
        "abs",
        "//abs",
        "trailing",
    ] {
        assert_eq!(p.get(missing), None, "{missing:?}");
        assert_eq!(p.get_near(missing, &mut near), None, "{missing:?}");
    }
}

#[test]
fn a_removed_path_keeps_its_number_and_is_no_longer_found() {
    let mut p = Paths::new();
    let a = p.push("x/a.txt").unwrap();
    let b = p.push("x/b.txt").unwrap();
    assert_eq!(p.remove("x/a.txt"), Some(a));
    assert_eq!(p.remove("x/a.txt"), None);
    assert_eq!(p.get("x/a.txt"), None);
    assert_eq!(p.get("x/b.txt"), Some(b));
    assert_eq!(p.path(a), "x/a.txt");
    assert!(!p.is_live(a) && p.is_live(b));
    assert_eq!(p.live(), 1);
    p.remove_id(b);
    assert_eq!(p.get("x/b.txt"), None);
    assert_eq!(p.live(), 0);
    // Added again: a new number, its folder reused.
    let folders = p.folder_count();
    let again = p.push("x/a.txt").unwrap();
    assert_eq!(again, 2);
    assert_eq!(p.get("x/a.txt"), Some(again));
    assert_eq!(p.folder_count(), folders);
}

#[test]
fn the_same_path_added_twice_is_found_as_the_later() {
    // Two names the name index shows alike (bytes not UTF-8 both shown as
    // U+FFFD): the later is the one looked up, as a map's insert does.
    let mut p = Paths::new();
    let first = p.push("d/\u{FFFD}.txt").unwrap();
    let second = p.push("d/\u{FFFD}.txt").unwrap();
    assert_ne!(first, second);
    assert_eq!(p.get("d/\u{FFFD}.txt"), Some(second));
    assert_eq!(p.live(), 1);
    assert!(!p.is_live(first));
    assert_eq!(p.path(first), p.path(second));
}

#[test]
fn folders_sharing_prefixes_are_told_apart() {
    let mut p = Paths::new();
    let ids: Vec<u32> = [
        "ab/c", "a/bc", "a/b/c", "abc", "a/b/c/d", "a/b/cd", "a/bc/d",
    ]
    .iter()
    .map(|x| p.push(x).unwrap())
    .collect();
    for (id, x) in ids.iter().zip([
        "ab/c", "a/bc", "a/b/c", "abc", "a/b/c/d", "a/b/cd", "a/bc/d",
    ]) {
        assert_eq!(p.get(x), Some(*id), "{x}");
        assert_eq!(p.path(*id), x);
    }
    let mut out = String::new();
    let (folder, name) = p.file(ids[4]);
    assert_eq!(name, "d");
    p.write_folder(folder, &mut out);
    assert_eq!(out, "a/b/c");
    p.write_folder(TOP, &mut out);
    assert_eq!(out, "");
}

#[test]
fn compacted_keeps_the_files_named_and_only_their_folders() {
    let mut p = Paths::new();
    for x in ["keep/a", "gone/deep/b", "keep/deep/c", "top", "gone/d"] {
        p.push(x).unwrap();
    }
    p.remove("gone/deep/b");
    let c = p.compacted([4, 2, 3]);
    assert_eq!(all(&c), ["gone/d", "keep/deep/c", "top"]);
    assert_eq!(c.get("keep/deep/c"), Some(1));
    assert_eq!(c.get("keep/a"), None);
    // gone, keep, keep/deep (and the top): not gone/deep.
    assert_eq!(c.folder_count(), 4);
}

#[test]
fn folders_added_by_parent_and_name_are_the_ones_paths_find() {
    let mut p = Paths::new();
    let src = p.folder(TOP, "src").unwrap();
    let deep = p.folder(src, "deep").unwrap();
    assert_eq!(p.folder(TOP, "src"), Some(src));
    assert_eq!(p.folder(99, "x"), None);
    let f = p.add(deep, "x.rs").unwrap();
    assert_eq!(p.get("src/deep/x.rs"), Some(f));
    assert_eq!(p.push("src/deep/y.rs"), Some(f + 1));
    assert_eq!(p.file(f + 1).0, deep);
    assert_eq!(p.folder_entry(deep), (src, "deep"));
    assert_eq!(p.add(1000, "x"), None);
}

proptest! {
    /// Against a map of strings: any paths (made of a few parts, so that
    /// they share folders), added, removed and added again.
    #[test]
    fn behaves_as_a_map_of_strings(ops in prop::collection::vec(
        (prop::bool::weighted(0.7), prop::collection::vec(
            prop::sample::select(vec!["", "a", "b", "ab", "ü", "\u{FFFD}", ".", "a b"]), 1..5)),
        1..80,
    )) {
        let mut p = Paths::new();
        let mut model: HashMap<String, u32> = HashMap::new();
        let mut added: Vec<String> = Vec::new();
        for (add, parts) in ops {
            let path = parts.join("/");
            if add {
                let id = p.push(&path).unwrap();
                prop_assert_eq!(id as usize, added.len());
                added.push(path.clone());
                model.insert(path, id);
            } else {
                prop_assert_eq!(p.remove(&path), model.remove(&path));
            }
        }
        prop_assert_eq!(p.live(), model.len());
        let mut near = Near::default();
        for (id, path) in added.iter().enumerate() {
            prop_assert_eq!(&p.path(id as u32), path);
            prop_assert_eq!(p.get(path), model.get(path).copied());
            // Through the last folder, and again from a fresh one.
            prop_assert_eq!(p.get_near(path, &mut near), model.get(path).copied());
            prop_assert_eq!(p.get_near(path, &mut Near::default()), model.get(path).copied());
            let other = format!("{path}/x");
            prop_assert_eq!(p.get_near(&other, &mut near), model.get(&other).copied());
        }
        // What lies below each folder any path passes through: every number
        // added below it (the removed too), as the paths' text says.
        for path in &added {
            let mut folder = path.as_str();
            while let Some((up, _)) = folder.rsplit_once('/') {
                folder = up;
                let (got, want) = below(&p, &added, folder);
                prop_assert_eq!(got, want, "below {:?}", folder);
            }
        }
        prop_assert_eq!(p.folder_of("no/such"), None);
        let keep: Vec<u32> = {
            let mut k: Vec<u32> = model.values().copied().collect();
            k.sort_unstable();
            k
        };
        let c = p.compacted(keep.iter().copied());
        for (new, old) in keep.iter().enumerate() {
            prop_assert_eq!(c.path(new as u32), p.path(*old));
            prop_assert_eq!(c.get(&p.path(*old)), Some(new as u32));
        }
    }
}

proptest! {
    /// A listing made without lookups, then looked up at once (as the
    /// content index lists the name index under its lock and makes the
    /// tables after), answers as one made path by path: a tree of folders
    /// each listed once but for names that show alike (listed twice, one
    /// folder), files that may share a path.
    #[test]
    fn a_listing_indexed_after_is_the_same(tree in prop::collection::vec(
        (prop::collection::vec(prop::sample::select(vec!["a", "b", "a%E9", "ü"]), 0..4),
         prop::sample::select(vec!["x", "y", "x", "z.rs"])),
        1..60,
    )) {
        let (mut by_one, mut listed) = (Paths::new(), Paths::new());
        // Each folder made once in the listing, as a walk of a tree does.
        let mut made: HashMap<String, u32> = HashMap::new();
        let mut files = Vec::new();
        for (folders, name) in &tree {
            let mut at = TOP;
            let mut path = String::new();
            for f in folders {
                if !path.is_empty() {
                    path.push('/');
                }
                path.push_str(f);
                at = match made.get(&path) {
                    // A name that shows like another (`a%E9` written out and
                    // the name of the byte it escapes) is listed again:
                    // one folder, as path by path.
                    Some(&id) if f.contains('%') => {
                        prop_assert_eq!(listed.folder_unindexed(at, f), Some(id));
                        id
                    }
                    Some(&id) => id,
                    None => {
                        let id = listed.folder_unindexed(at, f).unwrap();
                        made.insert(path.clone(), id);
                        id
                    }
                };
            }
            let file = if path.is_empty() { name.to_string() } else { format!("{path}/{name}") };
            let one = by_one.push(&file).unwrap();
            prop_assert_eq!(listed.add_unindexed(at, name), Some(one));
            files.push(file);
        }
        listed.index_unindexed();
        prop_assert_eq!(listed.live(), by_one.live());
        for (id, file) in files.iter().enumerate() {
            prop_assert_eq!(&listed.path(id as u32), file);
            prop_assert_eq!(listed.get(file), by_one.get(file));
        }
        for path in made.keys() {
            prop_assert!(listed.folder_of(path).is_some());
            let (got, want) = below(&listed, &files, path);
            prop_assert_eq!(got, want, "below {:?}", path);
        }
    }
}

#[test]
fn a_folder_moved_takes_its_files_to_their_new_paths() {
    let mut p = Paths::new();
    for path in [
        "a/b/x.rs",
        "a/b/c/y.rs",
        "a/b/c/z.rs",
        "a/keep.rs",
        "q/r.rs",
    ] {
        p.push(path);
    }
    p.remove("a/b/c/z.rs");
    assert_eq!(
        p.move_folder("a/b", "n/e/w"),
        Some(2),
        "the live files moved"
    );
    assert_eq!(
        all(&p),
        [
            "n/e/w/x.rs",
            "n/e/w/c/y.rs",
            "n/e/w/c/z.rs",
            "a/keep.rs",
            "q/r.rs"
        ]
    );
    assert_eq!(
        (p.get("n/e/w/x.rs"), p.get("n/e/w/c/y.rs")),
        (Some(0), Some(1))
    );
    assert_eq!(
        (p.get("a/b/x.rs"), p.get("n/e/w/c/z.rs"), p.folder_of("a/b")),
        (None, None, None)
    );
    let mut below = p.files_below(p.folder_of("n/e/w").unwrap());
    below.sort_unstable();
    assert_eq!(below, [0, 1, 2]);
    assert_eq!(p.files_below(p.folder_of("a").unwrap()), [3]);
    // Refused, nothing changed: no such folder, into itself, onto a folder or
    // a file held.
    for (from, to) in [
        ("a/b", "z"),
        ("n/e", "n/e/w2/deeper"),
        ("n/e", "n/e"),
        ("n", "q"),
        ("n", "a/keep.rs"),
    ] {
        assert_eq!(p.move_folder(from, to), None, "{from} -> {to}");
    }
    assert_eq!(p.live(), 4);
    // Moved back, found as first added; a file added there later is found too.
    assert_eq!(p.move_folder("n/e/w", "a/b"), Some(2));
    assert_eq!(p.get("a/b/c/y.rs"), Some(1));
    assert_eq!(p.push("a/b/c/new.rs"), Some(5));
    assert_eq!(p.get_near("a/b/c/new.rs", &mut Near::default()), Some(5));
}

proptest! {
    /// Folders moved among paths added and removed, against a map of strings
    /// whose keys below the folder are renamed: every number's path, every
    /// lookup, what lies below each folder, and the refusals.
    #[test]
    fn a_move_renames_what_lies_below(ops in prop::collection::vec(
        (0u8..3, prop::collection::vec(prop::sample::select(vec!["", "a", "b", "ab", "ü"]), 1..4),
         prop::collection::vec(prop::sample::select(vec!["", "a", "b", "c"]), 1..4)),
        1..60,
    )) {
        let mut p = Paths::new();
        let mut model: HashMap<String, u32> = HashMap::new();
        let mut added: Vec<String> = Vec::new();
        let mut folders: std::collections::HashSet<String> = Default::default();
        let prefixes = |path: &str| -> Vec<String> {
            path.match_indices('/').map(|(i, _)| path[..i].to_string()).collect()
        };
        for (op, parts, other) in ops {
            let path = parts.join("/");
            match op {
                0 => {
                    let id = p.push(&path).unwrap();
                    prop_assert_eq!(id as usize, added.len());
                    folders.extend(prefixes(&path));
                    added.push(path.clone());
                    model.insert(path, id);
                }
                1 => {
                    prop_assert_eq!(p.remove(&path), model.remove(&path));
                }
                _ => {
                    let (from, to) = (path, other.join("/"));
                    let inside = |x: &str, f: &str| x.strip_prefix(f).is_some_and(|r| r.starts_with('/'));
                    let allowed = folders.contains(&from)
                        && to != from
                        && !inside(&to, &from)
                        && !folders.contains(&to)
                        && !model.contains_key(&to);
                    let live_below = model.keys().filter(|k| inside(k, &from)).count();
                    prop_assert_eq!(
                        p.move_folder(&from, &to),
                        allowed.then_some(live_below),
                        "{:?} -> {:?}",
                        from,
                        to
                    );
                    if allowed {
                        let moved = |x: &str| -> Option<String> {
                            if x == from { Some(to.clone()) } else if inside(x, &from) { Some(format!("{to}{}", &x[from.len()..])) } else { None }
                        };
                        folders = folders.iter().map(|g| moved(g).unwrap_or_else(|| g.clone())).collect();
                        folders.extend(prefixes(&to));
                        // A file is moved by what lies above it, never by its own path.
                        let below = |x: &str| inside(x, &from).then(|| moved(x)).flatten();
                        for a in added.iter_mut() {
                            if let Some(n) = below(a) { *a = n; }
                        }
                        model = model.into_iter().map(|(k, v)| (below(&k).unwrap_or(k), v)).collect();
                    }
                }
            }
        }
        prop_assert_eq!(p.live(), model.len());
        for (id, path) in added.iter().enumerate() {
            prop_assert_eq!(&p.path(id as u32), path);
            prop_assert_eq!(p.get(path), model.get(path).copied());
            prop_assert_eq!(p.get_near(path, &mut Near::default()), model.get(path).copied());
        }
        for folder in &folders {
            let (got, want) = below(&p, &added, folder);
            prop_assert_eq!(got, want, "below {:?}", folder);
        }
    }
}
