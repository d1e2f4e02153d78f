//! Telling ferret's own writes from the watcher's report of them.
//!
//! When a write tool changes a file, the change is journalled `by: ferret`,
//! and the watcher reports the same path too. That report is an echo only if
//! the file is still the version ferret left: same device, inode, size,
//! modification and status-change times (to the nanosecond; folders by device
//! and inode alone, since each entry ferret adds changes their times). Another
//! program writing the file a moment later changes at least the status-change
//! time, which no program can set, so its change is journalled `external` and
//! heard by subscribers, however soon it follows. (A time window cannot tell
//! the two apart.) The index reads metadata only, never contents, so the
//! version is recognised by its metadata, not a checksum.
//!
//! The watcher can report a change before ferret has recorded it (the write
//! tools record after their last `fsync`). So the write tools first say which
//! paths they are about to change ([`crate::Index::expect_own_changes`]); the
//! watcher's reports on those paths (and below them) are held until ferret's
//! record arrives, and only then sorted into echoes and other programs'
//! changes; a report held longer than [`HELD_AT_MOST`] is journalled as it is.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::journal::Change;

/// How long a version ferret wrote is remembered: far longer than the
/// watcher takes to report it, short enough to stay small.
const REMEMBERED_FOR: Duration = Duration::from_secs(60);
/// How long the watcher's reports wait for ferret's own record of a change it
/// announced (a big folder copy records when it is done).
pub(crate) const HELD_AT_MOST: Duration = Duration::from_secs(60);

/// What a path looked like right after ferret changed it: a file system
/// entry's identity and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub dir: bool,
}

impl Version {
    fn same(a: Option<Version>, b: Option<Version>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) if a.dir && b.dir => (a.dev, a.ino) == (b.dev, b.ino),
            (a, b) => a == b,
        }
    }
}

/// Looks a shown path up on disk (through the root's descriptor).
pub(crate) type Describe<'a> = &'a dyn Fn(&str) -> Option<Version>;

#[derive(Default)]
struct State {
    /// The versions ferret itself left, by shown path (`None`: removed or
    /// moved away).
    left: HashMap<String, (Option<Version>, Instant)>,
    /// Paths ferret is about to change (everything below them too), until it
    /// records them.
    expected: Vec<(String, Instant)>,
    /// Watcher reports on expected paths, waiting for ferret's record.
    held: Vec<(Change, Instant)>,
}

fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || prefix == "."
        || (path.len() > prefix.len()
            && path.starts_with(prefix)
            && path.as_bytes()[prefix.len()] == b'/')
}

impl State {
    /// Whether a report concerns an announced path: at or below it, or a
    /// folder above it (which the write may create on the way).
    fn is_expected(&self, c: &Change) -> bool {
        std::iter::once(&c.path)
            .chain(c.old_path.as_ref())
            .any(|p| {
                self.expected
                    .iter()
                    .any(|(e, _)| under(p, e) || under(e, p))
            })
    }

    /// Whether a report from the watcher is the echo of what ferret left; one
    /// that is not means the path is another program's from now on.
    fn is_echo(&mut self, describe: Describe<'_>, c: &Change) -> bool {
        let paths = std::iter::once(&c.path).chain(c.old_path.as_ref());
        let echo = paths.clone().all(|p| match self.left.get(p) {
            Some((version, _)) => Version::same(*version, describe(p)),
            None => false,
        });
        if !echo {
            for p in paths {
                self.left.remove(p);
            }
        }
        echo
    }
}

/// The versions ferret itself left, the paths it is about to change, and the
/// reports held for them.
#[derive(Default)]
pub(crate) struct OwnWrites {
    state: Mutex<State>,
}

impl OwnWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ferret is about to change `paths` (and what lies below them).
    pub(crate) fn expect(&self, paths: &[String]) {
        let mut s = self.lock();
        let now = Instant::now();
        for p in paths {
            s.expected.push((p.clone(), now));
        }
    }

    /// Sort `changes` (one batch for [`crate::Index::record`]): remember what
    /// ferret's own changes left, hold the watcher's reports on paths ferret
    /// announced, and keep every change except the echoes. Held reports whose
    /// paths ferret has now recorded are sorted too and kept unless echoes.
    pub(crate) fn sift(&self, describe: Describe<'_>, changes: &[Change]) -> Vec<Change> {
        let mut s = self.lock();
        s.left.retain(|_, (_, at)| at.elapsed() < REMEMBERED_FOR);
        let mut kept = Vec::with_capacity(changes.len());
        let mut recorded_own = false;
        for c in changes {
            if c.by == "ferret" {
                s.left
                    .insert(c.path.clone(), (describe(&c.path), Instant::now()));
                if let Some(old) = &c.old_path {
                    s.left.insert(old.clone(), (None, Instant::now()));
                }
                recorded_own = true;
                kept.push(c.clone());
                continue;
            }
            if s.is_expected(c) {
                s.held.push((c.clone(), Instant::now()));
                continue;
            }
            if !s.is_echo(describe, c) {
                kept.push(c.clone());
            }
        }
        if recorded_own {
            // What ferret recorded is no longer expected: sort what waited.
            let recorded: Vec<&str> = changes
                .iter()
                .filter(|c| c.by == "ferret")
                .flat_map(|c| std::iter::once(c.path.as_str()).chain(c.old_path.as_deref()))
                .collect();
            s.expected
                .retain(|(e, _)| !recorded.iter().any(|r| under(r, e) || under(e, r)));
            kept.extend(self_release(&mut s, describe, false));
        }
        kept
    }

    /// Ferret will not change `paths` after all (its write failed): what the
    /// watcher reported on them meanwhile is sorted now.
    pub(crate) fn withdraw(&self, describe: Describe<'_>, paths: &[String]) -> Vec<Change> {
        let mut s = self.lock();
        s.expected.retain(|(e, _)| !paths.contains(e));
        self_release(&mut s, describe, false)
    }

    /// Reports held past [`HELD_AT_MOST`] (ferret never recorded the change it
    /// announced): journalled as they are.
    pub(crate) fn release_expired(&self, describe: Describe<'_>) -> Vec<Change> {
        let mut s = self.lock();
        s.expected.retain(|(_, at)| at.elapsed() < HELD_AT_MOST);
        self_release(&mut s, describe, true)
    }
}

/// The held reports that no longer wait: those whose paths are not expected
/// any more (sorted into echoes and not), and with `expired` those held too long.
fn self_release(s: &mut State, describe: Describe<'_>, expired: bool) -> Vec<Change> {
    let held = std::mem::take(&mut s.held);
    let mut out = Vec::new();
    for (c, at) in held {
        if expired && at.elapsed() >= HELD_AT_MOST {
            out.push(c);
        } else if s.is_expected(&c) {
            s.held.push((c, at));
        } else if !s.is_echo(describe, &c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Action;
    use std::cell::RefCell;

    fn change(path: &str, by: &'static str) -> Change {
        Change {
            action: Action::Modified,
            path: path.into(),
            old_path: None,
            kind: ferret_query::Kind::File,
            at_ms: 0,
            by,
        }
    }

    fn version(n: i128) -> Option<Version> {
        Some(Version {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: n,
            ctime_ns: n,
            dir: false,
        })
    }

    #[test]
    fn the_echo_of_an_own_write_is_dropped_and_a_later_write_is_kept() {
        let disk = RefCell::new(version(1));
        let describe = |_: &str| *disk.borrow();
        let own = OwnWrites::default();
        assert_eq!(own.sift(&describe, &[change("a.txt", "ferret")]).len(), 1);
        // The watcher's report of that write, twice (several events): echoes.
        assert!(
            own.sift(&describe, &[change("a.txt", "external")])
                .is_empty()
        );
        assert!(
            own.sift(&describe, &[change("a.txt", "external")])
                .is_empty()
        );
        // Another program writes it at once: not an echo.
        *disk.borrow_mut() = version(2);
        let kept = own.sift(&describe, &[change("a.txt", "external")]);
        assert_eq!((kept.len(), kept[0].by), (1, "external"));
        // And the path is no longer ferret's: its next change is kept too.
        assert_eq!(own.sift(&describe, &[change("a.txt", "external")]).len(), 1);
    }

    #[test]
    fn a_report_before_ferret_records_waits_for_the_record() {
        let disk = RefCell::new(version(1));
        let describe = |_: &str| *disk.borrow();
        let own = OwnWrites::default();
        own.expect(&["dir".to_string()]);
        // The watcher is first: held, nothing journalled yet.
        assert!(
            own.sift(&describe, &[change("dir/new.txt", "external")])
                .is_empty()
        );
        // Ferret records: its change, and the held report turns out an echo.
        let kept = own.sift(&describe, &[change("dir/new.txt", "ferret")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].by, "ferret");
        // Another program's report on an announced path, ferret recording
        // something else under it: kept once the record came.
        own.expect(&["dir".to_string()]);
        *disk.borrow_mut() = version(5);
        assert!(
            own.sift(&describe, &[change("dir/other.txt", "external")])
                .is_empty()
        );
        let kept = own.sift(&describe, &[change("dir/new.txt", "ferret")]);
        assert_eq!(kept.iter().filter(|c| c.by == "external").count(), 1);
        assert!(own.release_expired(&describe).is_empty());
    }

    #[test]
    fn folders_match_by_identity() {
        let mut a = version(1).unwrap();
        a.dir = true;
        let mut b = a;
        b.mtime_ns = 9;
        assert!(Version::same(Some(a), Some(b)));
        assert!(!Version::same(version(1), version(2)));
        assert!(under("a/b", "a") && under("a", "a") && !under("ab", "a") && under("x", "."));
    }
}
