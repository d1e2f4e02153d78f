//! The in-memory table of entries: a 20-byte record per file or folder, each
//! entry's name as an id into the name dictionary, every folder's children in
//! name order, and the orders and lists that searches read ([`crate::base`]).
//!
//! Layout choices (measured in docs/benchmarks.md, against 100 bytes an entry in
//! all):
//! - entry ids are slots; a deleted entry's slot is reused by the next new one, so
//!   nothing needs compacting and ids never move;
//! - a folder's children are a run of the `children` arena, sorted by name, so a
//!   lookup in a folder of a million entries is a binary search; a run that must
//!   grow moves to the arena's end (the hole is reclaimed at the next rebuild);
//! - the sorted orders and the name lists ([`Base`]) are rebuilt from the records
//!   now and then; in between, an entry whose name, size or time changes is moved
//!   to the *delta* (searched entry by entry) and its old place in the orders is
//!   remembered (`stale`), so the orders never lie.

use crate::arr::Arr;
use std::{borrow::Cow, collections::HashMap};

use crate::base::{Base, BaseKey};
use crate::folders::FolderCache;
use crate::names::{Names, name_order};
use crate::wire::{Reader, SnapshotError, Writer};

pub type EntryId = u32;
pub const NONE: EntryId = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    File = 0,
    Dir = 1,
    Symlink = 2,
    Other = 3,
    /// A free slot (its entry was deleted).
    Free = 255,
}

impl Kind {
    pub fn from_u8(v: u8) -> Kind {
        match v {
            0 => Kind::File,
            1 => Kind::Dir,
            2 => Kind::Symlink,
            3 => Kind::Other,
            _ => Kind::Free,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
            Kind::Free => "deleted",
        }
    }
}

/// Metadata kept for every entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meta {
    pub size: u64,
    /// Modification time, Unix seconds.
    pub mtime: i64,
    /// Birth time, Unix seconds; [`UNKNOWN_TIME`] when the file system has none.
    pub btime: i64,
    pub mode: u32,
}

pub const UNKNOWN_TIME: i64 = i64::MIN;

/// One entry: 20 bytes. Times are whole seconds since 1970 in a `u32` (good until
/// 2106; earlier times clamp to 0), `u32::MAX` meaning unknown; `mode` keeps the
/// low 16 bits of `st_mode`.
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Record {
    /// Files, symlinks and others: the size, or [`BIG`] for a size of 4 GiB
    /// or more, kept in [`Store::big`]. Folders: their slot in `dirs`.
    pub size: u32,
    pub parent: EntryId,
    pub mtime: u32,
    pub btime: u32,
    pub mode: u16,
    pub kind: u8,
    pub flags: u8,
}

/// The entry is live but not (or no longer) where the base orders put it: it is
/// in the delta.
pub(crate) const FLAG_DELTA: u8 = 1;
/// The slot's id is in the `delta` list (kept while the slot is free, so that a
/// reused slot is not listed twice).
const FLAG_LISTED: u8 = 2;

/// A folder's children (a run of the arena) and what identifies it on disk.
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Dir {
    pub start: u32,
    pub len: u32,
    pub cap: u32,
    /// Its inotify watch, or -1.
    pub wd: i32,
    pub dev: u64,
    pub ino: u64,
}

pub(crate) const UNKNOWN_SECS: u32 = u32::MAX;

/// A record's size when the size is in [`Store::big`]. Files of 4 GiB and more
/// are few on any machine (disk images, swap files), so sizes take four bytes
/// an entry rather than eight, and those few a map entry.
const BIG: u32 = u32::MAX;

pub(crate) fn to_secs(t: i64) -> u32 {
    if t == UNKNOWN_TIME {
        UNKNOWN_SECS
    } else {
        t.clamp(0, UNKNOWN_SECS as i64 - 1) as u32
    }
}

pub(crate) fn from_secs(t: u32) -> i64 {
    if t == UNKNOWN_SECS {
        UNKNOWN_TIME
    } else {
        t as i64
    }
}

/// What a record holds for a file of `size` bytes.
fn small_size(size: u64) -> u32 {
    u32::try_from(size).unwrap_or(BIG)
}

/// An entry about to be added, as walked: its name lies elsewhere.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewEntry {
    pub kind: Kind,
    pub meta: Meta,
    /// Folders: device and inode.
    pub ident: (u64, u64),
}

/// Heap copies of the arrays a change writes to: see
/// [`Store::copies_for_change`].
pub(crate) struct ChangeCopies {
    records: Option<Vec<Record>>,
    names_of: Option<Vec<u32>>,
    children: Option<Vec<EntryId>>,
    names: crate::names::NameCopies,
}

/// The entries of all roots.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) records: Arr<Record>,
    /// The sizes of the live entries whose record says [`BIG`].
    pub(crate) big: HashMap<EntryId, u64>,
    /// Each entry's name id.
    pub(crate) names_of: Arr<u32>,
    pub(crate) names: Names,
    pub(crate) dirs: Arr<Dir>,
    free_dirs: Vec<u32>,
    pub(crate) children: Arr<EntryId>,
    /// Arena slots no run uses any more.
    child_garbage: usize,
    free: Vec<EntryId>,
    pub(crate) roots: Vec<EntryId>,
    live: usize,
    /// Live entries by kind (file, dir, symlink, other), roots included.
    counts: [u64; 4],
    pub(crate) base: Base,
    /// Entries the base orders hold whose keys changed since (or that are gone):
    /// their keys as the orders know them.
    pub(crate) stale: HashMap<EntryId, BaseKey>,
    /// Live entries flagged [`FLAG_DELTA`] (some may have died since: check).
    pub(crate) delta: Vec<EntryId>,
    /// Entries moved or renamed since the last rebuild: their paths, and
    /// those of everything below them, are not what the rank order was
    /// built from (some may have died since, or moved again: check).
    pub(crate) moved: Vec<EntryId>,
    /// How many entries lay at or below the moved ones when they moved
    /// (counted up to [`MOVED_COUNT_MAX`] a move), toward a rebuild.
    moved_weight: usize,
    /// Counts every change to the folders (added, removed, moved, renamed):
    /// the [`FolderTable`](crate::folders::FolderTable) kept in `folders` is
    /// good while it is the same.
    pub(crate) folder_stamp: u64,
    pub(crate) folders: FolderCache,
}

/// A move's entries are counted toward a rebuild up to this many.
const MOVED_COUNT_MAX: usize = 1 << 16;

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    pub fn new() -> Store {
        Store {
            records: Arr::default(),
            big: HashMap::new(),
            names_of: Arr::default(),
            names: Names::new(),
            dirs: Arr::default(),
            free_dirs: Vec::new(),
            children: Arr::default(),
            child_garbage: 0,
            free: Vec::new(),
            roots: Vec::new(),
            live: 0,
            counts: [0; 4],
            base: Base::default(),
            stale: HashMap::new(),
            delta: Vec::new(),
            moved: Vec::new(),
            moved_weight: 0,
            folder_stamp: 0,
            folders: FolderCache::default(),
        }
    }

    /// Add a root folder; its name is the root's name.
    pub fn add_root(&mut self, name: &[u8], meta: Meta) -> EntryId {
        let id = self.alloc(NONE, name, Kind::Dir, meta, true);
        self.roots.push(id);
        id
    }

    pub fn roots(&self) -> &[EntryId] {
        &self.roots
    }

    /// Number of live entries (roots included).
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Slots in use or free (ids are below this).
    pub fn capacity_ids(&self) -> usize {
        self.records.len()
    }

    /// Live entries of a kind, roots included.
    pub fn count_of(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Free => 0,
            k => self.counts[k as usize],
        }
    }

    /// Give back the spare capacity left by a build.
    pub fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        self.names_of.shrink_to_fit();
        self.dirs.shrink_to_fit();
        self.children.shrink_to_fit();
    }

    /// Bytes of all names (each distinct name once).
    pub fn name_bytes(&self) -> usize {
        self.names.name_bytes()
    }

    /// Bytes this store holds on the heap, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.heap_parts().iter().map(|(_, b)| b).sum()
    }

    /// [`Store::heap_bytes`] part by part.
    pub fn heap_parts(&self) -> Vec<(&'static str, usize)> {
        let (arena, lists) = self.names.heap_parts();
        vec![
            (
                "records",
                self.records.heap_bytes() + self.big.capacity() * 16,
            ),
            ("entry names", self.names_of.heap_bytes()),
            ("names", arena),
            ("name lists", lists),
            ("folders", self.dirs.heap_bytes()),
            ("children", self.children.heap_bytes()),
            ("orders", self.base.heap_bytes()),
            ("folder names (fuzzy)", self.folders.heap_bytes()),
            (
                "delta",
                self.free.capacity() * 4
                    + self.stale.capacity() * (std::mem::size_of::<BaseKey>() + 5)
                    + self.delta.capacity() * 4,
            ),
        ]
    }

    fn alloc(
        &mut self,
        parent: EntryId,
        name: &[u8],
        kind: Kind,
        meta: Meta,
        intern: bool,
    ) -> EntryId {
        debug_assert!(kind != Kind::Free);
        let name = &name[..name.len().min(u16::MAX as usize)];
        let name_id = if intern {
            self.names.intern(name)
        } else {
            self.names.push(name)
        };
        let size = if kind == Kind::Dir {
            self.folder_stamp += 1;
            self.new_dir()
        } else {
            small_size(meta.size)
        };
        let record = Record {
            size,
            parent,
            mtime: to_secs(meta.mtime),
            btime: to_secs(meta.btime),
            mode: meta.mode as u16,
            kind: kind as u8,
            flags: FLAG_DELTA,
        };
        let id = match self.free.pop() {
            Some(id) => {
                let listed = self.records[id as usize].flags & FLAG_LISTED;
                self.records[id as usize] = record;
                self.records[id as usize].flags |= listed;
                self.names_of[id as usize] = name_id;
                id
            }
            None => {
                self.records.to_mut().push(record);
                self.names_of.to_mut().push(name_id);
                (self.records.len() - 1) as EntryId
            }
        };
        if self.records[id as usize].flags & FLAG_LISTED == 0 {
            self.records[id as usize].flags |= FLAG_LISTED;
            self.delta.push(id);
        }
        if size == BIG && kind != Kind::Dir {
            self.big.insert(id, meta.size);
        }
        self.live += 1;
        self.counts[kind as usize] += 1;
        id
    }

    fn new_dir(&mut self) -> u32 {
        let dir = Dir {
            wd: -1,
            ..Dir::default()
        };
        match self.free_dirs.pop() {
            Some(slot) => {
                self.dirs[slot as usize] = dir;
                slot
            }
            None => {
                self.dirs.to_mut().push(dir);
                (self.dirs.len() - 1) as u32
            }
        }
    }

    /// The folder slot of a folder entry.
    #[inline]
    pub(crate) fn dir_slot(&self, id: EntryId) -> Option<usize> {
        let r = &self.records[id as usize];
        (r.kind == Kind::Dir as u8).then_some(r.size as usize)
    }

    pub(crate) fn dir(&self, id: EntryId) -> Option<&Dir> {
        self.dir_slot(id).map(|s| &self.dirs[s])
    }

    pub(crate) fn dir_mut(&mut self, id: EntryId) -> Option<&mut Dir> {
        self.dir_slot(id).map(|s| &mut self.dirs[s])
    }

    /// Record a folder's device and inode (what its watch is checked against).
    pub(crate) fn set_ident(&mut self, id: EntryId, ident: (u64, u64)) {
        if let Some(d) = self.dir_mut(id) {
            (d.dev, d.ino) = ident;
        }
    }

    /// The live entries changed since the orders were built (non-root, in the
    /// delta), in id order, once each: what every search adds to the orders'.
    pub(crate) fn delta_entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        let mut ids: Vec<EntryId> = self
            .delta
            .iter()
            .copied()
            .filter(|&id| {
                let r = &self.records[id as usize];
                r.flags & FLAG_DELTA != 0 && r.kind != Kind::Free as u8 && r.parent != NONE
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
    }

    pub fn is_live(&self, id: EntryId) -> bool {
        (id as usize) < self.records.len() && self.records[id as usize].kind != Kind::Free as u8
    }

    #[inline]
    pub fn name(&self, id: EntryId) -> &[u8] {
        self.names.get(self.names_of[id as usize])
    }

    #[inline]
    pub fn kind(&self, id: EntryId) -> Kind {
        Kind::from_u8(self.records[id as usize].kind)
    }

    #[inline]
    pub(crate) fn size(&self, id: EntryId) -> u64 {
        let r = &self.records[id as usize];
        match r.size {
            _ if r.kind == Kind::Dir as u8 => 0,
            BIG => self.big.get(&id).copied().unwrap_or(u64::from(BIG)),
            small => u64::from(small),
        }
    }

    pub fn meta(&self, id: EntryId) -> Meta {
        let r = &self.records[id as usize];
        Meta {
            size: self.size(id),
            mtime: from_secs(r.mtime),
            btime: from_secs(r.btime),
            mode: r.mode as u32,
        }
    }

    pub fn parent(&self, id: EntryId) -> EntryId {
        self.records[id as usize].parent
    }

    /// The root record this entry lives under, and its index among the roots.
    pub fn root_of(&self, mut id: EntryId) -> (usize, EntryId) {
        while self.records[id as usize].parent != NONE {
            id = self.records[id as usize].parent;
        }
        let index = self.roots.iter().position(|&r| r == id).unwrap_or(0);
        (index, id)
    }

    /// Depth below the root (the root's children are 1).
    pub fn depth(&self, mut id: EntryId) -> u32 {
        let mut depth = 0;
        while self.records[id as usize].parent != NONE {
            id = self.records[id as usize].parent;
            depth += 1;
        }
        depth
    }

    /// Live children of a folder, in name order (empty for anything else).
    pub fn children(&self, id: EntryId) -> &[EntryId] {
        match self.dir(id) {
            Some(d) => &self.children[d.start as usize..(d.start + d.len) as usize],
            None => &[],
        }
    }

    /// Where `name` is (`Ok`) or would go (`Err`) among a folder's children.
    fn child_position(&self, parent: EntryId, name: &[u8]) -> Result<usize, usize> {
        self.children(parent)
            .binary_search_by(|&c| name_order(self.name(c), name))
    }

    pub fn child(&self, parent: EntryId, name: &[u8]) -> Option<EntryId> {
        let at = self.child_position(parent, name).ok()?;
        Some(self.children(parent)[at])
    }

    /// The path below the root, `/`-separated ("" for the root itself).
    pub fn rel_path(&self, id: EntryId) -> Vec<u8> {
        let mut out = Vec::new();
        self.rel_path_into(id, &mut out);
        out
    }

    /// [`Store::rel_path`], appended to `out`: the names are written from
    /// the entry up, each at its place (one climb for the length, one to
    /// write), with no list of the folders on the way.
    pub fn rel_path_into(&self, id: EntryId, out: &mut Vec<u8>) {
        let mut len = 0usize;
        let mut at = id;
        while self.records[at as usize].parent != NONE {
            len += self.name(at).len() + 1;
            at = self.records[at as usize].parent;
        }
        if len == 0 {
            return;
        }
        let start = out.len();
        out.resize(start + len - 1, 0);
        let mut end = out.len();
        let mut at = id;
        while self.records[at as usize].parent != NONE {
            let name = self.name(at);
            out[end - name.len()..end].copy_from_slice(name);
            end -= name.len();
            if end > start {
                end -= 1;
                out[end] = b'/';
            }
            at = self.records[at as usize].parent;
        }
    }

    /// Whether `id` is `ancestor` or lies below it.
    pub fn is_within(&self, mut id: EntryId, ancestor: EntryId) -> bool {
        loop {
            if id == ancestor {
                return true;
            }
            id = self.records[id as usize].parent;
            if id == NONE {
                return false;
            }
        }
    }

    /// Follow a `/`-separated path below `root`.
    pub fn lookup(&self, root: EntryId, rel: &[u8]) -> Option<EntryId> {
        let mut at = root;
        for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
            at = self.child(at, part)?;
        }
        Some(at)
    }

    /// Put `id` into `parent`'s children at `at`.
    fn link(&mut self, parent: EntryId, at: usize, id: EntryId) {
        let slot = self.dir_slot(parent).expect("a parent is a folder");
        let d = self.dirs[slot];
        if d.len == d.cap {
            // Move the run to the arena's end with room to grow.
            let cap = (d.cap * 2).max(4);
            let start = self.children.len() as u32;
            self.children
                .to_mut()
                .extend_from_within(d.start as usize..(d.start + d.len) as usize);
            self.children.to_mut().resize((start + cap) as usize, NONE);
            self.child_garbage += d.cap as usize;
            let d = &mut self.dirs[slot];
            d.start = start;
            d.cap = cap;
        }
        let d = &mut self.dirs[slot];
        let run = &mut self.children[d.start as usize..(d.start + d.len + 1) as usize];
        run.copy_within(at..run.len() - 1, at + 1);
        run[at] = id;
        d.len += 1;
        self.records[id as usize].parent = parent;
    }

    fn unlink(&mut self, id: EntryId) {
        let parent = self.records[id as usize].parent;
        if parent == NONE {
            return;
        }
        let Some(slot) = self.dir_slot(parent) else {
            return;
        };
        let name = self.name(id).to_vec();
        if let Ok(at) = self.child_position(parent, &name) {
            let d = &mut self.dirs[slot];
            let run = &mut self.children[d.start as usize..(d.start + d.len) as usize];
            run.copy_within(at + 1.., at);
            d.len -= 1;
        }
    }

    /// Add a new child (the caller knows there is none of that name).
    pub fn insert_new(&mut self, parent: EntryId, name: &[u8], kind: Kind, meta: Meta) -> EntryId {
        let at = match self.child_position(parent, name) {
            Ok(at) | Err(at) => at,
        };
        let id = self.alloc(NONE, name, kind, meta, true);
        self.link(parent, at, id);
        id
    }

    /// Add `name` under `parent`, or update it if it is already there with the
    /// same kind (an entry of another kind is replaced). Returns the id and
    /// whether it is new.
    pub fn upsert(
        &mut self,
        parent: EntryId,
        name: &[u8],
        kind: Kind,
        meta: Meta,
    ) -> (EntryId, bool) {
        if let Some(id) = self.child(parent, name) {
            if self.kind(id) == kind {
                self.set_meta(id, meta);
                return (id, false);
            }
            self.remove(id);
        }
        (self.insert_new(parent, name, kind, meta), true)
    }

    /// The children of a folder being walked for the first time (it has none
    /// yet), already in name order; their ids go to `ids` (consecutive when
    /// the store grows at its end, as in a build).
    pub(crate) fn insert_walked<'n>(
        &mut self,
        parent: EntryId,
        batch: impl ExactSizeIterator<Item = (&'n [u8], NewEntry)>,
        ids: &mut Vec<EntryId>,
    ) {
        let slot = self.dir_slot(parent).expect("a parent is a folder");
        debug_assert_eq!(self.dirs[slot].len, 0);
        let start = self.children.len() as u32;
        let count = batch.len() as u32;
        ids.clear();
        for (name, e) in batch {
            let id = self.alloc(parent, name, e.kind, e.meta, false);
            if e.kind == Kind::Dir {
                self.set_ident(id, e.ident);
            }
            self.children.to_mut().push(id);
            ids.push(id);
        }
        let d = &mut self.dirs[slot];
        self.child_garbage += d.cap as usize;
        d.start = start;
        d.len = count;
        d.cap = count;
    }

    /// Before one of `id`'s keys changes (or it goes): when the base orders hold
    /// it, remember where.
    fn remember_base(&mut self, id: EntryId) {
        let r = self.records[id as usize];
        if r.flags & FLAG_DELTA == 0
            && (id as usize) < self.base.ids()
            && !self.stale.contains_key(&id)
        {
            let key = BaseKey {
                name: self.names_of[id as usize],
                mtime: r.mtime,
                size: self.size(id),
                dir: r.kind == Kind::Dir as u8,
            };
            self.stale.insert(id, key);
        }
    }

    /// Before one of `id`'s keys changes: move it to the delta.
    fn touch(&mut self, id: EntryId) {
        self.remember_base(id);
        let r = &mut self.records[id as usize];
        r.flags |= FLAG_DELTA;
        if r.flags & FLAG_LISTED == 0 {
            r.flags |= FLAG_LISTED;
            self.delta.push(id);
        }
    }

    /// Update an entry's metadata in place.
    pub fn set_meta(&mut self, id: EntryId, meta: Meta) {
        let before = self.meta(id);
        if before == meta {
            return;
        }
        let (mtime, size) = (to_secs(meta.mtime), meta.size);
        let is_dir = self.kind(id) == Kind::Dir;
        if self.records[id as usize].mtime != mtime || (!is_dir && before.size != size) {
            self.touch(id);
        }
        let r = &mut self.records[id as usize];
        r.mtime = mtime;
        r.btime = to_secs(meta.btime);
        r.mode = meta.mode as u16;
        if !is_dir {
            r.size = small_size(size);
            if r.size == BIG {
                self.big.insert(id, size);
            } else {
                self.big.remove(&id);
            }
        }
    }

    /// Remove an entry and everything below it; returns how many were removed.
    pub fn remove(&mut self, id: EntryId) -> usize {
        if !self.is_live(id) || self.records[id as usize].parent == NONE {
            return 0;
        }
        self.unlink(id);
        let mut removed = 0;
        let mut stack = vec![id];
        while let Some(at) = stack.pop() {
            stack.extend_from_slice(self.children(at));
            self.remember_base(at);
            if let Some(slot) = self.dir_slot(at) {
                self.folder_stamp += 1;
                let d = self.dirs[slot];
                self.child_garbage += d.cap as usize;
                self.dirs[slot] = Dir::default();
                self.free_dirs.push(slot as u32);
            }
            let kind = self.records[at as usize].kind;
            self.counts[kind as usize] -= 1;
            let r = &mut self.records[at as usize];
            r.kind = Kind::Free as u8;
            r.parent = NONE;
            r.flags &= FLAG_LISTED;
            r.size = 0;
            self.big.remove(&at);
            self.free.push(at);
            removed += 1;
        }
        self.live -= removed;
        removed
    }

    /// Move or rename `id` to `name` under `new_parent`, keeping its id (its
    /// subtree follows). An entry already there of that name is replaced.
    /// `new_parent` must not lie inside `id` (the caller checks: that would make
    /// a cycle).
    pub fn rename(&mut self, id: EntryId, new_parent: EntryId, name: &[u8]) -> EntryId {
        assert!(
            !self.is_within(new_parent, id),
            "a folder cannot move into itself"
        );
        // Out of its folder first: the entry it replaces may hold it (a
        // watcher's stale picture: `a/b` moved over `a`), and must not take it
        // along when it goes.
        self.unlink(id);
        if let Some(existing) = self.child(new_parent, name)
            && existing != id
        {
            self.remove(existing);
        }
        if self.kind(id) == Kind::Dir {
            self.folder_stamp += 1;
        }
        if self.name(id) != name {
            self.touch(id);
            self.names_of[id as usize] = self.names.intern(name);
        }
        self.note_moved(id);
        let at = match self.child_position(new_parent, name) {
            Ok(at) | Err(at) => at,
        };
        self.link(new_parent, at, id);
        id
    }

    /// Note that `id`'s path changed: the rank order no longer knows it,
    /// nor what lies below it.
    fn note_moved(&mut self, id: EntryId) {
        self.moved.push(id);
        let mut count = 0;
        let mut stack = vec![id];
        while let Some(at) = stack.pop() {
            count += 1;
            if count >= MOVED_COUNT_MAX {
                break;
            }
            stack.extend_from_slice(self.children(at));
        }
        self.moved_weight += count;
    }

    /// Whether enough has changed since the last rebuild that searching the
    /// delta entry by entry costs more than rebuilding.
    pub fn needs_rebuild(&self) -> bool {
        let changed = self.stale.len() + self.delta.len() + self.moved_weight;
        changed > (self.live / 64).max(8192) || (self.base.ids() == 0 && !self.delta.is_empty())
    }

    pub(crate) fn install(&mut self, r: crate::base::Rebuilt) {
        self.names = r.names;
        self.names_of = r.names_of.into();
        self.base = r.base;
        if let Some((children, starts)) = r.children {
            self.children = children.into();
            for (d, (start, cap)) in self.dirs.iter_mut().zip(starts) {
                d.start = start;
                d.cap = cap;
            }
            self.child_garbage = 0;
        }
        for &id in &self.delta {
            self.records[id as usize].flags &= !(FLAG_DELTA | FLAG_LISTED);
        }
        self.delta = Vec::new();
        self.stale = HashMap::new();
        self.moved = Vec::new();
        self.moved_weight = 0;
    }

    /// Whether the children arena holds enough holes to be worth compacting.
    pub(crate) fn children_fragmented(&self) -> bool {
        self.child_garbage > self.children.len() / 4
    }

    /// [`Arr::adopt`](crate::arr::Arr::adopt) of part `k` of `other`, a
    /// store read in place from the snapshot just written of this one;
    /// `None` past the last part. `same`: the caller compared the part's
    /// bytes ([`Store::part_bytes`]) and nothing changed since; a part not
    /// the same is only let go. The folders' part is never taken: its
    /// watches are this process's, and the snapshot holds none.
    pub(crate) fn adopt_part(&mut self, other: &mut Store, k: usize, same: bool) -> Option<usize> {
        use std::mem::take;
        Some(match k {
            0 => self.records.adopt(take(&mut other.records), same),
            1 => self.names_of.adopt(take(&mut other.names_of), same),
            2 => self.children.adopt(take(&mut other.children), same),
            k if k < 3 + Names::PARTS => {
                return self.names.adopt_part(&mut other.names, k - 3, same);
            }
            k => {
                return self
                    .base
                    .adopt_part(&mut other.base, k - 3 - Names::PARTS, same);
            }
        })
    }

    /// The bytes of the array [`Store::adopt_part`] takes as part `k`;
    /// `None` past the last part.
    pub(crate) fn part_bytes(&self, k: usize) -> Option<&[u8]> {
        Some(match k {
            0 => self.records.bytes(),
            1 => self.names_of.bytes(),
            2 => self.children.bytes(),
            k if k < 3 + Names::PARTS => return self.names.part_bytes(k - 3),
            k => return self.base.part_bytes(k - 3 - Names::PARTS),
        })
    }

    /// Heap copies of the arrays a change writes to (the records, each
    /// entry's name id, the children, the names) that a change would have
    /// to copy first (read in place from the snapshot, or shared with one
    /// being written), made under a read lock; `None` when there are none.
    /// See `Index::copy_before_change`.
    pub(crate) fn copies_for_change(&self) -> Option<ChangeCopies> {
        let copies = ChangeCopies {
            records: self.records.copy_if_borrowed(),
            names_of: self.names_of.copy_if_borrowed(),
            children: self.children.copy_if_borrowed(),
            names: self.names.copies_for_change(),
        };
        let none = copies.records.is_none()
            && copies.names_of.is_none()
            && copies.children.is_none()
            && matches!(copies.names, (None, None, None));
        (!none).then_some(copies)
    }

    /// Hold the copies of [`Store::copies_for_change`] (nothing changed
    /// since) instead of what they copy.
    pub(crate) fn take_copies(&mut self, copies: ChangeCopies) {
        self.records.take_copy(copies.records);
        self.names_of.take_copy(copies.names_of);
        self.children.take_copy(copies.children);
        self.names.take_copies(copies.names);
    }

    /// A copy of the store to write a snapshot from with no lock held: its
    /// arrays are shared with this store, not copied ([`Arr::share`]), so
    /// taking it costs a few small copies (the delta, the stale keys, the
    /// free slots), and a change made meanwhile copies only the arrays it
    /// changes. (A clone leaves the folder table kept for fuzzy search
    /// behind.)
    pub(crate) fn for_snapshot(&mut self) -> Store {
        self.records.share();
        self.names_of.share();
        self.names.share_arrays();
        self.dirs.share();
        self.children.share();
        self.base.share_arrays();
        self.clone()
    }

    /// Write every array of the store (for the snapshot).
    pub(crate) fn write_to(&self, w: &mut Writer) {
        w.array(&self.records);
        let mut big: Vec<(&EntryId, &u64)> = self.big.iter().collect();
        big.sort_unstable();
        w.u64(big.len() as u64);
        for (&id, &size) in big {
            w.u32(id);
            w.u64(size);
        }
        w.array(&self.names_of);
        self.names.write_to(w);
        // Watches belong to the process that made them.
        let dirs: Vec<Dir> = self.dirs.iter().map(|d| Dir { wd: -1, ..*d }).collect();
        w.array(&dirs);
        w.u32s(&self.free_dirs);
        w.array(&self.children);
        w.u64(self.child_garbage as u64);
        w.u32s(&self.free);
        w.u32s(&self.roots);
        self.base.write_to(w);
        let mut stale: Vec<(&EntryId, &BaseKey)> = self.stale.iter().collect();
        stale.sort_unstable_by_key(|(id, _)| **id);
        w.u64(stale.len() as u64);
        for (&id, k) in stale {
            w.u32(id);
            w.u32(k.name);
            w.u32(k.mtime);
            w.u64(k.size);
            w.u8(u8::from(k.dir));
        }
        w.u32s(&self.delta);
        w.u32s(&self.moved);
        w.u64(self.moved_weight as u64);
        w.u64(self.live as u64);
        for c in self.counts {
            w.u64(c);
        }
    }

    /// Read what [`Store::write_to`] wrote. Counts are recomputed; references
    /// are checked by [`Store::check`], which the caller must run.
    pub(crate) fn read_from(r: &mut Reader<'_>) -> Result<Store, SnapshotError> {
        let records: Arr<Record> = r.array()?;
        let k = r.len()?;
        let mut big = HashMap::with_capacity(k);
        for _ in 0..k {
            big.insert(r.u32()?, r.u64()?);
        }
        let names_of: Arr<u32> = r.array()?;
        let names = Names::read_from(r)?;
        let dirs: Arr<Dir> = r.array()?;
        let free_dirs = r.u32s()?;
        let children: Arr<EntryId> = r.array()?;
        let child_garbage = r.u64()? as usize;
        let free = r.u32s()?;
        let roots = r.u32s()?;
        let base = Base::read_from(r)?;
        let k = r.len()?;
        let mut stale = HashMap::with_capacity(k);
        for _ in 0..k {
            let id = r.u32()?;
            let key = BaseKey {
                name: r.u32()?,
                mtime: r.u32()?,
                size: r.u64()?,
                dir: r.u8()? != 0,
            };
            stale.insert(id, key);
        }
        let delta = r.u32s()?;
        let moved = r.u32s()?;
        let moved_weight = r.u64()? as usize;
        let mut live = r.u64()? as usize;
        let mut counts = [0u64; 4];
        for c in &mut counts {
            *c = r.u64()?;
        }
        if r.deep {
            // Counted again rather than taken on trust.
            (live, counts) = (0, [0; 4]);
            for rec in records.iter() {
                if let Some(c) = counts.get_mut(rec.kind as usize) {
                    *c += 1;
                    live += 1;
                }
            }
        }
        Ok(Store {
            records,
            big,
            names_of,
            names,
            dirs,
            free_dirs,
            children,
            child_garbage,
            free,
            roots,
            live,
            counts,
            base,
            stale,
            delta,
            moved,
            moved_weight,
            folder_stamp: 0,
            folders: FolderCache::default(),
        })
    }

    /// Check every reference between the arrays, so that nothing read from disk
    /// can send a lookup out of bounds.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let n = self.records.len() as u64;
        if self.big.keys().any(|&id| {
            !self.is_live(id) || self.kind(id) == Kind::Dir || self.records[id as usize].size != BIG
        }) {
            return Err("large sizes");
        }
        let id_ok = |id: u32| u64::from(id) < n;
        if self.names_of.len() as u64 != n {
            return Err("name table");
        }
        let names = u64::from(self.names.len());
        for (i, r) in self.records.iter().enumerate() {
            if r.kind > Kind::Other as u8 && r.kind != Kind::Free as u8 {
                return Err("kind");
            }
            match Kind::from_u8(r.kind) {
                Kind::Free => continue,
                Kind::Dir if r.size as usize >= self.dirs.len() => return Err("folder slot"),
                Kind::Dir => {}
                // (Each size in the map has its marked record: above.)
                _ if r.size == BIG && !self.big.contains_key(&(i as EntryId)) => {
                    return Err("large sizes");
                }
                _ => {}
            }
            if (r.parent != NONE && !id_ok(r.parent)) || u64::from(self.names_of[i]) >= names {
                return Err("record reference");
            }
        }
        for d in &self.dirs {
            if u64::from(d.start) + u64::from(d.len) > self.children.len() as u64 {
                return Err("children run");
            }
        }
        let arrays: [(&[u32], &str); 9] = [
            (&self.moved, "moved"),
            (&self.children, "children"),
            (&self.free, "free slots"),
            (&self.roots, "roots"),
            (&self.delta, "delta"),
            (&self.base.by_name, "name order"),
            (&self.base.by_mtime, "time order"),
            (&self.base.by_size, "size order"),
            (&self.free_dirs, "free folder slots"),
        ];
        for (ids, what) in arrays {
            let bound = if what == "free folder slots" {
                self.dirs.len() as u64
            } else {
                n
            };
            if ids.iter().any(|&id| u64::from(id) >= bound && id != NONE) {
                return Err(what);
            }
        }
        if self.roots.iter().any(|&r| self.kind(r) != Kind::Dir) {
            return Err("roots");
        }
        let starts = &self.base.name_start;
        if !starts.is_empty()
            && (starts.len() != self.names.sorted_len() as usize + 1
                || starts.windows(2).any(|w| w[0] > w[1])
                || *starts.last().unwrap_or(&0) as usize != self.base.by_name.len())
        {
            return Err("name runs");
        }
        if self.base.ids() as u64 > n || self.stale.keys().any(|&id| !id_ok(id)) {
            return Err("orders");
        }
        if !self.base.rank.check(n) {
            return Err("rank order");
        }
        Ok(())
    }

    pub fn entry(&self, id: EntryId) -> EntryRef<'_> {
        EntryRef { store: self, id }
    }
}

/// One entry seen through the query language's eyes.
#[derive(Clone, Copy)]
pub struct EntryRef<'a> {
    pub store: &'a Store,
    pub id: EntryId,
}

impl ferret_query::Entry for EntryRef<'_> {
    fn name(&self) -> &[u8] {
        self.store.name(self.id)
    }

    fn rel_path(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.store.rel_path(self.id))
    }

    fn kind(&self) -> ferret_query::Kind {
        query_kind(self.store.kind(self.id))
    }

    fn size(&self) -> u64 {
        self.store.size(self.id)
    }

    fn modified(&self) -> Option<i64> {
        let t = self.store.records[self.id as usize].mtime;
        (t != UNKNOWN_SECS).then_some(t as i64)
    }

    fn created(&self) -> Option<i64> {
        let t = self.store.records[self.id as usize].btime;
        (t != UNKNOWN_SECS).then_some(t as i64)
    }

    fn mode(&self) -> u32 {
        self.store.records[self.id as usize].mode as u32
    }

    fn depth(&self) -> u32 {
        self.store.depth(self.id)
    }

    fn for_each_child(&self, f: &mut dyn FnMut(&[u8], ferret_query::Kind) -> bool) {
        for &c in self.store.children(self.id) {
            if !f(self.store.name(c), query_kind(self.store.kind(c))) {
                return;
            }
        }
    }
}

/// An entry whose path the caller already holds (a walk down the tree builds it
/// as it goes, instead of climbing to the root for every entry).
pub(crate) struct PathedEntry<'a> {
    pub inner: EntryRef<'a>,
    pub rel: &'a [u8],
    pub depth: u32,
}

impl ferret_query::Entry for PathedEntry<'_> {
    fn name(&self) -> &[u8] {
        self.inner.name()
    }
    fn rel_path(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.rel)
    }
    fn kind(&self) -> ferret_query::Kind {
        self.inner.kind()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn modified(&self) -> Option<i64> {
        self.inner.modified()
    }
    fn created(&self) -> Option<i64> {
        self.inner.created()
    }
    fn mode(&self) -> u32 {
        self.inner.mode()
    }
    fn depth(&self) -> u32 {
        self.depth
    }
    fn for_each_child(&self, f: &mut dyn FnMut(&[u8], ferret_query::Kind) -> bool) {
        self.inner.for_each_child(f)
    }
}

pub fn query_kind(kind: Kind) -> ferret_query::Kind {
    match kind {
        Kind::File => ferret_query::Kind::File,
        Kind::Dir => ferret_query::Kind::Dir,
        Kind::Symlink => ferret_query::Kind::Symlink,
        Kind::Other | Kind::Free => ferret_query::Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(size: u64) -> Meta {
        Meta {
            size,
            mtime: 1_700_000_000,
            btime: UNKNOWN_TIME,
            mode: 0o644,
        }
    }

    #[test]
    fn records_stay_compact() {
        assert_eq!(std::mem::size_of::<Record>(), 20);
    }

    #[test]
    fn tree_operations() {
        let mut s = Store::new();
        let root = s.add_root(b"r", meta(0));
        let src = s.insert_new(root, b"src", Kind::Dir, meta(0));
        let main = s.insert_new(src, b"main.rs", Kind::File, meta(10));
        let lib = s.insert_new(src, b"lib.rs", Kind::File, meta(20));
        assert_eq!(s.rel_path(main), b"src/main.rs");
        assert_eq!(s.lookup(root, b"src/lib.rs"), Some(lib));
        assert_eq!(s.children(src), [lib, main], "children in name order");
        assert_eq!(s.depth(main), 2);
        assert_eq!(s.len(), 4);
        let (id, created) = s.upsert(src, b"main.rs", Kind::File, meta(99));
        assert!(!created && id == main && s.meta(main).size == 99);
        // Rename the folder: the subtree follows, ids stay.
        let docs = s.rename(src, root, b"docs");
        assert_eq!(docs, src);
        assert_eq!(s.rel_path(main), b"docs/main.rs");
        assert!(s.lookup(root, b"src").is_none());
        assert_eq!(s.len(), 4);
        assert_eq!(s.remove(docs), 3);
        assert_eq!(s.len(), 1);
        assert_eq!(s.count_of(Kind::File), 0);
        // Freed slots are reused.
        let again = s.insert_new(root, b"x", Kind::File, meta(1));
        assert!(again < 4);
    }

    #[test]
    fn an_entry_renamed_over_a_folder_that_holds_it_survives() {
        // A watcher behind the disk may be told that `a/b` now has `a`'s
        // name: the old `a` goes, `b` and what lies below it stay.
        let mut s = Store::new();
        let root = s.add_root(b"r", meta(0));
        let a = s.insert_new(root, b"a", Kind::Dir, meta(0));
        let b = s.insert_new(a, b"b", Kind::Dir, meta(0));
        let inner = s.insert_new(b, b"inner.txt", Kind::File, meta(1));
        s.insert_new(a, b"sibling.txt", Kind::File, meta(1));
        assert_eq!(s.rename(b, root, b"a"), b);
        assert_eq!(s.children(root), [b]);
        assert_eq!(s.rel_path(inner), b"a/inner.txt");
        assert_eq!(s.len(), 3);
        assert_eq!(s.count_of(Kind::Dir), 2);
        assert_eq!(s.remove(b), 2);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_big_folder_stays_sorted_and_searchable() {
        let mut s = Store::new();
        let root = s.add_root(b"r", meta(0));
        for i in (0..5000u32).rev() {
            s.insert_new(root, format!("f{i:05}").as_bytes(), Kind::File, meta(1));
        }
        let names: Vec<Vec<u8>> = s
            .children(root)
            .iter()
            .map(|&c| s.name(c).to_vec())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let f = s.child(root, b"f02500").unwrap();
        assert_eq!(s.name(f), b"f02500");
        crate::orders::rebuild_store(&mut s);
        assert_eq!(s.child(root, b"f02500"), Some(f));
        assert!(!s.children_fragmented());
    }
}
