//! Which entries belong in the index: hidden entries, `.gitignore` / `.ignore`
//! rules, and ferret's own temporary files.
//!
//! Ignore files are read through the descriptor of their folder, opened
//! `O_NOFOLLOW | O_NONBLOCK` and used only when `fstat` says they are regular
//! files of a sane size: a FIFO or a symlink named `.gitignore` is skipped, never
//! waited on or followed. Patterns are matched with the `ignore` crate's
//! `Gitignore`, one matcher per folder that has ignore files; a folder's rules
//! are the chain of matchers from the root down to it, the nearest deciding.

use std::{
    collections::HashMap,
    io::Read,
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::Arc,
};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{Mode, OFlags, ResolveFlags};

use crate::dirs::open_below;

/// Which entries an index holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// Index hidden (dot) entries too.
    pub hidden: bool,
    /// Ignore `.gitignore` / `.ignore` rules.
    pub no_ignore: bool,
}

/// The ignore files a folder may hold, lowest precedence first.
pub(crate) const IGNORE_FILES: &[&[u8]] = &[b".gitignore", b".ignore"];

/// ferret's own temporary files (atomic writes): never indexed, never journalled.
pub(crate) const OWN_TEMP_PREFIX: &[u8] = b".ferret-tmp-";

/// Ignore files larger than this are not read (no real one comes close).
const MAX_IGNORE_FILE: u64 = 1 << 20;

pub(crate) fn is_ignore_file(name: &[u8]) -> bool {
    IGNORE_FILES.contains(&name)
}

/// Reads a small regular file below `dir` without following a symlink and
/// without blocking: `None` for anything else (a FIFO, a device, a folder, a
/// link, a file too large) or on any error.
pub(crate) fn read_small_file(dir: BorrowedFd<'_>, rel: &[u8]) -> Option<String> {
    let fd: OwnedFd = rustix::fs::openat2(
        dir,
        rel,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    let regular =
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile;
    if !regular || st.st_size as u64 > MAX_IGNORE_FILE {
        return None;
    }
    let mut text = String::new();
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_IGNORE_FILE)
        .read_to_end(&mut bytes)
        .ok()?;
    text.push_str(&String::from_utf8_lossy(&bytes));
    Some(text)
}

/// The matcher of one folder's ignore files (and, at a root, `.git/info/exclude`),
/// or `None` when it has none. `present` says which of [`IGNORE_FILES`] the
/// folder's listing holds, so that folders without them cost no system call.
pub(crate) fn folder_rules(
    dir: BorrowedFd<'_>,
    at_root: bool,
    present: [bool; 2],
) -> Option<Gitignore> {
    let mut sources: Vec<String> = Vec::new();
    if at_root && let Some(t) = read_small_file(dir, b".git/info/exclude") {
        sources.push(t);
    }
    for (file, here) in IGNORE_FILES.iter().zip(present) {
        if here && let Some(t) = read_small_file(dir, file) {
            sources.push(t);
        }
    }
    if sources.is_empty() {
        return None;
    }
    // Paths are matched relative to this folder: the builder's root is never
    // stripped from them.
    let mut builder = GitignoreBuilder::new("");
    for text in &sources {
        for line in text.lines() {
            let _ = builder.add_line(None, line);
        }
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

/// A folder's rules: its own matcher and its parent's chain.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    parent: Option<Arc<Chain>>,
    /// This folder's matcher and its path below the walked root.
    here: Option<(Gitignore, Vec<u8>)>,
}

impl Chain {
    /// The chain for a folder below `parent`'s folder.
    pub fn child(parent: &Arc<Chain>, rel: &[u8], rules: Option<Gitignore>) -> Arc<Chain> {
        match rules {
            None => parent.clone(),
            Some(g) => Arc::new(Chain {
                parent: Some(parent.clone()),
                here: Some((g, rel.to_vec())),
            }),
        }
    }

    pub fn root(rules: Option<Gitignore>) -> Arc<Chain> {
        Arc::new(Chain {
            parent: None,
            here: rules.map(|g| (g, Vec::new())),
        })
    }

    /// Whether `rel` (below the walked root) is ignored; the nearest folder's
    /// rules decide, a whitelist (`!pattern`) included.
    pub fn ignored(&self, rel: &[u8], is_dir: bool) -> bool {
        let mut level = Some(self);
        while let Some(c) = level {
            if let Some((g, at)) = &c.here {
                let below = if at.is_empty() {
                    rel
                } else {
                    &rel[(at.len() + 1).min(rel.len())..]
                };
                let m = g.matched(bytes_to_path(below), is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
            level = c.parent.as_deref();
        }
        false
    }
}

/// Whether a name is left out whatever the ignore files say.
pub(crate) fn excluded_name(rules: Rules, name: &[u8]) -> bool {
    name.starts_with(OWN_TEMP_PREFIX) || (!rules.hidden && name.first() == Some(&b'.'))
}

/// Rules for single paths, as the watcher reports them: the chains of the
/// folders met so far, read through the root's descriptor.
#[derive(Default)]
pub(crate) struct IgnoreCache {
    chains: HashMap<Vec<u8>, Arc<Chain>>,
}

impl IgnoreCache {
    pub fn clear(&mut self) {
        self.chains.clear();
    }

    /// The chain of the folder `rel` (below the root).
    pub fn chain_of(&mut self, root: BorrowedFd<'_>, rel: &[u8]) -> Arc<Chain> {
        if let Some(c) = self.chains.get(rel) {
            return c.clone();
        }
        let chain = if rel.is_empty() {
            Chain::root(rules_of(root, true))
        } else {
            let parent_rel = match memchr::memrchr(b'/', rel) {
                Some(i) => &rel[..i],
                None => &rel[..0],
            };
            let parent = self.chain_of(root, parent_rel);
            let rules = open_below(root, rel)
                .ok()
                .and_then(|fd| rules_of(fd.as_fd(), false));
            Chain::child(&parent, rel, rules)
        };
        self.chains.insert(rel.to_vec(), chain.clone());
        chain
    }

    /// Whether `rel` (below the root; `is_dir` for folders) is left out of the
    /// index: hidden, ferret's own, or ignored (itself or a folder above it).
    pub fn excluded(
        &mut self,
        root: BorrowedFd<'_>,
        rules: Rules,
        rel: &[u8],
        is_dir: bool,
    ) -> bool {
        let parts: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty())
            .collect();
        if parts.iter().any(|p| excluded_name(rules, p)) {
            return true;
        }
        if rules.no_ignore {
            return false;
        }
        let mut at: usize = 0;
        for (depth, part) in parts.iter().enumerate() {
            let folder = &rel[..at.saturating_sub(1)];
            let this = &rel[..at + part.len()];
            let this_is_dir = depth + 1 < parts.len() || is_dir;
            if self.chain_of(root, folder).ignored(this, this_is_dir) {
                return true;
            }
            at += part.len() + 1;
        }
        false
    }
}

/// A folder's own rules, looking for its ignore files directly.
fn rules_of(dir: BorrowedFd<'_>, at_root: bool) -> Option<Gitignore> {
    let present = [true, true];
    folder_rules(dir, at_root, present)
}

pub(crate) fn bytes_to_path(b: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(p: &std::path::Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    #[test]
    fn hidden_and_ignored_paths_are_excluded() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(".gitignore"), "*.log\ntarget/\n!keep.log\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub/.gitignore"), "secret*\n").unwrap();
        let root = open(tmp.path());
        let mut c = IgnoreCache::default();
        let r = Rules::default();
        let fd = root.as_fd();
        assert!(c.excluded(fd, r, b"a.log", false));
        assert!(!c.excluded(fd, r, b"keep.log", false));
        assert!(c.excluded(fd, r, b"target/debug/x", false));
        assert!(c.excluded(fd, r, b"target", true));
        assert!(!c.excluded(fd, r, b"src/main.rs", false));
        assert!(c.excluded(fd, r, b"sub/secret.txt", false));
        assert!(!c.excluded(fd, r, b"secret.txt", false));
        assert!(c.excluded(fd, r, b".hidden/x", false));
        let all = Rules {
            hidden: true,
            no_ignore: true,
        };
        assert!(!c.excluded(fd, all, b".hidden/a.log", false));
        assert!(c.excluded(fd, all, b"src/.ferret-tmp-1a2b", false));
    }

    #[test]
    fn a_fifo_or_a_link_named_gitignore_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            tmp.path().join(".gitignore"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        std::fs::write(tmp.path().join("real"), "*.txt\n").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), tmp.path().join(".ignore")).unwrap();
        let root = open(tmp.path());
        // Returns at once (a blocking open of a FIFO would hang here).
        assert!(folder_rules(root.as_fd(), true, [true, true]).is_none());
    }
}
