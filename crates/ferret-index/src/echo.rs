//! Telling ferret's own writes from the watcher's report of them.
//!
//! When a write tool changes a file, the change is journalled `by: ferret`,
//! and moments later the watcher reports the same path. That report is an
//! echo only if the file is still the version ferret left: same device,
//! inode, size, modification and status-change times (to the nanosecond).
//! Another program writing the file a moment later changes at least the
//! status-change time, which no program can set, so its change is journalled
//! `external` and heard by subscribers, however soon it follows. (A time
//! window cannot tell the two apart.) The index reads metadata only, never
//! contents, so the version is recognised by its metadata, not a checksum.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{IndexRoot, journal::Change};

/// How long a version ferret wrote is remembered: far longer than the
/// watcher takes to report it, short enough to stay small.
const REMEMBERED_FOR: Duration = Duration::from_secs(60);

/// What a path looked like right after ferret changed it: a file system
/// entry's identity and times, or `None` when ferret removed or moved it away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Version {
    /// The version at `path` now, without following a final symlink.
    fn at(path: &Path) -> Option<Version> {
        let m = std::fs::symlink_metadata(path).ok()?;
        let ns = |secs: i64, nanos: i64| secs as i128 * 1_000_000_000 + nanos as i128;
        Some(Version {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        })
    }
}

/// The versions ferret itself left, by shown path.
#[derive(Default)]
pub(crate) struct OwnWrites {
    left: Mutex<HashMap<String, (Option<Version>, Instant)>>,
}

impl OwnWrites {
    /// Sort `changes` (one batch for [`crate::Index::record`]): remember what
    /// ferret's own changes left, and keep every change except the watcher's
    /// echo of them. A change that does not match what ferret left is
    /// another program's; from then on that path is not ferret's any more.
    pub(crate) fn sift(&self, roots: &[IndexRoot], changes: &[Change]) -> Vec<Change> {
        let mut left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        left.retain(|_, (_, at)| at.elapsed() < REMEMBERED_FOR);
        let now = |shown: &str| disk_path(roots, shown).and_then(|p| Version::at(&p));
        let mut kept = Vec::with_capacity(changes.len());
        for c in changes {
            if c.by == "ferret" {
                left.insert(c.path.clone(), (now(&c.path), Instant::now()));
                if let Some(old) = &c.old_path {
                    left.insert(old.clone(), (None, Instant::now()));
                }
                kept.push(c.clone());
                continue;
            }
            let paths = std::iter::once(&c.path).chain(c.old_path.as_ref());
            let echo = paths.clone().all(|p| match left.get(p) {
                Some((version, _)) => *version == now(p),
                None => false,
            });
            if echo {
                continue;
            }
            for p in paths {
                left.remove(p);
            }
            kept.push(c.clone());
        }
        kept
    }
}

/// Where a shown path (`src/a.rs`, or `name/src/a.rs` with several roots) is
/// on disk, through the root's handle path.
fn disk_path(roots: &[IndexRoot], shown: &str) -> Option<PathBuf> {
    let (root, rel) = match roots {
        [only] => (only, shown),
        _ => {
            let (name, rel) = shown.split_once('/').unwrap_or((shown, ""));
            (roots.iter().find(|r| r.name == name)?, rel)
        }
    };
    Some(match rel {
        "" | "." => root.walk_path.clone(),
        rel => root.walk_path.join(rel),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Action;

    fn change(path: &str, by: &'static str) -> Change {
        Change {
            action: Action::Modified,
            path: path.into(),
            old_path: None,
            kind: "file",
            at_ms: 0,
            by,
        }
    }

    fn root(dir: &Path) -> Vec<IndexRoot> {
        vec![IndexRoot {
            name: "r".into(),
            path: dir.to_path_buf(),
            walk_path: dir.to_path_buf(),
        }]
    }

    #[test]
    fn the_echo_of_an_own_write_is_dropped_and_a_later_write_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let roots = root(dir.path());
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "ferret's\n").unwrap();
        let own = OwnWrites::default();
        assert_eq!(own.sift(&roots, &[change("a.txt", "ferret")]).len(), 1);
        // The watcher's report of that write, twice (several events): echoes.
        assert!(own.sift(&roots, &[change("a.txt", "external")]).is_empty());
        assert!(own.sift(&roots, &[change("a.txt", "external")]).is_empty());
        // Another program writes it at once: not an echo.
        std::fs::write(&file, "someone else\n").unwrap();
        let kept = own.sift(&roots, &[change("a.txt", "external")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].by, "external");
        // And the path is no longer ferret's: its next change is kept too.
        assert_eq!(own.sift(&roots, &[change("a.txt", "external")]).len(), 1);
    }

    #[test]
    fn a_file_recreated_after_ferret_deleted_it_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let roots = root(dir.path());
        let own = OwnWrites::default();
        own.sift(&roots, &[change("gone.txt", "ferret")]);
        let mut deleted = change("gone.txt", "external");
        deleted.action = Action::Deleted;
        assert!(own.sift(&roots, std::slice::from_ref(&deleted)).is_empty());
        std::fs::write(dir.path().join("gone.txt"), "back\n").unwrap();
        assert_eq!(own.sift(&roots, &[change("gone.txt", "external")]).len(), 1);
    }

    #[test]
    fn shown_paths_map_to_their_root() {
        let roots = vec![
            IndexRoot {
                name: "a".into(),
                path: "/x".into(),
                walk_path: "/proc/self/fd/7".into(),
            },
            IndexRoot {
                name: "b".into(),
                path: "/y".into(),
                walk_path: "/y".into(),
            },
        ];
        assert_eq!(
            disk_path(&roots, "b/src/m.rs"),
            Some(PathBuf::from("/y/src/m.rs"))
        );
        assert_eq!(
            disk_path(&roots, "a"),
            Some(PathBuf::from("/proc/self/fd/7"))
        );
        assert_eq!(disk_path(&roots, "c/x"), None);
        assert_eq!(
            disk_path(&roots[..1], "src/m.rs"),
            Some(PathBuf::from("/proc/self/fd/7/src/m.rs"))
        );
    }
}
