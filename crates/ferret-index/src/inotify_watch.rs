//! Watching the roots with inotify, folder by folder, through the folders' own
//! descriptors.
//!
//! Written on rustix's inotify calls rather than on `notify` (which always asks
//! for `IN_OPEN`: every folder our own walker opens then queues an event, and
//! indexing 100,000 folders overflows the kernel's 16,384-event queue). A watch
//! is added through `/proc/self/fd/N` of the folder the walker holds open, which
//! the kernel resolves to that very folder: a folder swapped for a symlink
//! between the open and the watch cannot redirect it. Each watch maps to the
//! folder's entry id, which follows the folder through renames, so an event is
//! resolved against the folder it happened in, wherever that is now.

use std::{
    collections::HashMap,
    io,
    mem::MaybeUninit,
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use crate::dirs::proc_path;
use crate::store::EntryId;

/// An event as the kernel gave it; resolved by [`Watcher::translate`] in the
/// thread that applies events, in order.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    wd: i32,
    mask: ReadFlags,
    cookie: u32,
    name: Option<Vec<u8>>,
}

impl RawEvent {
    /// Whether this is a barrier's event (of the watch `wd`).
    pub fn is_barrier(&self, wd: Option<i32>) -> bool {
        wd == Some(self.wd) && self.mask.intersects(ReadFlags::MODIFY | ReadFlags::ATTRIB)
    }

    /// The second half of a rename (its first is paired by the cookie).
    pub fn is_moved_to(&self) -> bool {
        self.mask.contains(ReadFlags::MOVED_TO)
    }

    pub fn is_overflow(&self) -> bool {
        self.mask.contains(ReadFlags::QUEUE_OVERFLOW)
    }

    /// Events were lost (the kernel's queue or ours overflowed): what
    /// [`Watcher::take_lost`] stands for in a batch.
    pub fn overflow() -> RawEvent {
        RawEvent {
            wd: -1,
            mask: ReadFlags::QUEUE_OVERFLOW,
            cookie: 0,
            name: None,
        }
    }
}

/// How many events may wait between the reader thread and the thread that
/// applies them. The reader keeps the kernel's queue drained, so without a
/// bound a storm of events (a checkout, a race of renames) would wait here
/// in memory without end, and the index would lag the disk by as long as
/// replaying them takes (seconds, then minutes). Past the bound, events are
/// dropped and the roots are read again instead, as after a kernel overflow:
/// at most this many events (a few MB) stand between a change and the index.
pub(crate) const EVENT_QUEUE: usize = 65_536;

/// A change seen in a watched folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FsEvent {
    /// Created, written or its metadata changed: look at the disk.
    Changed {
        root: usize,
        folder: EntryId,
        wd: i32,
        name: Vec<u8>,
    },
    Removed {
        root: usize,
        folder: EntryId,
        wd: i32,
        name: Vec<u8>,
    },
    MovedFrom {
        root: usize,
        folder: EntryId,
        wd: i32,
        name: Vec<u8>,
        cookie: u32,
    },
    MovedTo {
        root: usize,
        folder: EntryId,
        wd: i32,
        name: Vec<u8>,
        cookie: u32,
    },
    /// The kernel dropped events: the index must be reconciled with the disk.
    Overflow,
    /// A root folder itself was deleted, moved or unmounted.
    RootGone { root: usize },
}

const MASK: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::EXCL_UNLINK);

/// Why a folder could not be watched.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WatchError {
    /// `fs.inotify.max_user_watches` is exhausted.
    Limit,
    Other,
}

/// What a watch descriptor stands for: a folder of a root (the root itself when
/// `top`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watched {
    folder: EntryId,
    root: u16,
    top: bool,
}

pub(crate) struct Watcher {
    fd: Arc<OwnedFd>,
    folders: Mutex<HashMap<i32, Watched>>,
    /// The reader dropped events because `tx` was full.
    lost: Arc<AtomicBool>,
}

impl Watcher {
    /// Start the reader thread; events go to `tx` until the receiver is
    /// dropped. When `tx` is full, events are dropped and [`Watcher::take_lost`]
    /// says so.
    pub fn start(tx: mpsc::SyncSender<RawEvent>) -> io::Result<Watcher> {
        let fd = Arc::new(inotify::init(CreateFlags::CLOEXEC)?);
        let reader = fd.clone();
        let lost = Arc::new(AtomicBool::new(false));
        let dropping = lost.clone();
        std::thread::Builder::new()
            .name("ferret-inotify".into())
            .spawn(move || {
                let mut buffer = vec![MaybeUninit::<u8>::uninit(); 256 * 1024];
                let mut events = inotify::Reader::new(reader.as_fd(), &mut buffer);
                loop {
                    let event = match events.next() {
                        Ok(e) => e,
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(e) => {
                            tracing::warn!("inotify read failed: {e}");
                            return;
                        }
                    };
                    let raw = RawEvent {
                        wd: event.wd(),
                        mask: event.events(),
                        cookie: event.cookie(),
                        name: event.file_name().map(|n| n.to_bytes().to_vec()),
                    };
                    match tx.try_send(raw) {
                        Ok(()) => {}
                        Err(mpsc::TrySendError::Full(_)) => {
                            if !dropping.swap(true, Ordering::AcqRel) {
                                tracing::warn!(
                                    "file events come faster than the index applies them; \
                                     the roots will be read again"
                                );
                            }
                        }
                        Err(mpsc::TrySendError::Disconnected(_)) => return,
                    }
                }
            })?;
        Ok(Watcher {
            fd,
            folders: Mutex::new(HashMap::new()),
            lost,
        })
    }

    /// Whether events were dropped since the last call (the queue to the
    /// applying thread was full): the index must be reconciled with the disk.
    pub fn take_lost(&self) -> bool {
        self.lost.swap(false, Ordering::AcqRel)
    }

    /// Watch one open folder (not its subfolders); returns the watch
    /// descriptor, and what it stood for before when the folder was already
    /// watched (the kernel gives a folder one descriptor, so the entry it
    /// stands for is replaced: [`Watcher::undo`] puts it back).
    pub fn watch(
        &self,
        dir: BorrowedFd<'_>,
        root: usize,
        folder: EntryId,
        top: bool,
    ) -> Result<(i32, Option<Watched>), WatchError> {
        let wd = inotify::add_watch(self.fd.as_fd(), proc_path(dir), MASK).map_err(|e| {
            if e == rustix::io::Errno::NOSPC {
                WatchError::Limit
            } else {
                WatchError::Other
            }
        })?;
        let before = self.lock().insert(
            wd,
            Watched {
                root: root as u16,
                folder,
                top,
            },
        );
        Ok((wd, before))
    }

    /// A watch a walk added whose folder the index did not take: the entry
    /// it stood for before is what it stands for again, or, new, it is
    /// stopped. (Stopping a watch the index's own folder still used, which
    /// the same folder met again elsewhere shares, left that folder deaf.)
    pub fn undo(&self, wd: i32, before: Option<Watched>) {
        match before {
            Some(w) => {
                self.lock().insert(wd, w);
            }
            None => self.forget(wd),
        }
    }

    /// A watched folder now has another entry id (after a rescan matched it).
    pub fn remap(&self, wd: i32, root: usize, folder: EntryId) {
        if let Some(w) = self.lock().get_mut(&wd)
            && usize::from(w.root) == root
        {
            w.folder = folder;
        }
    }

    /// Watch a file of ferret's own for the barrier ([`crate::sync`]): its
    /// writes and mode changes, nothing else.
    pub fn watch_barrier(&self, file: BorrowedFd<'_>) -> io::Result<i32> {
        Ok(inotify::add_watch(
            self.fd.as_fd(),
            proc_path(file),
            WatchFlags::MODIFY | WatchFlags::ATTRIB,
        )?)
    }

    /// Stop watching the barrier's previous file.
    pub fn unwatch_barrier(&self, wd: i32) {
        let _ = inotify::remove_watch(self.fd.as_fd(), wd);
    }

    /// Stop watching (a folder that left the roots).
    pub fn forget(&self, wd: i32) {
        if self.lock().remove(&wd).is_some() {
            let _ = inotify::remove_watch(self.fd.as_fd(), wd);
        }
    }

    /// Stop watching a folder that left the roots, unless its watch now
    /// stands for another entry (the same folder, found again elsewhere).
    pub fn forget_of(&self, wd: i32, folder: EntryId) {
        let mut map = self.lock();
        if map.get(&wd).is_some_and(|w| w.folder == folder) {
            map.remove(&wd);
            drop(map);
            let _ = inotify::remove_watch(self.fd.as_fd(), wd);
        }
    }

    pub fn watched_folders(&self) -> usize {
        self.lock().len()
    }

    /// Every folder watch descriptor (for a hand-over to another index).
    pub fn wds(&self) -> Vec<i32> {
        self.lock().keys().copied().collect()
    }

    /// The watches `wds` now stand for what `to` says (another root number,
    /// another entry: an index made from this one copied their folders);
    /// those it has nothing for are stopped.
    pub fn rebase(&self, wds: &[i32], to: impl Fn(usize, EntryId) -> Option<(usize, EntryId)>) {
        let mut map = self.lock();
        for wd in wds {
            let Some(w) = map.get_mut(wd) else { continue };
            match to(usize::from(w.root), w.folder) {
                Some((root, folder)) => {
                    w.root = root as u16;
                    w.folder = folder;
                }
                None => {
                    map.remove(wd);
                    let _ = inotify::remove_watch(self.fd.as_fd(), *wd);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Watched>> {
        self.folders.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a raw event means: the folder (entry) it happened in.
    pub fn translate(&self, raw: RawEvent) -> Option<FsEvent> {
        let RawEvent {
            wd,
            mask,
            cookie,
            name,
        } = raw;
        if mask.contains(ReadFlags::QUEUE_OVERFLOW) {
            return Some(FsEvent::Overflow);
        }
        let mut map = self.lock();
        if mask.contains(ReadFlags::IGNORED) {
            // The kernel dropped the watch (its folder is gone): forget it.
            map.remove(&wd);
            return None;
        }
        let w = *map.get(&wd)?;
        drop(map);
        if mask.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::UNMOUNT) {
            // A subfolder's own end is also reported by its parent, by name.
            return w.top.then_some(FsEvent::RootGone {
                root: usize::from(w.root),
            });
        }
        let (root, folder) = (usize::from(w.root), w.folder);
        let name = name?;
        Some(if mask.contains(ReadFlags::MOVED_FROM) {
            FsEvent::MovedFrom {
                root,
                folder,
                wd,
                name,
                cookie,
            }
        } else if mask.contains(ReadFlags::MOVED_TO) {
            FsEvent::MovedTo {
                root,
                folder,
                wd,
                name,
                cookie,
            }
        } else if mask.contains(ReadFlags::DELETE) {
            FsEvent::Removed {
                root,
                folder,
                wd,
                name,
            }
        } else {
            FsEvent::Changed {
                root,
                folder,
                wd,
                name,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dirs::{open_child, open_root};
    use std::time::Duration;

    fn next(w: &Watcher, rx: &mpsc::Receiver<RawEvent>) -> FsEvent {
        loop {
            let raw = rx.recv_timeout(Duration::from_secs(5)).expect("an event");
            if let Some(ev) = w.translate(raw) {
                return ev;
            }
        }
    }

    /// A storm the applying thread cannot keep up with: past the queue's
    /// bound events are dropped, not kept in memory, and the watcher says
    /// so (once) for the roots to be read again; with room again, events
    /// flow as before.
    #[test]
    fn a_full_queue_drops_events_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::sync_channel(4);
        let w = Watcher::start(tx).unwrap();
        let root = open_root(tmp.path()).unwrap();
        w.watch(root.as_fd(), 0, 1, true).unwrap();
        assert!(!w.take_lost());
        for i in 0..50 {
            std::fs::write(tmp.path().join(format!("f{i}")), "x").unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !w.take_lost() {
            assert!(std::time::Instant::now() < deadline, "nothing was dropped");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        let _ = w.take_lost();
        assert!(!w.take_lost(), "said once per loss");
        assert_eq!(rx.try_iter().count(), 4, "only the queue's bound was kept");
        std::fs::write(tmp.path().join("later"), "x").unwrap();
        match next(&w, &rx) {
            FsEvent::Changed { name, .. } => assert_eq!(name, b"later"),
            other => panic!("{other:?}"),
        }
        assert!(!w.take_lost());
    }

    /// A walk that watches a folder already watched (the same folder met
    /// again, under another entry) takes over its one descriptor; undone,
    /// the descriptor stands for the first entry again, still watched. A
    /// watch that was new is stopped.
    #[test]
    fn an_undone_watch_gives_the_folder_back_to_its_entry() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::create_dir(tmp.path().join("new")).unwrap();
        let (tx, rx) = mpsc::sync_channel(EVENT_QUEUE);
        let w = Watcher::start(tx).unwrap();
        let root = open_root(tmp.path()).unwrap();
        let sub = open_child(root.as_fd(), b"sub").unwrap();
        let (wd, before) = w.watch(sub.as_fd(), 0, 7, false).unwrap();
        assert!(before.is_none());
        let (again, before) = w.watch(sub.as_fd(), 0, 9, false).unwrap();
        assert_eq!(again, wd, "one descriptor a folder");
        assert_eq!(before.map(|b| b.folder), Some(7));
        w.undo(again, before);
        assert_eq!(w.watched_folders(), 1);
        std::fs::write(tmp.path().join("sub/a.txt"), "x").unwrap();
        match next(&w, &rx) {
            FsEvent::Changed { folder, .. } => assert_eq!(folder, 7),
            other => panic!("{other:?}"),
        }
        let new = open_child(root.as_fd(), b"new").unwrap();
        let (new_wd, before) = w.watch(new.as_fd(), 0, 11, false).unwrap();
        w.undo(new_wd, before);
        assert_eq!(w.watched_folders(), 1, "the new watch is stopped");
    }

    #[test]
    fn reports_changes_by_folder_and_follows_moves() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let (tx, rx) = mpsc::sync_channel(EVENT_QUEUE);
        let w = Watcher::start(tx).unwrap();
        let root = open_root(tmp.path()).unwrap();
        let sub = open_child(root.as_fd(), b"sub").unwrap();
        w.watch(root.as_fd(), 0, 1, true).unwrap();
        let (sub_wd, _) = w.watch(sub.as_fd(), 0, 7, false).unwrap();
        std::fs::write(tmp.path().join("sub/a.txt"), "x").unwrap();
        assert_eq!(
            next(&w, &rx),
            FsEvent::Changed {
                root: 0,
                folder: 7,
                wd: sub_wd,
                name: b"a.txt".to_vec()
            }
        );
        std::fs::rename(tmp.path().join("sub"), tmp.path().join("moved")).unwrap();
        let cookie = loop {
            if let FsEvent::MovedFrom {
                name,
                cookie,
                folder,
                ..
            } = next(&w, &rx)
            {
                assert_eq!((name.as_slice(), folder), (&b"sub"[..], 1));
                break cookie;
            }
        };
        match next(&w, &rx) {
            FsEvent::MovedTo {
                name, cookie: c, ..
            } => assert_eq!((name, c), (b"moved".to_vec(), cookie)),
            other => panic!("{other:?}"),
        }
        // The moved folder's events still name its entry.
        std::fs::remove_file(tmp.path().join("moved/a.txt")).unwrap();
        let removed = loop {
            if let FsEvent::Removed { folder, name, .. } = next(&w, &rx) {
                break (folder, name);
            }
        };
        assert_eq!(removed, (7, b"a.txt".to_vec()));
        // Reading a folder is not a change: nothing is queued for it.
        let _ = std::fs::read_dir(tmp.path().join("moved")).unwrap().count();
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
