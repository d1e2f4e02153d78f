//! A barrier through the watcher: [`crate::Index::sync`] returns once every
//! change the kernel had queued when it was called has been applied to the
//! index (and published on [`crate::Index::touches`]).
//!
//! The inotify instance also watches a private, unlinked file of ferret's own
//! (`O_TMPFILE` in the temporary directory). A barrier changes that file; the
//! kernel queues the event behind every event queued before it, so when the
//! thread that applies events reaches it, everything before it has been
//! applied. Barriers alternate between writing a byte (`IN_MODIFY`) and
//! changing the mode (`IN_ATTRIB`), so that two in a row are never merged into
//! one event by the kernel, and each counts: the *n*-th barrier waits until
//! *n* such events have been applied. A queue overflow loses events, so once
//! the roots have been read again it starts a new file and watch, and
//! barriers waiting on the old one start again on the new one (within their
//! time; past it their callers treat the index as possibly behind).

use std::{
    os::fd::{AsFd, OwnedFd},
    sync::{Condvar, Mutex},
    time::{Duration, Instant},
};

use rustix::fs::{Mode, OFlags};

/// The barrier file and its counters.
#[derive(Default)]
pub(crate) struct SyncPoint {
    state: Mutex<State>,
    applied: Condvar,
}

#[derive(Default)]
struct State {
    file: Option<OwnedFd>,
    /// The watch descriptor of `file`.
    wd: Option<i32>,
    /// Bumped when the file is replaced: barriers on the old one start again
    /// on the new one, or give up when there is none.
    generation: u64,
    /// Barriers started, and their events applied, in this generation.
    poked: u64,
    applied: u64,
}

/// A private file no one else can name: created unlinked where possible.
pub(crate) fn private_file(dirs: &[std::path::PathBuf]) -> std::io::Result<OwnedFd> {
    let mut last = std::io::Error::other("no folder for the watcher's barrier file");
    for dir in dirs {
        if let Ok(fd) = rustix::fs::open(
            dir,
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            return Ok(fd);
        }
        // A file system without O_TMPFILE: a named file, removed at once.
        let path = dir.join(format!(".ferret-sync-{}", std::process::id()));
        match rustix::fs::open(
            &path,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => {
                let _ = std::fs::remove_file(&path);
                return Ok(fd);
            }
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}

impl SyncPoint {
    /// Use `file`, watched as `wd`, from now on (at start, and after an
    /// overflow, once the roots were read again): barriers waiting on the
    /// previous file start again on this one (give up when `None`).
    pub fn install(&self, file: Option<(OwnedFd, i32)>) {
        let mut s = self.lock();
        let (file, wd) = match file {
            Some((f, wd)) => (Some(f), Some(wd)),
            None => (None, None),
        };
        s.file = file;
        s.wd = wd;
        s.generation += 1;
        s.poked = 0;
        s.applied = 0;
        drop(s);
        self.applied.notify_all();
    }

    /// The watch descriptor of the barrier file, if there is one.
    pub fn wd(&self) -> Option<i32> {
        self.lock().wd
    }

    /// `events` barrier events were applied (with every event before them).
    pub fn reached(&self, events: u64) {
        if events == 0 {
            return;
        }
        let mut s = self.lock();
        s.applied = (s.applied + events).min(s.poked);
        drop(s);
        self.applied.notify_all();
    }

    /// Wait until every event queued before this call has been applied, at
    /// most `timeout`; whether that is known to have happened.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        loop {
            let Some(file) = s.file.as_ref() else {
                return false;
            };
            let n = s.poked + 1;
            let poked = if !n.is_multiple_of(2) {
                rustix::io::pwrite(file.as_fd(), b"s", 0).map(|_| ())
            } else {
                let mode = if (n / 2).is_multiple_of(2) {
                    0o600
                } else {
                    0o400
                };
                rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(mode))
            };
            if poked.is_err() {
                return false;
            }
            s.poked = n;
            let generation = s.generation;
            while s.generation == generation && s.applied < n {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                s = self
                    .applied
                    .wait_timeout(s, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            if s.generation == generation {
                return true;
            }
            // The file was replaced: events were lost, and the new file is
            // installed once the roots have been read again. A barrier on it
            // says whether everything since is applied.
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Option<(OwnedFd, i32)> {
        Some((private_file(&[std::env::temp_dir()]).unwrap(), 1))
    }

    /// Apply barrier events until `waiter` ends (the applier's part, played
    /// by hand: every event poked so far counts as applied).
    fn apply_until_done(point: &SyncPoint, waiter: &std::thread::ScopedJoinHandle<'_, bool>) {
        let until = Instant::now() + Duration::from_secs(10);
        while !waiter.is_finished() && Instant::now() < until {
            point.reached(1);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_barrier_passes_once_its_event_is_applied() {
        let point = SyncPoint::default();
        assert!(!point.wait(Duration::ZERO), "no file: nothing to confirm");
        point.install(file());
        assert!(!point.wait(Duration::from_millis(20)), "nothing applied");
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| point.wait(Duration::from_secs(10)));
            apply_until_done(&point, &waiter);
            assert!(waiter.join().unwrap());
        });
    }

    #[test]
    fn a_barrier_on_a_replaced_file_starts_again_on_the_new_one() {
        let point = SyncPoint::default();
        point.install(file());
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| point.wait(Duration::from_secs(10)));
            // Events were lost (its own among them) and the roots read again:
            // a new file. The waiter's barrier on it is what passes.
            while point.lock().poked == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            point.install(file());
            apply_until_done(&point, &waiter);
            assert!(waiter.join().unwrap());
        });
        // Handed over (no file): a waiter gives up.
        let before = point.lock().poked;
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| point.wait(Duration::from_secs(10)));
            while point.lock().poked == before {
                std::thread::sleep(Duration::from_millis(1));
            }
            point.install(None);
            assert!(!waiter.join().unwrap());
        });
    }
}
