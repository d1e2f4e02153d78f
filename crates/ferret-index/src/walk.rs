//! Walking a folder into the store, in parallel, without ever leaving the root.
//!
//! Each folder is opened relative to its parent's descriptor
//! (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, `O_DIRECTORY | O_NOFOLLOW`),
//! read with `getdents64`, and its entries described with
//! `statx(dirfd, name, AT_SYMLINK_NOFOLLOW)` (size, times and mode in one call).
//! No path string below the root reaches the kernel, so a folder swapped for a
//! symlink while it is walked is refused by the open, never followed. Ignore files
//! are read through the folder's descriptor ([`crate::rules`]). Folders are
//! handed to `on_folder` (the watcher) before they are read, so no change falls
//! between the watch and the listing. Names and metadata only: file contents are
//! never read.

use std::{
    mem::MaybeUninit,
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use rustix::fs::{AtFlags, FileType, RawDir, StatxFlags};

use crate::dirs::{ident, open_child};
use crate::names::name_order;
use crate::rules::{Chain, IGNORE_FILES, OWN_TEMP_PREFIX, Rules, excluded_name, folder_rules};
use crate::store::{EntryId, Kind, Meta, NewEntry, Store, UNKNOWN_TIME};

/// What a walk met besides the entries it added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub entries: u64,
    pub folders: u64,
    /// Folders that could not be read (permissions).
    pub unreadable: u64,
    /// Entries that vanished or changed kind between being listed and being
    /// opened or described (the walk saw the tree move under it).
    pub raced: u64,
    /// Folders whose listing raced with a change, by entry id: their parents
    /// deserve another look once the tree is still.
    pub recheck: Vec<EntryId>,
    /// ferret's own temporary files met (never indexed), by their path below
    /// the root: a killed write leaves one behind.
    pub own_temps: Vec<Vec<u8>>,
    /// Folders on a network or FUSE file system where the walk entered one
    /// (a root on one, or a mount point below it), by their path below the
    /// root, and the file system's name: inotify does not hear changes made
    /// there by other machines.
    pub network: Vec<(Vec<u8>, &'static str)>,
}

/// What the network folders' list names a folder reachable at another path
/// by ([`folders_at_two_paths`]: the same device and inode, a bind mount):
/// inotify watches a folder once, so a change in it is heard at one of its
/// paths only.
pub const TWO_PATHS: &str = "bind mount";

/// What the network folders' list names the folder of a file mounted over
/// another (a file bind mount): inotify reports a file's changes to the
/// folder it was reached by, which is not this one, so the folder's files
/// are read whatever the indexes hold, and the folder is read again every
/// `--rescan-every`.
pub const FILE_MOUNT: &str = "a file mounted in it";

/// The folders below `tops` (themselves included) that share their device
/// and inode with another of them: one folder at two paths, as a bind mount
/// makes it; of those, the ones whose parent is not one (the folders inside
/// a bind mount share their identities too). The store's folder table is
/// read first (a tree without any costs a sort of the folders'
/// identities); only then are the trees walked.
pub(crate) fn folders_at_two_paths(store: &Store, tops: &[EntryId]) -> Vec<EntryId> {
    let mut idents: Vec<(u64, u64)> = store
        .dirs
        .iter()
        .map(|d| (d.dev, d.ino))
        .filter(|&i| i != (0, 0))
        .collect();
    idents.sort_unstable();
    let mut twice: Vec<(u64, u64)> = idents
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    twice.dedup();
    if twice.is_empty() {
        return Vec::new();
    }
    // The live folders below the tops (the table may hold folders of other
    // trees).
    let mut found: Vec<((u64, u64), EntryId)> = Vec::new();
    let mut stack = tops.to_vec();
    while let Some(id) = stack.pop() {
        if let Some(d) = store.dir(id)
            && twice.binary_search(&(d.dev, d.ino)).is_ok()
        {
            found.push(((d.dev, d.ino), id));
        }
        stack.extend(
            store
                .children(id)
                .iter()
                .filter(|&&c| store.kind(c) == Kind::Dir),
        );
    }
    found.sort_unstable();
    let mut out = Vec::new();
    for group in found.chunk_by(|a, b| a.0 == b.0) {
        if group.len() > 1 {
            out.extend(group.iter().map(|&(_, id)| id));
        }
    }
    out.sort_unstable();
    // The top of each such subtree: the folders inside a bind mount are at
    // two paths as well, and are named with it.
    out.iter()
        .copied()
        .filter(|&id| tops.contains(&id) || out.binary_search(&store.parent(id)).is_err())
        .collect()
}

/// The file systems whose changes inotify may not hear (made by another
/// machine, or behind a FUSE daemon), by `statfs` magic: a name for operators.
pub(crate) fn network_fs(magic: i64) -> Option<&'static str> {
    // The magic numbers of linux/magic.h (and fs/smb's SMB2 and CIFS).
    Some(match magic as u32 {
        0x6969 => "nfs",
        0x517b => "smb",
        0xff53_4d42 => "cifs",
        0xfe53_4d42 => "smb2",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        0x00c3_6400 => "ceph",
        0x5346_414f => "afs",
        0x7375_7245 => "coda",
        0x0bd0_0bd0 => "lustre",
        0x0116_1970 => "gfs2",
        0x4741_5346 => "glusterfs",
        _ => return None,
    })
}

/// Whether the open folder lies on such a file system, and which.
fn network_fs_of(fd: BorrowedFd<'_>) -> Option<&'static str> {
    let st = rustix::fs::fstatfs(fd).ok()?;
    #[allow(clippy::unnecessary_cast, reason = "f_type's width differs by target")]
    network_fs(st.f_type as i64)
}

/// What a walk calls with each folder's open descriptor and entry, before the
/// folder is read.
pub(crate) type OnFolder<'a> = &'a (dyn Fn(BorrowedFd<'_>, EntryId) + Sync);

/// How to walk.
pub(crate) struct Spec<'a> {
    pub rules: Rules,
    pub progress: &'a AtomicU64,
    pub stop: &'a AtomicBool,
    /// Called with each folder's open descriptor and entry before it is read.
    pub on_folder: Option<OnFolder<'a>>,
    /// Only the walked folder's own entries: its subfolders are listed, not
    /// read.
    pub shallow: bool,
}

/// A folder to read: opened from its parent's descriptor by name, or already open.
struct Job {
    dir: Arc<OwnedFd>,
    name: Option<Vec<u8>>,
    folder: EntryId,
    /// Its path below the walked folder (for ignore rules).
    rel: Vec<u8>,
    /// The rules of its parent.
    chain: Arc<Chain>,
    /// Device and inode as listed in its parent.
    ident: (u64, u64),
    /// The parent's device (0 for the walk's top): a folder on another
    /// device is a mount point, whose file system is looked at.
    parent_dev: u64,
}

struct Queue {
    jobs: Vec<Job>,
    active: usize,
}

/// Walk everything below the open folder `dir` into `store`, under `top` (an
/// entry with no children yet). `rel` is the folder's path below its root
/// (empty for a root, whose `.git/info/exclude` then counts); `chain` holds the
/// rules of the folders above it.
pub(crate) fn walk(
    store: &mut Store,
    top: EntryId,
    dir: OwnedFd,
    rel: Vec<u8>,
    chain: Arc<Chain>,
    spec: &Spec<'_>,
) -> WalkStats {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    if let Ok(id) = ident(dir.as_fd()) {
        store.set_ident(top, id);
    }
    let queue = Mutex::new(Queue {
        jobs: vec![Job {
            dir: Arc::new(dir),
            name: None,
            folder: top,
            rel,
            chain,
            ident: (0, 0),
            parent_dev: 0,
        }],
        active: 0,
    });
    let wake = Condvar::new();
    let store = Mutex::new(store);
    let stats = Mutex::new(WalkStats::default());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut scratch = Scratch::new();
                let mut local = WalkStats::default();
                loop {
                    let job = {
                        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                        loop {
                            if let Some(job) = q.jobs.pop() {
                                q.active += 1;
                                break Some(job);
                            }
                            if q.active == 0 {
                                wake.notify_all();
                                break None;
                            }
                            q = wake.wait(q).unwrap_or_else(|p| p.into_inner());
                        }
                    };
                    let Some(job) = job else { break };
                    let more = if spec.stop.load(Ordering::Relaxed) {
                        Vec::new()
                    } else {
                        read_folder(job, spec, &store, &mut scratch, &mut local)
                    };
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    if !spec.shallow {
                        q.jobs.extend(more);
                    }
                    q.active -= 1;
                    wake.notify_all();
                }
                let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
                s.entries += local.entries;
                s.folders += local.folders;
                s.unreadable += local.unreadable;
                s.raced += local.raced;
                s.recheck.append(&mut local.recheck);
                s.own_temps.append(&mut local.own_temps);
                s.network.append(&mut local.network);
            });
        }
    });
    stats.into_inner().unwrap_or_else(|p| p.into_inner())
}

fn kind_of_mode(mode: u32) -> Kind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

pub(crate) fn meta_of_statx(st: &rustix::fs::Statx) -> Meta {
    let btime = if st.stx_mask & StatxFlags::BTIME.bits() != 0 {
        st.stx_btime.tv_sec
    } else {
        UNKNOWN_TIME
    };
    let is_dir = FileType::from_raw_mode(u32::from(st.stx_mode)) == FileType::Directory;
    Meta {
        size: if is_dir { 0 } else { st.stx_size },
        mtime: st.stx_mtime.tv_sec,
        btime,
        mode: u32::from(st.stx_mode),
    }
}

/// Describe `name` in `dir` without following it: kind, metadata, and for
/// folders their device and inode.
pub(crate) fn describe(
    dir: BorrowedFd<'_>,
    name: &[u8],
) -> std::io::Result<(Kind, Meta, (u64, u64))> {
    let st = rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::SIZE
            | StatxFlags::MTIME
            | StatxFlags::BTIME
            | StatxFlags::INO,
    )?;
    let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
    Ok((
        kind_of_mode(u32::from(st.stx_mode)),
        meta_of_statx(&st),
        (dev, st.stx_ino),
    ))
}

/// What a walker thread reuses from one folder to the next, so that a walk
/// allocates nothing per entry.
#[derive(Default)]
struct Scratch {
    buf: Vec<MaybeUninit<u8>>,
    /// The folder's names, end to end.
    names: Vec<u8>,
    /// Each listed name (start, end in `names`) and its type from the listing.
    listed: Vec<(u32, u32, FileType)>,
    /// The entries kept: name (start, end) and what `statx` said.
    kept: Vec<(u32, u32, NewEntry)>,
    ids: Vec<EntryId>,
    rel: Vec<u8>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            buf: vec![MaybeUninit::uninit(); 64 * 1024],
            ..Scratch::default()
        }
    }
}

/// Read one folder: open it, hand it to the watcher, list it, describe and
/// store its entries; returns its subfolders.
fn read_folder(
    job: Job,
    spec: &Spec<'_>,
    store: &Mutex<&mut Store>,
    scratch: &mut Scratch,
    stats: &mut WalkStats,
) -> Vec<Job> {
    let fd: Arc<OwnedFd> = match &job.name {
        None => job.dir.clone(),
        Some(name) => match open_child(job.dir.as_fd(), name) {
            Ok(fd) => Arc::new(fd),
            Err(e) => {
                match e.raw_os_error() {
                    Some(code) if code == rustix::io::Errno::ACCESS.raw_os_error() => {
                        stats.unreadable += 1
                    }
                    _ => {
                        // Gone, or no longer a folder (a link now): never followed.
                        stats.raced += 1;
                        stats.recheck.push(job.folder);
                    }
                }
                return Vec::new();
            }
        },
    };
    if job.name.is_some()
        && let Ok(found) = ident(fd.as_fd())
        && found != job.ident
    {
        // Another folder took its place between the listing and the open: it
        // lies inside the root all the same, but its parent deserves a look.
        stats.raced += 1;
        stats.recheck.push(job.folder);
        lock(store).set_ident(job.folder, found);
    }
    let dev = if job.ident == (0, 0) {
        ident(fd.as_fd()).map_or(0, |i| i.0)
    } else {
        job.ident.0
    };
    if (job.parent_dev == 0 || dev != job.parent_dev)
        && let Some(fs) = network_fs_of(fd.as_fd())
    {
        stats.network.push((job.rel.clone(), fs));
    }
    if let Some(hook) = spec.on_folder {
        hook(fd.as_fd(), job.folder);
    }
    stats.folders += 1;
    let Scratch {
        buf,
        names,
        listed,
        kept,
        ids,
        rel,
    } = scratch;
    names.clear();
    listed.clear();
    kept.clear();
    let mut present = [false; 2];
    let mut dir = RawDir::new(fd.as_fd(), buf);
    while let Some(entry) = dir.next() {
        let Ok(entry) = entry else {
            stats.raced += 1;
            break;
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        for (i, f) in IGNORE_FILES.iter().enumerate() {
            if name == *f {
                present[i] = true;
            }
        }
        if excluded_name(spec.rules, name) {
            if name.starts_with(OWN_TEMP_PREFIX) && entry.file_type() == FileType::RegularFile {
                let mut path = job.rel.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name);
                stats.own_temps.push(path);
            }
            continue;
        }
        let start = names.len() as u32;
        names.extend_from_slice(name);
        listed.push((start, names.len() as u32, entry.file_type()));
    }
    let at_root = job.rel.is_empty();
    let chain = if spec.rules.no_ignore {
        job.chain.clone()
    } else {
        let rules = (present.iter().any(|&p| p) || at_root)
            .then(|| folder_rules(fd.as_fd(), at_root, present))
            .flatten();
        Chain::child(&job.chain, &job.rel, rules)
    };
    let ignored = |name: &[u8], is_dir: bool, rel: &mut Vec<u8>| -> bool {
        if spec.rules.no_ignore {
            return false;
        }
        rel.clear();
        if !job.rel.is_empty() {
            rel.extend_from_slice(&job.rel);
            rel.push(b'/');
        }
        rel.extend_from_slice(name);
        chain.ignored(rel, is_dir)
    };
    for &(a, b, ft) in listed.iter() {
        let name = &names[a as usize..b as usize];
        let listed_dir = ft == FileType::Directory;
        if ft != FileType::Unknown && ignored(name, listed_dir, rel) {
            continue;
        }
        let (kind, meta, ident) = match describe(fd.as_fd(), name) {
            Ok(d) => d,
            Err(_) => {
                stats.raced += 1;
                continue;
            }
        };
        if (ft == FileType::Unknown || listed_dir != (kind == Kind::Dir))
            && ignored(name, kind == Kind::Dir, rel)
        {
            continue;
        }
        kept.push((a, b, NewEntry { kind, meta, ident }));
    }
    kept.sort_unstable_by(|x, y| {
        name_order(
            &names[x.0 as usize..x.1 as usize],
            &names[y.0 as usize..y.1 as usize],
        )
    });
    let count = kept.len() as u64;
    lock(store).insert_walked(
        job.folder,
        kept.iter()
            .map(|&(a, b, e)| (&names[a as usize..b as usize], e)),
        ids,
    );
    stats.entries += count;
    spec.progress.fetch_add(count, Ordering::Relaxed);
    kept.iter()
        .zip(ids.iter())
        .filter(|((_, _, e), _)| e.kind == Kind::Dir)
        .map(|(&(a, b, e), &folder)| {
            let name = names[a as usize..b as usize].to_vec();
            let rel = if job.rel.is_empty() {
                name.clone()
            } else {
                [&job.rel[..], b"/", &name].concat()
            };
            Job {
                dir: fd.clone(),
                name: Some(name),
                folder,
                rel,
                chain: chain.clone(),
                ident: e.ident,
                parent_dev: dev,
            }
        })
        .collect()
}

fn lock<'a, 'b>(m: &'a Mutex<&'b mut Store>) -> std::sync::MutexGuard<'a, &'b mut Store> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dirs::open_root;

    fn walk_dir(path: &std::path::Path, rules: Rules) -> (Store, WalkStats) {
        let mut store = Store::new();
        let root = store.add_root(b"r", Meta::default());
        let progress = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let spec = Spec {
            rules,
            progress: &progress,
            stop: &stop,
            on_folder: None,
            shallow: false,
        };
        let stats = walk(
            &mut store,
            root,
            open_root(path).unwrap(),
            Vec::new(),
            Chain::root(None),
            &spec,
        );
        assert_eq!(progress.load(Ordering::Relaxed), stats.entries);
        (store, stats)
    }

    #[test]
    fn network_file_systems_are_named_by_their_magic() {
        assert_eq!(network_fs(0x6969), Some("nfs"));
        assert_eq!(network_fs(0xff53_4d42), Some("cifs"));
        assert_eq!(network_fs(0x6573_5546), Some("fuse"));
        // ext4, tmpfs, btrfs, xfs, overlayfs: local, inotify hears them.
        for local in [0xef53, 0x0102_1994, 0x9123_683e, 0x5846_5342, 0x794c_7630] {
            assert_eq!(network_fs(local), None, "{local:#x}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let (_, stats) = walk_dir(tmp.path(), Rules::default());
        assert!(stats.network.is_empty(), "{:?}", stats.network);
    }

    /// A folder reachable at two paths (a bind mount) is named at both; the
    /// folders inside it are not named again.
    #[test]
    fn a_folder_at_two_paths_is_named_at_both() {
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let a = s.insert_new(root, b"a", Kind::Dir, Meta::default());
        let b = s.insert_new(root, b"b", Kind::Dir, Meta::default());
        let c = s.insert_new(a, b"c", Kind::Dir, Meta::default());
        let d = s.insert_new(b, b"d", Kind::Dir, Meta::default());
        for (id, ino) in [(root, 1), (a, 2), (b, 2), (c, 3), (d, 4)] {
            s.set_ident(id, (7, ino));
        }
        assert_eq!(folders_at_two_paths(&s, &[root]), vec![a, b]);
        // Below one of them only, no other path is seen; below both, both.
        assert_eq!(folders_at_two_paths(&s, &[a]), Vec::<EntryId>::new());
        assert_eq!(folders_at_two_paths(&s, &[a, b]), vec![a, b]);
        // The root at two paths; unknown identities never count.
        s.set_ident(d, (7, 1));
        s.set_ident(c, (0, 0));
        let e = s.insert_new(root, b"e", Kind::Dir, Meta::default());
        s.set_ident(e, (0, 0));
        assert_eq!(folders_at_two_paths(&s, &[root]), vec![root]);
        // A tree without: nothing.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("x/y")).unwrap();
        let (store, _) = walk_dir(tmp.path(), Rules::default());
        assert!(folders_at_two_paths(&store, store.roots()).is_empty());
    }

    #[test]
    fn walks_with_rules_and_never_follows_links() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        let t = tmp.path();
        std::fs::create_dir_all(t.join("src/deep")).unwrap();
        std::fs::create_dir_all(t.join("target/debug")).unwrap();
        std::fs::create_dir_all(t.join(".git/info")).unwrap();
        std::fs::write(t.join(".git/info/exclude"), "*.bak\n").unwrap();
        std::fs::write(t.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(t.join("src/.ignore"), "*.tmp\n").unwrap();
        for f in [
            "src/main.rs",
            "src/deep/x.rs",
            "a.log",
            "b.bak",
            "src/c.tmp",
            "target/debug/app",
            ".hidden",
        ] {
            std::fs::write(t.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(outside.path(), t.join("src/out")).unwrap();
        let (store, stats) = walk_dir(t, Rules::default());
        let root = store.roots()[0];
        let mut paths: Vec<String> = Vec::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            for &c in store.children(id) {
                paths.push(String::from_utf8_lossy(&store.rel_path(c)).into_owned());
                stack.push(c);
            }
        }
        paths.sort();
        assert_eq!(
            paths,
            ["src", "src/deep", "src/deep/x.rs", "src/main.rs", "src/out"]
        );
        let link = store.lookup(root, b"src/out").unwrap();
        assert_eq!(store.kind(link), Kind::Symlink);
        assert_eq!(stats.folders, 3);
        let (store, _) = walk_dir(
            t,
            Rules {
                hidden: true,
                no_ignore: true,
            },
        );
        assert!(store.lookup(root, b"target/debug/app").is_some());
        assert!(store.lookup(root, b".git/info/exclude").is_some());
    }
}
