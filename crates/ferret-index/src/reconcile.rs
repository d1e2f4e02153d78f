//! Reconciling a folder with the disk: the differences between the index's
//! picture of a folder and a fresh walk of it, planned under the read lock
//! and applied in short runs under the write lock, as journal changes.

use std::collections::HashMap;

use crate::{
    Index,
    inotify_watch::Watcher,
    journal::{Action, Change},
    search::display_path,
    store::{EntryId, Kind, Meta, Store},
    watched_walk::Added,
};

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Point the watches a walk added at the entries its folders became; those
/// whose folder the index did not take are undone ([`Watcher::undo`]).
pub(crate) fn register_watches(
    store: &mut Store,
    watcher: Option<&Watcher>,
    root: usize,
    added: &[Added],
    pairs: &HashMap<EntryId, EntryId>,
) {
    let Some(w) = watcher else { return };
    for a in added {
        match pairs.get(&a.folder) {
            Some(&live) => {
                w.remap(a.wd, root, live);
                if let Some(d) = store.dir_mut(live) {
                    d.wd = a.wd;
                }
            }
            None => w.undo(a.wd, a.before),
        }
    }
}

pub(crate) fn change(
    store: &Store,
    id: EntryId,
    action: Action,
    old_path: Option<String>,
) -> Change {
    Change {
        action,
        path: display_path(store, id),
        old_path,
        kind: crate::store::query_kind(store.kind(id)),
        at_ms: now_ms(),
        by: "external",
    }
}

/// One difference between the index and a fresh walk.
pub(crate) enum Op {
    Delete(EntryId),
    /// New metadata for a live entry (and, for folders, their device and inode).
    Update(EntryId, Meta, Option<(u64, u64)>),
    /// Copy a fresh entry (and what lies below it) under a live folder.
    Copy(EntryId, EntryId),
}

/// The differences between the children of `old` (in `store`) and those of
/// `new` (in `fresh`), all the way down (with `shallow`, the children alone:
/// `fresh` holds no more); `pairs` learns which fresh folder is which live
/// one. Reads only: done under the read lock, so searches go on.
pub(crate) fn plan_reconcile(
    store: &Store,
    old: EntryId,
    fresh: &Store,
    new: EntryId,
    pairs: &mut HashMap<EntryId, EntryId>,
    shallow: bool,
) -> Vec<Op> {
    use std::cmp::Ordering;
    let mut ops = Vec::new();
    pairs.insert(new, old);
    let mut stack = vec![(old, new)];
    while let Some((old, new)) = stack.pop() {
        let (olds, news) = (store.children(old), fresh.children(new));
        let (mut i, mut j) = (0, 0);
        while i < olds.len() || j < news.len() {
            let order = match (olds.get(i), news.get(j)) {
                (Some(&a), Some(&b)) => crate::names::name_order(store.name(a), fresh.name(b)),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    ops.push(Op::Delete(olds[i]));
                    i += 1;
                }
                Ordering::Greater => {
                    ops.push(Op::Copy(old, news[j]));
                    j += 1;
                }
                Ordering::Equal => {
                    let (id, child) = (olds[i], news[j]);
                    let kind = fresh.kind(child);
                    if store.kind(id) == kind {
                        let ident = fresh.dir(child).map(|d| (d.dev, d.ino));
                        let meta = fresh.meta(child);
                        if store.meta(id) != meta || ident != store.dir(id).map(|d| (d.dev, d.ino))
                        {
                            ops.push(Op::Update(id, meta, ident));
                        }
                        if kind == Kind::Dir && !shallow {
                            pairs.insert(child, id);
                            stack.push((id, child));
                        }
                    } else {
                        ops.push(Op::Delete(id));
                        ops.push(Op::Copy(old, child));
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
    }
    ops
}

/// Apply a plan, journalling each difference, in runs short enough that
/// searches waiting for the store never wait long.
pub(crate) fn apply_reconcile(
    index: &Index,
    ops: Vec<Op>,
    fresh: &Store,
    changes: &mut Vec<Change>,
    pairs: &mut HashMap<EntryId, EntryId>,
) {
    /// Entries changed under one hold of the write lock.
    const RUN: usize = 2_000;
    let mut ops = ops.into_iter().peekable();
    while ops.peek().is_some() {
        let mut store = index.write_store();
        let mut done = 0;
        while done < RUN {
            let Some(op) = ops.next() else { break };
            match op {
                Op::Delete(id) => {
                    if store.is_live(id) {
                        changes.push(change(&store, id, Action::Deleted, None));
                        done += store.remove(id);
                    }
                }
                Op::Update(id, meta, ident) => {
                    let before = store.meta(id);
                    store.set_meta(id, meta);
                    if let Some(ident) = ident {
                        store.set_ident(id, ident);
                    }
                    if store.kind(id) != Kind::Dir
                        && (before.size != meta.size || before.mtime != meta.mtime)
                    {
                        changes.push(change(&store, id, Action::Modified, None));
                    }
                    done += 1;
                }
                Op::Copy(parent, from) => {
                    done += copy_subtree(&mut store, parent, fresh, from, changes, pairs);
                }
            }
        }
    }
}

/// Returns how many entries it added.
pub(crate) fn copy_subtree(
    store: &mut Store,
    parent: EntryId,
    fresh: &Store,
    from: EntryId,
    changes: &mut Vec<Change>,
    pairs: &mut HashMap<EntryId, EntryId>,
) -> usize {
    let mut added = 0;
    let mut stack = vec![(parent, from)];
    while let Some((parent, from)) = stack.pop() {
        let id = store.insert_new(parent, fresh.name(from), fresh.kind(from), fresh.meta(from));
        added += 1;
        changes.push(change(store, id, Action::Created, None));
        if let Some(d) = fresh.dir(from) {
            store.set_ident(id, (d.dev, d.ino));
            pairs.insert(from, id);
        }
        for &c in fresh.children(from) {
            stack.push((id, c));
        }
    }
    added
}
