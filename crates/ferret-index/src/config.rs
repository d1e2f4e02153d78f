//! What an index is asked to hold and where it keeps its state: the roots,
//! the walk's rules, the watch limits, the state directory's files.

use std::{path::PathBuf, time::Duration};

use crate::rules::Rules;

/// [`IndexConfig::rescan_part`]'s default. (A few in this crate's unit
/// tests, so that their rescans go in parts.)
const RESCAN_PART: usize = if cfg!(test) { 4 } else { 65_536 };

/// A folder the index covers.
#[derive(Debug, Clone)]
pub struct IndexRoot {
    pub name: String,
    /// The canonical path, as shown to operators and stored in the snapshot key.
    pub path: PathBuf,
    /// The path walked and watched: `/proc/self/fd/N` of the root's open handle
    /// where the caller has one, else `path`.
    pub walk_path: PathBuf,
}

impl IndexRoot {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> IndexRoot {
        let path = path.into();
        IndexRoot {
            name: name.into(),
            walk_path: path.clone(),
            path,
        }
    }
}

#[derive(Debug, Clone)]
pub struct IndexConfig {
    pub roots: Vec<IndexRoot>,
    pub rules: Rules,
    /// Where the snapshot and the journal live; `None` keeps everything in memory.
    pub state_dir: Option<PathBuf>,
    pub journal_max_age: Duration,
    pub journal_max_rows: u64,
    /// How often a changed index is written to its snapshot.
    pub snapshot_every: Duration,
    /// Follow changes with the file-system watcher.
    pub watch: bool,
    /// Use at most this many inotify watches (the rest of the folders are
    /// rescanned every `limit_rescan_every`, as when the kernel's limit is met).
    pub max_watches: Option<usize>,
    /// How often folders left unwatched (watch limit) are rescanned.
    pub limit_rescan_every: Duration,
    /// Entries below a folder past which a rescan (a restart's, an
    /// overflow's, a stale picture's) compares it folder by folder rather
    /// than walking it whole beside the index: what bounds a rescan's
    /// memory. 65,536 unless a test asks for parts of a few entries.
    pub rescan_part: usize,
    /// A process that searches the saved index once and exits (`ferret
    /// search`): the snapshot's layout is checked but not every byte
    /// ([`crate::snapshot::Trust::Layout`]), and changes are not journalled
    /// (nothing changes), so that it answers in milliseconds.
    pub one_shot: bool,
}

impl IndexConfig {
    pub fn new(roots: Vec<IndexRoot>) -> IndexConfig {
        IndexConfig {
            roots,
            rules: Rules::default(),
            state_dir: None,
            journal_max_age: Duration::from_secs(30 * 24 * 3600),
            journal_max_rows: 1_000_000,
            snapshot_every: Duration::from_secs(300),
            watch: true,
            max_watches: None,
            limit_rescan_every: Duration::from_secs(60),
            rescan_part: RESCAN_PART,
            one_shot: false,
        }
    }

    /// What makes a snapshot belong to this configuration.
    pub(crate) fn key(&self) -> Vec<u8> {
        let mut key = format!(
            "hidden={} no_ignore={}",
            self.rules.hidden, self.rules.no_ignore
        );
        for r in &self.roots {
            key.push_str(&format!("\n{}={}", r.name, r.path.display()));
        }
        key.into_bytes()
    }

    fn file_stem(&self) -> String {
        format!("index-{:016x}", crate::snapshot::hash64(&self.key()))
    }

    pub fn snapshot_path(&self) -> Option<PathBuf> {
        self.state_dir
            .as_ref()
            .map(|d| d.join(format!("{}.snap", self.file_stem())))
    }

    /// Where the use scores that relevance boosts by are saved.
    pub fn uses_path(&self) -> Option<PathBuf> {
        self.state_dir
            .as_ref()
            .map(|d| d.join(format!("{}.uses.json", self.file_stem())))
    }

    pub fn journal_path(&self) -> Option<PathBuf> {
        self.state_dir
            .as_ref()
            .map(|d| d.join(format!("{}.journal.sqlite", self.file_stem())))
    }
}
