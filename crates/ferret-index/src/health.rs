//! What `ferret doctor` asks of the index's state without changing it: is the
//! snapshot usable, is the journal sound, how big would the index be.

use std::sync::atomic::AtomicU64;

use crate::{
    IndexConfig, IndexRoot, dirs,
    journal::Journal,
    rules::Chain,
    snapshot,
    store::{Kind, Meta, Store},
    walk,
};

/// The saved snapshot of a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotHealth {
    /// No persistence (`--no-persist`).
    Off,
    /// Nothing saved yet: the first start walks the roots.
    Missing,
    Usable {
        entries: usize,
        bytes: u64,
    },
    /// It would be discarded and rebuilt, for this reason.
    Unusable(String),
}

pub fn snapshot_health(config: &IndexConfig) -> SnapshotHealth {
    let Some(path) = config.snapshot_path() else {
        return SnapshotHealth::Off;
    };
    match snapshot::load(&path, &config.key()) {
        Ok(store) if store.roots().len() == config.roots.len() => SnapshotHealth::Usable {
            entries: store.len().saturating_sub(config.roots.len()),
            bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
        },
        Ok(_) => SnapshotHealth::Unusable("it was saved for other roots".into()),
        Err(snapshot::SnapshotError::Missing) => SnapshotHealth::Missing,
        Err(e) => SnapshotHealth::Unusable(e.to_string()),
    }
}

/// The journal of a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalHealth {
    Off,
    Missing,
    Sound { changes: u64 },
    Broken(String),
}

/// Open the journal (only when its file exists: a check creates nothing) and
/// run SQLite's integrity check.
pub fn journal_health(config: &IndexConfig) -> JournalHealth {
    let Some(path) = config.journal_path() else {
        return JournalHealth::Off;
    };
    if !path.exists() {
        return JournalHealth::Missing;
    }
    match Journal::open(
        &path,
        config.journal_max_age.as_millis() as i64,
        config.journal_max_rows,
    ) {
        Ok(j) if j.integrity_ok() => JournalHealth::Sound { changes: j.len() },
        Ok(_) => JournalHealth::Broken("SQLite's integrity check failed".into()),
        Err(e) => JournalHealth::Broken(e.to_string()),
    }
}

/// What walking a root finds, for sizing the index and the watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeSize {
    pub entries: u64,
    pub folders: u64,
    /// Bytes of all names.
    pub name_bytes: u64,
    /// Folders on network or FUSE file systems (below the root, with the
    /// file system's name; empty for the root itself), and folders reachable
    /// at two paths (named [`crate::walk::TWO_PATHS`]).
    pub network: Vec<(String, &'static str)>,
}

impl TreeSize {
    /// Memory the index takes for these entries (measured in
    /// docs/benchmarks.md): about 70 bytes an entry for its record, orders and
    /// lists, plus the names (at most once each; real trees repeat many).
    pub fn index_bytes(&self) -> u64 {
        self.entries * 70 + self.name_bytes
    }
}

/// Walk `root` as the index would (same rules, names and metadata only).
pub fn measure(root: &IndexRoot, rules: crate::Rules, progress: &AtomicU64) -> TreeSize {
    let Ok(fd) = dirs::open_root(&root.walk_path) else {
        return TreeSize::default();
    };
    let mut store = Store::new();
    let top = store.add_root(b"", Meta::default());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let spec = walk::Spec {
        rules,
        progress,
        stop: &stop,
        on_folder: None,
        shallow: false,
    };
    let stats = walk::walk(&mut store, top, fd, Vec::new(), Chain::root(None), &spec);
    let two_paths = walk::folders_at_two_paths(&store, &[top])
        .into_iter()
        .map(|id| (store.rel_path(id), walk::TWO_PATHS));
    let network = stats
        .network
        .into_iter()
        .chain(two_paths)
        .map(|(rel, fs)| (ferret_names::shown_path(&rel).into_owned(), fs))
        .collect();
    crate::orders::rebuild_store(&mut store);
    TreeSize {
        entries: stats.entries,
        folders: store.count_of(Kind::Dir).saturating_sub(1),
        name_bytes: store.name_bytes() as u64,
        network,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Index;

    #[test]
    fn a_fresh_state_is_missing_and_a_saved_one_usable() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir(tree.path().join("d")).unwrap();
        std::fs::write(tree.path().join("d/abc.txt"), "x").unwrap();
        let state = tempfile::tempdir().unwrap();
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tree.path())]);
        config.state_dir = Some(state.path().to_path_buf());
        config.watch = false;
        assert_eq!(snapshot_health(&config), SnapshotHealth::Missing);
        assert_eq!(journal_health(&config), JournalHealth::Missing);
        assert!(
            !config.journal_path().unwrap().exists(),
            "checking creates nothing"
        );

        let index = Index::open(config.clone()).unwrap();
        index.build_now(None);
        index.save_snapshot().unwrap();
        assert!(matches!(
            snapshot_health(&config),
            SnapshotHealth::Usable { entries: 2, .. }
        ));
        assert_eq!(journal_health(&config), JournalHealth::Sound { changes: 0 });

        std::fs::write(config.snapshot_path().unwrap(), b"not a snapshot").unwrap();
        assert!(matches!(
            snapshot_health(&config),
            SnapshotHealth::Unusable(_)
        ));

        let size = measure(&config.roots[0], config.rules, &AtomicU64::new(0));
        assert_eq!(
            size,
            TreeSize {
                entries: 2,
                folders: 1,
                name_bytes: 8,
                network: Vec::new(),
            }
        );
        assert_eq!(size.index_bytes(), 2 * 70 + 8);
        assert_eq!(IndexConfig::new(vec![]).snapshot_path(), None);
        assert_eq!(
            snapshot_health(&IndexConfig::new(vec![])),
            SnapshotHealth::Off
        );
    }
}
