//! A content index for changed settings made from the running one: when it
//! answers for the same files alike (the same ignore rules, size bound and
//! deny patterns, and paths shown alike), what the running one holds goes
//! over, and only the files it does not hold (those of a new root) are
//! read; those of a root that left are dropped. Otherwise (other rules, or
//! one root becoming several, which changes every path) it is built as at
//! start.
//!
//! The running index stops first and its thread ends, so that a file it was
//! reading lands in what is taken over; the paths its feed named and it had
//! not read again go over as pending. The files taken over are not read
//! again, nor checked against the disk: the running index held their
//! current versions (it answered for them). The index file is written under
//! the new settings' name (from what is held: no file is read) once they
//! have held for [`FILE_AFTER`], so that a restart with them loads it, and
//! settings changed again meanwhile do not write it for nothing.

use super::*;
use worker::{drain_feed, reconcile, set_status};

/// How long the running index's thread may take to end (it ends between two
/// files). Past it, every file taken over is checked against the disk.
const END_WAIT: Duration = Duration::from_secs(10);

/// How long the new settings hold before what was taken over is written
/// under their name.
const FILE_AFTER: Duration = Duration::from_secs(30);

impl ContentIndex {
    /// A content index over `roots` (the files `index` lists) that takes
    /// over what `running` holds when it starts, if `running` is ready and
    /// answers for the same files alike ([`ContentIndex::adopts`]); else
    /// one that loads or builds as [`ContentIndex::new`] does. Shut
    /// `running` down once this one serves.
    pub fn adopting(
        config: Config,
        roots: Arc<Roots>,
        index: Index,
        running: &ContentIndex,
    ) -> ContentIndex {
        let new = ContentIndex::new(config, roots, index);
        if running.is_ready() && alike(&new.shared, &running.shared) {
            *new.shared
                .adopt_from
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(running.clone());
            new.shared.adopting.store(true, Ordering::Release);
        }
        new
    }

    /// How this index is run.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Whether `other` is this very index (a clone of it), not another.
    pub fn same_as(&self, other: &ContentIndex) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Whether this index takes over another's files when it starts (until
    /// it has; then it is ready).
    pub fn adopts(&self) -> bool {
        self.shared.adopting.load(Ordering::Acquire)
    }
}

/// Whether `a` answers for the files `b` holds as `b` does.
fn alike(a: &Shared, b: &Shared) -> bool {
    let (ia, ib) = (a.index.config(), b.index.config());
    let deny = |s: &Shared| {
        let mut d: Vec<String> = s.roots.policy.deny.extra_patterns().to_vec();
        d.sort_unstable();
        d.dedup();
        d
    };
    let shown_alike = match (ia.roots.as_slice(), ib.roots.as_slice()) {
        ([x], [y]) => x.name == y.name && x.path == y.path,
        (x, y) => x.len() > 1 && y.len() > 1,
    };
    shown_alike
        && ia.rules.hidden == ib.rules.hidden
        && ia.rules.no_ignore == ib.rules.no_ignore
        && a.config.budget.max_file_bytes == b.config.budget.max_file_bytes
        && a.config.require_watcher == b.config.require_watcher
        && deny(a) == deny(b)
}

/// In this index's thread, once the name index is ready: take over the
/// running index's files, then read what it did not hold and drop what is
/// no longer listed. Whether it did (else the index loads or builds).
pub(super) fn take_over(s: &Shared) -> bool {
    let Some(running) = s
        .adopt_from
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    else {
        return false;
    };
    let done = Done(s);
    let r = &running.shared;
    r.stop.store(true, Ordering::Relaxed);
    let until = Instant::now() + END_WAIT;
    while !r.ended.load(Ordering::Acquire) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let ended = r.ended.load(Ordering::Acquire);
    drain_feed(r);
    let mut live = std::mem::take(&mut *r.live.write().unwrap_or_else(|p| p.into_inner()));
    // The files of a new root are not among them until `reconcile` below
    // has listed them: until then `answer` must not take what is held for
    // every file.
    live.complete = false;
    r.ready.store(false, Ordering::Release);
    let pending = std::mem::take(&mut r.pending.lock().unwrap_or_else(|p| p.into_inner()).paths);
    set_status(r, |st| {
        st.state = "handed over to the content index of the new settings".into()
    });
    let taken = live.metas.len();
    *s.live.write().unwrap_or_else(|p| p.into_inner()) = live;
    {
        let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        for (path, (_, at)) in pending {
            p.seq += 1;
            let seq = p.seq;
            p.paths.insert(path, (seq, at));
        }
    }
    s.ready.store(true, Ordering::Release);
    set_status(s, |st| {
        st.state = "ready".into();
        st.last_error = None;
    });
    // Files of new roots read, those of roots that left dropped; every
    // file checked against the disk only if the running thread did not end
    // in time (a read it had under way may be lost).
    reconcile(s, !ended);
    // Those taken over and still held as they were (a file read again is
    // held anew, after them).
    let files = s
        .live
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .live_ids()
        .take_while(|&id| (id as usize) < taken)
        .count() as u64;
    set_status(s, |st| st.carried_files = Some(files));
    tracing::info!(files, "content index made from the running one");
    s.foreign_file.store(s.file.is_some(), Ordering::Relaxed);
    drop(done);
    true
}

/// Marks the take-over done however it ends.
struct Done<'a>(&'a Shared);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.adopting.store(false, Ordering::Release);
    }
}

/// Whether what was taken over is due to be written under this index's
/// name (`last_merge`: when the thread last wrote, or started).
pub(super) fn file_due(s: &Shared, last_merge: Instant) -> bool {
    s.foreign_file.load(Ordering::Relaxed) && last_merge.elapsed() >= FILE_AFTER
}

/// This index's file now holds what was taken over.
pub(super) fn file_written(s: &Shared) {
    s.foreign_file.store(false, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ferret_fs::{Policy, RootSpec, Roots};
    use ferret_index::{Index, IndexConfig, IndexRoot};

    use super::*;

    fn open(
        dirs: &[(&str, &std::path::Path)],
        state: &std::path::Path,
    ) -> (Arc<Roots>, IndexConfig) {
        let specs: Vec<RootSpec> = dirs
            .iter()
            .map(|(n, p)| format!("{n}={}", p.display()).parse().unwrap())
            .collect();
        let roots = Roots::open(&specs, Policy::default()).unwrap();
        let mut config = IndexConfig::new(
            roots
                .roots()
                .iter()
                .map(|r| IndexRoot::new(r.name.clone(), r.path.clone()))
                .collect(),
        );
        config.state_dir = Some(state.to_path_buf());
        (Arc::new(roots), config)
    }

    fn wait_for(what: &str, f: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(20);
        while !f() {
            assert!(Instant::now() < until, "timed out: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Of `files`, those the index says to search for `needle`.
    fn narrowed(c: &ContentIndex, needle: &str, files: &[&str]) -> Vec<String> {
        let grams = crate::pattern::query(&crate::PatternSpec {
            text: needle,
            literal: true,
            case_insensitive: false,
            multiline: false,
        });
        let listed = name_index_files(&c.shared.index);
        let list: Vec<(&str, i64, u64)> = listed
            .iter()
            .filter(|(p, _, _)| files.contains(&p.as_str()))
            .map(|(p, size, m)| (p.as_str(), *m, *size))
            .collect();
        let n = c.narrow(&grams, &list, false).unwrap();
        list.iter()
            .zip(n.keep)
            .filter(|(_, k)| *k)
            .map(|((p, _, _), _)| p.to_string())
            .collect()
    }

    /// Two roots to two others (one kept): the kept root's files are not
    /// read again, the new root's are read, the gone root's dropped.
    #[test]
    fn a_kept_roots_files_go_over_unread() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        for d in [&a, &b, &c] {
            std::fs::create_dir_all(d).unwrap();
        }
        for i in 0..40 {
            std::fs::write(a.join(format!("a{i}.txt")), format!("alpha {i}")).unwrap();
        }
        std::fs::write(b.join("b.txt"), "bravo").unwrap();
        std::fs::write(c.join("c.txt"), "charlie").unwrap();
        let (roots, config) = open(&[("a", &a), ("b", &b)], &state);
        let index = Index::open(config).unwrap();
        index.start();
        let old = ContentIndex::new(Config::new(Some(state.clone())), roots, index.clone());
        old.start();
        wait_for("the first content index", || old.is_ready());
        assert_eq!(old.status().indexed_files, 41);
        let (roots, config) = open(&[("a", &a), ("c", &c)], &state);
        let new_index = Index::open_adopting(config, &index).unwrap();
        new_index.start();
        let new = ContentIndex::adopting(
            Config::new(Some(state.clone())),
            roots,
            new_index.clone(),
            &old,
        );
        assert!(new.adopts());
        new.start();
        wait_for("the new content index with c's file", || {
            let st = new.status();
            new.is_ready() && st.indexed_files == 41 && st.carried_files.is_some()
        });
        let st = new.status();
        assert_eq!(st.carried_files, Some(40), "a's, not b's");
        assert!(!old.is_ready());
        assert_eq!(
            narrowed(&new, "charlie", &["a/a1.txt", "c/c.txt"]),
            ["c/c.txt"]
        );
        assert_eq!(
            narrowed(&new, "alpha 3", &["a/a3.txt", "a/a4.txt", "c/c.txt"]),
            ["a/a3.txt"]
        );
        // Its own file is written once the settings have held a while.
        assert!(!new.file().unwrap().exists());
        assert!(file_due(&new.shared, Instant::now() - FILE_AFTER));
        // One root becoming... another one: paths change, built anew.
        let (roots, config) = open(&[("a", &a)], &state);
        let third_index = Index::open_adopting(config, &new_index).unwrap();
        let third = ContentIndex::adopting(Config::new(Some(state)), roots, third_index, &new);
        assert!(!third.adopts());
        for c in [old, new, third] {
            c.shutdown();
        }
        index.shutdown();
        new_index.shutdown();
    }
}
