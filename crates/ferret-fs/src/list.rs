//! `list`: what a folder holds, to some depth, with `.gitignore` and hidden rules.
//!
//! The walk is ours rather than `ignore::Walk` because `ignore` opens ambient
//! absolute paths, and every file-system call here must go through the root's
//! handle. The ignore *rules* are the `ignore` crate's own (`gitignore` module).

use std::{
    cmp::Ordering,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    sync::Arc,
};

use cap_std::fs::Dir;
use globset::{GlobBuilder, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::{Kind, kind_of, rfc3339},
    roots::{Root, Roots, Target},
};

const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];
/// An ignore file larger than this is not a real one; skip it.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindFilter {
    Any,
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Path,
    Name,
    Size,
    Modified,
    Kind,
}

#[derive(Debug, Clone)]
pub struct ListRequest {
    pub depth: u32,
    pub glob: Option<String>,
    pub kind: KindFilter,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    /// `None`: the server's default.
    pub hidden: Option<bool>,
    /// `None`: the server's default.
    pub ignored: Option<bool>,
    /// Ticked once per entry walked; the walk stops when it is cancelled.
    pub meter: Option<std::sync::Arc<crate::Meter>>,
}

impl Default for ListRequest {
    fn default() -> Self {
        ListRequest {
            depth: 1,
            glob: None,
            kind: KindFilter::Any,
            sort: SortKey::Path,
            descending: false,
            offset: 0,
            limit: 500,
            hidden: None,
            ignored: None,
            meter: None,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ListEntry {
    pub path: String,
    pub kind: Kind,
    pub size: Option<u64>,
    pub modified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<u64>,
    /// The entry's own name (the last component of `path`).
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    modified_key: Option<std::time::SystemTime>,
    #[serde(skip)]
    location: Option<(usize, PathBuf)>,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Skipped {
    pub hidden: u64,
    pub ignored: u64,
    /// Symlinks that lead outside the root: never listed.
    pub outside_root: u64,
    pub unreadable: u64,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Counts {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
}

#[derive(Debug)]
pub struct ListOutcome {
    pub path: String,
    pub entries: Vec<ListEntry>,
    pub total: u64,
    pub truncated: bool,
    pub next_offset: Option<usize>,
    /// The walk stopped at the entry limit: `total` and `counts` are lower bounds.
    pub walk_capped: bool,
    pub counts: Counts,
    pub skipped: Skipped,
    pub summary: String,
}

/// Ignore rules found in one folder, with the folder they apply from.
struct IgnoreLevel {
    base: PathBuf,
    rules: Gitignore,
}

struct Walk<'a> {
    roots: &'a Roots,
    request: &'a ListRequest,
    glob: Option<GlobMatcher>,
    hidden: bool,
    ignored: bool,
    entries: Vec<ListEntry>,
    skipped: Skipped,
    capped: bool,
}

/// Check a `glob` argument before any walk.
pub fn validate_glob(pattern: &str) -> Result<(), String> {
    GlobBuilder::new(pattern)
        .build()
        .map(|_| ())
        .map_err(|e| e.kind().to_string())
}

pub(crate) fn list(roots: &Roots, input: &str, request: &ListRequest) -> FsResult<ListOutcome> {
    let shown = input.trim();
    let glob = match &request.glob {
        Some(g) => Some(
            GlobBuilder::new(g)
                .literal_separator(g.contains('/'))
                .build()
                .map_err(|e| {
                    FsError::new(ErrorCode::IoError, format!("glob `{g}` is invalid: {e}"))
                })?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut walk = Walk {
        roots,
        request,
        glob,
        hidden: request.hidden.unwrap_or(roots.policy.hidden),
        ignored: request.ignored.unwrap_or(roots.policy.no_ignore),
        entries: Vec::new(),
        skipped: Skipped::default(),
        capped: false,
    };
    let path = match roots.resolve(input)? {
        Target::AllRoots => {
            for (index, root) in roots.roots().iter().enumerate() {
                walk.add_root_entry(index, root);
                if request.depth > 1 {
                    let levels = walk.ignore_levels_down_to(root, Path::new(""));
                    walk.visit(index, root, Path::new(""), PathBuf::new(), 2, levels);
                }
            }
            ".".to_string()
        }
        Target::In(root, rel) => {
            let real = roots.real_path(root, &rel, shown)?;
            let meta = root
                .dir()
                .metadata(real.as_os_path())
                .map_err(|e| FsError::from_io(&e, shown))?;
            if !meta.is_dir() {
                return Err(FsError::new(
                    ErrorCode::NotDirectory,
                    format!("`{shown}` is a file, not a folder"),
                )
                .hint("call `read` to see its content, `stat` for its metadata")
                .suggest("read"));
            }
            let index = roots
                .roots()
                .iter()
                .position(|r| std::ptr::eq(r, root))
                .unwrap_or(0);
            let start = real.as_os_path().to_path_buf();
            let start = if real.is_root() {
                PathBuf::new()
            } else {
                start
            };
            // A folder this account may not read is an error, not an empty list.
            crate::open::folder(root.dir(), &start).map_err(|e| FsError::from_io(&e, shown))?;
            let levels = walk.ignore_levels_down_to(root, &start);
            // Shown paths keep the spelling asked for, even through an in-root symlink.
            let shown_base = if rel.is_root() {
                PathBuf::new()
            } else {
                PathBuf::from(rel.as_str())
            };
            walk.visit(index, root, &start, shown_base, 1, levels);
            roots.display(root, &rel)
        }
    };
    Ok(walk.finish(path))
}

impl Walk<'_> {
    fn add_root_entry(&mut self, index: usize, root: &Root) {
        let meta = root.dir().dir_metadata().ok();
        self.entries.push(ListEntry {
            path: root.name.clone(),
            kind: Kind::Dir,
            size: meta.as_ref().map(|m| m.len()),
            modified: meta.as_ref().and_then(|m| rfc3339(m.modified())),
            children: None,
            name: root.name.clone(),
            modified_key: meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .map(|t| t.into_std()),
            location: Some((index, PathBuf::new())),
        });
    }

    /// The ignore rules of every folder from the root down to `start` (inclusive).
    fn ignore_levels_down_to(&self, root: &Root, start: &Path) -> Vec<Arc<IgnoreLevel>> {
        if self.ignored {
            return Vec::new();
        }
        let mut levels = Vec::new();
        let mut here = PathBuf::new();
        // Each folder opened from the one above it, not by its whole path from
        // the root: a listing deep in a chain costs in proportion to its depth.
        let Ok(mut dir) = crate::open::folder(root.dir(), Path::new("")) else {
            return levels;
        };
        if let Some(level) = load_ignore_in(&dir, &here, true) {
            levels.push(Arc::new(level));
        }
        for part in start.components() {
            here.push(part);
            let Ok(next) = crate::open::folder(&dir, Path::new(part.as_os_str())) else {
                break;
            };
            dir = next;
            if let Some(level) = load_ignore_in(&dir, &here, false) {
                levels.push(Arc::new(level));
            }
        }
        levels
    }

    fn is_ignored(levels: &[Arc<IgnoreLevel>], path: &Path, is_dir: bool) -> bool {
        for level in levels.iter().rev() {
            let Ok(rel) = path.strip_prefix(&level.base) else {
                continue;
            };
            let m = level.rules.matched(rel, is_dir);
            if m.is_ignore() {
                return true;
            }
            if m.is_whitelist() {
                return false;
            }
        }
        false
    }

    /// Walk `dir` (a real path under `root`), showing children under `shown`.
    fn visit(
        &mut self,
        index: usize,
        root: &Root,
        dir: &Path,
        shown: PathBuf,
        level: u32,
        levels: Vec<Arc<IgnoreLevel>>,
    ) {
        let open = if dir.as_os_str().is_empty() {
            root.dir().entries()
        } else {
            root.dir().read_dir(dir)
        };
        let Ok(read_dir) = open else {
            self.skipped.unreadable += 1;
            return;
        };
        let mut subdirs = Vec::new();
        for entry in read_dir {
            if self.entries.len() >= self.roots.policy.limits.max_walk_entries {
                self.capped = true;
                return;
            }
            if let Some(meter) = &self.request.meter {
                if meter.cancelled() {
                    // Nobody waits for the answer any more.
                    self.capped = true;
                    meter.cut_short();
                    return;
                }
                meter.tick();
            }
            let Ok(entry) = entry else {
                self.skipped.unreadable += 1;
                continue;
            };
            let name_os = entry.file_name();
            // A name that is not UTF-8 escaped, so that its path reads back.
            let name = ferret_names::shown(name_os.as_bytes()).into_owned();
            let real = dir.join(&name_os);
            let Ok(file_type) = entry.file_type() else {
                self.skipped.unreadable += 1;
                continue;
            };
            if !self.hidden && name.starts_with('.') {
                self.skipped.hidden += 1;
                continue;
            }
            let is_dir = file_type.is_dir();
            if !self.ignored && Walk::is_ignored(&levels, &real, is_dir) {
                self.skipped.ignored += 1;
                continue;
            }
            let shown_path = shown.join(&name_os);
            let kind = kind_of(file_type);
            // An entry the kind or glob leaves out is not read further (no
            // stat, no strings): a glob over a folder of a million names
            // costs the names. Symlinks are matched after their target is
            // checked, so those leading outside the root are still counted.
            if !file_type.is_symlink() && !self.matches(kind, &name, &shown_path) {
                if is_dir && level < self.request.depth {
                    subdirs.push((real, shown_path));
                }
                continue;
            }
            // Symlinks are described by their target, which must stay inside the root.
            let meta = if file_type.is_symlink() {
                let target = self.roots.resolve_links(root, &real, &name).and_then(|t| {
                    root.dir()
                        .metadata(t.as_os_path())
                        .map_err(|e| FsError::from_io(&e, &name))
                });
                match target {
                    Ok(m) => Some(m),
                    Err(e) if e.code == ErrorCode::PathOutsideRoot => {
                        self.skipped.outside_root += 1;
                        continue;
                    }
                    Err(_) => None, // dangling or a loop: listed, without size
                }
            } else {
                entry.metadata().ok()
            };
            let rel_shown =
                ferret_names::shown_path(shown_path.as_os_str().as_bytes()).replace('\\', "/");
            let display = if self.roots.is_multi() {
                format!("{}/{}", root.name, rel_shown)
            } else {
                rel_shown
            };
            let entry = ListEntry {
                path: display,
                kind,
                size: meta.as_ref().filter(|m| !m.is_dir()).map(|m| m.len()),
                modified: meta.as_ref().and_then(|m| rfc3339(m.modified())),
                children: None,
                name,
                modified_key: meta
                    .as_ref()
                    .and_then(|m| m.modified().ok())
                    .map(|t| t.into_std()),
                location: is_dir.then(|| (index, real.clone())),
            };
            if self.matches(entry.kind, &entry.name, &shown_path) {
                self.entries.push(entry);
            }
            if is_dir && level < self.request.depth {
                subdirs.push((real, shown_path));
            }
        }
        for (real, shown_path) in subdirs {
            let mut child_levels = levels.clone();
            if let Some(l) = (!self.ignored)
                .then(|| load_ignore(root, &real, false))
                .flatten()
            {
                child_levels.push(Arc::new(l));
            }
            self.visit(index, root, &real, shown_path, level + 1, child_levels);
            if self.capped {
                return;
            }
        }
    }

    fn matches(&self, kind: Kind, name: &str, shown_path: &Path) -> bool {
        let kind_ok = match self.request.kind {
            KindFilter::Any => true,
            KindFilter::File => kind == Kind::File,
            KindFilter::Dir => kind == Kind::Dir,
            KindFilter::Symlink => kind == Kind::Symlink,
        };
        let glob_ok = match &self.glob {
            None => true,
            Some(g)
                if self
                    .request
                    .glob
                    .as_deref()
                    .is_some_and(|p| p.contains('/')) =>
            {
                g.is_match(shown_path)
            }
            Some(g) => g.is_match(name),
        };
        kind_ok && glob_ok
    }

    fn finish(mut self, path: String) -> ListOutcome {
        let mut counts = Counts::default();
        for e in &self.entries {
            match e.kind {
                Kind::File => counts.files += 1,
                Kind::Dir => counts.dirs += 1,
                Kind::Symlink => counts.symlinks += 1,
                _ => counts.other += 1,
            }
        }
        let sort = self.request.sort;
        self.entries.sort_by(|a, b| {
            let primary = match sort {
                SortKey::Path => Ordering::Equal,
                SortKey::Name => a.name.cmp(&b.name),
                SortKey::Size => a.size.cmp(&b.size),
                SortKey::Modified => a.modified_key.cmp(&b.modified_key),
                SortKey::Kind => a.kind.as_str().cmp(b.kind.as_str()),
            };
            primary.then_with(|| a.path.cmp(&b.path))
        });
        if self.request.descending {
            self.entries.reverse();
        }
        let total = self.entries.len() as u64;
        let offset = self.request.offset.min(self.entries.len());
        let mut page: Vec<ListEntry> = self
            .entries
            .drain(offset..)
            .take(self.request.limit)
            .collect();
        // Trim the page to the response budget (roughly, by the size of its JSON).
        let budget = self.roots.policy.limits.answer_bytes();
        let mut used = 0;
        let mut keep = page.len();
        for (i, e) in page.iter().enumerate() {
            used += e.path.len() + 96;
            if used > budget {
                keep = i;
                break;
            }
        }
        page.truncate(keep);
        for e in &mut page {
            if let Some((index, real)) = e.location.take() {
                e.children = count_children(&self.roots.roots()[index], &real);
            }
        }
        let end = offset + page.len();
        let truncated = (end as u64) < total;
        let at_least = if self.capped { "at least " } else { "" };
        let mut summary = format!(
            "{at_least}{}: {}, {}",
            plural(total, "entry", "entries"),
            plural(counts.files, "file", "files"),
            plural(counts.dirs, "folder", "folders"),
        );
        if counts.symlinks > 0 {
            summary.push_str(&format!(
                ", {}",
                plural(counts.symlinks, "symlink", "symlinks")
            ));
        }
        summary.push_str(&skipped_note(&self.skipped));
        ListOutcome {
            path,
            entries: page,
            total,
            truncated,
            next_offset: truncated.then_some(end),
            walk_capped: self.capped,
            counts,
            skipped: self.skipped,
            summary,
        }
    }
}

pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn skipped_note(s: &Skipped) -> String {
    let mut parts = Vec::new();
    if s.hidden > 0 {
        parts.push(format!("{} hidden", s.hidden));
    }
    if s.ignored > 0 {
        parts.push(format!("{} ignored", s.ignored));
    }
    if s.outside_root > 0 {
        parts.push(format!("{} symlinks leading outside", s.outside_root));
    }
    if s.unreadable > 0 {
        parts.push(format!("{} unreadable", s.unreadable));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (not shown: {})", parts.join(", "))
    }
}

/// Count a folder's entries, up to a bound that keeps this cheap.
fn count_children(root: &Root, real: &Path) -> Option<u64> {
    const MAX_COUNT: usize = 100_000;
    let entries = if real.as_os_str().is_empty() {
        root.dir().entries().ok()?
    } else {
        root.dir().read_dir(real).ok()?
    };
    Some(entries.take(MAX_COUNT).count() as u64)
}

/// Read the ignore files of one folder through the root handle.
fn load_ignore(root: &Root, folder: &Path, is_root: bool) -> Option<IgnoreLevel> {
    let dir = crate::open::folder(root.dir(), folder).ok()?;
    load_ignore_in(&dir, folder, is_root)
}

/// Read the ignore files of the open folder `dir` (at `folder` below the root).
fn load_ignore_in(dir: &Dir, folder: &Path, is_root: bool) -> Option<IgnoreLevel> {
    let mut builder = GitignoreBuilder::new("");
    let mut found = false;
    let mut files: Vec<PathBuf> = IGNORE_FILES.iter().map(PathBuf::from).collect();
    if is_root {
        files.push(PathBuf::from(".git/info/exclude"));
    }
    for file in files {
        // Through a descriptor: a FIFO or link named `.gitignore` is skipped, not
        // waited on or followed, and the size is the open file's.
        let Ok((opened, meta)) = crate::open::file(dir, &file) else {
            continue;
        };
        if meta.len() > MAX_IGNORE_FILE_BYTES {
            continue;
        }
        let mut text = String::new();
        if std::io::Read::read_to_string(
            &mut std::io::Read::take(opened, MAX_IGNORE_FILE_BYTES),
            &mut text,
        )
        .is_err()
        {
            continue;
        }
        for line in text.lines() {
            // A bad line is skipped, as git does.
            if builder.add_line(None, line).is_ok() {
                found = true;
            }
        }
    }
    if !found {
        return None;
    }
    builder.build().ok().map(|rules| IgnoreLevel {
        base: folder.to_path_buf(),
        rules,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Meter, Policy, Roots};

    fn tree() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        for d in 0..5 {
            for f in 0..20 {
                let p = dir.path().join(format!("d{d}/f{f}.txt"));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "x").unwrap();
            }
        }
        let roots = Roots::open(
            &[dir.path().to_str().unwrap().parse().unwrap()],
            Policy::default(),
        )
        .unwrap();
        (dir, roots)
    }

    #[test]
    fn a_walk_ticks_its_meter_once_per_entry() {
        let (_d, roots) = tree();
        let meter = Arc::new(Meter::new());
        let request = ListRequest {
            depth: 3,
            meter: Some(meter.clone()),
            ..ListRequest::default()
        };
        let outcome = roots.list(".", &request).unwrap();
        assert_eq!(outcome.total, 105);
        assert_eq!(meter.read(), (105, None));
    }

    #[test]
    fn a_cancelled_walk_stops() {
        let (_d, roots) = tree();
        let meter = Arc::new(Meter::new());
        meter.stop();
        let request = ListRequest {
            depth: 3,
            meter: Some(meter.clone()),
            ..ListRequest::default()
        };
        let outcome = roots.list(".", &request).unwrap();
        assert_eq!(outcome.total, 0);
        assert!(outcome.walk_capped);
        assert_eq!(meter.read().0, 0);
        assert!(meter.was_cut_short(), "the walk says it stopped part-way");
        // A walk that ends before anyone cancels it was not cut short.
        let meter = Arc::new(Meter::new());
        let request = ListRequest {
            meter: Some(meter.clone()),
            ..request
        };
        roots.list(".", &request).unwrap();
        meter.stop();
        assert!(!meter.was_cut_short());
    }
}
