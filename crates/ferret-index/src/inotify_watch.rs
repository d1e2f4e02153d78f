//! Watching the roots with inotify, folder by folder.
//!
//! Written on the `inotify` crate rather than `notify` (which is built on it)
//! because `notify`'s inotify backend always asks for `IN_OPEN`: every folder our
//! own walker opens then queues an event, so indexing 100,000 folders overflows
//! the kernel's 16,384-event queue, and every rescan that the overflow triggers
//! overflows it again. Here the mask holds only what changes the index.

use std::{
    collections::HashMap,
    io,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, mpsc},
};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

/// An event as the kernel gave it; turned into an [`FsEvent`] by
/// [`Watcher::translate`] in the thread that applies events, in order, so that a
/// folder's path is looked up after every earlier rename has been applied.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    wd: Option<WatchDescriptor>,
    mask: EventMask,
    cookie: u32,
    name: Option<Vec<u8>>,
}

/// A change seen in a watched folder, as a path below one root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FsEvent {
    /// Created, written or its metadata changed: look at the disk.
    Changed {
        root: usize,
        rel: Vec<u8>,
    },
    Removed {
        root: usize,
        rel: Vec<u8>,
    },
    MovedFrom {
        root: usize,
        rel: Vec<u8>,
        cookie: u32,
    },
    MovedTo {
        root: usize,
        rel: Vec<u8>,
        cookie: u32,
    },
    /// The kernel dropped events: the index must be reconciled with the disk.
    Overflow,
    /// A root folder itself was deleted, moved or unmounted.
    RootGone {
        root: usize,
    },
}

const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::EXCL_UNLINK);

type Folders = Arc<Mutex<HashMap<WatchDescriptor, (usize, Vec<u8>)>>>;

/// Why a folder could not be watched.
#[derive(Debug)]
pub(crate) enum WatchError {
    /// `fs.inotify.max_user_watches` is exhausted.
    Limit,
    Other,
}

pub(crate) struct Watcher {
    watches: Mutex<Watches>,
    folders: Folders,
    roots: Vec<PathBuf>,
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        let mut rel = Vec::with_capacity(dir.len() + 1 + name.len());
        rel.extend_from_slice(dir);
        rel.push(b'/');
        rel.extend_from_slice(name);
        rel
    }
}

fn under(rel: &[u8], prefix: &[u8]) -> bool {
    rel == prefix
        || (rel.len() > prefix.len() && rel.starts_with(prefix) && rel[prefix.len()] == b'/')
}

impl Watcher {
    /// Start the reader thread; events go to `tx` until the watcher is dropped.
    pub fn start(roots: Vec<PathBuf>, tx: mpsc::Sender<RawEvent>) -> io::Result<Watcher> {
        let mut inotify = Inotify::init()?;
        let folders: Folders = Arc::default();
        debug_assert!(Arc::strong_count(&folders) == 1);
        let watcher = Watcher {
            watches: Mutex::new(inotify.watches()),
            folders,
            roots,
        };
        std::thread::Builder::new()
            .name("ferret-inotify".into())
            .spawn(move || {
                let mut buffer = vec![0u8; 256 * 1024];
                loop {
                    let events = match inotify.read_events_blocking(&mut buffer) {
                        Ok(events) => events,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            tracing::warn!("inotify read failed: {e}");
                            return;
                        }
                    };
                    for event in events {
                        let raw = RawEvent {
                            wd: (!event.mask.contains(EventMask::Q_OVERFLOW)).then_some(event.wd),
                            mask: event.mask,
                            cookie: event.cookie,
                            name: event.name.map(|n| n.as_bytes().to_vec()),
                        };
                        if tx.send(raw).is_err() {
                            return;
                        }
                    }
                }
            })?;
        Ok(watcher)
    }

    /// Watch one folder (not its subfolders).
    pub fn watch(&self, root: usize, rel: &[u8]) -> Result<(), WatchError> {
        let path = if rel.is_empty() {
            self.roots[root].clone()
        } else {
            self.roots[root].join(crate::rules::bytes_to_path(rel))
        };
        let wd = self
            .watches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(&path, MASK)
            .map_err(|e| match e.raw_os_error() {
                Some(28) => WatchError::Limit, // ENOSPC: max_user_watches reached
                _ => WatchError::Other,
            })?;
        self.folders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(wd, (root, rel.to_vec()));
        Ok(())
    }

    /// A watched folder moved inside its root: its watches now name new paths.
    pub fn moved(&self, root: usize, from: &[u8], to: &[u8]) {
        let mut folders = self.folders.lock().unwrap_or_else(|p| p.into_inner());
        for (r, rel) in folders.values_mut() {
            if *r == root && under(rel, from) {
                let mut renamed = to.to_vec();
                renamed.extend_from_slice(&rel[from.len()..]);
                *rel = renamed;
            }
        }
    }

    /// A folder left the root (moved out): stop watching it and everything below.
    pub fn forget(&self, root: usize, rel: &[u8]) {
        let gone: Vec<WatchDescriptor> = {
            let mut folders = self.folders.lock().unwrap_or_else(|p| p.into_inner());
            let gone: Vec<WatchDescriptor> = folders
                .iter()
                .filter(|(_, (r, p))| *r == root && under(p, rel))
                .map(|(wd, _)| wd.clone())
                .collect();
            for wd in &gone {
                folders.remove(wd);
            }
            gone
        };
        let mut watches = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        for wd in gone {
            let _ = watches.remove(wd);
        }
    }

    pub fn watched_folders(&self) -> usize {
        self.folders.lock().map(|f| f.len()).unwrap_or(0)
    }

    pub fn root_path(&self, root: usize) -> &Path {
        &self.roots[root]
    }

    /// What a raw event means now: the folder's current path below its root.
    pub fn translate(&self, raw: RawEvent) -> Option<FsEvent> {
        let RawEvent {
            wd,
            mask,
            cookie,
            name,
        } = raw;
        let Some(wd) = wd else {
            return Some(FsEvent::Overflow);
        };
        translate(&self.folders, wd, mask, cookie, name.as_deref())
    }
}

fn translate(
    folders: &Folders,
    wd: WatchDescriptor,
    mask: EventMask,
    cookie: u32,
    name: Option<&[u8]>,
) -> Option<FsEvent> {
    let mut map = folders.lock().unwrap_or_else(|p| p.into_inner());
    if mask.contains(EventMask::IGNORED) {
        // The kernel dropped the watch (its folder is gone): forget it.
        map.remove(&wd);
        return None;
    }
    let (root, dir) = map.get(&wd)?.clone();
    drop(map);
    if mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::UNMOUNT) {
        // A subfolder's own end is also reported by its parent, with its name.
        return dir.is_empty().then_some(FsEvent::RootGone { root });
    }
    let rel = join(&dir, name?);
    Some(if mask.contains(EventMask::MOVED_FROM) {
        FsEvent::MovedFrom { root, rel, cookie }
    } else if mask.contains(EventMask::MOVED_TO) {
        FsEvent::MovedTo { root, rel, cookie }
    } else if mask.contains(EventMask::DELETE) {
        FsEvent::Removed { root, rel }
    } else {
        FsEvent::Changed { root, rel }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn next(w: &Watcher, rx: &mpsc::Receiver<RawEvent>) -> FsEvent {
        loop {
            let raw = rx.recv_timeout(Duration::from_secs(5)).expect("an event");
            if let Some(ev) = w.translate(raw) {
                return ev;
            }
        }
    }

    #[test]
    fn reports_changes_as_paths_below_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let (tx, rx) = mpsc::channel();
        let w = Watcher::start(vec![tmp.path().to_path_buf()], tx).unwrap();
        w.watch(0, b"").unwrap();
        w.watch(0, b"sub").unwrap();
        std::fs::write(tmp.path().join("sub/a.txt"), "x").unwrap();
        assert_eq!(
            next(&w, &rx),
            FsEvent::Changed {
                root: 0,
                rel: b"sub/a.txt".to_vec()
            }
        );
        std::fs::rename(tmp.path().join("sub"), tmp.path().join("moved")).unwrap();
        let from = loop {
            if let FsEvent::MovedFrom { rel, cookie, .. } = next(&w, &rx) {
                break (rel, cookie);
            }
        };
        assert_eq!(from.0, b"sub");
        match next(&w, &rx) {
            FsEvent::MovedTo { rel, cookie, .. } => {
                assert_eq!((rel, cookie), (b"moved".to_vec(), from.1))
            }
            other => panic!("{other:?}"),
        }
        w.moved(0, b"sub", b"moved");
        std::fs::remove_file(tmp.path().join("moved/a.txt")).unwrap();
        let removed = loop {
            if let FsEvent::Removed { rel, .. } = next(&w, &rx) {
                break rel;
            }
        };
        assert_eq!(removed, b"moved/a.txt", "watches follow a moved folder");
        // Reading a folder is not a change: nothing is queued for it.
        let _ = std::fs::read_dir(tmp.path().join("moved")).unwrap().count();
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
