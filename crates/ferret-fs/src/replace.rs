//! The atomic replacement that `write`, `edit` and `manage` share.
//!
//! Every change goes through the root's cap-std `Dir` (never an absolute path).
//! A file is never modified in place: the new content goes to a temporary file
//! in the same folder (`.ferret-tmp-<pid>-<random>`, created with `create_new`), which
//! is written, given the old file's mode (and owner, where the account may
//! change it), fsynced, renamed over the target, and the folder is fsynced. A
//! reader therefore sees the old content or the new one, never a mix, even if
//! ferret is killed half-way; a killed write can only leave its own
//! `.ferret-tmp-*` file behind (a dotfile, so hidden from `list` and the index
//! by default). On every error path the temporary file is removed.
//!
//! Symlinks inside the root are written through, to their real target, when
//! that target stays inside the root ([`Roots::resolve_links`]); a link leading
//! out is `PATH_OUTSIDE_ROOT`.
//!
//! Hard links: the rename gives the path a new inode, which breaks a hard link.
//! The file's other names keep the old content; only the path written changes.

use std::{
    hash::{BuildHasher, Hasher},
    io::{self, Read, Write},
    os::unix::ffi::OsStrExt,
    sync::atomic::{AtomicU64, Ordering},
};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{
    Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt,
};
use sha2::{Digest, Sha256};

use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::Kind,
    path::RelPath,
    roots::{Root, Roots, Target},
    sniff::{self, Content},
};

/// Names of temporary files; a leftover one is the trace of a killed write.
pub const TEMP_PREFIX: &str = ".ferret-tmp-";

/// A difference a write tool made, for the change journal (`by: ferret`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileChange {
    /// `created`, `modified`, `deleted`, `renamed` or `moved`.
    pub action: &'static str,
    /// As shown to agents.
    pub path: String,
    pub old_path: Option<String>,
    /// `file`, `dir` or `symlink`.
    pub kind: Kind,
}

impl FileChange {
    pub(crate) fn new(action: &'static str, path: String, kind: Kind) -> Self {
        FileChange {
            action,
            path,
            old_path: None,
            kind,
        }
    }
}

/// What to keep of the file being replaced.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep {
    pub mode: Option<u32>,
    pub owner: Option<(u32, u32)>,
}

impl Keep {
    pub fn of(meta: &Metadata) -> Keep {
        Keep {
            mode: Some(meta.mode() & 0o7777),
            owner: Some((meta.uid(), meta.gid())),
        }
    }
}

/// The refusal of a write on a read-only root, naming the flags that allow it.
pub fn read_only(root: &Root) -> FsError {
    FsError::new(
        ErrorCode::ReadOnly,
        format!("root `{}` is read-only; nothing was changed", root.name),
    )
    .hint(format!(
        "the operator can allow writing with --writable (FERRET_WRITABLE) for all roots, or per root with a `:rw` suffix: --root {}={}:rw",
        root.name,
        root.path.display()
    ))
}

/// Where a write lands once symlinks inside the root are resolved.
#[derive(Debug)]
pub(crate) struct Landing {
    /// The real path (no symlink in it); may not exist yet.
    pub real: RelPath,
    /// `symlink_metadata` of `real` when it exists.
    pub existing: Option<Metadata>,
    /// Folders that must be created first, outermost first.
    pub missing_dirs: Vec<RelPath>,
}

/// The root and path of a write, refused on a read-only root and on `.`.
pub(crate) fn write_target<'a>(roots: &'a Roots, input: &str) -> FsResult<(&'a Root, RelPath)> {
    match roots.resolve(input)? {
        Target::AllRoots => Err(FsError::new(
            ErrorCode::IsDirectory,
            "`.` is the list of roots, not something to write",
        )
        .hint("start the path with a root's name")),
        Target::In(root, rel) => {
            if !root.writable {
                return Err(read_only(root));
            }
            Ok((root, rel))
        }
    }
}

/// Sensitive by its name, or a folder whose entries all are (`.ssh`, `.git/objects`).
pub(crate) fn sensitive_target(roots: &Roots, rel: &RelPath, is_dir: bool) -> bool {
    let deny = &roots.policy.deny;
    !rel.is_root() && (deny.is_sensitive(rel) || (is_dir && deny.is_sensitive(&rel.join("x"))))
}

/// Resolve where a write to `rel` lands. With `follow_leaf`, an existing final
/// symlink is followed (written through); otherwise the link itself is the target.
pub(crate) fn land(
    roots: &Roots,
    root: &Root,
    rel: &RelPath,
    shown: &str,
    follow_leaf: bool,
) -> FsResult<Landing> {
    if rel.is_root() {
        return Err(FsError::new(
            ErrorCode::IsDirectory,
            format!("`{shown}` is a root folder"),
        )
        .hint("give a path inside the root"));
    }
    if roots.policy.deny.is_sensitive(rel) {
        return Err(FsError::denied(shown));
    }
    let (parent, leaf) = rel.split_last();
    // The deepest folder of the path that exists; the rest must be created.
    let parts: Vec<&[u8]> = parent.names().map(|(_, bytes)| bytes).collect();
    let mut found = None;
    for keep in (0..=parts.len()).rev() {
        let prefix = RelPath::from_names(parts[..keep].iter().copied());
        match roots.resolve_links(root, prefix.as_os_path(), shown) {
            Ok(real) => {
                found = Some((keep, real));
                break;
            }
            Err(e) if e.code == ErrorCode::NotFound && keep > 0 => continue,
            Err(e) => return Err(e),
        }
    }
    let (keep, mut real_parent) = found.ok_or_else(|| FsError::not_found(shown))?;
    if !real_parent.is_root() {
        let meta = root
            .dir()
            .metadata(real_parent.as_os_path())
            .map_err(|e| FsError::from_io(&e, shown))?;
        if !meta.is_dir() {
            return Err(FsError::new(
                ErrorCode::NotDirectory,
                format!("a component of `{shown}` is a file, not a folder"),
            ));
        }
    }
    let landing = if keep < parts.len() {
        let mut missing_dirs = Vec::new();
        for part in &parts[keep..] {
            real_parent = real_parent.join_bytes(part);
            missing_dirs.push(real_parent.clone());
        }
        Landing {
            real: real_parent.join_bytes(leaf.as_bytes()),
            existing: None,
            missing_dirs,
        }
    } else {
        let direct = real_parent.join_bytes(leaf.as_bytes());
        match root.dir().symlink_metadata(direct.as_os_path()) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Landing {
                real: direct,
                existing: None,
                missing_dirs: Vec::new(),
            },
            Err(e) => return Err(FsError::from_io(&e, shown)),
            Ok(meta) if meta.is_symlink() && follow_leaf => {
                let real = roots
                    .resolve_links(root, direct.as_os_path(), shown)
                    .map_err(|e| {
                        if e.code == ErrorCode::NotFound {
                            FsError::new(
                                ErrorCode::NotFound,
                                format!("`{shown}` is a symlink whose target does not exist"),
                            )
                            .hint("write to the target's own path, or remove the link with manage op delete")
                        } else {
                            e
                        }
                    })?;
                let existing = root
                    .dir()
                    .symlink_metadata(real.as_os_path())
                    .map_err(|e| FsError::from_io(&e, shown))?;
                Landing {
                    real,
                    existing: Some(existing),
                    missing_dirs: Vec::new(),
                }
            }
            Ok(meta) => Landing {
                real: direct,
                existing: Some(meta),
                missing_dirs: Vec::new(),
            },
        }
    };
    let is_dir = landing.existing.as_ref().is_some_and(|m| m.is_dir());
    if sensitive_target(roots, rel, is_dir) || sensitive_target(roots, &landing.real, is_dir) {
        return Err(FsError::denied(shown));
    }
    Ok(landing)
}

/// Create the folders a landing lacks; returns their changes.
pub(crate) fn create_missing(
    roots: &Roots,
    root: &Root,
    landing: &Landing,
    shown: &str,
) -> FsResult<Vec<FileChange>> {
    let mut changes = Vec::new();
    for dir in &landing.missing_dirs {
        match root.dir().create_dir(dir.as_os_path()) {
            Ok(()) => changes.push(FileChange::new(
                "created",
                roots.display(root, dir),
                Kind::Dir,
            )),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(FsError::from_io(&e, shown)),
        }
    }
    Ok(changes)
}

/// Removes the temporary file unless the rename consumed it.
struct TempGuard<'a> {
    dir: &'a Dir,
    name: String,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

/// The process a temporary file's name says made it, when `name` is one
/// [`temp_name`] makes: the prefix, the writer's process id in decimal, `-`
/// and 16 hex digits.
fn temp_owner(name: &str) -> Option<u32> {
    let (pid, h) = name.strip_prefix(TEMP_PREFIX)?.split_once('-')?;
    let hex = h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = (1..=10).contains(&pid.len()) && pid.bytes().all(|b| b.is_ascii_digit());
    if hex && digits {
        pid.parse().ok()
    } else {
        None
    }
}

/// Whether process `pid` runs (in this pid namespace). A process that exists
/// but is not ours to signal (`EPERM`) runs too.
fn process_runs(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Remove a temporary file a killed write left (`input` as shown to agents):
/// only in a writable root, only a regular file under a name ferret makes,
/// only one whose writer (the process its name names) no longer runs, and
/// only one last modified before `before` (the start of this process).
/// `Ok(true)` when it was removed.
///
/// The writer's id is what keeps a write in flight safe, this process's own
/// included: the time alone does not, since a file's time comes from the
/// kernel's coarse clock, which can stand a few milliseconds behind the
/// `before` read from the fine one, so a temporary file this process made
/// just after it started could look older than the process (one CI run
/// removed an `edit`'s temporary file before its rename that way). The time
/// still guards writers in another pid namespace, whose ids mean nothing here.
pub(crate) fn remove_stale_temp(
    roots: &Roots,
    input: &str,
    before: std::time::SystemTime,
) -> FsResult<bool> {
    let (root, rel) = match roots.resolve(input)? {
        Target::In(root, rel) if root.writable => (root, rel),
        _ => return Ok(false),
    };
    let (parent, leaf) = rel.split_last();
    match leaf.to_str().and_then(temp_owner) {
        Some(pid) if pid != std::process::id() && !process_runs(pid) => {}
        _ => return Ok(false),
    }
    // The folder opened through the root with no symlink followed; the file
    // described and removed relative to it.
    let dir = crate::open::folder(root.dir(), parent.as_os_path())
        .map_err(|e| FsError::from_io(&e, input))?;
    let meta = match dir.symlink_metadata(&leaf) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(FsError::from_io(&e, input)),
    };
    let old = meta
        .modified()
        .map(|t| t.into_std() < before)
        .unwrap_or(false);
    if !meta.is_file() || !old {
        return Ok(false);
    }
    match dir.remove_file(&leaf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FsError::from_io(&e, input)),
    }
}

fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    format!("{TEMP_PREFIX}{}-{:016x}", std::process::id(), h.finish())
}

/// Open the folder holding `real` (which contains no symlink) through the
/// root; a component swapped for a symlink since it was resolved fails the open.
pub(crate) fn open_parent(root: &Root, real: &RelPath) -> io::Result<(Dir, std::ffi::OsString)> {
    let (parent, leaf) = real.split_last();
    let dir = crate::open::folder(root.dir(), parent.as_os_path())?;
    Ok((dir, leaf))
}

/// Atomically make `real` hold the bytes of `source`.
///
/// A temporary file is created in the same folder, filled, given `keep`'s mode
/// and owner, fsynced and renamed over `real`; then the folder is fsynced. With
/// `no_replace`, an existing `real` is never replaced (`AlreadyExists`): the
/// temporary file is hard-linked into place, which fails if the name exists.
///
/// Hard links to the old file are broken by the rename: its other names keep
/// the old content. The temporary file never survives an error.
pub(crate) fn replace_atomically(
    root: &Root,
    real: &RelPath,
    source: &mut dyn Read,
    keep: Keep,
    no_replace: bool,
) -> io::Result<u64> {
    let (dir, leaf) = open_parent(root, real)?;
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .follow(FollowSymlinks::No)
        .mode(keep.mode.unwrap_or(0o666) & 0o777);
    let (mut file, name) = {
        let mut attempt = 0;
        loop {
            let name = temp_name();
            match dir.open_with(&name, &options) {
                Ok(f) => break (f, name),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    };
    let mut guard = TempGuard {
        dir: &dir,
        name: name.clone(),
        armed: true,
    };
    let written = io::copy(source, &mut file)?;
    file.flush()?;
    if let Some((uid, gid)) = keep.owner {
        let meta = file.metadata()?;
        if meta.uid() != uid || meta.gid() != gid {
            // Succeeds when running as root (or for a group the account is in);
            // otherwise the new file keeps the account's ownership.
            let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
        }
    }
    if let Some(mode) = keep.mode {
        file.set_permissions(Permissions::from_mode(mode))?;
    }
    file.sync_all()?;
    drop(file);
    if no_replace {
        match dir.hard_link(&name, &dir, &leaf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
            Err(_) => {
                // File systems without hard links: check, then rename.
                if dir.symlink_metadata(&leaf).is_ok() {
                    return Err(io::Error::from(io::ErrorKind::AlreadyExists));
                }
                dir.rename(&name, &dir, &leaf)?;
                guard.armed = false;
            }
        }
    } else {
        dir.rename(&name, &dir, &leaf)?;
        guard.armed = false;
    }
    drop(guard);
    sync_dir(&dir);
    Ok(written)
}

/// Make a rename or removal durable; failures (file systems that refuse fsync
/// on folders) are not errors of the write, which has already happened.
pub(crate) fn sync_dir(dir: &Dir) {
    if let Ok(d) = dir.try_clone() {
        let _ = d.into_std_file().sync_all();
    }
}

/// The checksum of a file read to its end, without holding it in memory.
pub(crate) fn checksum_stream(reader: &mut dyn Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(crate::read::hex_digest(&hasher.finalize()))
}

pub(crate) fn mismatch(shown: &str, expected: &str, actual: Option<&str>) -> FsError {
    let message = match actual {
        Some(actual) => format!(
            "`{shown}` changed since you read it: expected {expected}, it is now {actual}; nothing was written"
        ),
        None => format!("`{shown}` no longer exists (expected {expected}); nothing was written"),
    };
    let err = FsError::new(ErrorCode::ChecksumMismatch, message)
        .hint("read the file again to get its current content and checksum, then redo the change against it")
        .suggest("read");
    match actual {
        Some(a) => err.detail("current_checksum", a),
        None => err,
    }
}

/// Open an existing regular file (already resolved, no symlink in it) for
/// reading, with its `fstat` metadata; a FIFO, socket or device swapped in
/// since it was looked at is refused at once ([`crate::open::file`]).
pub(crate) fn open_real(root: &Root, real: &RelPath) -> io::Result<(cap_std::fs::File, Metadata)> {
    crate::open::file(root.dir(), real.as_os_path())
}

/// A unified diff of two texts, bounded so that it fits in an answer.
pub fn unified_diff(path: &str, old: &str, new: &str, max_bytes: usize) -> (String, bool) {
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, new);
    let mut text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (diff truncated)\n");
        return (text, true);
    }
    (text, false)
}

/// Decode a text file's bytes for a diff; `None` for binaries.
pub(crate) fn text_for_diff(bytes: &[u8]) -> Option<String> {
    if !matches!(sniff::classify(bytes), Content::Text) {
        return None;
    }
    Some(sniff::decoded(bytes).into_owned())
}

/// Refuse to change a file this account may not write. The atomic rename
/// needs only the folder's permission, so without this a file the user made
/// read-only (`chmod a-w`) would be replaced; root may write any file, as
/// `open(O_WRONLY)` lets it. Other failures of the check are left to the
/// write itself.
pub(crate) fn check_writable(root: &Root, real: &RelPath, shown: &str) -> FsResult<()> {
    use rustix::{
        fs::{Access, AtFlags},
        io::Errno,
    };
    match rustix::fs::accessat(root.dir(), real.as_os_path(), Access::WRITE_OK, AtFlags::EACCESS) {
        Err(Errno::ACCESS) | Err(Errno::PERM) => Err(FsError::new(
            ErrorCode::IoError,
            format!("`{shown}` is read-only for the account running ferret (permission denied); nothing was written"),
        )
        .hint("the user can allow it (chmod u+w), or write to another file")),
        Err(Errno::ROFS) => Err(FsError::new(
            ErrorCode::IoError,
            format!("`{shown}` is on a read-only file system; nothing was written"),
        )
        .hint("serve this root read-only (drop :rw), or remount it writable")),
        _ => Ok(()),
    }
}

/// An OS failure while writing: the old content is intact, say so.
pub(crate) fn write_failed(err: &io::Error, shown: &str) -> FsError {
    let mut e = FsError::from_io(err, shown);
    if e.code == ErrorCode::IoError {
        e.message
            .push_str("; the file was left as it was and no temporary file remains");
        if e.hint.is_none() {
            e = e.hint("free space or fix permissions, then retry");
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use crate::{Policy, RootSpec, Roots};

    #[test]
    fn only_names_ferret_makes_are_temporary() {
        let own = super::temp_name();
        assert_eq!(super::temp_owner(&own), Some(std::process::id()));
        assert_eq!(
            super::temp_owner(".ferret-tmp-42-0123456789abcdef"),
            Some(42)
        );
        for other in [
            ".ferret-tmp-",
            ".ferret-tmp-0123456789abcdef",
            ".ferret-tmp--0123456789abcdef",
            ".ferret-tmp-x1-0123456789abcdef",
            ".ferret-tmp-12345678901-0123456789abcdef",
            ".ferret-tmp-42-0123",
            ".ferret-tmp-42-0123456789abcdefg",
            ".ferret-tmp-42-0123456789abcdeg",
            "ferret-tmp-42-0123456789abcdef",
            ".ferret-tmp-42-0123456789abcdef.rs",
        ] {
            assert_eq!(super::temp_owner(other), None, "{other}");
        }
    }

    /// A temporary file is removed only when the process its name names is
    /// gone: not this process's own (whatever its time says, since the
    /// kernel's coarse clock can date a file made just after the start
    /// before it), not a running one's, and a gone writer's only when older
    /// than `before`.
    #[test]
    fn only_a_gone_writers_old_temporary_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let gone = gone.id();
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        let names = [
            (super::temp_name(), hour_ago, false),
            (format!(".ferret-tmp-1-{:016x}", 7), hour_ago, false),
            (format!(".ferret-tmp-{gone}-{:016x}", 8), hour_ago, true),
            (
                format!(".ferret-tmp-{gone}-{:016x}", 9),
                SystemTime::now() + Duration::from_secs(60),
                false,
            ),
        ];
        for (name, time, _) in &names {
            let f = std::fs::File::create(dir.path().join(name)).unwrap();
            f.set_modified(*time).unwrap();
        }
        let spec: RootSpec = format!("{}:rw", dir.path().display()).parse().unwrap();
        let roots = Roots::open(&[spec], Policy::default()).unwrap();
        for (name, _, removed) in &names {
            assert_eq!(
                roots.remove_stale_temp(name, SystemTime::now()).unwrap(),
                *removed,
                "{name}"
            );
            assert_eq!(dir.path().join(name).exists(), !removed, "{name}");
        }
    }
}
