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
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::event::{PollFd, PollFlags};

/// A mount below a root: (root, path below it, what is mounted there: the
/// mount's id, device, root within its file system, type and source). A
/// path is told changed when the mounts on it are not the same, so that a
/// mount stacked on another, or one replaced by another between two polls,
/// is read too.
type Seen = BTreeSet<(usize, Vec<u8>, Vec<u8>)>;

/// The mount table and the mounts below the roots at the last reading.
pub(crate) struct MountWatch {
    file: File,
    /// The kernel's mark was seen (a `poll` clears it) and the table not
    /// read since: kept until a reading succeeds.
    pending: bool,
    seen: Seen,
}

impl MountWatch {
    /// The table, read once, with the roots' paths as they are now
    /// (`roots`: their open handles); `None` where it cannot be read.
    pub(crate) fn open(roots: &[Option<BorrowedFd<'_>>]) -> Option<MountWatch> {
        let file = File::open("/proc/self/mountinfo").ok()?;
        let mut watch = MountWatch {
            file,
            pending: false,
            seen: Seen::new(),
        };
        // Whatever the mark says now, the first reading is the baseline.
        watch.marked();
        watch.seen = watch.below_roots(roots)?;
        watch.pending = false;
        Some(watch)
    }

    /// Whether the table changed since it was last read (one `poll`).
    pub(crate) fn marked(&mut self) -> bool {
        if !self.pending {
            let mut fds = [PollFd::new(&self.file, PollFlags::PRI)];
            let zero = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            self.pending = rustix::event::poll(&mut fds, Some(&zero)).is_ok_and(|n| n > 0)
                && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR);
        }
        self.pending
    }

    /// The mounts below the roots now, each root at the path its handle
    /// has now (a folder above it may have been renamed since the start).
    fn below_roots(&mut self, roots: &[Option<BorrowedFd<'_>>]) -> Option<Seen> {
        let prefixes: Vec<Option<Vec<u8>>> = roots.iter().map(|fd| fd.and_then(path_of)).collect();
        let mut text = Vec::new();
        self.file.rewind().ok()?;
        self.file.read_to_end(&mut text).ok()?;
        let mut out = Seen::new();
        for (point, what) in mounts(&text) {
            for (i, root) in prefixes.iter().enumerate() {
                if let Some(rel) = root.as_deref().and_then(|r| point.strip_prefix(r))
                    && !rel.is_empty()
                {
                    out.insert((i, rel.to_vec(), what.clone()));
                }
            }
        }
        Some(out)
    }

    /// The paths (root, path below it) where a mount came, went or was
    /// replaced since the table was last read, or `None` when the table
    /// cannot be read (the change is kept for the next call). Empty at
    /// once when the table is not marked.
    pub(crate) fn changed(
        &mut self,
        roots: &[Option<BorrowedFd<'_>>],
    ) -> Option<Vec<(usize, Vec<u8>)>> {
        if !self.marked() {
            return Some(Vec::new());
        }
        let now = self.below_roots(roots)?;
        self.pending = false;
        let mut changed: Vec<(usize, Vec<u8>)> = now
            .symmetric_difference(&self.seen)
            .map(|(root, rel, _)| (*root, rel.clone()))
            .collect();
        changed.dedup();
        self.seen = now;
        Some(changed)
    }

    /// The mount points below the roots at the last reading.
    pub(crate) fn points(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.seen
            .iter()
            .map(|(root, rel, _)| (*root, rel.as_slice()))
    }
}

/// A root's path as its open handle has it now, with a `/` after it; `None`
/// once it was deleted.
fn path_of(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let mut p = path.as_os_str().as_bytes().to_vec();
    if p.ends_with(b" (deleted)") || !p.starts_with(b"/") {
        return None;
    }
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    Some(p)
}

/// The mounts of a `mountinfo` text: each line's mount point (its fifth
/// field, with the kernel's octal escapes of space, tab, newline and `\`
/// undone), and what is mounted there (its id, device, root, type and
/// source, as written).
fn mounts(text: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let point = unescape(fields.get(4)?);
            let dash = fields.iter().position(|f| *f == b"-")?;
            let mut what = Vec::new();
            for f in [0, 2, 3, dash + 1, dash + 2] {
                what.extend_from_slice(fields.get(f).copied().unwrap_or_default());
                what.push(b' ');
            }
            Some((point, what))
        })
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
        let found = mounts(text);
        let points: Vec<&[u8]> = found.iter().map(|(p, _)| p.as_slice()).collect();
        assert_eq!(points, [&b"/"[..], b"/srv/my data", b"/srv/back\\slash"]);
        assert_eq!(found[1].1, b"36 0:32 /a ext4 /dev/sdb ");
        assert_eq!(unescape(b"a\\01"), b"a\\01", "a short escape is kept");
    }

    /// The table this process sees is read, and a second call with nothing
    /// mounted between reports nothing.
    #[test]
    fn an_unchanged_table_reports_nothing() {
        let root = File::open("/").unwrap();
        use std::os::fd::AsFd;
        let roots = [Some(root.as_fd())];
        let Some(mut w) = MountWatch::open(&roots) else {
            return;
        };
        assert_eq!(w.changed(&roots), Some(Vec::new()));
        assert!(w.points().all(|(r, rel)| r == 0 && !rel.is_empty()));
    }
}
