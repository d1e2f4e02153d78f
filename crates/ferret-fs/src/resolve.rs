//! From what an agent typed to a root and a path inside it, and to the file
//! opened there: the root chosen by name or by absolute path, symlinks
//! followed one component at a time through the root's handle, never out of
//! it, and a file opened for its content without following any.

use std::{io, path::Path};

use crate::{
    error::{ErrorCode, FsError, FsResult},
    path::{self, Refusal, RelPath, Requested},
    roots::{OpenedFile, Root, Roots, Target},
};

/// Turn what an agent typed into a root and a relative path, or refuse it
/// before any file-system call.
pub(crate) fn resolve<'a>(roots: &'a Roots, input: &str) -> FsResult<Target<'a>> {
    let shown = input.trim();
    let requested = path::normalize(input).map_err(|refusal| match refusal {
        Refusal::NulByte => {
            FsError::outside(&shown.replace('\0', "\\0")).hint("paths cannot contain NUL bytes")
        }
        Refusal::ParentComponent => FsError::outside(shown)
            .hint("`..` is never accepted; give the path from the root, e.g. `src/main.rs`"),
        Refusal::WindowsPath => FsError::outside(shown)
            .hint("drive letters and UNC paths do not exist here; use a path relative to a root"),
    })?;
    let target = match requested {
        Requested::Relative(parts) => resolve_relative(roots, &parts, shown),
        Requested::Absolute(parts) => resolve_absolute(roots, &parts, shown),
    }?;
    Ok(match target {
        Target::In(root, rel) => Target::In(root, unescape(root, rel)),
        other => other,
    })
}

/// `rel` with its escaped names (see [`ferret_names`]) read as the bytes
/// they stand for where a name of those bytes exists and none as written
/// does: what was reachable by its name as written stays so, and nothing is
/// ever created under a name that is not UTF-8. Each name is looked for in
/// its folder's real path (symlinks above it followed as every tool follows
/// them): decided on the path as typed, a name below an absolute link was
/// kept as written, and an overwrite there made a second file beside the
/// one meant. (File-system calls for each escaped name only.)
fn unescape(root: &Root, rel: RelPath) -> RelPath {
    if !rel.as_str().contains('%') {
        return rel;
    }
    let exists = |p: &RelPath| root.dir().symlink_metadata(p.as_os_path()).is_ok();
    let mut out = RelPath::root();
    for part in rel.components() {
        out = match ferret_names::escaped_bytes(part) {
            Some(bytes) => {
                let real = resolve_links(root, out.as_os_path(), part).ok();
                match real {
                    Some(real) if !exists(&real.join(part)) && exists(&real.join_bytes(&bytes)) => {
                        out.join_bytes(&bytes)
                    }
                    _ => out.join(part),
                }
            }
            None => out.join(part),
        };
    }
    out
}

fn resolve_relative<'a>(roots: &'a Roots, parts: &[String], shown: &str) -> FsResult<Target<'a>> {
    if !roots.is_multi() {
        let rel = RelPath::from_components(parts.iter().map(String::as_str));
        return Ok(Target::In(&roots.roots()[0], rel));
    }
    let Some((first, rest)) = parts.split_first() else {
        return Ok(Target::AllRoots);
    };
    match roots.roots().iter().find(|r| &r.name == first) {
        Some(root) => Ok(Target::In(
            root,
            RelPath::from_components(rest.iter().map(String::as_str)),
        )),
        None => Err(FsError::not_found(shown).hint(format!(
            "with several roots a path starts with a root name: {}",
            roots.root_names()
        ))),
    }
}

fn resolve_absolute<'a>(roots: &'a Roots, parts: &[String], shown: &str) -> FsResult<Target<'a>> {
    let mut best: Option<(&Root, &[String])> = None;
    for root in roots.roots() {
        for base in [&root.path, &root.given] {
            let base = path::absolute_components(base);
            if let Some(rest) = path::strip_base(parts, &base)
                && best.is_none_or(|(_, b)| rest.len() < b.len())
            {
                best = Some((root, rest));
            }
        }
    }
    match best {
        Some((root, rest)) => Ok(Target::In(
            root,
            RelPath::from_components(rest.iter().map(String::as_str)),
        )),
        None => Err(FsError::outside(shown).hint(format!(
            "absolute paths must lie inside a root ({}); prefer paths relative to a root",
            roots
                .roots()
                .iter()
                .map(|r| r.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Resolve symlinks inside the root; a link that leads out is `PATH_OUTSIDE_ROOT`,
/// a dangling one `NOT_FOUND`.
pub(crate) fn real_path(root: &Root, rel: &RelPath, shown: &str) -> FsResult<RelPath> {
    resolve_links(root, rel.as_os_path(), shown)
}

/// Follow symlinks one component at a time through the root handle.
///
/// Written by hand because the kernel's `RESOLVE_BENEATH` (and so cap-std's
/// `canonicalize`) refuses every absolute symlink, even one that points back
/// inside the root, and projects do contain those. Each component is checked
/// with `symlink_metadata` under a prefix already known to hold no symlink, so
/// nothing is followed implicitly; a `..` can never climb above the root; an
/// absolute target is accepted only when it lies inside this root. The result
/// holds no symlink, and every later open still goes through the handle.
pub(crate) fn resolve_links(root: &Root, path: &Path, shown: &str) -> FsResult<RelPath> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    const MAX_HOPS: usize = 40;
    // Names as bytes: a name that is not UTF-8 is followed like any other
    // (and shown escaped in the result, see `ferret_names`).
    let mut done: Vec<Vec<u8>> = Vec::new();
    let mut todo: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    for c in path.components() {
        match c {
            std::path::Component::Normal(s) => todo.push_back(s.as_bytes().to_vec()),
            std::path::Component::CurDir => {}
            _ => return Err(FsError::outside(shown)),
        }
    }
    let mut hops = 0;
    while let Some(part) = todo.pop_front() {
        if part == b"." {
            continue;
        }
        if part == b".." {
            if done.pop().is_none() {
                return Err(FsError::outside(shown));
            }
            continue;
        }
        done.push(part);
        let candidate = std::ffi::OsString::from_vec(done.join(&b'/'));
        let meta = root
            .dir()
            .symlink_metadata(&candidate)
            .map_err(|e| FsError::from_io(&e, shown))?;
        if !meta.is_symlink() {
            if !todo.is_empty() && !meta.is_dir() {
                return Err(FsError::from_io(
                    &io::Error::from(io::ErrorKind::NotADirectory),
                    shown,
                ));
            }
            continue;
        }
        hops += 1;
        if hops > MAX_HOPS {
            return Err(FsError::new(
                ErrorCode::IoError,
                format!("`{shown}` goes through a symlink loop"),
            ));
        }
        done.pop();
        let target = root
            .dir()
            .read_link_contents(&candidate)
            .map_err(|e| FsError::from_io(&e, shown))?;
        let mut parts: Vec<Vec<u8>> = Vec::new();
        if target.is_absolute() {
            parts = target_parts_from_root(&target, root).ok_or_else(|| FsError::outside(shown))?;
            done.clear();
        } else {
            for c in target.components() {
                match c {
                    std::path::Component::Normal(s) => parts.push(s.as_bytes().to_vec()),
                    std::path::Component::ParentDir => parts.push(b"..".to_vec()),
                    _ => {}
                }
            }
        }
        for p in parts.into_iter().rev() {
            todo.push_front(p);
        }
    }
    Ok(RelPath::from_names(done.iter().map(Vec::as_slice)))
}

/// The components of an absolute symlink target below the root, keeping `..` so
/// that the resolver applies them physically. `None` when it starts elsewhere.
fn target_parts_from_root(target: &Path, root: &Root) -> Option<Vec<Vec<u8>>> {
    use std::os::unix::ffi::OsStrExt;
    for base in [&root.path, &root.given] {
        if let Ok(rest) = target.strip_prefix(base) {
            return Some(
                rest.components()
                    .map(|c| match c {
                        std::path::Component::Normal(s) => s.as_bytes().to_vec(),
                        std::path::Component::ParentDir => b"..".to_vec(),
                        _ => b".".to_vec(),
                    })
                    .collect(),
            );
        }
    }
    None
}

/// [`Roots::open_for_content`]: a regular file opened for its content.
pub(crate) fn open_for_content(
    roots: &Roots,
    root: &Root,
    rel: &RelPath,
    shown: &str,
) -> FsResult<OpenedFile> {
    if roots.policy.deny.is_sensitive(rel) {
        return Err(FsError::denied(shown));
    }
    let opened = |real: RelPath| match crate::open::file(root.dir(), real.as_os_path()) {
        Ok((file, metadata)) => Ok(OpenedFile {
            file,
            metadata,
            real,
        }),
        Err(e) => Err(e),
    };
    match opened(rel.clone()) {
        Ok(file) => return Ok(file),
        Err(e)
            if e.kind() == io::ErrorKind::IsADirectory
                || crate::open::not_regular(&e).is_some() =>
        {
            return Err(FsError::from_io(&e, shown));
        }
        // A symlink on the way, or an error the resolver words better.
        Err(_) => {}
    }
    let real = roots.real_path(root, rel, shown)?;
    roots.check_not_sensitive(rel, &real, shown)?;
    opened(real).map_err(|e| FsError::from_io(&e, shown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    fn two_roots() -> (tempfile::TempDir, Roots) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("code/src")).unwrap();
        std::fs::create_dir_all(tmp.path().join("notes")).unwrap();
        let specs = vec![
            format!("{}", tmp.path().join("code").display())
                .parse()
                .unwrap(),
            format!("n={}", tmp.path().join("notes").display())
                .parse()
                .unwrap(),
        ];
        let roots = Roots::open(&specs, Policy::default()).unwrap();
        (tmp, roots)
    }

    #[test]
    fn multi_root_paths_start_with_the_root_name() {
        let (tmp, roots) = two_roots();
        assert!(matches!(roots.resolve(".").unwrap(), Target::AllRoots));
        match roots.resolve("code/src").unwrap() {
            Target::In(r, rel) => {
                assert_eq!(r.name, "code");
                assert_eq!(rel.as_str(), "src");
                assert_eq!(roots.display(r, &rel), "code/src");
            }
            t => panic!("{t:?}"),
        }
        assert_eq!(
            roots.resolve("nope/x").unwrap_err().code,
            ErrorCode::NotFound
        );
        let abs = tmp.path().join("notes/a.md");
        match roots.resolve(abs.to_str().unwrap()).unwrap() {
            Target::In(r, rel) => assert_eq!((r.name.as_str(), rel.as_str()), ("n", "a.md")),
            t => panic!("{t:?}"),
        }
    }

    #[test]
    fn outside_and_sibling_prefixes_are_refused() {
        let (tmp, roots) = two_roots();
        let sibling = format!("{}-evil/x", tmp.path().join("code").display());
        for p in [
            "/etc/passwd",
            sibling.as_str(),
            "code/../notes",
            "C:\\x",
            "a\0b",
        ] {
            assert_eq!(
                roots.resolve(p).unwrap_err().code,
                ErrorCode::PathOutsideRoot,
                "{p}"
            );
        }
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;
    use crate::{Policy, RootSpec};
    use std::os::unix::fs::symlink;

    #[test]
    fn links_resolve_inside_and_are_refused_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(tmp.path().join("out")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        let canonical = std::fs::canonicalize(&root).unwrap();
        symlink("a/b/f.txt", root.join("rel")).unwrap();
        symlink(canonical.join("a/b"), root.join("abs_dir")).unwrap();
        symlink(canonical.join("a/../a/b/f.txt"), root.join("abs_dotdot")).unwrap();
        symlink("../out", root.join("up")).unwrap();
        symlink(canonical.join("../out"), root.join("abs_up")).unwrap();
        symlink("b/../../..", root.join("a/climb")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        let spec: RootSpec = root.display().to_string().parse().unwrap();
        let roots = Roots::open(&[spec], Policy::default()).unwrap();
        let r = &roots.roots()[0];
        let real = |p: &str| {
            roots
                .resolve_links(r, Path::new(p), p)
                .map(|x| x.as_str().to_string())
        };
        assert_eq!(real("rel").unwrap(), "a/b/f.txt");
        assert_eq!(real("abs_dir/f.txt").unwrap(), "a/b/f.txt");
        assert_eq!(real("abs_dotdot").unwrap(), "a/b/f.txt");
        assert_eq!(real("a/b/f.txt").unwrap(), "a/b/f.txt");
        for bad in ["up", "up/x", "abs_up", "a/climb", "a/climb/out"] {
            assert_eq!(
                real(bad).unwrap_err().code,
                ErrorCode::PathOutsideRoot,
                "{bad}"
            );
        }
        assert_eq!(real("missing/x").unwrap_err().code, ErrorCode::NotFound);
        assert_eq!(real("loop").unwrap_err().code, ErrorCode::IoError);
        assert_eq!(real("rel/x").unwrap_err().code, ErrorCode::NotDirectory);
    }

    /// A name that is not UTF-8 is reached by its shown form, through a
    /// symlink too; a name as written comes first, and a path that names
    /// nothing stays as written.
    #[test]
    fn escaped_names_read_back_as_their_bytes() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let bytes = |b: &[u8]| root.join(OsStr::from_bytes(b));
        std::fs::create_dir_all(bytes(b"d\xff")).unwrap();
        std::fs::write(bytes(b"d\xff/caf\xe9.txt"), "x").unwrap();
        std::fs::write(bytes(b"tw\xe9in"), "escaped").unwrap();
        std::fs::write(root.join("tw%E9in"), "literal").unwrap();
        symlink(OsStr::from_bytes(b"d\xff/caf\xe9.txt"), root.join("link")).unwrap();
        // An absolute link to the folder: its escaped names too.
        let canonical = std::fs::canonicalize(&root).unwrap();
        symlink(
            canonical.join(OsStr::from_bytes(b"d\xff")),
            root.join("abs"),
        )
        .unwrap();
        let spec: RootSpec = root.display().to_string().parse().unwrap();
        let roots = Roots::open(&[spec], Policy::default()).unwrap();
        let os = |p: &str| match roots.resolve(p).unwrap() {
            Target::In(_, rel) => (
                rel.as_str().to_string(),
                rel.as_os_path().as_os_str().as_bytes().to_vec(),
            ),
            Target::AllRoots => unreachable!(),
        };
        assert_eq!(
            os("d%FF/caf%E9.txt"),
            ("d%FF/caf%E9.txt".into(), b"d\xff/caf\xe9.txt".to_vec())
        );
        assert_eq!(os("tw%E9in"), ("tw%E9in".into(), b"tw%E9in".to_vec()));
        assert_eq!(
            os("d%FF/new%E9.txt"),
            ("d%FF/new%E9.txt".into(), b"d\xff/new%E9.txt".to_vec())
        );
        assert_eq!(os("new%E9/x"), ("new%E9/x".into(), b"new%E9/x".to_vec()));
        assert_eq!(
            os("abs/caf%E9.txt"),
            ("abs/caf%E9.txt".into(), b"abs/caf\xe9.txt".to_vec())
        );
        let r = &roots.roots()[0];
        let real = roots.resolve_links(r, Path::new("link"), "link").unwrap();
        assert_eq!(real.as_str(), "d%FF/caf%E9.txt");
        assert_eq!(
            real.as_os_path().as_os_str().as_bytes(),
            b"d\xff/caf\xe9.txt"
        );
        let (parent, leaf) = real.split_last();
        assert_eq!(
            (parent.as_str(), leaf.as_bytes()),
            ("d%FF", &b"caf\xe9.txt"[..])
        );
        assert_eq!(
            parent
                .join_rel(&RelPath::root().join_bytes(b"x\xe9"))
                .as_os_path()
                .as_os_str()
                .as_bytes(),
            b"d\xff/x\xe9"
        );
    }
}
