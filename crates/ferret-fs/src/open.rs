//! Opening files and folders through descriptors: the one place the file
//! layer opens anything below a root.
//!
//! Every open is `openat2` on the root's handle with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: the path given must hold no
//! symlink at all (callers resolve links inside the root first,
//! [`crate::Roots::resolve_links`]), so a component swapped for a symlink
//! after it was checked makes the open fail (`ELOOP`) rather than lead
//! somewhere unchecked. Files are opened `O_NONBLOCK | O_NOCTTY`: a FIFO
//! swapped in cannot make a reader wait for a writer, a terminal is never
//! taken. What was opened is then described by `fstat` of the descriptor,
//! never by the path, and anything but a regular file (a FIFO, socket or
//! device; a folder where a file was wanted) is refused before a byte is read.
//!
//! Written here, on rustix, because cap-std's `open_with` resolves
//! intermediate symlinks inside the root and has no "no symlinks at all" mode.
//! Where the kernel lacks `openat2` (before Linux 5.6, or hidden by a seccomp
//! filter) the open falls back to cap-std with the same flags and `O_NOFOLLOW`
//! on the last component: still confined to the root, but an intermediate
//! component swapped for a symlink inside the root is then followed.

use std::{
    fmt, io,
    os::fd::{AsFd, OwnedFd},
    path::Path,
};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, FileTypeExt, Metadata, OpenOptions, OpenOptionsExt};
use rustix::{
    fs::{Mode, OFlags, ResolveFlags},
    io::Errno,
};

/// Why something that exists was not opened as asked: carried inside an
/// `io::Error`, so every caller's error mapping words it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotRegular(pub &'static str);

impl fmt::Display for NotRegular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "it is {}, not a regular file: only regular files are read or written, and it was not waited on",
            self.0
        )
    }
}

impl std::error::Error for NotRegular {}

/// What `err` says about a refused special file, if that is what it is.
pub fn not_regular(err: &io::Error) -> Option<NotRegular> {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<NotRegular>())
        .copied()
}

fn refuse(kind: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind))
}

/// The path `openat2` takes for `rel` (`.` for the root itself).
fn beneath(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

fn openat_beneath(dir: &Dir, rel: &Path, flags: OFlags) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::openat2(
        dir.as_fd(),
        beneath(rel),
        flags | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => Ok(Some(fd)),
        // No openat2 here: the caller falls back to cap-std.
        Err(Errno::NOSYS) => Ok(None),
        // A socket (or a device without a driver) cannot be opened at all.
        Err(Errno::NXIO) => Err(refuse("a socket or a device")),
        Err(e) => Err(e.into()),
    }
}

/// The kind of a non-regular file, as the refusal names it.
fn special_kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Open the regular file `rel` (no symlink in it) below `dir` for reading,
/// with its `fstat` metadata. A folder is `IsADirectory`; a FIFO, socket or
/// device a [`NotRegular`] error, at once.
pub fn file(dir: &Dir, rel: &Path) -> io::Result<(File, Metadata)> {
    let file = match openat_beneath(dir, rel, OFlags::RDONLY | OFlags::NONBLOCK)? {
        Some(fd) => File::from_std(std::fs::File::from(fd)),
        None => {
            let mut options = OpenOptions::new();
            options
                .read(true)
                .follow(FollowSymlinks::No)
                .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
            dir.open_with(beneath(rel), &options)?
        }
    };
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::from(io::ErrorKind::IsADirectory));
    }
    if !meta.is_file() {
        return Err(refuse(special_kind(&meta)));
    }
    Ok((file, meta))
}

/// Open the folder `rel` (no symlink in it; empty for `dir` itself) below
/// `dir`. Anything else is `NotADirectory`, without being opened as a file.
pub fn folder(dir: &Dir, rel: &Path) -> io::Result<Dir> {
    match openat_beneath(
        dir,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
    )? {
        Some(fd) => Ok(Dir::from_std_file(std::fs::File::from(fd))),
        None if rel.as_os_str().is_empty() => dir.try_clone(),
        None => {
            use cap_fs_ext::DirExt;
            dir.open_dir_nofollow(rel)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;
    use std::{os::unix::fs::symlink, time::Instant};

    fn fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    #[test]
    fn specials_are_refused_at_once_and_named() {
        let tmp = tempfile::tempdir().unwrap();
        fifo(&tmp.path().join("pipe"));
        let _socket = std::os::unix::net::UnixListener::bind(tmp.path().join("sock")).unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub/f.txt"), "text").unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let started = Instant::now();
        let e = file(&dir, Path::new("pipe")).unwrap_err();
        assert_eq!(not_regular(&e), Some(NotRegular("a FIFO (named pipe)")));
        assert!(e.to_string().contains("not waited on"), "{e}");
        let e = file(&dir, Path::new("sock")).unwrap_err();
        assert!(not_regular(&e).is_some(), "{e}");
        assert!(
            started.elapsed().as_secs() < 2,
            "nothing waited for a writer"
        );
        let e = file(&dir, Path::new("sub")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
        let (_, meta) = file(&dir, Path::new("sub/f.txt")).unwrap();
        assert_eq!(meta.len(), 4, "described by fstat");
        let e = folder(&dir, Path::new("pipe")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory, "{e}");
        assert!(folder(&dir, Path::new("")).is_ok());
        if let Ok(null) = file(
            &Dir::open_ambient_dir("/dev", ambient_authority()).unwrap(),
            Path::new("null"),
        ) {
            panic!("a device was opened: {:?}", null.1);
        }
    }

    #[test]
    fn no_component_may_be_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::fs::write(tmp.path().join("real/f.txt"), "text").unwrap();
        symlink("real", tmp.path().join("link")).unwrap();
        symlink("real/f.txt", tmp.path().join("leaf")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        assert!(file(&dir, Path::new("real/f.txt")).is_ok());
        for through in ["link/f.txt", "leaf"] {
            let e = file(&dir, Path::new(through)).unwrap_err();
            assert_eq!(
                e.raw_os_error(),
                Some(Errno::LOOP.raw_os_error()),
                "{through}: {e}"
            );
        }
        assert!(folder(&dir, Path::new("link")).is_err());
    }
}
