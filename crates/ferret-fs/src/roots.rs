//! The folders an operator serves, each held as a cap-std directory handle.
//!
//! Every file-system call of ferret goes through [`Root::dir`]: on Linux cap-std
//! resolves paths with `openat2(RESOLVE_BENEATH)`, so `..`, absolute symlinks and
//! symlinks that climb out fail in the kernel, whatever the string looked like.

use std::{
    fmt, io,
    path::{Path, PathBuf},
};

use cap_std::{
    ambient_authority,
    fs::{Dir, File, Metadata},
};

use crate::{
    Policy, RootSpec,
    error::{FsError, FsResult},
    path::RelPath,
};

/// One served folder.
pub struct Root {
    pub name: String,
    /// The canonical absolute path, as shown to operators.
    pub path: PathBuf,
    /// The path as the operator gave it (made absolute), also accepted from agents.
    pub(crate) given: PathBuf,
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

impl OpenedFile {
    /// When its contents last changed and when its status last changed (a
    /// write, `utime`, `chmod`: a time no caller can set back), in whole
    /// Unix seconds as `stat` gives them.
    pub fn modified_and_changed(&self) -> (i64, i64) {
        use cap_std::fs::MetadataExt;
        (self.metadata.mtime(), self.metadata.ctime())
    }
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
    /// No root at all: what a server serves before its client has named its
    /// folders (or when it named none). Every path is outside it.
    pub fn none(policy: Policy) -> Roots {
        Roots {
            roots: Vec::new(),
            policy,
            documents: None,
        }
    }

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
            // One folder served twice (a root inside another, or the same
            // one under two names): the kernel's watcher gives a folder one
            // watch, so one of its two copies in the index would go deaf
            // and answer stale, grep included.
            if let Some(other) = roots
                .iter()
                .find(|r| canonical.starts_with(&r.path) || r.path.starts_with(&canonical))
            {
                let (inner, outer) = if canonical.starts_with(&other.path) {
                    ((&name, &canonical), (&other.name, &other.path))
                } else {
                    ((&other.name, &other.path), (&name, &canonical))
                };
                return Err(RootError(format!(
                    "root `{}` ({}) lies inside root `{}` ({}), so its files would be indexed and watched twice and one copy would miss changes; serve only one of them (the outer one serves the inner one's files under `{}/…`)",
                    inner.0,
                    inner.1.display(),
                    outer.0,
                    outer.1.display(),
                    outer.0,
                )));
            }
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

    pub fn root_names(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Refuse sensitive files by the name asked for and by the name they resolve to.
    pub fn check_not_sensitive(&self, rel: &RelPath, real: &RelPath, shown: &str) -> FsResult<()> {
        if self.policy.deny.is_sensitive(rel) || self.policy.deny.is_sensitive(real) {
            return Err(FsError::denied(shown));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Policy, RootSpec};

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

    #[test]
    fn a_folder_is_served_once_not_inside_another_root_or_under_two_names() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("outer/inner")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outer2")).unwrap();
        let spec = |s: String| -> RootSpec { s.parse().unwrap() };
        let at = |p: &str| tmp.path().join(p).display().to_string();
        for specs in [
            vec![spec(at("outer")), spec(at("outer/inner"))],
            vec![spec(at("outer/inner")), spec(at("outer"))],
        ] {
            let err = Roots::open(&specs, Policy::default()).unwrap_err();
            assert!(
                err.0.contains("root `inner`")
                    && err.0.contains("lies inside root `outer`")
                    && err.0.contains("serve only one of them"),
                "{err}"
            );
        }
        let twice = [
            spec(format!("x={}", at("outer"))),
            spec(format!("y={}", at("outer/"))),
        ];
        assert!(
            Roots::open(&twice, Policy::default())
                .unwrap_err()
                .0
                .contains("lies inside")
        );
        // A name that merely starts alike is another folder.
        assert!(Roots::open(&[spec(at("outer")), spec(at("outer2"))], Policy::default()).is_ok());
    }
}
