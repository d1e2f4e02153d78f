//! Opening folders below a root without ever leaving it: every open is relative
//! to a descriptor, with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so
//! `..`, absolute paths, symlinks (anywhere on the way) and a folder swapped for
//! a link mid-walk are refused by the kernel, not by string checks.

use std::{
    io,
    os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd},
    path::PathBuf,
};

use rustix::fs::{Mode, OFlags, ResolveFlags};

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Paths handed to one `openat2` stay below this (the kernel's `PATH_MAX` is
/// 4096): deeper folders are reached in steps.
const STEP: usize = 3000;

/// Open the folder `rel` (`/`-separated, may be empty for `dir` itself) below
/// the folder `dir`.
pub(crate) fn open_below(dir: BorrowedFd<'_>, rel: &[u8]) -> io::Result<OwnedFd> {
    let rel = trim_slashes(rel);
    if rel.is_empty() {
        return Ok(rustix::fs::openat2(
            dir,
            ".",
            DIR_FLAGS,
            Mode::empty(),
            RESOLVE,
        )?);
    }
    if rel.len() <= STEP {
        return Ok(rustix::fs::openat2(
            dir,
            rel,
            DIR_FLAGS,
            Mode::empty(),
            RESOLVE,
        )?);
    }
    // Cut at a `/` before STEP, open that far, go on from there.
    let cut = memchr::memrchr(b'/', &rel[..STEP]).unwrap_or(STEP);
    if cut == 0 || cut == STEP {
        return Err(io::Error::from_raw_os_error(libc_enametoolong()));
    }
    let first = rustix::fs::openat2(dir, &rel[..cut], DIR_FLAGS, Mode::empty(), RESOLVE)?;
    open_below(first.as_fd(), &rel[cut + 1..])
}

fn libc_enametoolong() -> i32 {
    rustix::io::Errno::NAMETOOLONG.raw_os_error()
}

fn trim_slashes(mut rel: &[u8]) -> &[u8] {
    while let [b'/', rest @ ..] = rel {
        rel = rest;
    }
    while let [rest @ .., b'/'] = rel {
        rel = rest;
    }
    rel
}

/// Open the folder named `name` (one component) in `dir`.
pub(crate) fn open_child(dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat2(
        dir,
        name,
        DIR_FLAGS,
        Mode::empty(),
        RESOLVE,
    )?)
}

/// Open a root by its path (the operator's folder, or `/proc/self/fd/N` of the
/// handle the file layer holds: that names the folder itself, even if the path
/// it was opened by now leads elsewhere).
pub(crate) fn open_root(path: &std::path::Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The `/proc/self/fd/N` path of an open descriptor: the kernel resolves it to
/// the open folder itself, so handing it to a path-taking call (inotify's
/// `add_watch`) names that folder and no other.
pub(crate) fn proc_path(fd: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Device and inode of an open folder.
pub(crate) fn ident(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_below_and_refuses_links_and_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("a/link")).unwrap();
        std::os::unix::fs::symlink("b", tmp.path().join("a/rel")).unwrap();
        let root = open_root(tmp.path()).unwrap();
        assert!(open_below(root.as_fd(), b"a/b").is_ok());
        assert!(open_below(root.as_fd(), b"/a/b/").is_ok());
        assert!(open_below(root.as_fd(), b"").is_ok());
        for bad in [&b"a/link"[..], b"a/rel", b"..", b"a/../..", b"a/link/x"] {
            assert!(
                open_below(root.as_fd(), bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let a = open_child(root.as_fd(), b"a").unwrap();
        assert!(open_child(a.as_fd(), b"link").is_err());
        assert_eq!(ident(a.as_fd()).unwrap().1, {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(tmp.path().join("a")).unwrap().ino()
        });
    }

    #[test]
    fn reaches_folders_deeper_than_path_max() {
        let tmp = tempfile::tempdir().unwrap();
        let root = open_root(tmp.path()).unwrap();
        // 600 levels of 10-byte names: 6,600 bytes of path.
        let mut fd = open_root(tmp.path()).unwrap();
        let mut rel = Vec::new();
        for i in 0..600 {
            let name = format!("level{i:04}");
            rustix::fs::mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            fd = open_child(fd.as_fd(), name.as_bytes()).unwrap();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(name.as_bytes());
        }
        let deep = open_below(root.as_fd(), &rel).unwrap();
        assert_eq!(ident(deep.as_fd()).unwrap(), ident(fd.as_fd()).unwrap());
    }
}
