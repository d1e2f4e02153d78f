//! Never stale: a grep made right after a change finds exactly what is on disk.
//!
//! A tree of many files in many folders is served (name index, watcher and
//! content index, as `serve` runs them); then round after round one random
//! change is made (a file created, often in a folder made for it, a few
//! levels deep; a file rewritten with a new token; renamed, across folders
//! too; deleted) and, at once, with no wait of any kind, the candidates are
//! chosen as the server chooses them (`gather_narrowed`: with every folder
//! watched, the content index names them itself) and searched for the token
//! the change added or removed. The files found must be exactly the files
//! that hold it on disk.
//!
//! The test does not pass by luck of timing. With every folder watched, each
//! answer must also say that the index itself was caught up (`caught_up`:
//! the watcher's barrier was passed before the index was read), so no change
//! was found by a listing that happened to run late. With the watch limit
//! reached (most folders unwatched, the index left behind on purpose), the
//! same rounds go through the fallback that lists changed folders, while the
//! watched folders change under it.
//!
//! Size: `FERRET_FRESHNESS_FILES` (default 10,000, in a tenth as many
//! folders) and `FERRET_FRESHNESS_ROUNDS` (default 300 watched, 80 with the
//! watch limit reached); `scripts/freshness` runs it larger, in release.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use ferret_content::{Config, ContentIndex};
use ferret_fs::{Policy, Roots};
use ferret_grep::{Output, Pattern, compile, gather_narrowed};
use ferret_index::{Index, IndexConfig, IndexRoot};

mod common;
use common::{Rng, grep_all, whole_tree};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Tree {
    dir: tempfile::TempDir,
    /// Files and the token each holds.
    files: Vec<(PathBuf, String)>,
    folders: Vec<PathBuf>,
    rng: Rng,
    made: u64,
}

impl Tree {
    fn new(files: usize, seed: u64) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Tree {
            dir,
            files: Vec::new(),
            folders: Vec::new(),
            rng: Rng(seed),
            made: 0,
        };
        let folders = (files / 10).max(1);
        for i in 0..folders {
            // Folders two and three levels deep, as in a source tree.
            let p = t
                .dir
                .path()
                .join(format!("crate{}", i % 50))
                .join(format!("mod{i}"));
            fs::create_dir_all(&p).unwrap();
            t.folders.push(p);
        }
        for i in 0..files {
            let folder = t.folders[i % folders].clone();
            let token = t.token();
            let p = folder.join(format!("file{i}.rs"));
            fs::write(&p, body(&token)).unwrap();
            t.files.push((p, token));
        }
        t
    }

    fn token(&mut self) -> String {
        self.made += 1;
        format!("tok{}x{:08x}", self.made, self.rng.next() as u32)
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(self.dir.path())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }

    /// One random change; the token to grep for and the files (relative)
    /// that hold it on disk now.
    fn change(&mut self, round: usize) -> (&'static str, String, BTreeSet<String>) {
        let kind = self.rng.below(8);
        match kind {
            // Created in a new folder (sometimes nested), as `fresh/new_N.rs`.
            0 | 1 => {
                let mut folder = self.dir.path().join(format!("fresh{round}"));
                if self.rng.below(2) == 0 {
                    folder = folder.join("a").join("b");
                }
                fs::create_dir_all(&folder).unwrap();
                let token = self.token();
                let p = folder.join(format!("new{round}.rs"));
                fs::write(&p, body(&token)).unwrap();
                self.folders.push(folder);
                let rel = self.rel(&p);
                self.files.push((p, token.clone()));
                ("create in a new folder", token, [rel].into())
            }
            // Created in a folder that exists.
            2 => {
                let folder = self.folders[self.rng.below(self.folders.len())].clone();
                let token = self.token();
                let p = folder.join(format!("added{round}.rs"));
                fs::write(&p, body(&token)).unwrap();
                let rel = self.rel(&p);
                self.files.push((p, token.clone()));
                ("create", token, [rel].into())
            }
            // Rewritten: the old token gone, a new one there.
            3 | 4 => {
                let i = self.rng.below(self.files.len());
                let token = self.token();
                let (p, old) = self.files[i].clone();
                fs::write(&p, body(&token)).unwrap();
                self.files[i].1 = token.clone();
                if kind == 3 {
                    ("rewrite (new token)", token, [self.rel(&p)].into())
                } else {
                    ("rewrite (old token)", old, BTreeSet::new())
                }
            }
            // Renamed, to another folder half of the time.
            5 | 6 => {
                let i = self.rng.below(self.files.len());
                let (from, token) = self.files[i].clone();
                let folder = if kind == 5 {
                    from.parent().unwrap().to_path_buf()
                } else {
                    self.folders[self.rng.below(self.folders.len())].clone()
                };
                let to = folder.join(format!("moved{round}.rs"));
                fs::rename(&from, &to).unwrap();
                self.files[i].0 = to.clone();
                ("rename", token, [self.rel(&to)].into())
            }
            // Deleted.
            _ => {
                let i = self.rng.below(self.files.len());
                let (p, token) = self.files.swap_remove(i);
                fs::remove_file(&p).unwrap();
                ("delete", token, BTreeSet::new())
            }
        }
    }
}

fn body(token: &str) -> String {
    format!("// a source file\nfn f() {{\n    let t = \"{token}\";\n}}\n")
}

struct Served {
    roots: Arc<Roots>,
    index: Index,
    content: ContentIndex,
}

fn serve(dir: &Path, max_watches: Option<usize>) -> Served {
    let roots = Roots::open(&[dir.to_str().unwrap().parse().unwrap()], Policy::default()).unwrap();
    let root = &roots.roots()[0];
    let mut config = IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]);
    config.max_watches = max_watches;
    let index = Index::open(config).unwrap();
    index.start();
    let roots = Arc::new(roots);
    let content = ContentIndex::new(Config::new(None), roots.clone(), index.clone());
    content.start();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !content.is_ready() {
        assert!(Instant::now() < deadline, "the content index never built");
        std::thread::sleep(Duration::from_millis(20));
    }
    Served {
        roots,
        index,
        content,
    }
}

/// Grep the whole tree for `token` as the server does; the files found,
/// whether the index was caught up, whether the content index was used, and
/// whether it named the files itself (not every file looked up).
fn grep_now(s: &Served, token: &str) -> (BTreeSet<String>, bool, bool, bool) {
    let pattern = Pattern {
        text: token.to_string(),
        literal: true,
        ..Pattern::default()
    };
    let (gathered, n) = gather_narrowed(
        &s.index,
        &s.roots,
        Some(&s.content),
        &whole_tree(),
        &pattern,
    )
    .unwrap();
    let caught_up = gathered.caught_up;
    let matcher = compile(&pattern).unwrap();
    let found = grep_all(
        &s.roots,
        &matcher,
        false,
        &gathered.candidates,
        Output::Files,
        0,
    );
    (
        found.files.into_iter().collect(),
        caught_up,
        n.used,
        n.used && !n.listed,
    )
}

fn run(max_watches: Option<usize>, seed: u64, rounds: usize) {
    let files = env("FERRET_FRESHNESS_FILES", 10_000);
    let rounds = env("FERRET_FRESHNESS_ROUNDS", rounds);
    let mut tree = Tree::new(files, seed);
    let served = serve(tree.dir.path(), max_watches);
    let mut stale = Vec::new();
    let (mut caught_up, mut narrowed, mut answered) = (0, 0, 0);
    for round in 0..rounds {
        let (what, token, want) = tree.change(round);
        let (got, up, used, named) = grep_now(&served, &token);
        caught_up += u64::from(up);
        narrowed += u64::from(used);
        answered += u64::from(named);
        if max_watches.is_none() {
            assert!(
                up,
                "round {round} ({what}): with every folder watched the index must be caught up"
            );
        }
        if got != want {
            stale.push(format!(
                "round {round} {what}: wanted {want:?}, got {got:?}"
            ));
        }
    }
    eprintln!(
        "{files} files, {rounds} rounds: {} stale, {caught_up} answered by a caught-up index, {narrowed} narrowed by the content index, {answered} named by it",
        stale.len()
    );
    assert!(stale.is_empty(), "stale answers:\n{}", stale.join("\n"));
    if max_watches.is_none() {
        assert_eq!(
            narrowed as usize, rounds,
            "the content index narrowed every grep"
        );
        assert_eq!(
            answered as usize, rounds,
            "the content index named the files of every grep itself"
        );
    } else {
        assert_eq!(
            caught_up, 0,
            "with unwatched folders the index is never caught up"
        );
    }
    served.index.shutdown();
}

#[test]
fn a_grep_right_after_a_change_is_never_stale() {
    run(None, 0x9e37_79b9_7f4a_7c15, 300);
}

#[test]
fn with_the_watch_limit_reached_the_listed_folders_make_up_for_it() {
    // A few watches for thousands of folders: most changes are not heard.
    // Each grep lists the changed folders (slow in a debug build): fewer rounds.
    run(Some(20), 0x2545_f491_4f6c_dd1d, 80);
}
