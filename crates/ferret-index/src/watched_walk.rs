//! A walk that watches: the folders it opens are watched as they are read
//! (so no change falls between reading a folder and watching it), into the
//! live store or into a store of its own for a rescan to compare.

use std::{
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use crate::{
    Index,
    inotify_watch::{WatchError, Watched, Watcher},
    rules::Chain,
    store::{EntryId, Meta, Store},
    walk::{self, WalkStats},
};

/// Adds watches for the folders a walk opens, and remembers them.
pub(crate) struct WatchHook<'a> {
    watcher: Option<&'a Watcher>,
    max: Option<usize>,
    every: Duration,
    root: usize,
    top: EntryId,
    top_is_root: bool,
    limit: &'a AtomicBool,
    added: Mutex<Vec<Added>>,
}

/// A watch a walk added: for the folder `folder` of the store it walked
/// into, and what the descriptor stood for before (the folder was already
/// watched, as another entry).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Added {
    pub folder: EntryId,
    pub wd: i32,
    pub before: Option<Watched>,
}

impl WatchHook<'_> {
    fn on_folder(&self, dir: BorrowedFd<'_>, folder: EntryId) {
        let Some(w) = self.watcher else { return };
        if self.limit.load(Ordering::Relaxed) {
            return;
        }
        // An operator's cap counts like the kernel's limit.
        let added = if self.max.is_some_and(|m| w.watched_folders() >= m) {
            Err(WatchError::Limit)
        } else {
            w.watch(
                dir,
                self.root,
                folder,
                self.top_is_root && folder == self.top,
            )
        };
        match added {
            Ok((wd, before)) => self
                .added
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Added { folder, wd, before }),
            Err(WatchError::Limit) => {
                if !self.limit.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "inotify watch limit reached; unwatched folders are rescanned every {}s. Raise it: sysctl fs.inotify.max_user_watches=1048576",
                        self.every.as_secs()
                    );
                }
            }
            Err(WatchError::Other) => {}
        }
    }
}

/// Walk `fd` (the folder `rel` of root `root`, entry `top` of `store`, which
/// has no children yet) into `store` (with `shallow`, its own entries only);
/// returns the walk's findings and the watches added, by entry.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_into(
    index: &Index,
    watcher: Option<&Watcher>,
    root: usize,
    store: &mut Store,
    top: EntryId,
    fd: OwnedFd,
    rel: Vec<u8>,
    chain: Arc<Chain>,
    progress: &AtomicU64,
    shallow: bool,
) -> (WalkStats, Vec<Added>) {
    let limit = AtomicBool::new(index.status().watch_limit_reached);
    let hook = WatchHook {
        watcher,
        max: index.shared.config.max_watches,
        every: index.shared.config.limit_rescan_every,
        root,
        top,
        top_is_root: rel.is_empty(),
        limit: &limit,
        added: Mutex::new(Vec::new()),
    };
    let on_folder = |dir: BorrowedFd<'_>, folder: EntryId| hook.on_folder(dir, folder);
    let spec = walk::Spec {
        rules: index.shared.config.rules,
        progress,
        stop: &index.shared.stop,
        on_folder: watcher.map(|_| &on_folder as walk::OnFolder<'_>),
        shallow,
    };
    let stats = walk::walk(store, top, fd, rel, chain, &spec);
    if limit.load(Ordering::Relaxed) {
        // Said the same way as once the build is over (`watch::run`): a
        // reader may come between the two.
        let watched = watcher.map_or(0, Watcher::watched_folders);
        index.set_status(|s| {
            s.watch_limit_reached = true;
            s.watcher =
                format!("degraded: the inotify watch limit was reached after {watched} folders");
        });
    }
    let added = std::mem::take(&mut *hook.added.lock().unwrap_or_else(|p| p.into_inner()));
    (stats, added)
}

/// [`walk_into`] a store of its own, whose root record stands for the folder.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_apart(
    index: &Index,
    watcher: Option<&Watcher>,
    root: usize,
    fd: OwnedFd,
    rel: Vec<u8>,
    chain: Arc<Chain>,
    progress: &AtomicU64,
    shallow: bool,
) -> (Store, EntryId, WalkStats, Vec<Added>) {
    let mut fresh = Store::new();
    let top = fresh.add_root(b"", fd_meta(fd.as_fd()));
    let (stats, added) = walk_into(
        index, watcher, root, &mut fresh, top, fd, rel, chain, progress, shallow,
    );
    (fresh, top, stats, added)
}

pub(crate) fn fd_meta(fd: BorrowedFd<'_>) -> Meta {
    walk::describe(fd, b".")
        .map(|(_, m, _)| m)
        .unwrap_or_default()
}

/// Whether the path `rel` (below a root) is `folder` or lies inside it.
pub(crate) fn within(rel: &[u8], folder: &[u8]) -> bool {
    folder.is_empty()
        || rel == folder
        || (rel.starts_with(folder) && rel.get(folder.len()) == Some(&b'/'))
}

/// Which list of the folders the watcher cannot hear a kind belongs to:
/// network and FUSE file systems (found as walks enter them), folders at
/// two paths, folders holding a mounted file (each made anew when asked).
fn list_of(kind: &str) -> u8 {
    match kind {
        walk::TWO_PATHS => 1,
        walk::FILE_MOUNT => 2,
        _ => 0,
    }
}

/// Add `rel` (below root `root`) of `kind` to the folders the watcher
/// cannot hear, unless a folder of the same list holds it; the folders of
/// that list it holds give way to it (one is read with the folder above).
pub(crate) fn list_unheard(
    folders: &mut Vec<(usize, Vec<u8>, &'static str)>,
    root: usize,
    rel: Vec<u8>,
    kind: &'static str,
) {
    let same = |k: &str| list_of(k) == list_of(kind);
    if folders
        .iter()
        .any(|(r, p, k)| *r == root && same(k) && within(&rel, p))
    {
        return;
    }
    folders.retain(|(r, p, k)| !(*r == root && same(k) && within(p, &rel)));
    folders.push((root, rel, kind));
}

/// The folders of the index reached at two paths ([`walk::TWO_PATHS`]),
/// noted with the network folders. Asked of the whole index, not of one
/// walk: the paths may lie in two roots, or in two parts of a rescan (a
/// large tree is compared part by part, each walked apart).
pub(crate) fn note_two_paths(index: &Index) {
    let found: Vec<(usize, Vec<u8>)> = {
        let store = index.read_store();
        walk::folders_at_two_paths(&store, store.roots())
            .into_iter()
            .map(|id| (store.root_of(id).0, store.rel_path(id)))
            .collect()
    };
    // The whole index is asked: what it no longer finds at two paths (a
    // bind mount undone) is not listed any more. (A network folder inside
    // one stays listed apart: it is named again only when a walk enters it.)
    let mut folders = index.unheard();
    folders.retain(|(_, _, fs)| *fs != walk::TWO_PATHS);
    for (root, rel) in found {
        list_unheard(&mut folders, root, rel, walk::TWO_PATHS);
    }
    index.publish_unheard(folders);
}

pub(crate) fn note_stats(index: &Index, root: usize, stats: &WalkStats) {
    if !stats.own_temps.is_empty()
        && let Some(temps) = index
            .shared
            .own_temps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
    {
        temps.extend(stats.own_temps.iter().map(|p| (root, p.clone())));
        temps.sort();
        temps.dedup();
    }
    if !stats.network.is_empty() {
        let mut folders = index.unheard();
        for (rel, fs) in &stats.network {
            // A rescan's walk starts at a folder with no parent to compare
            // devices with: a folder at or below one listed is not another.
            list_unheard(&mut folders, root, rel.clone(), fs);
        }
        index.publish_unheard(folders);
    }
    if stats.unreadable > 0 || stats.raced > 0 {
        index.set_status(|s| {
            s.unreadable_folders += stats.unreadable;
            s.walk_races += stats.raced;
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_folder_inside_a_listed_network_folder_is_not_another() {
        use super::within;
        assert!(within(b"mnt/nfs/a", b"mnt/nfs"));
        assert!(within(b"mnt/nfs", b"mnt/nfs"));
        assert!(within(b"anything", b""), "the root holds everything");
        assert!(
            !within(b"mnt/nfs2", b"mnt/nfs"),
            "a sibling with a longer name"
        );
        assert!(!within(b"mnt", b"mnt/nfs"));
    }
}
