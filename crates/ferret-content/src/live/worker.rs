//! The content index's thread: builds or loads the index, checks a loaded one
//! against the disk, re-reads the files the change feed names, and now and
//! then merges what it re-read into a new file. Queries only read what it
//! leaves (`super`).

use super::*;
use ferret_index::search::display_path;

pub(super) fn set_status(s: &Shared, f: impl FnOnce(&mut Status)) {
    f(&mut s.status.lock().unwrap_or_else(|p| p.into_inner()));
}

/// How long until the next whole comparison, after one that `found` files
/// the change feed had not brought, or none. A whole comparison costs a
/// pass over every file (about 2 s for a million): while they find nothing
/// and the name index hears every change, they come half as often each
/// time, up to `most` ([`RECONCILE_MAX`]); one that finds something, or a
/// name index that cannot hear every folder, brings back `first`
/// ([`RECONCILE_EVERY`]).
fn next_reconcile(
    every: Duration,
    found: bool,
    hears_every_change: bool,
    (first, most): (Duration, Duration),
) -> Duration {
    if found || !hears_every_change {
        first
    } else {
        (every * 2).min(most)
    }
}

/// Mark pending every path the change feed has reported so far; a folder
/// moved is also recorded as a move, for the index's thread to carry over
/// ([`carry_moves`]).
pub(super) fn drain_feed(s: &Shared) {
    let feed = s.feed.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rx) = feed.as_ref() else { return };
    let mut batches = Vec::new();
    while let Ok(touches) = rx.try_recv() {
        batches.push(touches);
    }
    drop(feed);
    if batches.is_empty() {
        return;
    }
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    // A path's seq, and whether it was pending already.
    let mark = |p: &mut Pending, path: String| {
        p.seq += 1;
        let seq = p.seq;
        let was = p.paths.insert(path.clone(), (seq, now)).is_some();
        ((path, seq), was)
    };
    for touch in batches.into_iter().flatten() {
        let (to, to_was) = mark(&mut p, touch.path);
        if let Some(old) = touch.moved_from {
            let (from, from_was) = mark(&mut p, old);
            if touch.folder {
                p.moves.push(Move {
                    from,
                    to,
                    from_was,
                    to_was,
                });
            }
        }
    }
}

/// Carry the folders moved over to their new paths: their files keep what
/// was read of them, under the new paths ([`Paths::move_folder`]), and
/// neither path is left pending (unless the feed named it again since);
/// paths pending below the old one follow it. A move is left to the
/// comparison of both paths, as any folder event is, when the index holds
/// nothing at the old path or something at the new one, or when the move
/// may change which files below it are sensitive. Run only by the index's
/// thread, between its other work: a build or a merge replaces the files
/// held, and a move carried into the set being replaced would be lost.
pub(super) fn carry_moves(s: &Shared) {
    drain_feed(s);
    if s.pending.lock().map_or(true, |p| p.moves.is_empty()) {
        return;
    }
    let (mut folders, mut files) = (0u64, 0u64);
    {
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        for Move {
            from,
            to,
            from_was,
            to_was,
        } in std::mem::take(&mut p.moves)
        {
            let prefix = format!("{}/", from.0);
            // What the index holds at the old path may be behind the disk
            // there (the old path, or a folder above it, was pending before
            // the move: `rm -rf build; mv new build; mv build release` would
            // carry the removed tree), or a path below it was named after the
            // move (a change to whatever came there since, which is not what
            // moved): then both paths are compared instead.
            let above_pending = from
                .0
                .match_indices('/')
                .any(|(i, _)| p.paths.contains_key(&from.0[..i]));
            let named_since = p
                .paths
                .iter()
                .any(|(k, (seq, _))| *seq > from.1 && k.starts_with(&prefix));
            if from_was
                || above_pending
                || named_since
                || !same_sensitivity(&s.roots, &from.0, &to.0)
            {
                continue;
            }
            let Some(count) = live.paths.move_folder(&from.0, &to.0) else {
                continue;
            };
            let below: Vec<String> = p
                .paths
                .keys()
                .filter(|k| k.starts_with(&prefix))
                .cloned()
                .collect();
            for old in below {
                if let Some(v) = p.paths.remove(&old) {
                    p.paths
                        .insert(format!("{}{}", to.0, &old[from.0.len()..]), v);
                }
            }
            // The old path names nothing now. The new one needs no look
            // unless it was pending before the move (for a change of its own,
            // not compared yet).
            let mut done = vec![&from];
            if !to_was {
                done.push(&to);
            }
            for (path, seq) in done {
                if p.paths.get(path).is_some_and(|(now, _)| now == seq) {
                    p.paths.remove(path);
                }
            }
            folders += 1;
            files += count as u64;
        }
    }
    s.moved.notify_all();
    if folders > 0 {
        set_status(s, |st| {
            st.folders_carried += folders;
            st.files_carried += files;
        });
    }
}

/// Marks the index's thread busy (a refresh, a comparison, a merge) while
/// held: queries do not wait for it to carry moves meanwhile.
struct Busy<'a>(&'a Shared);

impl<'a> Busy<'a> {
    fn on(s: &'a Shared) -> Busy<'a> {
        s.busy.store(true, Ordering::Release);
        Busy(s)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
        self.0.moved.notify_all();
    }
}

/// Whether every file below the folder moved from `from` to `to` (paths as
/// shown) is as sensitive at its new path as at its old one.
fn same_sensitivity(roots: &Roots, from: &str, to: &str) -> bool {
    match (roots.resolve(from), roots.resolve(to)) {
        (Ok(Target::In(_, from)), Ok(Target::In(_, to))) => {
            roots.policy.deny.same_below(&from, &to)
        }
        _ => false,
    }
}

/// Wait, at most `limit`, for the index's thread to carry over the moves
/// the feed has named ([`carry_moves`]). A query calls it after draining
/// the feed: a folder renamed a moment before is then answered from the
/// index, not searched file by file. Past the limit (the thread busy with a
/// build, a merge or a large batch), the moved paths stay pending.
pub(in crate::live) fn wait_for_moves(s: &Shared, limit: Duration) {
    let started = Instant::now();
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    // Only while the thread is between its tasks (it carries moves within
    // 10 ms then): behind a refresh, a comparison or a merge, the moved
    // paths are searched directly, as before moves were carried.
    while !p.moves.is_empty() && !s.ended.load(Ordering::Acquire) && !s.busy.load(Ordering::Acquire)
    {
        let Some(left) = limit.checked_sub(started.elapsed()) else {
            return;
        };
        p = match s.moved.wait_timeout(p, left.min(Duration::from_millis(10))) {
            Ok((p, _)) => p,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// The background thread.
pub(super) fn run(s: &Shared) {
    while !s.index.wait_ready(Duration::from_millis(200)) {
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
    }
    let mut last_try = Instant::now();
    // Made from the content index of the settings before (`adopt`), or
    // loaded, or built.
    let mut ok = super::adopt::take_over(s)
        || match load(s) {
            Ok(()) => {
                reconcile(s, true);
                true
            }
            Err(_) => build_all(s).is_ok(),
        };
    let mut last_reconcile = Instant::now();
    let mut reconcile_every = RECONCILE_EVERY;
    let mut last_merge = Instant::now();
    let mut merge_failed: Option<Instant> = None;
    let mut overflows = s.index.status().overflow_rescans;
    while !s.stop.load(Ordering::Relaxed) {
        if !ok {
            std::thread::sleep(Duration::from_millis(200));
            if last_try.elapsed() >= RETRY_AFTER {
                last_try = Instant::now();
                ok = build_all(s).is_ok();
            }
            continue;
        }
        carry_moves(s);
        let due = take_due(s);
        carry_moves(s);
        if !due.is_empty() {
            let _busy = Busy::on(s);
            refresh(s, due);
        }
        // A queue overflow may have lost a rewrite that kept size and
        // mtime second: check every file's full version again.
        let now_overflows = s.index.overflow_rescans();
        if now_overflows != overflows || last_reconcile.elapsed() >= reconcile_every {
            let found = {
                let _busy = Busy::on(s);
                reconcile(s, now_overflows != overflows)
            };
            reconcile_every = next_reconcile(
                reconcile_every,
                found,
                s.index.hears_every_change(),
                (RECONCILE_EVERY, RECONCILE_MAX),
            );
            overflows = now_overflows;
            last_reconcile = Instant::now();
        }
        let (since, base_docs) = s
            .live
            .read()
            .map_or((0, 0), |l| (l.since_merge, l.base_docs()));
        // A timed merge rewrites the whole index file: only for enough change
        // (1% of the files), not for the one file edited since the last.
        let due = since >= MERGE_AFTER.max(base_docs / 4)
            || (since > 0 && since * 100 >= base_docs && last_merge.elapsed() >= MERGE_EVERY)
            || super::adopt::file_due(s, last_merge);
        if due && merge_failed.is_none_or(|at| at.elapsed() >= RETRY_AFTER) {
            merge_failed = {
                let _busy = Busy::on(s);
                (!merge(s)).then(Instant::now)
            };
            last_merge = Instant::now();
            if merge_failed.is_none() {
                super::adopt::file_written(s);
            }
        }
    }
}

/// The pending paths that are due (quiet long enough, or waited long
/// enough), with their sequence numbers; waits a little when none is.
pub(super) fn take_due(s: &Shared) -> Vec<(String, u64)> {
    std::thread::sleep(POLL);
    drain_feed(s);
    let p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    let first = p.paths.values().map(|(_, at)| *at).min();
    // A folder moved is carried over first (see `run`), not compared.
    let moving: HashSet<&str> = p
        .moves
        .iter()
        .flat_map(|m| [m.from.0.as_str(), m.to.0.as_str()])
        .collect();
    p.paths
        .iter()
        .filter(|(path, (_, at))| {
            (at.elapsed() >= QUIET || first.is_some_and(|f| f.elapsed() >= MAX_WAIT))
                && !moving.contains(path.as_str())
        })
        .map(|(path, (seq, _))| (path.clone(), *seq))
        .take(4096)
        .collect()
}

/// Forget the pending paths handled, unless the feed named them again since.
pub(super) fn clear_pending(s: &Shared, done: &[(String, u64)]) {
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    for (path, seq) in done {
        if p.paths.get(path).is_some_and(|(now, _)| now == seq) {
            p.paths.remove(path);
        }
    }
}

/// Every file the name index holds: their paths held once (folders as a
/// tree: a listing of a million files 900 bytes deep is not 900 MB of
/// strings), numbered folder by folder, each folder's files in name order,
/// and their sizes and modification times by number.
#[derive(Default)]
pub(super) struct Listing {
    pub(super) paths: Paths,
    pub(super) sizes: Vec<u64>,
    pub(super) mtimes: Vec<i64>,
}

impl Listing {
    /// The file `name` of the name index, in the listing's folder `folder`
    /// (left out when there is no room for its name: past 4 GiB of names,
    /// so searched directly). Looked up by its path once the listing is
    /// [`Listing::indexed`], after the name index's lock is let go.
    fn add_file(&mut self, folder: u32, name: &str, m: ferret_index::Meta) {
        if self.paths.add_unindexed(folder, name).is_some() {
            self.sizes.push(m.size);
            self.mtimes.push(m.mtime);
        }
    }

    /// The listing with its folders and files looked up by their paths:
    /// the hash tables made once the name index's lock is let go, not while
    /// it is held (a writer waiting for it holds every search back).
    fn indexed(mut self) -> Listing {
        self.paths.index_unindexed();
        self
    }
}

/// The files the name index holds, as paths are shown (`display_path`: a
/// root's name first when there are several roots, names not UTF-8
/// escaped, see `ferret_names`).
pub(super) fn list_files(index: &Index) -> Listing {
    let started = std::time::Instant::now();
    let (out, locked) = index.with_store(|store| {
        let held = std::time::Instant::now();
        let files = store.count_of(Kind::File) as usize;
        let mut out = Listing {
            paths: Paths::new(),
            sizes: Vec::with_capacity(files),
            mtimes: Vec::with_capacity(files),
        };
        out.paths
            .reserve(files, store.count_of(Kind::Dir) as usize, 0);
        let multi = store.roots().len() > 1;
        for &root in store.roots() {
            let top = if multi {
                out.paths
                    .folder_unindexed(TOP, &ferret_names::shown(store.name(root)))
            } else {
                Some(TOP)
            };
            if let Some(top) = top {
                list_below(store, root, top, &mut out);
            }
        }
        (out, held.elapsed())
    });
    let mut out = out.indexed();
    out.paths.shrink_to_fit();
    tracing::debug!(
        files = out.paths.len(),
        locked_ms = locked.as_millis() as u64,
        ms = started.elapsed().as_millis() as u64,
        "content index: the name index's files listed"
    );
    out
}

/// The files below the name index's folder `dir` into `out`, under its
/// folder `folder` (which stands for `dir`).
fn list_below(store: &Store, dir: EntryId, folder: u32, out: &mut Listing) {
    // (A loop, not recursion: a tree may be deeper than a stack.)
    let mut stack: Vec<(EntryId, u32)> = vec![(dir, folder)];
    while let Some((dir, folder)) = stack.pop() {
        for &child in store.children(dir) {
            let name = ferret_names::shown(store.name(child));
            match store.kind(child) {
                Kind::File => out.add_file(folder, &name, store.meta(child)),
                Kind::Dir => {
                    if let Some(f) = out.paths.folder_unindexed(folder, &name) {
                        stack.push((child, f));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The files the name index holds at or below the path `shown` (a folder
/// stands for every file below it, a file for itself; nothing there, or
/// something else, for none), as [`list_files`] lists them: a walk of that
/// part of its tree alone. `None` when the name index cannot say which
/// entry the path names: a path with an empty part, or a whole root.
pub(super) fn list_files_at(index: &Index, shown: &str) -> Option<Listing> {
    if shown.split('/').any(str::is_empty) {
        return None;
    }
    index
        .with_store(|store| {
            let mut out = Listing {
                paths: Paths::new(),
                sizes: Vec::new(),
                mtimes: Vec::new(),
            };
            let id = ferret_index::find_display_path(store, shown);
            // (A whole root: its every file, as `list_files` lists them.)
            if id.is_some_and(|id| store.parent(id) == ferret_index::store::NONE) {
                return None;
            }
            let Some(id) = id.filter(|&id| store.is_live(id)) else {
                return Some(out);
            };
            match store.kind(id) {
                Kind::File if out.paths.push(shown).is_some() => {
                    let m = store.meta(id);
                    out.sizes.push(m.size);
                    out.mtimes.push(m.mtime);
                }
                Kind::Dir => {
                    // (No room for the folder's path: the name index can say,
                    // this listing cannot hold it.)
                    let folder = out.paths.make_folder(shown)?;
                    list_below(store, id, folder, &mut out);
                }
                _ => {}
            }
            Some(out)
        })
        .map(Listing::indexed)
}

/// Every file the name index holds, sorted by path.
#[cfg(test)]
pub(super) fn name_index_files(index: &Index) -> Vec<(String, u64, i64)> {
    let mut files = index.with_store(|store| {
        let mut out = Vec::new();
        for id in 0..store.capacity_ids() as EntryId {
            // (A root is a folder, never a file.)
            if store.is_live(id) && store.kind(id) == Kind::File {
                let m = store.meta(id);
                out.push((display_path(store, id), m.size, m.mtime));
            }
        }
        out
    });
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    files
}

/// Read the pending files again (or drop those gone), and compare what
/// lies below the other paths (folders created, moved in or out, removed;
/// files removed) with the name index.
pub(super) fn refresh(s: &Shared, due: Vec<(String, u64)>) {
    let mut reads = Vec::new();
    let mut drops = Vec::new();
    // Not a file of the name index, and whether a file held here.
    let mut others: Vec<(&str, bool)> = Vec::new();
    for (path, _) in &due {
        match s.index.file(path) {
            Some((size, _)) => reads.push(Entry {
                path: path.as_str().into(),
                size,
            }),
            None => {
                drops.push(path.clone());
                let known = s.live.read().is_ok_and(|l| l.paths.get(path).is_some());
                others.push((path, known));
            }
        }
    }
    let read = read_files(s, &reads);
    {
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for p in &drops {
            live.drop_path(p);
        }
        for (path, reading) in read {
            live.insert(&path, reading);
        }
    }
    // Before the paths leave the pending set: a folder moved or created
    // stays pending (every file below it searched) until its files are read.
    // A path below another of these is covered by that one's comparison.
    let named: HashSet<&str> = others.iter().map(|&(p, _)| p).collect();
    let mut whole = false;
    for &(path, known) in &others {
        if path
            .match_indices('/')
            .any(|(i, _)| named.contains(&path[..i]))
        {
            continue;
        }
        // Where the name index cannot say what the path names now, compare
        // everything once (unless it was a file held here: dropped above).
        whole |= !reconcile_at(s, path) && !known;
    }
    if whole {
        reconcile(s, false);
    }
    clear_pending(s, &due);
}

/// A file read again: its path, and what the read gave.
type Reread = (Arc<str>, Reading);

/// Read files for the index (not past the budget).
pub(super) fn read_files(s: &Shared, entries: &[Entry]) -> Vec<Reread> {
    let budget = &s.config.budget;
    let mut x = Extractor::new();
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    let mut used = s.live.read().map_or(0, |l| l.text_bytes);
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        if s.stop.load(Ordering::Relaxed) {
            break;
        }
        let old = s.live.read().ok().and_then(|l| {
            l.paths
                .get(&e.path)
                .map(|id| *l.meta(id))
                .filter(|m| m.state.has_grams())
                .map_or(Some(0), |m| Some(m.size))
        });
        let room = used.saturating_sub(old.unwrap_or(0)) + e.size.min(budget.max_file_bytes)
            <= budget.max_total_bytes;
        let (meta, text) = if room {
            read::read(&s.roots, &e.path, budget.max_file_bytes, &mut buf)
        } else {
            (DocMeta::unread(e.size, DocState::OverBudget), Text::None)
        };
        let bytes: &[u8] = match &text {
            Text::Bytes => &buf,
            Text::Document(d) => d.text.as_bytes(),
            Text::Decoded(d) => d,
            Text::None => &[],
        };
        let grams = meta.state.has_grams().then(|| {
            let mut g = x.distinct(bytes).to_vec();
            g.sort_unstable();
            g.into_boxed_slice()
        });
        let table = build::segmented(meta.state, bytes, budget)
            .then(|| crate::segments::table(&mut x, bytes, &mut scratch).into_boxed_slice());
        if meta.state.has_grams() {
            used = used.saturating_sub(old.unwrap_or(0)) + meta.size;
        }
        out.push((e.path.clone(), Reading { meta, grams, table }));
    }
    let read = out.len() as u64;
    set_status(s, |st| st.files_reread += read);
    out
}

/// Files one part of a whole comparison lists at most (whole folders: more
/// when one folder holds more). Only a part's listing is held at once: a
/// listing of every file was 56 MB at 900,000 files, made every 30 s to
/// 10 min, and lifted a served 1M-entry tree past 256 MiB each time. (In
/// this crate's tests, a few: every comparison they make is in parts.)
const PART_FILES: usize = if cfg!(test) { 3 } else { 16_384 };

/// Compare the index with the name index (and, with `verify`, every file's
/// version with the disk): drop what is gone, read what is new or changed.
/// Whether it found a file to read again or to drop (something the change
/// feed did not bring).
///
/// The name index is listed folder by folder, a part at a time, its lock
/// let go between parts. A folder removed before its turn lists nothing
/// (its files are dropped at the end), one moved is listed where it is
/// then, and a folder made or a file moved meanwhile is on the change feed
/// (a file dropped that way is pending, so searched on disk, and read when
/// its turn comes).
pub(super) fn reconcile(s: &Shared, verify: bool) -> bool {
    let started = Instant::now();
    let folders: Vec<EntryId> = s.index.with_store(all_folders);
    // Numbers from here on are files read by this comparison itself.
    let first_new = s.live.read().unwrap_or_else(|p| p.into_inner()).metas.len();
    let mut listed = Bits::new(first_new);
    let (mut found, mut compared) = (false, 0u64);
    let mut at = 0;
    while at < folders.len() {
        if s.stop.load(Ordering::Relaxed) {
            return found;
        }
        let (listing, taken) = list_part(&s.index, &folders[at..], PART_FILES);
        at += taken;
        compared += listing.paths.len() as u64;
        let (reads, verified) = {
            let live = s.live.read().unwrap_or_else(|p| p.into_inner());
            check(s, &live, &listing, None, verify, |id| {
                if (id as usize) < first_new {
                    listed.set(id);
                }
            })
        };
        found |= apply(s, &listing, &reads, verified, Vec::new());
    }
    let drops: Vec<u32> = {
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        compared += live.paths.live() as u64;
        live.live_ids()
            .filter(|&id| (id as usize) < first_new && !listed.has(id))
            .collect()
    };
    found |= !drops.is_empty();
    apply(s, &Listing::default(), &[], Vec::new(), drops);
    set_status(s, |st| {
        st.whole_comparisons += 1;
        st.files_compared += compared;
    });
    tracing::debug!(
        files = compared,
        found,
        ms = started.elapsed().as_millis() as u64,
        "content index compared with the name index"
    );
    // Every file the name index held when this began is known now (read
    // files end as a version or a state); whatever changed since is on the
    // feed. (Stopped part-way, files may be missing: not complete.)
    if !s.stop.load(Ordering::Relaxed) {
        s.live.write().unwrap_or_else(|p| p.into_inner()).complete = true;
    }
    found
}

/// Every folder of the name index (roots first).
fn all_folders(store: &Store) -> Vec<EntryId> {
    let mut out = Vec::with_capacity(store.count_of(Kind::Dir) as usize);
    let mut stack: Vec<EntryId> = store.roots().iter().rev().copied().collect();
    while let Some(dir) = stack.pop() {
        out.push(dir);
        let at = stack.len();
        stack.extend(
            store
                .children(dir)
                .iter()
                .copied()
                .filter(|&c| store.kind(c) == Kind::Dir),
        );
        stack[at..].reverse();
    }
    out
}

/// The files directly in the first of `folders` (those still folders of
/// the name index), as [`list_files`] shows them, until `most` are listed;
/// and how many folders that took.
fn list_part(index: &Index, folders: &[EntryId], most: usize) -> (Listing, usize) {
    let (out, taken) = index.with_store(|store| {
        let mut out = Listing {
            paths: Paths::new(),
            sizes: Vec::with_capacity(most),
            mtimes: Vec::with_capacity(most),
        };
        out.paths.reserve(most, 0, 0);
        let single = store.roots().len() == 1;
        let mut taken = 0;
        for &dir in folders {
            if out.paths.len() >= most {
                break;
            }
            taken += 1;
            if !store.is_live(dir) || store.kind(dir) != Kind::Dir {
                continue;
            }
            let shown = display_path(store, dir);
            let folder = if single && store.parent(dir) == ferret_index::store::NONE {
                Some(TOP)
            } else {
                out.paths.make_folder(&shown)
            };
            let Some(folder) = folder else { continue };
            for &child in store.children(dir) {
                if store.kind(child) == Kind::File {
                    let name = ferret_names::shown(store.name(child));
                    out.add_file(folder, &name, store.meta(child));
                }
            }
        }
        (out, taken)
    });
    (out.indexed(), taken)
}

/// Compare what lies at or below the path `shown` with the name index: drop
/// the files held there that it no longer lists, read those it lists that
/// are new or changed. Work in proportion to that part of both trees, not
/// to either whole. `false` when the name index cannot say what the path
/// names ([`list_files_at`]): nothing was done.
///
/// `complete` is left as it is: if it held, every other file the name index
/// lists is still held, and what changed at or below the path since the
/// listing is on the feed.
pub(super) fn reconcile_at(s: &Shared, shown: &str) -> bool {
    let Some(listing) = list_files_at(&s.index, shown) else {
        return false;
    };
    compare(s, &listing, shown, false);
    true
}

/// The live files held at the path `shown` or below it (as a folder).
fn held_at(live: &Live, shown: &str) -> Vec<u32> {
    let mut out: Vec<u32> = live.paths.get(shown).into_iter().collect();
    if let Some(f) = live.paths.folder_of(shown) {
        out.extend(
            live.paths
                .files_below(f)
                .into_iter()
                .filter(|&id| live.is_live(id)),
        );
    }
    out
}

/// Compare `listing` (the files the name index holds at or below `at`)
/// with the files held here at or below `at`: drop what it does not list,
/// read what is new or changed. Whether there was any.
fn compare(s: &Shared, listing: &Listing, at: &str, verify: bool) -> bool {
    drain_feed(s);
    let (reads, verified, drops) = {
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        // Those the comparison covers: the files held at or below `at`.
        let held = held_at(&live, at);
        if held.is_empty() && listing.paths.len() == 0 {
            // (A file removed, a folder that held nothing: nothing to compare.)
            return false;
        }
        // A file the feed named that is still pending is left to be read
        // when its turn comes (it is searched until then): a folder written
        // file by file is read once, not twice.
        let pending = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        let mut listed: HashSet<u32> = HashSet::new();
        let (reads, verified) = check(s, &live, listing, Some(&pending), verify, |id| {
            listed.insert(id);
        });
        let compared = listing.paths.len() as u64 + held.len() as u64;
        let drops: Vec<u32> = held.into_iter().filter(|id| !listed.contains(id)).collect();
        set_status(s, |st| {
            st.folder_comparisons += 1;
            st.files_compared += compared;
        });
        (reads, verified, drops)
    };
    apply(s, listing, &reads, verified, drops)
}

/// The files of `listing` to read (by its numbers), and the held files it
/// found unchanged that were not yet checked against the disk (by number
/// here). Each held file it lists goes to `listed`. A file `pending` names
/// is not read here.
fn check(
    s: &Shared,
    live: &Live,
    listing: &Listing,
    pending: Option<&Pending>,
    verify: bool,
    mut listed: impl FnMut(u32),
) -> (Vec<u32>, Vec<u32>) {
    let mut reads: Vec<u32> = Vec::new();
    let mut verified: Vec<u32> = Vec::new();
    let mut to_read = |n: u32, path: &str| {
        if !pending.is_some_and(|p| p.paths.contains_key(path)) {
            reads.push(n);
        }
    };
    let mut path = String::new();
    // (The listing goes folder by folder.)
    let mut near = Near::default();
    for n in 0..listing.paths.len() as u32 {
        listing.paths.write(n, &mut path);
        let (size, mtime) = (listing.sizes[n as usize], listing.mtimes[n as usize]);
        let Some(id) = live.paths.get_near(&path, &mut near) else {
            to_read(n, &path);
            continue;
        };
        listed(id);
        let m = live.meta(id);
        let read_before = { m.mtime_s } != i64::MIN;
        let stale = { m.size } != size
            || (read_before && { m.mtime_s } != mtime)
            || matches!(
                m.state,
                DocState::Changed | DocState::Unreadable | DocState::DocumentPending
            )
            || (m.state == DocState::OverBudget
                && live.text_bytes + size <= s.config.budget.max_total_bytes)
            || (verify || !live.is_verified(id)) && !same_on_disk(&s.roots, &path, m);
        if stale {
            to_read(n, &path);
        } else if !live.is_verified(id) {
            verified.push(id);
        }
    }
    (reads, verified)
}

/// What a comparison found, applied: files checked, dropped, and read
/// (`reads` by `listing`'s numbers). Whether any was dropped or read.
fn apply(
    s: &Shared,
    listing: &Listing,
    reads: &[u32],
    verified: Vec<u32>,
    drops: Vec<u32>,
) -> bool {
    {
        // (Numbers stay valid: only this thread changes the index.)
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for id in verified {
            live.set_verified(id);
        }
        for id in &drops {
            live.drop_id(*id);
        }
    }
    for batch in reads.chunks(256) {
        let entries: Vec<Entry> = batch
            .iter()
            .map(|&n| Entry {
                path: listing.paths.path(n).into(),
                size: listing.sizes[n as usize],
            })
            .collect();
        let read = read_files(s, &entries);
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for (path, reading) in read {
            live.insert(&path, reading);
        }
    }
    !reads.is_empty() || !drops.is_empty()
}

/// Whether the file at `shown` is still the version `m` (size, times, inode).
pub(super) fn same_on_disk(roots: &Roots, shown: &str, m: &DocMeta) -> bool {
    let (folder, name) = split_shown(shown);
    open_folder(roots, folder).is_some_and(|dir| stat_in_is(&dir, name, m))
}

/// A shown path as its folder (as shown) and its name.
fn split_shown(shown: &str) -> (&str, &str) {
    shown.rsplit_once('/').unwrap_or((".", shown))
}

/// A folder (as shown) opened through its root.
fn open_folder(roots: &Roots, folder: &str) -> Option<cap_std::fs::Dir> {
    match roots.resolve(folder) {
        Ok(Target::In(root, rel)) if rel.is_root() => root.dir().try_clone().ok(),
        Ok(Target::In(root, rel)) => root.dir().open_dir(rel.as_os_path()).ok(),
        _ => None,
    }
}

/// Whether `name` in `dir` (not followed if a link) is the version `m`
/// describes; files never read (sensitive, too large) keep only their size.
/// (The casts are no-ops on x86-64, not on every target: `stat`'s field
/// types vary by architecture.)
#[allow(clippy::unnecessary_cast)]
fn stat_in_is(dir: &cap_std::fs::Dir, name: &str, m: &DocMeta) -> bool {
    // The name as shown: as written, else (escaped, see `ferret_names`) the
    // bytes it stands for, as the file layer reads it.
    let at = |name: &[u8]| rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
    let st = at(name.as_bytes()).or_else(|e| match ferret_names::escaped_bytes(name) {
        Some(bytes) => at(&bytes),
        None => Err(e),
    });
    let Ok(st) = st else {
        return false;
    };
    let size = st.st_size as u64;
    if { m.mtime_s } == i64::MIN {
        return size == { m.size };
    }
    size == { m.size }
        && st.st_mtime as i64 == { m.mtime_s }
        && st.st_mtime_nsec as u32 == { m.mtime_ns }
        && st.st_ctime as i64 == { m.ctime_s }
        && st.st_ctime_nsec as u32 == { m.ctime_ns }
        && st.st_ino as u64 == { m.ino }
}

/// Check every file of a loaded index against the disk and vouch for those
/// found as they were read; the others stay unchecked (searched directly).
/// Reads no file's text and writes nothing: for one-shot searches.
pub(super) fn verify_loaded(s: &Shared) -> usize {
    // By folder: each folder opened once, each file's status read relative
    // to it (`same_on_disk` opens the folder for each file).
    let live = s.live.read().unwrap_or_else(|p| p.into_inner());
    let mut todo: Vec<(u32, u32)> = live
        .live_ids()
        .filter(|&id| !live.is_verified(id))
        .map(|id| (live.paths.file(id).0, id))
        .collect();
    todo.sort_unstable();
    let mut same: Vec<u32> = Vec::new();
    let mut shown = String::new();
    for files in todo.chunk_by(|a, b| a.0 == b.0) {
        let folder = files[0].0;
        live.paths.write_folder(folder, &mut shown);
        let shown = if folder == TOP { "." } else { shown.as_str() };
        let Some(dir) = open_folder(&s.roots, shown) else {
            continue;
        };
        same.extend(
            files
                .iter()
                .filter(|&&(_, id)| stat_in_is(&dir, live.paths.file(id).1, live.meta(id)))
                .map(|&(_, id)| id),
        );
    }
    drop(todo);
    drop(live);
    let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
    for &id in &same {
        live.set_verified(id);
    }
    same.len()
}

/// Load the index file; its files are checked against the disk before the
/// index answers for them.
pub(super) fn load(s: &Shared) -> Result<(), LoadError> {
    let Some(path) = &s.file else {
        return Err(LoadError::Corrupt("no state directory"));
    };
    set_status(s, |st| st.state = "loading".into());
    let started = Instant::now();
    let bytes = match Bytes::map(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Corrupt("missing"));
        }
        Err(e) => {
            tracing::warn!(
                "content index {} unreadable ({e}); rebuilding",
                path.display()
            );
            return Err(LoadError::Corrupt("unreadable"));
        }
    };
    let discard = |e: LoadError| {
        tracing::warn!(
            "content index {} discarded: {e}; rebuilding",
            path.display()
        );
        let _ = std::fs::remove_file(path);
        e
    };
    let base = Base::open(bytes, s.key).map_err(discard)?;
    let paths = base.paths().map_err(discard)?;
    let metas: Vec<DocMeta> = (0..base.doc_count()).map(|i| base.meta(i)).collect();
    // Checking it and reading its files' table read every page: they leave
    // the process's memory, and queries bring back those they read.
    base.forget_pages();
    let mut live = Live::new(Some(base), paths, metas, false);
    // A file denied since the index was written: forget what it held.
    let mut shown = String::new();
    let denied: Vec<u32> = live
        .live_ids()
        .filter(|&id| {
            live.meta(id).state.has_grams() && {
                live.paths.write(id, &mut shown);
                is_sensitive_now(&s.roots, &shown)
            }
        })
        .collect();
    for id in denied {
        live.drop_id(id);
    }
    let files = live.metas.len();
    *s.live.write().unwrap_or_else(|p| p.into_inner()) = live;
    s.ready.store(true, Ordering::Release);
    let ms = started.elapsed().as_millis() as u64;
    set_status(s, |st| {
        st.state = "ready".into();
        st.loaded_from_disk = true;
        st.load_ms = Some(ms);
        st.last_error = None;
    });
    tracing::info!(files, ms, "content index loaded");
    Ok(())
}

pub(super) fn is_sensitive_now(roots: &Roots, shown: &str) -> bool {
    match roots.resolve(shown) {
        Ok(Target::In(_, rel)) => roots.policy.deny.is_sensitive(&rel),
        _ => false,
    }
}

/// Build the index from every file the name index holds.
pub(super) fn build_all(s: &Shared) -> Result<(), String> {
    set_status(s, |st| st.state = "building".into());
    s.building.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let Listing { paths, sizes, .. } = list_files(&s.index);
    let sink = match &s.file {
        Some(path) => Sink::file(path).map_err(|e| write_error(path, &e)),
        None => Ok(Sink::memory()),
    };
    let built = sink.and_then(|sink| {
        build::build(
            &s.roots,
            &paths,
            &sizes,
            &s.config.budget,
            s.key,
            sink,
            &s.progress,
            &s.stop,
        )
        .map_err(|e| match (&e, &s.file) {
            (BuildError::Io(io), Some(path)) => write_error(path, io),
            _ => e.to_string(),
        })
    });
    s.building.store(false, Ordering::Relaxed);
    match built {
        Ok(built) => {
            drop(sizes);
            let files = built.metas.len();
            let bytes = built.base.len();
            let mut live = Live::new(Some(built.base), paths, built.metas, true);
            // Built from every file the name index listed after the change
            // feed was followed (`ContentIndex::start`).
            live.complete = !s.stop.load(Ordering::Relaxed);
            *s.live.write().unwrap_or_else(|p| p.into_inner()) = live;
            s.ready.store(true, Ordering::Release);
            let ms = started.elapsed().as_millis() as u64;
            set_status(s, |st| {
                st.state = "ready".into();
                st.build_ms = Some(ms);
                st.last_error = None;
            });
            tracing::info!(files, bytes, ms, "content index built");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("content index not built: {e}; grep reads every file meanwhile");
            set_status(s, |st| {
                st.state = "failed".into();
                st.last_error = Some(e.clone());
            });
            Err(e)
        }
    }
}

pub(super) fn write_error(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "cannot write {}: {e}; free space in the state directory or choose another (--state-dir), or turn the index off (--content-index off)",
        path.display()
    )
}

/// Write the files re-read since the last merge into a new index file;
/// whether that worked.
pub(super) fn merge(s: &Shared) -> bool {
    let started = Instant::now();
    let result = {
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        let kept: Vec<u32> = live.live_ids().collect();
        let mut renumber = vec![u32::MAX; live.metas.len()];
        for (n, &id) in kept.iter().enumerate() {
            renumber[id as usize] = n as u32;
        }
        // The live files' paths alone, in a new set (what was dropped since
        // the last merge is forgotten there).
        let paths = live.paths.compacted(kept.iter().copied());
        let metas: Vec<DocMeta> = kept.iter().map(|&id| *live.meta(id)).collect();
        let verified: Vec<bool> = kept.iter().map(|&id| live.is_verified(id)).collect();
        drop(kept);
        let mut pairs = Vec::new();
        for (&id, grams) in &live.delta {
            let n = renumber[id as usize];
            if n != u32::MAX {
                pairs.extend(grams.iter().map(|&g| (u64::from(g) << 32) | u64::from(n)));
            }
        }
        let base_docs = live.base_docs();
        // The segment tables of the files kept: the base's, renumbered, and
        // those of the files read since.
        let mut tables: Vec<(u32, &[u8])> = Vec::new();
        if let Some(base) = &live.base {
            tables.extend(
                base.tables()
                    .filter(|&(id, _)| renumber[id as usize] != u32::MAX)
                    .map(|(id, t)| (renumber[id as usize], t)),
            );
        }
        tables.extend(
            live.delta_tables
                .iter()
                .filter(|(id, _)| renumber[**id as usize] != u32::MAX)
                .map(|(id, t)| (renumber[*id as usize], &t[..])),
        );
        tables.sort_unstable_by_key(|t| t.0);
        let mut sources: Vec<Box<dyn Source + '_>> = Vec::new();
        if let Some(base) = &live.base {
            sources.push(Box::new(BaseSource::new(base, &renumber[..base_docs])));
        }
        sources.push(Box::new(PairSource::new(pairs)));
        let sink = match &s.file {
            Some(path) => Sink::file(path).map_err(|e| write_error(path, &e)),
            None => Ok(Sink::memory()),
        };
        let text_bytes = live.text_bytes;
        let complete = live.complete;
        sink.and_then(|sink| {
            build::write(
                sink, sources, &paths, &metas, &tables, s.key, text_bytes, &s.stop,
            )
            .map_err(|e| match (&e, &s.file) {
                (BuildError::Io(io), Some(path)) => write_error(path, io),
                _ => e.to_string(),
            })
        })
        .map(|base| (base, paths, metas, verified, complete))
    };
    match result {
        Ok((base, paths, metas, verified, complete)) => {
            let mut fresh = Live::new(Some(base), paths, metas, false);
            for (id, v) in verified.into_iter().enumerate() {
                if v {
                    fresh.set_verified(id as u32);
                }
            }
            fresh.complete = complete;
            let files = fresh.metas.len();
            *s.live.write().unwrap_or_else(|p| p.into_inner()) = fresh;
            set_status(s, |st| st.merges += 1);
            tracing::debug!(
                files,
                ms = started.elapsed().as_millis() as u64,
                "content index merged"
            );
            true
        }
        Err(e) => {
            // The index in memory still answers; only the file is behind.
            tracing::warn!("content index not merged: {e}");
            set_status(s, |st| st.last_error = Some(e));
            false
        }
    }
}

#[cfg(test)]
mod reconcile_interval {
    use super::*;

    #[test]
    fn backs_off_while_nothing_is_found_and_comes_back_when_something_is() {
        // The served figures (this crate's tests run with an hour for both).
        let (first, most) = (Duration::from_secs(30), Duration::from_secs(600));
        let mut every = first;
        let mut seen = vec![every];
        for _ in 0..8 {
            every = next_reconcile(every, false, true, (first, most));
            seen.push(every);
        }
        let secs: Vec<u64> = seen.iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600, 600, 600]);
        assert_eq!(next_reconcile(most, true, true, (first, most)), first);
        assert_eq!(next_reconcile(most, false, false, (first, most)), first);
    }
}
