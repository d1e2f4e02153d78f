//! What the index reports of itself: its [`Status`] (for `diagnostics` and
//! every answer's `index` block) and a [`Tally`] of what lies below a folder.

/// What [`Index::tally`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    pub files: u64,
    pub dirs: u64,
    /// Symlinks and special files.
    pub other: u64,
    /// Bytes of the files.
    pub bytes: u64,
}

/// What `diagnostics` and every answer's `index` block report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Status {
    pub entries: u64,
    /// The index holds a complete picture (built, or loaded and being checked).
    pub ready: bool,
    /// Being compared with the disk: loaded from a snapshot and not yet
    /// checked, or reading the roots again after the watcher lost events (a
    /// queue overflow). Changes made meanwhile may be missing until it ends.
    pub reconciling: bool,
    pub updated_at: Option<String>,
    pub build_ms: Option<u64>,
    pub loaded_from_snapshot: bool,
    pub snapshot_load_ms: Option<u64>,
    pub watcher: String,
    pub overflow_rescans: u64,
    pub watch_limit_reached: bool,
    /// Folders the last build or rescan could not read (permissions).
    pub unreadable_folders: u64,
    /// Entries that vanished or changed kind while they were walked.
    pub walk_races: u64,
    pub last_snapshot: Option<String>,
    pub snapshot_error: Option<String>,
    pub journal_error: Option<String>,
    pub missing_roots: Vec<String>,
    /// Folders on network or FUSE file systems (`path (nfs)`), and folders
    /// reached at two paths (`path (bind mount)`, each path): inotify does
    /// not hear changes other machines make there, nor a change at a folder's
    /// other path, so they are read again every `limit_rescan_every` and the
    /// index is never taken as caught up.
    pub network_folders: Vec<String>,
    /// Made from the index of other settings while ferret ran: the roots
    /// it carried over instead of walking them (see `adopt`).
    pub carried: Option<Carried>,
}

/// What a new index carried over from the one it replaced, for `diagnostics`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Carried {
    /// Roots carried over: not walked, their folders' watches handed over.
    pub roots: Vec<String>,
    /// Roots walked because they are new to the set (or could not be carried).
    pub walked: Vec<String>,
    /// Entries copied from the running index.
    pub entries: u64,
    /// The hand-over and the copy, in milliseconds.
    pub ms: u64,
}
