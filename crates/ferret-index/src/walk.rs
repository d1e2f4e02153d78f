//! Walking a folder into entries, in parallel, with the `ignore` crate's walker.
//!
//! The walker reads names and metadata only, never file contents, and never
//! follows symlinks (they are recorded as symlinks). Roots are walked through the
//! path of their open directory handle (`/proc/self/fd/N` on Linux) when the caller
//! gives one, so a root swapped for a symlink after start cannot redirect the walk.

use std::{
    collections::HashMap,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use ignore::{WalkBuilder, WalkState};

use crate::store::{EntryId, Kind, Meta, Store, UNKNOWN_TIME};

/// Which entries an index holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// Index hidden (dot) entries too.
    pub hidden: bool,
    /// Ignore `.gitignore` / `.ignore` rules.
    pub no_ignore: bool,
}

/// One walked entry, before it gets an id.
pub(crate) struct Walked {
    /// Path below the walked folder, `/`-separated.
    pub rel: Vec<u8>,
    pub depth: usize,
    pub kind: Kind,
    pub meta: Meta,
}

pub fn meta_of(m: &std::fs::Metadata) -> Meta {
    Meta {
        size: if m.is_dir() { 0 } else { m.len() },
        mtime: m.mtime(),
        btime: m
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(UNKNOWN_TIME, |d| d.as_secs() as i64),
        mode: m.permissions().mode(),
    }
}

pub fn kind_of(ft: &std::fs::FileType) -> Kind {
    if ft.is_symlink() {
        Kind::Symlink
    } else if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// Walk `dir` (everything below it, not `dir` itself), counting into `progress`.
/// A `dir` that is itself a symlink (`/proc/self/fd/N`) must end with `/`, or the
/// walker, which never follows links, would not enter it.
pub(crate) fn walk(dir: &Path, rules: Rules, progress: &AtomicU64) -> Vec<Walked> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let walker = WalkBuilder::new(dir)
        .hidden(!rules.hidden)
        .ignore(!rules.no_ignore)
        .git_ignore(!rules.no_ignore)
        .git_exclude(!rules.no_ignore)
        .git_global(false)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| {
            !e.file_name()
                .as_encoded_bytes()
                .starts_with(crate::rules::OWN_TEMP_PREFIX)
        })
        .threads(threads)
        .build_parallel();
    let collected: Arc<Mutex<Vec<Vec<Walked>>>> = Arc::default();
    walker.run(|| {
        let sink = Batch {
            items: Vec::new(),
            out: collected.clone(),
        };
        let mut sink = sink;
        Box::new(move |result| {
            let Ok(entry) = result else {
                return WalkState::Continue; // unreadable folders are skipped, not fatal
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Some(ft) = entry.file_type() else {
                return WalkState::Continue;
            };
            let Ok(m) = entry.metadata() else {
                return WalkState::Continue; // vanished while walked
            };
            let Ok(rel) = entry.path().strip_prefix(dir) else {
                return WalkState::Continue;
            };
            let rel = rel.as_os_str().as_encoded_bytes().to_vec();
            sink.items.push(Walked {
                rel,
                depth: entry.depth(),
                kind: kind_of(&ft),
                meta: meta_of(&m),
            });
            progress.fetch_add(1, Ordering::Relaxed);
            WalkState::Continue
        })
    });
    let mut all = Vec::new();
    for mut part in Arc::try_unwrap(collected)
        .map(|m| m.into_inner().unwrap_or_default())
        .unwrap_or_default()
    {
        all.append(&mut part);
    }
    all
}

/// Collects one walker thread's entries and hands them over when the thread ends.
struct Batch {
    items: Vec<Walked>,
    out: Arc<Mutex<Vec<Vec<Walked>>>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        let items = std::mem::take(&mut self.items);
        if let Ok(mut out) = self.out.lock() {
            out.push(items);
        }
    }
}

/// Insert walked entries below `base` (parents before children).
pub(crate) fn insert_walked(store: &mut Store, base: EntryId, mut walked: Vec<Walked>) -> usize {
    walked.sort_by_key(|w| w.depth);
    let mut folders: HashMap<Vec<u8>, EntryId> = HashMap::new();
    let mut added = 0;
    for w in walked {
        let (parent_rel, name) = match memchr::memrchr(b'/', &w.rel) {
            Some(i) => (&w.rel[..i], &w.rel[i + 1..]),
            None => (&w.rel[..0], &w.rel[..]),
        };
        let parent = if parent_rel.is_empty() {
            base
        } else {
            match folders.get(parent_rel) {
                Some(&p) => p,
                None => continue, // its folder vanished mid-walk
            }
        };
        let id = store.insert_new(parent, name, w.kind, w.meta);
        added += 1;
        if w.kind == Kind::Dir {
            folders.insert(w.rel, id);
        }
    }
    added
}
