//! Whether a path belongs in the index: the same hidden and ignore rules as the
//! initial walk, applied to single paths that the watcher reports.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::walk::Rules;

const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];

/// ferret's own temporary files (atomic writes): never indexed, never journalled.
pub(crate) const OWN_TEMP_PREFIX: &[u8] = b".ferret-tmp-";

/// Parsed ignore files per folder (relative to the root), filled on demand.
#[derive(Default)]
pub(crate) struct IgnoreCache {
    folders: HashMap<Vec<u8>, Option<Gitignore>>,
}

pub(crate) fn is_ignore_file(name: &[u8]) -> bool {
    IGNORE_FILES.iter().any(|f| f.as_bytes() == name)
}

impl IgnoreCache {
    pub fn clear(&mut self) {
        self.folders.clear();
    }

    fn rules_of(&mut self, walk_root: &Path, folder: &[u8]) -> Option<&Gitignore> {
        self.folders
            .entry(folder.to_vec())
            .or_insert_with(|| {
                let dir = if folder.is_empty() {
                    walk_root.to_path_buf()
                } else {
                    walk_root.join(bytes_to_path(folder))
                };
                let mut builder = GitignoreBuilder::new(&dir);
                let mut found = false;
                let mut files: Vec<PathBuf> = IGNORE_FILES.iter().map(|f| dir.join(f)).collect();
                if folder.is_empty() {
                    files.push(dir.join(".git/info/exclude"));
                }
                for f in files {
                    if f.is_file() && builder.add(&f).is_none() {
                        found = true;
                    }
                }
                if found { builder.build().ok() } else { None }
            })
            .as_ref()
    }

    /// Whether `rel` (below the root; `is_dir` for folders) is left out of the index.
    pub fn excluded(&mut self, walk_root: &Path, rules: Rules, rel: &[u8], is_dir: bool) -> bool {
        let parts: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty())
            .collect();
        if parts.last().is_some_and(|p| p.starts_with(OWN_TEMP_PREFIX)) {
            return true;
        }
        if !rules.hidden && parts.iter().any(|p| p.starts_with(b".")) {
            return true;
        }
        if rules.no_ignore {
            return false;
        }
        // Each prefix folder may itself be ignored; then everything below it is.
        for depth in 1..=parts.len() {
            let path = parts[..depth].join(&b'/');
            let this_is_dir = depth < parts.len() || is_dir;
            let mut verdict = None;
            for level in (0..depth).rev() {
                let folder = parts[..level].join(&b'/');
                if let Some(gi) = self.rules_of(walk_root, &folder) {
                    let below = &path[if folder.is_empty() {
                        0
                    } else {
                        folder.len() + 1
                    }..];
                    let m = gi.matched(bytes_to_path(below), this_is_dir);
                    if m.is_ignore() {
                        verdict = Some(true);
                        break;
                    }
                    if m.is_whitelist() {
                        verdict = Some(false);
                        break;
                    }
                }
            }
            if verdict == Some(true) {
                return true;
            }
        }
        false
    }
}

pub(crate) fn bytes_to_path(b: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_ignored_paths_are_excluded() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(".gitignore"), "*.log\ntarget/\n!keep.log\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub/.gitignore"), "secret*\n").unwrap();
        let mut c = IgnoreCache::default();
        let r = Rules::default();
        let root = tmp.path();
        assert!(c.excluded(root, r, b"a.log", false));
        assert!(!c.excluded(root, r, b"keep.log", false));
        assert!(c.excluded(root, r, b"target/debug/x", false));
        assert!(c.excluded(root, r, b"target", true));
        assert!(!c.excluded(root, r, b"src/main.rs", false));
        assert!(c.excluded(root, r, b"sub/secret.txt", false));
        assert!(!c.excluded(root, r, b"secret.txt", false));
        assert!(c.excluded(root, r, b".hidden/x", false));
        let all = Rules {
            hidden: true,
            no_ignore: true,
        };
        assert!(!c.excluded(root, all, b".hidden/a.log", false));
        assert!(c.excluded(root, all, b"src/.ferret-tmp-1a2b", false));
    }
}
