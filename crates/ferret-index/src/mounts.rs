//! The mount table, watched: a mount or an unmount makes no inotify event,
//! so the folder it covers (or uncovers) would keep the picture the index
//! had of it, and a network file system or a bind mount made there would
//! never be named among the folders the watcher cannot hear.
//!
//! The kernel marks `/proc/self/mountinfo` with `POLLPRI` once the process's
//! mount table changes (and clears the mark as `poll` reports it), so the
//! index's thread asks with one `poll` of no timeout at each barrier and
//! each idle tick: a mount made before a search is read before the search
//! passes the barrier. Only when it is marked is the table read again, and
//! the mount points below a root compared with the last reading. (Written
//! here: no kept crate watches the mount table.)

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek};
use std::path::PathBuf;

use rustix::event::{PollFd, PollFlags};

/// The mount table and the mount points below the roots at the last reading.
pub(crate) struct MountWatch {
    file: File,
    /// Each root's canonical path, as bytes, with a `/` after it.
    roots: Vec<Vec<u8>>,
    /// (root, path below it) of every mount point strictly below a root.
    seen: BTreeSet<(usize, Vec<u8>)>,
}

impl MountWatch {
    /// The table, read once; `None` where it cannot be opened (no `/proc`).
    pub(crate) fn open(roots: &[PathBuf]) -> Option<MountWatch> {
        use std::os::unix::ffi::OsStrExt;
        let file = File::open("/proc/self/mountinfo").ok()?;
        let roots = roots
            .iter()
            .map(|r| {
                let mut p = r.as_os_str().as_bytes().to_vec();
                if !p.ends_with(b"/") {
                    p.push(b'/');
                }
                p
            })
            .collect();
        let mut watch = MountWatch {
            file,
            roots,
            seen: BTreeSet::new(),
        };
        // Whatever the mark says now, the first reading is the baseline.
        watch.marked();
        watch.seen = watch.below_roots()?;
        Some(watch)
    }

    /// Whether the table changed since the last call (one `poll`).
    fn marked(&self) -> bool {
        let mut fds = [PollFd::new(&self.file, PollFlags::PRI)];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        rustix::event::poll(&mut fds, Some(&zero)).is_ok_and(|n| n > 0)
            && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR)
    }

    /// The mount points below the roots now.
    fn below_roots(&mut self) -> Option<BTreeSet<(usize, Vec<u8>)>> {
        let mut text = Vec::new();
        self.file.rewind().ok()?;
        self.file.read_to_end(&mut text).ok()?;
        let mut out = BTreeSet::new();
        for point in mount_points(&text) {
            for (i, root) in self.roots.iter().enumerate() {
                if let Some(rel) = point.strip_prefix(root.as_slice())
                    && !rel.is_empty()
                {
                    out.insert((i, rel.to_vec()));
                }
            }
        }
        Some(out)
    }

    /// The mount points below a root made or removed since the last call:
    /// (root, path below it). Empty at once when the table is not marked.
    pub(crate) fn changed(&mut self) -> Vec<(usize, Vec<u8>)> {
        if !self.marked() {
            return Vec::new();
        }
        let Some(now) = self.below_roots() else {
            return Vec::new();
        };
        let changed = now.symmetric_difference(&self.seen).cloned().collect();
        self.seen = now;
        changed
    }
}

/// The mount points of a `mountinfo` text (the fifth field of each line,
/// with the kernel's octal escapes of space, tab, newline and `\` undone).
fn mount_points(text: &[u8]) -> Vec<Vec<u8>> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').nth(4))
        .map(unescape)
        .collect()
}

fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && let Some(digits) = field.get(i + 1..i + 4)
            && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        {
            out.push(digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0')) as u8);
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_the_fifth_field_unescaped() {
        let text = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
            36 22 0:32 /a /srv/my\\040data rw shared:2 - ext4 /dev/sdb rw\n\
            37 22 0:33 / /srv/back\\134slash rw - nfs host:/x rw\n";
        assert_eq!(
            mount_points(text),
            vec![
                b"/".to_vec(),
                b"/srv/my data".to_vec(),
                b"/srv/back\\slash".to_vec()
            ]
        );
        assert_eq!(unescape(b"a\\01"), b"a\\01", "a short escape is kept");
    }

    /// The table this process sees is read, and a second call with nothing
    /// mounted between reports nothing.
    #[test]
    fn an_unchanged_table_reports_nothing() {
        let Some(mut w) = MountWatch::open(&[PathBuf::from("/")]) else {
            return;
        };
        assert!(w.changed().is_empty());
        assert!(
            w.seen.iter().all(|(r, rel)| *r == 0 && !rel.is_empty()),
            "{:?}",
            w.seen
        );
    }
}
