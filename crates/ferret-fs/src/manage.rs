//! `manage`: move, copy, delete and mkdir, confined like every other call.
//!
//! A move within a file system is one `renameat` (atomic); across file systems
//! (two roots on different mounts) it is a copy followed by a delete. Copies of
//! files are atomic per file (temporary file + rename, mode kept); a folder copy
//! is not atomic as a whole. Symlinks are moved and deleted as links, never
//! through; inside a copied folder they are recreated as links (ferret refuses
//! to follow any link that leads out of its root, wherever it lives).

use std::io;
use std::os::unix::ffi::OsStrExt;

use cap_std::fs::{Metadata, MetadataExt};

use rustix::io::Errno;

use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::{Kind, kind_of},
    path::RelPath,
    replace::{
        FileChange, Keep, open_parent, open_real, replace_atomically, sync_dir, write_failed,
    },
    roots::{Root, Roots, Target},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManageOp {
    Move,
    Copy,
    Delete,
    Mkdir,
}

impl ManageOp {
    pub fn as_str(self) -> &'static str {
        match self {
            ManageOp::Move => "move",
            ManageOp::Copy => "copy",
            ManageOp::Delete => "delete",
            ManageOp::Mkdir => "mkdir",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ManageRequest {
    pub op: ManageOp,
    pub to: Option<String>,
    pub overwrite: bool,
    pub recursive: bool,
    pub dry_run: bool,
    /// Ticked once per entry copied (a copy is never cancelled half-way: a
    /// folder left half-copied would be worse than waiting; the meter is
    /// never marked cut short, so a cancelled task says the cancel came too
    /// late and the copy is whole).
    pub meter: Option<std::sync::Arc<crate::Meter>>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ManageOutcome {
    pub op: &'static str,
    pub path: String,
    pub to: Option<String>,
    /// `file`, `dir` or `symlink`.
    pub kind: Kind,
    /// Entries affected below a folder (0 for a file).
    pub entries: u64,
    /// For mkdir: whether the folder was (or would be) created.
    pub created: bool,
    /// Whether the destination existed and was (or would be) replaced.
    pub replaced: bool,
    pub dry_run: bool,
    pub summary: String,
    #[serde(skip)]
    pub changes: Vec<FileChange>,
}

/// Everything below `base` (a real folder), parents before children; symlinks
/// are listed, never entered. Each path is relative to `base`, its names as
/// they are on disk (shown escaped where they are not UTF-8).
fn walk(root: &Root, base: &RelPath, shown: &str) -> FsResult<Vec<(RelPath, Kind)>> {
    let mut out = Vec::new();
    let mut stack = vec![RelPath::root()];
    while let Some(sub) = stack.pop() {
        let here = base.join_rel(&sub);
        let entries = root
            .dir()
            .read_dir(here.as_os_path())
            .map_err(|e| FsError::from_io(&e, shown))?;
        for entry in entries {
            let entry = entry.map_err(|e| FsError::from_io(&e, shown))?;
            let kind = kind_of(entry.file_type().map_err(|e| FsError::from_io(&e, shown))?);
            let child = sub.join_bytes(entry.file_name().as_bytes());
            if kind == Kind::Dir {
                stack.push(child.clone());
            }
            out.push((child, kind));
        }
    }
    out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    Ok(out)
}

/// Whether `inner` is `outer` or below it, by the names' bytes (two names
/// may show alike, see `ferret_names`).
fn is_under(inner: &RelPath, outer: &RelPath) -> bool {
    let (i, o) = (
        inner.as_os_path().as_os_str().as_bytes(),
        outer.as_os_path().as_os_str().as_bytes(),
    );
    outer.is_root() || i == o || (i.starts_with(o) && i.get(o.len()) == Some(&b'/'))
}

fn already_exists(shown: &str) -> FsError {
    FsError::new(
        ErrorCode::AlreadyExists,
        format!("`{shown}` already exists; nothing was changed"),
    )
    .hint("pass overwrite: true to replace it, or choose another destination")
}

/// `manage`: move, copy, delete or create a folder.
pub(crate) fn manage(
    roots: &Roots,
    input: &str,
    request: &ManageRequest,
) -> FsResult<ManageOutcome> {
    match request.op {
        ManageOp::Delete => delete(roots, input, request),
        ManageOp::Mkdir => mkdir(roots, input, request),
        ManageOp::Copy | ManageOp::Move => {
            let to = request.to.as_deref().ok_or_else(|| {
                FsError::new(ErrorCode::NotFound, "move and copy need `to`")
                    .hint("give the destination path in `to`")
            })?;
            if request.op == ManageOp::Copy {
                copy(roots, input, to, request)
            } else {
                move_entry(roots, input, to, request)
            }
        }
    }
}

/// The entry a path names, its final symlink not followed.
fn locate_entry(
    roots: &Roots,
    root: &Root,
    rel: &RelPath,
    shown: &str,
) -> FsResult<(RelPath, Metadata)> {
    let (parent, leaf) = rel.split_last();
    let real_parent = roots.resolve_links(root, parent.as_os_path(), shown)?;
    let real = real_parent.join_bytes(leaf.as_bytes());
    let meta = root
        .dir()
        .symlink_metadata(real.as_os_path())
        .map_err(|e| FsError::from_io(&e, shown))?;
    Ok((real, meta))
}

/// Refuse a tree that holds a sensitive file (by either of its names).
fn check_tree(
    roots: &Roots,
    bases: &[&RelPath],
    entries: &[(RelPath, Kind)],
    shown: &str,
) -> FsResult<()> {
    for (sub, kind) in entries {
        for base in bases {
            if crate::replace::sensitive_target(roots, &base.join_rel(sub), *kind == Kind::Dir) {
                return Err(FsError::new(
                    ErrorCode::PathDenied,
                    format!(
                        "`{shown}` holds a sensitive file (`{}`); nothing was changed",
                        sub.as_str()
                    ),
                )
                .hint("ferret never moves, copies or deletes keys and credentials; ask the user to do it"));
            }
        }
    }
    Ok(())
}

fn never_a_root(shown: &str, what: &str) -> FsError {
    FsError::new(
        ErrorCode::PathDenied,
        format!("`{shown}` is a served root; ferret never {what} a root"),
    )
    .hint("act on paths inside the root")
}

/// An entry `delete` or `move` changes, as found (the link itself, not what it
/// points to).
struct Entry<'a> {
    root: &'a Root,
    rel: RelPath,
    real: RelPath,
    meta: Metadata,
    kind: Kind,
}

/// The entry `input` names, in a writable root: never a root itself (`verb`
/// says what ferret never does to one), never a sensitive file or folder.
fn entry_to_change<'a>(roots: &'a Roots, input: &str, verb: &str) -> FsResult<Entry<'a>> {
    let shown = input.trim();
    let (root, rel) = crate::replace::write_target(roots, input)?;
    if rel.is_root() {
        return Err(never_a_root(shown, verb));
    }
    let (real, meta) = locate_entry(roots, root, &rel, shown)?;
    let kind = kind_of(meta.file_type());
    let is_dir = kind == Kind::Dir;
    if crate::replace::sensitive_target(roots, &rel, is_dir)
        || crate::replace::sensitive_target(roots, &real, is_dir)
    {
        return Err(FsError::denied(shown));
    }
    Ok(Entry {
        root,
        rel,
        real,
        meta,
        kind,
    })
}

fn delete(roots: &Roots, input: &str, request: &ManageRequest) -> FsResult<ManageOutcome> {
    let shown = input.trim();
    let Entry {
        root,
        rel,
        real,
        kind,
        ..
    } = entry_to_change(roots, input, "deletes")?;
    let is_dir = kind == Kind::Dir;
    let mut entries = 0;
    if is_dir {
        let tree = walk(root, &real, shown)?;
        entries = tree.len() as u64;
        if entries > 0 && !request.recursive {
            return Err(FsError::new(
                ErrorCode::DirectoryNotEmpty,
                format!("`{shown}` is a folder with {entries} entries; nothing was deleted"),
            )
            .hint("pass recursive: true to delete it with everything in it")
            .detail("entries", entries.to_string()));
        }
        check_tree(roots, &[&rel, &real], &tree, shown)?;
    }
    let path = roots.display(root, &real);
    let mut outcome = ManageOutcome {
        op: "delete",
        path: path.clone(),
        to: None,
        kind,
        entries,
        created: false,
        replaced: false,
        dry_run: request.dry_run,
        summary: if is_dir {
            format!("delete folder {path} and its {entries} entries")
        } else {
            format!("delete {} {path}", kind)
        },
        changes: Vec::new(),
    };
    if request.dry_run {
        return Ok(outcome);
    }
    let (dir, leaf) = open_parent(root, &real).map_err(|e| FsError::from_io(&e, shown))?;
    let result = if is_dir {
        if entries == 0 {
            dir.remove_dir(&leaf)
        } else {
            dir.remove_dir_all(&leaf)
        }
    } else {
        dir.remove_file(&leaf)
    };
    result.map_err(|e| FsError::from_io(&e, shown))?;
    sync_dir(&dir);
    outcome.changes = vec![FileChange::new("deleted", path, kind)];
    Ok(outcome)
}

fn mkdir(roots: &Roots, input: &str, request: &ManageRequest) -> FsResult<ManageOutcome> {
    let shown = input.trim();
    let (root, rel) = crate::replace::write_target(roots, input)?;
    let mut outcome = ManageOutcome {
        op: "mkdir",
        path: roots.display(root, &rel),
        to: None,
        kind: Kind::Dir,
        entries: 0,
        created: false,
        replaced: false,
        dry_run: request.dry_run,
        summary: String::new(),
        changes: Vec::new(),
    };
    if rel.is_root() {
        outcome.summary = format!("{} already exists", outcome.path);
        return Ok(outcome);
    }
    if crate::replace::sensitive_target(roots, &rel, true) {
        return Err(FsError::denied(shown));
    }
    let landing = crate::replace::land(roots, root, &rel, shown, true)?;
    if crate::replace::sensitive_target(roots, &landing.real, true) {
        return Err(FsError::denied(shown));
    }
    match &landing.existing {
        Some(m) if m.is_dir() => {
            outcome.summary = format!("{} already exists", outcome.path);
            return Ok(outcome);
        }
        Some(_) => {
            return Err(FsError::new(
                ErrorCode::AlreadyExists,
                format!("`{shown}` already exists and is not a folder"),
            ));
        }
        None => {}
    }
    outcome.created = true;
    outcome.summary = format!("create folder {}", outcome.path);
    if request.dry_run {
        return Ok(outcome);
    }
    let mut changes = crate::replace::create_missing(roots, root, &landing, shown)?;
    match root.dir().create_dir(landing.real.as_os_path()) {
        Ok(()) => changes.push(FileChange::new(
            "created",
            roots.display(root, &landing.real),
            Kind::Dir,
        )),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => outcome.created = false,
        Err(e) => return Err(FsError::from_io(&e, shown)),
    }
    outcome.changes = changes;
    Ok(outcome)
}

fn destination<'a>(roots: &'a Roots, to: &str) -> FsResult<(&'a Root, RelPath)> {
    crate::replace::write_target(roots, to)
}

fn copy(roots: &Roots, input: &str, to: &str, request: &ManageRequest) -> FsResult<ManageOutcome> {
    let shown = input.trim();
    let to_shown = to.trim();
    let (sroot, srel) = match roots.resolve(input)? {
        Target::AllRoots => {
            return Err(FsError::new(
                ErrorCode::IsDirectory,
                "`.` is the list of roots and cannot be copied",
            )
            .hint("copy one root or a path inside it"));
        }
        Target::In(r, rel) => (r, rel),
    };
    let sreal = roots.resolve_links(sroot, srel.as_os_path(), shown)?;
    let smeta = sroot
        .dir()
        .metadata(sreal.as_os_path())
        .map_err(|e| FsError::from_io(&e, shown))?;
    let is_dir = smeta.is_dir();
    if crate::replace::sensitive_target(roots, &srel, is_dir)
        || crate::replace::sensitive_target(roots, &sreal, is_dir)
    {
        return Err(FsError::denied(shown));
    }
    if !is_dir && !smeta.is_file() {
        return Err(FsError::new(
            ErrorCode::IoError,
            format!("`{shown}` is not a regular file or folder"),
        ));
    }
    let (droot, drel) = destination(roots, to)?;
    let dland = crate::replace::land(roots, droot, &drel, to_shown, true)?;
    let dreal = dland.real.clone();
    let mut replaced = false;
    let mut tree = Vec::new();
    if is_dir {
        if !request.recursive {
            return Err(FsError::new(
                ErrorCode::IsDirectory,
                format!("`{shown}` is a folder; nothing was copied"),
            )
            .hint("pass recursive: true to copy it with its content"));
        }
        if std::ptr::eq(sroot, droot) && is_under(&dreal, &sreal) {
            return Err(FsError::new(
                ErrorCode::IoError,
                format!("cannot copy `{shown}` into itself (`{to_shown}`)"),
            ));
        }
        tree = walk(sroot, &sreal, shown)?;
        check_tree(roots, &[&srel, &sreal, &drel, &dreal], &tree, shown)?;
        match &dland.existing {
            Some(m) if m.is_dir() => {
                if !request.overwrite {
                    return Err(already_exists(to_shown));
                }
                replaced = true;
            }
            Some(_) => {
                return Err(FsError::new(
                    ErrorCode::AlreadyExists,
                    format!("`{to_shown}` exists and is a file; a folder cannot replace it"),
                ));
            }
            None => {}
        }
    } else {
        match &dland.existing {
            Some(m) if m.is_dir() => {
                return Err(FsError::new(
                    ErrorCode::AlreadyExists,
                    format!("`{to_shown}` is a folder; nothing was copied"),
                )
                .hint("give the full destination path, including the file name"));
            }
            Some(_) if !request.overwrite => return Err(already_exists(to_shown)),
            Some(_) => replaced = true,
            None => {}
        }
    }
    let from = roots.display(sroot, &srel);
    let dest = roots.display(droot, &dreal);
    let mut outcome = ManageOutcome {
        op: "copy",
        path: from.clone(),
        to: Some(dest.clone()),
        kind: if is_dir { Kind::Dir } else { Kind::File },
        entries: tree.len() as u64,
        created: dland.existing.is_none(),
        replaced,
        dry_run: request.dry_run,
        summary: if is_dir {
            format!(
                "copy folder {from} ({} entries) to {dest}{}",
                tree.len(),
                if replaced {
                    ", merging into the existing folder"
                } else {
                    ""
                }
            )
        } else {
            format!(
                "copy {from} to {dest}{}",
                if replaced { ", replacing it" } else { "" }
            )
        },
        changes: Vec::new(),
    };
    if request.dry_run {
        return Ok(outcome);
    }
    let mut changes = crate::replace::create_missing(roots, droot, &dland, to_shown)?;
    if is_dir {
        if dland.existing.is_none() {
            droot
                .dir()
                .create_dir(dreal.as_os_path())
                .map_err(|e| FsError::from_io(&e, to_shown))?;
        }
        copy_tree(
            sroot,
            &sreal,
            droot,
            &dreal,
            &tree,
            false,
            to_shown,
            request.meter.as_deref(),
        )?;
    } else {
        let keep = Keep {
            mode: Some(smeta.mode() & 0o7777),
            owner: None,
        };
        copy_file(
            sroot,
            &sreal,
            droot,
            &dreal,
            keep,
            !request.overwrite,
            shown,
            to_shown,
        )?;
    }
    changes.push(FileChange::new(
        if replaced { "modified" } else { "created" },
        dest,
        outcome.kind,
    ));
    outcome.changes = changes;
    Ok(outcome)
}

fn move_entry(
    roots: &Roots,
    input: &str,
    to: &str,
    request: &ManageRequest,
) -> FsResult<ManageOutcome> {
    let shown = input.trim();
    let to_shown = to.trim();
    let Entry {
        root: sroot,
        rel: srel,
        real: sreal,
        meta: smeta,
        kind,
    } = entry_to_change(roots, input, "moves")?;
    let is_dir = kind == Kind::Dir;
    let (droot, drel) = destination(roots, to)?;
    let dland = crate::replace::land(roots, droot, &drel, to_shown, false)?;
    let dreal = dland.real.clone();
    let same_root = std::ptr::eq(sroot, droot);
    if same_root && dreal == sreal {
        return Err(FsError::new(
            ErrorCode::AlreadyExists,
            format!("`{shown}` and `{to_shown}` are the same path; nothing was moved"),
        ));
    }
    if is_dir && same_root && is_under(&dreal, &sreal) {
        return Err(FsError::new(
            ErrorCode::IoError,
            format!("cannot move `{shown}` into itself (`{to_shown}`)"),
        ));
    }
    let tree = if is_dir {
        let tree = walk(sroot, &sreal, shown)?;
        check_tree(roots, &[&srel, &sreal, &drel, &dreal], &tree, shown)?;
        tree
    } else {
        Vec::new()
    };
    let replaced = dland.existing.is_some();
    if replaced && !request.overwrite {
        return Err(already_exists(to_shown));
    }
    let from = roots.display(sroot, &sreal);
    let dest = roots.display(droot, &dreal);
    let (sparent, _) = sreal.split_last();
    let (dparent, _) = dreal.split_last();
    let action = if same_root && sparent == dparent {
        "renamed"
    } else {
        "moved"
    };
    let mut outcome = ManageOutcome {
        op: "move",
        path: from.clone(),
        to: Some(dest.clone()),
        kind,
        entries: tree.len() as u64,
        created: false,
        replaced,
        dry_run: request.dry_run,
        summary: format!(
            "move {} {from} to {dest}{}",
            kind,
            if replaced { ", replacing it" } else { "" }
        ),
        changes: Vec::new(),
    };
    if request.dry_run {
        return Ok(outcome);
    }
    let mut changes = crate::replace::create_missing(roots, droot, &dland, to_shown)?;
    let (sdir, sleaf) = open_parent(sroot, &sreal).map_err(|e| FsError::from_io(&e, shown))?;
    let (ddir, dleaf) = open_parent(droot, &dreal).map_err(|e| FsError::from_io(&e, to_shown))?;
    match sdir.rename(&sleaf, &ddir, &dleaf) {
        Ok(()) => {
            sync_dir(&ddir);
            sync_dir(&sdir);
        }
        // EXDEV: the roots are on different file systems; copy, then delete.
        Err(e) if e.raw_os_error() == Some(Errno::XDEV.raw_os_error()) => {
            if let Some(existing) = &dland.existing {
                if existing.is_dir() {
                    ddir.remove_dir(&dleaf)
                        .map_err(|e| dir_error(&e, to_shown))?;
                } else if is_dir {
                    return Err(FsError::new(
                        ErrorCode::NotDirectory,
                        format!("`{to_shown}` is a file; a folder cannot replace it"),
                    ));
                }
            }
            match kind {
                Kind::Dir => {
                    ddir.create_dir(&dleaf)
                        .map_err(|e| FsError::from_io(&e, to_shown))?;
                    copy_tree(
                        sroot,
                        &sreal,
                        droot,
                        &dreal,
                        &tree,
                        true,
                        to_shown,
                        request.meter.as_deref(),
                    )?;
                    sdir.remove_dir_all(&sleaf)
                        .map_err(|e| FsError::from_io(&e, shown))?;
                }
                Kind::Symlink => {
                    let target = sdir
                        .read_link_contents(&sleaf)
                        .map_err(|e| FsError::from_io(&e, shown))?;
                    if replaced {
                        let _ = ddir.remove_file(&dleaf);
                    }
                    ddir.symlink_contents(&target, &dleaf)
                        .map_err(|e| FsError::from_io(&e, to_shown))?;
                    sdir.remove_file(&sleaf)
                        .map_err(|e| FsError::from_io(&e, shown))?;
                }
                _ => {
                    copy_file(
                        sroot,
                        &sreal,
                        droot,
                        &dreal,
                        Keep::of(&smeta),
                        false,
                        shown,
                        to_shown,
                    )?;
                    sdir.remove_file(&sleaf)
                        .map_err(|e| FsError::from_io(&e, shown))?;
                }
            }
            sync_dir(&sdir);
        }
        Err(e) => return Err(dir_error(&e, to_shown)),
    }
    let mut change = FileChange::new(action, dest, kind);
    change.old_path = Some(from);
    changes.push(change);
    outcome.changes = changes;
    Ok(outcome)
}

/// ENOTEMPTY / EEXIST from a rename onto a folder: the folder has content.
fn dir_error(err: &io::Error, shown: &str) -> FsError {
    match err.raw_os_error() {
        Some(n) if n == Errno::NOTEMPTY.raw_os_error() || n == Errno::EXIST.raw_os_error() => {
            FsError::new(
                ErrorCode::DirectoryNotEmpty,
                format!("`{shown}` is a folder that is not empty; nothing was moved"),
            )
            .hint("delete it first (manage op delete, recursive) or choose another destination")
        }
        _ => FsError::from_io(err, shown),
    }
}

#[allow(clippy::too_many_arguments)]
fn copy_file(
    sroot: &Root,
    sreal: &RelPath,
    droot: &Root,
    dreal: &RelPath,
    keep: Keep,
    no_replace: bool,
    shown: &str,
    to_shown: &str,
) -> FsResult<()> {
    let (mut file, _) = open_real(sroot, sreal).map_err(|e| FsError::from_io(&e, shown))?;
    match replace_atomically(droot, dreal, &mut file, keep, no_replace) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(already_exists(to_shown)),
        Err(e) => Err(write_failed(&e, to_shown)),
    }
}

/// Copy the walked `tree` of `sreal` into the existing folder `dreal`.
#[allow(clippy::too_many_arguments)]
fn copy_tree(
    sroot: &Root,
    sreal: &RelPath,
    droot: &Root,
    dreal: &RelPath,
    tree: &[(RelPath, Kind)],
    keep_owner: bool,
    to_shown: &str,
    meter: Option<&crate::Meter>,
) -> FsResult<()> {
    if let Some(m) = meter {
        m.set_total(tree.len() as u64);
    }
    for (sub, kind) in tree {
        if let Some(m) = meter {
            m.tick();
        }
        let from = sreal.join_rel(sub);
        let to = dreal.join_rel(sub);
        let err = |e: io::Error| FsError::from_io(&e, to_shown);
        match kind {
            Kind::Dir => match droot.dir().create_dir(to.as_os_path()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(err(e)),
            },
            Kind::File => {
                let meta = sroot
                    .dir()
                    .symlink_metadata(from.as_os_path())
                    .map_err(err)?;
                let mut keep = Keep::of(&meta);
                if !keep_owner {
                    keep.owner = None;
                }
                copy_file(sroot, &from, droot, &to, keep, false, to_shown, to_shown)?;
            }
            Kind::Symlink => {
                let target = sroot
                    .dir()
                    .read_link_contents(from.as_os_path())
                    .map_err(err)?;
                let _ = droot.dir().remove_file(to.as_os_path());
                droot
                    .dir()
                    .symlink_contents(&target, to.as_os_path())
                    .map_err(err)?;
            }
            Kind::Other => {}
        }
    }
    Ok(())
}
