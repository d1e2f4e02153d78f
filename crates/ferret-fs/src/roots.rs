//! The folders an operator serves, each held as a cap-std directory handle.
//!
//! Every file-system call of ferret goes through [`Root::dir`]: on Linux cap-std
//! resolves paths with `openat2(RESOLVE_BENEATH)`, so `..`, absolute symlinks and
//! symlinks that climb out fail in the kernel, whatever the string looked like.

use std::{
    fmt, io,
    path::{Path, PathBuf},
    time::SystemTime,
};

use cap_std::{
    ambient_authority,
    fs::{Dir, File, Metadata},
};

use crate::{
    deny::Denylist,
    error::{ErrorCode, FsError, FsResult},
    path::{self, Refusal, RelPath, Requested},
};

/// How an operator named a root on the command line: `[NAME=]DIR[:rw]`; the
/// `:rw` suffix makes it writable (`:ro`, the default, keeps it read-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSpec {
    pub name: Option<String>,
    pub path: PathBuf,
    pub writable: bool,
}

impl std::str::FromStr for RootSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (s, writable) = if let Some(rest) = s.strip_suffix(":rw") {
            (rest, true)
        } else {
            (s.strip_suffix(":ro").unwrap_or(s), false)
        };
        if s.is_empty() {
            return Err("a root cannot be empty; give a folder, e.g. --root ~/notes".into());
        }
        let (name, dir) = match s.split_once('=') {
            Some((name, dir)) if !name.is_empty() && !name.contains('/') => {
                (Some(name.trim().to_string()), dir)
            }
            _ => (None, s),
        };
        if let Some(name) = &name
            && (name == "." || name == ".." || name.contains('\\'))
        {
            return Err(format!(
                "root name `{name}` is not allowed; use letters, digits, `-` or `_`, e.g. --root notes=~/notes"
            ));
        }
        Ok(RootSpec {
            name,
            path: expand_home(dir),
            writable,
        })
    }
}

fn expand_home(dir: &str) -> PathBuf {
    match (dir.strip_prefix("~"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(dir),
    }
}

/// Limits that keep every answer bounded.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Files larger than this are never loaded whole: `read` streams the window
    /// asked for (its lines counted in a streaming pass, its checksum only when
    /// asked for; a tail is read from the end), `stat` skips content facts.
    pub max_file_bytes: u64,
    /// Payload budget of one answer (the text of a `read` window, a page of `list`).
    pub max_response_bytes: usize,
    /// Lines longer than this many characters are clipped in `read` (and reported).
    pub max_line_chars: usize,
    /// Images larger than this are refused rather than sent as image content.
    pub max_image_bytes: u64,
    /// A `list` walk stops after this many entries (and says so).
    pub max_walk_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 10 * 1024 * 1024,
            max_response_bytes: 128 * 1024,
            max_line_chars: 2000,
            max_image_bytes: 5 * 1024 * 1024,
            max_walk_entries: 100_000,
        }
    }
}

/// Rules that apply to every root.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Show hidden entries by default (each call may still choose).
    pub hidden: bool,
    /// Ignore `.gitignore`/`.ignore` rules by default (each call may still choose).
    pub no_ignore: bool,
    pub deny: Denylist,
    pub limits: Limits,
}

/// One served folder.
pub struct Root {
    pub name: String,
    /// The canonical absolute path, as shown to operators.
    pub path: PathBuf,
    /// The path as the operator gave it (made absolute), also accepted from agents.
    given: PathBuf,
    pub writable: bool,
    dir: Dir,
}

impl fmt::Debug for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Root")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("writable", &self.writable)
            .finish()
    }
}

impl Root {
    /// The handle every file-system call goes through.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// A path that names the open handle itself (`/proc/self/fd/N`), for tools that
    /// can only take paths (the index's walker and watcher): it keeps pointing at
    /// the folder opened at start even if the root's path is later swapped for a
    /// symlink. Falls back to the canonical path where `/proc` is missing.
    pub fn handle_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        // The trailing `/` makes walkers that never follow symlinks enter it.
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}/", self.dir.as_raw_fd()));
        if proc_path.is_dir() {
            proc_path
        } else {
            self.path.clone()
        }
    }
}

/// Why the roots could not be opened; the message names the root and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootError(pub String);

impl fmt::Display for RootError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RootError {}

/// What a requested path points at.
#[derive(Debug)]
pub enum Target<'a> {
    /// `.` with several roots: a virtual folder whose entries are the roots.
    AllRoots,
    In(&'a Root, RelPath),
}

/// A regular file opened for reading, with what was learnt on the way.
pub struct OpenedFile {
    pub file: File,
    pub metadata: Metadata,
    /// The path after symlinks inside the root were resolved.
    pub real: RelPath,
}

/// All served roots and the rules that apply to them.
pub struct Roots {
    roots: Vec<Root>,
    pub policy: Policy,
    /// Reads documents (PDF, Office, …) as text; `None`: they are binary.
    pub(crate) documents: Option<std::sync::Arc<ferret_docs::Documents>>,
}

impl fmt::Debug for Roots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Roots")
            .field("roots", &self.roots)
            .field("policy", &self.policy)
            .field("documents", &self.documents.is_some())
            .finish()
    }
}

impl Roots {
    /// Open every root, refusing duplicates and folders that are missing or unreadable.
    pub fn open(specs: &[RootSpec], policy: Policy) -> Result<Roots, RootError> {
        if specs.is_empty() {
            return Err(RootError(
                "no root given: name at least one folder, e.g. `ferret serve --root ~/projects` (or FERRET_ROOTS)".into(),
            ));
        }
        let mut roots: Vec<Root> = Vec::with_capacity(specs.len());
        for spec in specs {
            let shown = spec.path.display();
            let absolute = std::path::absolute(&spec.path).map_err(|e| {
                RootError(format!(
                    "root `{shown}`: cannot make the path absolute: {e}"
                ))
            })?;
            let canonical = std::fs::canonicalize(&absolute).map_err(|e| {
                RootError(match e.kind() {
                    io::ErrorKind::NotFound => format!(
                        "root `{shown}` does not exist; create it or correct --root (FERRET_ROOTS)"
                    ),
                    _ => format!(
                        "root `{shown}` cannot be resolved: {e}; check the path and its permissions"
                    ),
                })
            })?;
            if !canonical.is_dir() {
                return Err(RootError(format!(
                    "root `{shown}` is not a folder; give the folder that contains it (--root {})",
                    canonical.parent().unwrap_or(Path::new("/")).display()
                )));
            }
            let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(|e| {
                RootError(format!(
                    "root `{shown}` cannot be opened: {e}; give the account running ferret read and execute permission on it"
                ))
            })?;
            if let Err(e) = dir.entries() {
                return Err(RootError(format!(
                    "root `{shown}` cannot be read: {e}; give the account running ferret read permission (chmod u+rx)"
                )));
            }
            let name = match &spec.name {
                Some(n) => n.clone(),
                None => canonical
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "root".into()),
            };
            if let Some(other) = roots.iter().find(|r| r.name == name) {
                return Err(RootError(format!(
                    "two roots are named `{name}` ({} and {}); name them apart, e.g. --root {name}2={}",
                    other.path.display(),
                    canonical.display(),
                    spec.path.display()
                )));
            }
            roots.push(Root {
                name,
                path: canonical,
                given: absolute,
                writable: spec.writable,
                dir,
            });
        }
        Ok(Roots {
            roots,
            policy,
            documents: None,
        })
    }

    /// Read documents as text with `documents` (its extraction and cache).
    pub fn with_documents(mut self, documents: std::sync::Arc<ferret_docs::Documents>) -> Roots {
        self.documents = Some(documents);
        self
    }

    pub fn documents(&self) -> Option<&std::sync::Arc<ferret_docs::Documents>> {
        self.documents.as_ref()
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    pub fn is_multi(&self) -> bool {
        self.roots.len() > 1
    }

    /// The path shown to agents for `rel` under `root`: relative to the root with
    /// one root, prefixed by the root's name with several; always with `/`.
    pub fn display(&self, root: &Root, rel: &RelPath) -> String {
        match (self.is_multi(), rel.is_root()) {
            (false, true) => ".".into(),
            (false, false) => rel.as_str().into(),
            (true, true) => root.name.clone(),
            (true, false) => format!("{}/{}", root.name, rel.as_str()),
        }
    }

    /// Turn what an agent typed into a root and a relative path, or refuse it
    /// before any file-system call.
    pub fn resolve(&self, input: &str) -> FsResult<Target<'_>> {
        let shown = input.trim();
        let requested = path::normalize(input).map_err(|refusal| match refusal {
            Refusal::NulByte => {
                FsError::outside(&shown.replace('\0', "\\0")).hint("paths cannot contain NUL bytes")
            }
            Refusal::ParentComponent => FsError::outside(shown)
                .hint("`..` is never accepted; give the path from the root, e.g. `src/main.rs`"),
            Refusal::WindowsPath => FsError::outside(shown).hint(
                "drive letters and UNC paths do not exist here; use a path relative to a root",
            ),
        })?;
        match requested {
            Requested::Relative(parts) => self.resolve_relative(&parts, shown),
            Requested::Absolute(parts) => self.resolve_absolute(&parts, shown),
        }
    }

    fn resolve_relative(&self, parts: &[String], shown: &str) -> FsResult<Target<'_>> {
        if !self.is_multi() {
            let rel = RelPath::from_components(parts.iter().map(String::as_str));
            return Ok(Target::In(&self.roots[0], rel));
        }
        let Some((first, rest)) = parts.split_first() else {
            return Ok(Target::AllRoots);
        };
        match self.roots.iter().find(|r| &r.name == first) {
            Some(root) => Ok(Target::In(
                root,
                RelPath::from_components(rest.iter().map(String::as_str)),
            )),
            None => Err(FsError::not_found(shown).hint(format!(
                "with several roots a path starts with a root name: {}",
                self.root_names()
            ))),
        }
    }

    fn resolve_absolute(&self, parts: &[String], shown: &str) -> FsResult<Target<'_>> {
        let mut best: Option<(&Root, &[String])> = None;
        for root in &self.roots {
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
                self.roots
                    .iter()
                    .map(|r| r.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    pub fn root_names(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Resolve symlinks inside the root; a link that leads out is `PATH_OUTSIDE_ROOT`,
    /// a dangling one `NOT_FOUND`.
    pub fn real_path(&self, root: &Root, rel: &RelPath, shown: &str) -> FsResult<RelPath> {
        self.resolve_links(root, rel.as_os_path(), shown)
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
    pub fn resolve_links(&self, root: &Root, path: &Path, shown: &str) -> FsResult<RelPath> {
        const MAX_HOPS: usize = 40;
        let mut done: Vec<String> = Vec::new();
        let mut todo: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        for c in path.components() {
            match c {
                std::path::Component::Normal(s) => {
                    todo.push_back(s.to_str().ok_or_else(|| not_utf8(shown))?.to_string())
                }
                std::path::Component::CurDir => {}
                _ => return Err(FsError::outside(shown)),
            }
        }
        let mut hops = 0;
        while let Some(part) = todo.pop_front() {
            if part == "." {
                continue;
            }
            if part == ".." {
                if done.pop().is_none() {
                    return Err(FsError::outside(shown));
                }
                continue;
            }
            done.push(part);
            let candidate = done.join("/");
            let meta = root
                .dir
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
                .dir
                .read_link_contents(&candidate)
                .map_err(|e| FsError::from_io(&e, shown))?;
            let mut parts: Vec<String> = Vec::new();
            if target.is_absolute() {
                parts =
                    target_parts_from_root(&target, root).ok_or_else(|| FsError::outside(shown))?;
                done.clear();
            } else {
                for c in target.components() {
                    match c {
                        std::path::Component::Normal(s) => {
                            parts.push(s.to_str().ok_or_else(|| not_utf8(shown))?.to_string())
                        }
                        std::path::Component::ParentDir => parts.push("..".into()),
                        _ => {}
                    }
                }
            }
            for p in parts.into_iter().rev() {
                todo.push_front(p);
            }
        }
        Ok(RelPath::from_components(done.iter().map(String::as_str)))
    }

    /// Refuse sensitive files by the name asked for and by the name they resolve to.
    pub fn check_not_sensitive(&self, rel: &RelPath, real: &RelPath, shown: &str) -> FsResult<()> {
        if self.policy.deny.is_sensitive(rel) || self.policy.deny.is_sensitive(real) {
            return Err(FsError::denied(shown));
        }
        Ok(())
    }

    /// Open a regular file for its content: confined, not sensitive, not a folder,
    /// not a device or FIFO. The sensitivity check happens before the open; the
    /// open is [`crate::open::file`]'s (no symlink followed, non-blocking, the
    /// metadata from `fstat`).
    ///
    /// The common case is one `openat2` of the path as asked, which succeeds only
    /// when no component is a symlink (so the name checked is the file's real
    /// name). Otherwise the links are resolved inside the root one by one, the
    /// real name is checked too, and the real path is opened the same way: a
    /// component swapped for a symlink in between makes the open fail.
    pub fn open_for_content(
        &self,
        root: &Root,
        rel: &RelPath,
        shown: &str,
    ) -> FsResult<OpenedFile> {
        if self.policy.deny.is_sensitive(rel) {
            return Err(FsError::denied(shown));
        }
        let opened = |real: RelPath| match crate::open::file(&root.dir, real.as_os_path()) {
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
        let real = self.real_path(root, rel, shown)?;
        self.check_not_sensitive(rel, &real, shown)?;
        opened(real).map_err(|e| FsError::from_io(&e, shown))
    }
}

fn not_utf8(shown: &str) -> FsError {
    FsError::new(
        ErrorCode::IoError,
        format!("`{shown}` goes through a name that is not valid UTF-8"),
    )
}

/// The components of an absolute symlink target below the root, keeping `..` so
/// that the resolver applies them physically. `None` when it starts elsewhere.
fn target_parts_from_root(target: &Path, root: &Root) -> Option<Vec<String>> {
    for base in [&root.path, &root.given] {
        if let Ok(rest) = target.strip_prefix(base) {
            return rest
                .components()
                .map(|c| match c {
                    std::path::Component::Normal(s) => s.to_str().map(str::to_string),
                    std::path::Component::ParentDir => Some("..".into()),
                    _ => Some(".".into()),
                })
                .collect();
        }
    }
    None
}

/// `file`, `dir`, `symlink` or `other`, as the contract names kinds.
pub fn kind_name(file_type: cap_std::fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// RFC 3339 in UTC, to the second.
pub fn rfc3339(time: io::Result<cap_std::time::SystemTime>) -> Option<String> {
    let time: SystemTime = time.ok()?.into_std();
    Some(
        chrono::DateTime::<chrono::Utc>::from(time)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn specs_parse_names_and_home() {
        let s: RootSpec = "docs=/srv/docs".parse().unwrap();
        assert_eq!(s.name.as_deref(), Some("docs"));
        assert_eq!(s.path, PathBuf::from("/srv/docs"));
        let s: RootSpec = "/srv/a=b".parse().unwrap();
        assert_eq!(s.name, None, "a `=` after a slash belongs to the path");
        assert!("".parse::<RootSpec>().is_err());
        assert!("..=/x".parse::<RootSpec>().is_err());
        let s: RootSpec = "code=/srv/code:rw".parse().unwrap();
        assert_eq!((s.name.as_deref(), s.writable), (Some("code"), true));
        assert_eq!(s.path, PathBuf::from("/srv/code"));
        let s: RootSpec = "/srv/docs:ro".parse().unwrap();
        assert_eq!((s.path, s.writable), (PathBuf::from("/srv/docs"), false));
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

    #[test]
    fn bad_roots_are_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let missing: RootSpec = tmp
            .path()
            .join("missing")
            .display()
            .to_string()
            .parse()
            .unwrap();
        let err = Roots::open(&[missing], Policy::default()).unwrap_err();
        assert!(err.0.contains("does not exist"), "{err}");
        let file = tmp.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let spec: RootSpec = file.display().to_string().parse().unwrap();
        assert!(
            Roots::open(&[spec], Policy::default())
                .unwrap_err()
                .0
                .contains("not a folder")
        );
        std::fs::create_dir_all(tmp.path().join("a/same")).unwrap();
        std::fs::create_dir_all(tmp.path().join("b/same")).unwrap();
        let specs: Vec<RootSpec> = ["a/same", "b/same"]
            .iter()
            .map(|p| tmp.path().join(p).display().to_string().parse().unwrap())
            .collect();
        let err = Roots::open(&specs, Policy::default()).unwrap_err();
        assert!(err.0.contains("two roots are named `same`"), "{err}");
        assert!(Roots::open(&[], Policy::default()).is_err());
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;
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
}
