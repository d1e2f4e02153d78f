//! The in-memory table of entries: one fixed-size record per file or folder, the
//! names in one arena, and a lowercase copy of that arena for fast substring scans.
//!
//! Layout choices (measured against the 60 bytes/entry budget, see docs/benchmarks.md):
//! - records are appended and never move, so arena offsets grow with entry ids and a
//!   hit found by scanning the arena maps back to its entry by binary search;
//! - a deleted entry becomes a tombstone (its bytes stay until [`Store::compact`]);
//! - a rename appends a new record (new name at the arena's end) and re-parents the
//!   direct children, keeping the invariant above;
//! - children form a singly linked list (`first_child`, `next_sibling`).

use std::borrow::Cow;

pub type EntryId = u32;
pub const NONE: EntryId = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    File = 0,
    Dir = 1,
    Symlink = 2,
    Other = 3,
    /// A tombstone: the slot of a deleted entry.
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

/// One entry: 40 bytes (its name's offset lives in [`Store::offsets`]).
///
/// Times are whole seconds since 1970 in a `u32` (good until 2106; earlier times
/// clamp to 0), `u32::MAX` meaning unknown; `mode` keeps the 16 bits of `st_mode`.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Record {
    pub parent: EntryId,
    pub first_child: EntryId,
    pub next_sibling: EntryId,
    pub name_len: u16,
    pub mode: u16,
    pub kind: u8,
    /// Bit 0: the name has non-ASCII bytes (the ASCII prefilter cannot vouch for it).
    pub flags: u8,
    pub mtime: u32,
    pub btime: u32,
    pub size: u64,
}

const UNKNOWN_SECS: u32 = u32::MAX;

fn to_secs(t: i64) -> u32 {
    if t == UNKNOWN_TIME {
        UNKNOWN_SECS
    } else {
        t.clamp(0, UNKNOWN_SECS as i64 - 1) as u32
    }
}

fn from_secs(t: u32) -> i64 {
    if t == UNKNOWN_SECS {
        UNKNOWN_TIME
    } else {
        t as i64
    }
}

const FLAG_NON_ASCII: u8 = 1;

/// The entries of all roots.
#[derive(Debug, Default, Clone)]
pub struct Store {
    pub(crate) records: Vec<Record>,
    /// Where each entry's name starts in the arenas. Kept apart from the records so
    /// that mapping a scan hit back to its entry reads 4 bytes per entry, not 40.
    pub(crate) offsets: Vec<u32>,
    /// Names, each followed by a NUL so that no substring match spans two names.
    pub(crate) names: Vec<u8>,
    /// The same bytes with ASCII letters lowercased (same offsets).
    pub(crate) lower: Vec<u8>,
    /// Ids of entries whose name has non-ASCII bytes (scanned in full by searches).
    pub(crate) non_ascii: Vec<EntryId>,
    /// The record of each root (its folder), in root order.
    pub(crate) roots: Vec<EntryId>,
    pub(crate) live: usize,
}

impl Store {
    pub fn new() -> Store {
        Store::default()
    }

    /// Add a root folder; its name is the root's name.
    pub fn add_root(&mut self, name: &[u8], meta: Meta) -> EntryId {
        let id = self.push(NONE, name, Kind::Dir, meta);
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

    /// Slots in use, tombstones included (ids are below this).
    pub fn capacity_ids(&self) -> usize {
        self.records.len()
    }

    /// Give back the spare capacity left by a build.
    pub fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self.names.shrink_to_fit();
        self.lower.shrink_to_fit();
        self.non_ascii.shrink_to_fit();
    }

    /// Bytes of names (one arena; the lowercase copy doubles it).
    pub fn name_bytes(&self) -> usize {
        self.names.len()
    }

    /// Bytes of the arenas, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<Record>()
            + self.offsets.capacity() * 4
            + self.names.capacity()
            + self.lower.capacity()
            + self.non_ascii.capacity() * 4
    }

    fn push(&mut self, parent: EntryId, name: &[u8], kind: Kind, meta: Meta) -> EntryId {
        let id = self.records.len() as EntryId;
        let name = &name[..name.len().min(u16::MAX as usize)];
        let name_off = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.names.push(0);
        self.lower.extend(name.iter().map(u8::to_ascii_lowercase));
        self.lower.push(0);
        let non_ascii = !name.is_ascii();
        if non_ascii {
            self.non_ascii.push(id);
        }
        let first_sibling = if parent == NONE {
            NONE
        } else {
            self.records[parent as usize].first_child
        };
        self.offsets.push(name_off);
        self.records.push(Record {
            name_len: name.len() as u16,
            kind: kind as u8,
            flags: if non_ascii { FLAG_NON_ASCII } else { 0 },
            parent,
            first_child: NONE,
            next_sibling: first_sibling,
            mode: meta.mode as u16,
            size: meta.size,
            mtime: to_secs(meta.mtime),
            btime: to_secs(meta.btime),
        });
        if parent != NONE {
            self.records[parent as usize].first_child = id;
        }
        self.live += 1;
        id
    }

    /// Add `name` under `parent`, or update it if it is already there.
    pub fn upsert(
        &mut self,
        parent: EntryId,
        name: &[u8],
        kind: Kind,
        meta: Meta,
    ) -> (EntryId, bool) {
        if let Some(id) = self.child(parent, name) {
            let r = &mut self.records[id as usize];
            r.kind = kind as u8;
            r.size = meta.size;
            r.mtime = to_secs(meta.mtime);
            r.btime = to_secs(meta.btime);
            r.mode = meta.mode as u16;
            return (id, false);
        }
        (self.push(parent, name, kind, meta), true)
    }

    /// Add a new child without checking for an existing one (the initial build).
    pub fn insert_new(&mut self, parent: EntryId, name: &[u8], kind: Kind, meta: Meta) -> EntryId {
        self.push(parent, name, kind, meta)
    }

    pub fn is_live(&self, id: EntryId) -> bool {
        (id as usize) < self.records.len() && self.records[id as usize].kind != Kind::Free as u8
    }

    pub fn name(&self, id: EntryId) -> &[u8] {
        let off = self.offsets[id as usize] as usize;
        &self.names[off..off + self.records[id as usize].name_len as usize]
    }

    pub fn lower_name(&self, id: EntryId) -> &[u8] {
        let off = self.offsets[id as usize] as usize;
        &self.lower[off..off + self.records[id as usize].name_len as usize]
    }

    pub fn kind(&self, id: EntryId) -> Kind {
        Kind::from_u8(self.records[id as usize].kind)
    }

    pub fn meta(&self, id: EntryId) -> Meta {
        let r = &self.records[id as usize];
        Meta {
            size: r.size,
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

    /// Live children of a folder.
    pub fn children(&self, id: EntryId) -> Children<'_> {
        Children {
            store: self,
            next: self.records[id as usize].first_child,
        }
    }

    pub fn child(&self, parent: EntryId, name: &[u8]) -> Option<EntryId> {
        self.children(parent).find(|&c| self.name(c) == name)
    }

    /// The path below the root, `/`-separated ("" for the root itself).
    pub fn rel_path(&self, id: EntryId) -> Vec<u8> {
        let mut chain = Vec::new();
        let mut at = id;
        while self.records[at as usize].parent != NONE {
            chain.push(at);
            at = self.records[at as usize].parent;
        }
        let mut out = Vec::with_capacity(chain.len() * 12);
        for (i, &c) in chain.iter().rev().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            out.extend_from_slice(self.name(c));
        }
        out
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

    fn unlink(&mut self, id: EntryId) {
        let parent = self.records[id as usize].parent;
        if parent == NONE {
            return;
        }
        let next = self.records[id as usize].next_sibling;
        let first = self.records[parent as usize].first_child;
        if first == id {
            self.records[parent as usize].first_child = next;
            return;
        }
        let mut at = first;
        while at != NONE {
            let n = self.records[at as usize].next_sibling;
            if n == id {
                self.records[at as usize].next_sibling = next;
                return;
            }
            at = n;
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
            let mut c = self.records[at as usize].first_child;
            while c != NONE {
                stack.push(c);
                c = self.records[c as usize].next_sibling;
            }
            let r = &mut self.records[at as usize];
            r.kind = Kind::Free as u8;
            r.first_child = NONE;
            r.parent = NONE;
            removed += 1;
        }
        self.live -= removed;
        removed
    }

    /// Move or rename `id` to `name` under `new_parent`. The entry gets a new id
    /// (see the module notes); its subtree follows it. `new_parent` must not lie
    /// inside `id` (the caller checks: that would make a cycle).
    pub fn rename(&mut self, id: EntryId, new_parent: EntryId, name: &[u8]) -> EntryId {
        assert!(
            !self.is_within(new_parent, id),
            "a folder cannot move into itself"
        );
        let kind = self.kind(id);
        let meta = self.meta(id);
        if let Some(existing) = self.child(new_parent, name)
            && existing != id
        {
            self.remove(existing);
        }
        self.unlink(id);
        let first_child = self.records[id as usize].first_child;
        self.records[id as usize].kind = Kind::Free as u8;
        self.records[id as usize].first_child = NONE;
        self.live -= 1;
        let new_id = self.push(new_parent, name, kind, meta);
        self.records[new_id as usize].first_child = first_child;
        let mut c = first_child;
        while c != NONE {
            self.records[c as usize].parent = new_id;
            c = self.records[c as usize].next_sibling;
        }
        new_id
    }

    /// Share of slots that are tombstones.
    pub fn garbage_ratio(&self) -> f64 {
        if self.records.is_empty() {
            0.0
        } else {
            1.0 - self.live as f64 / self.records.len() as f64
        }
    }

    /// Rebuild without tombstones (parents before children, ids renumbered).
    pub fn compact(&self) -> Store {
        let mut out = Store::new();
        for &root in &self.roots {
            let new_root = out.add_root(self.name(root), self.meta(root));
            let mut stack = vec![(root, new_root)];
            while let Some((old, new)) = stack.pop() {
                for c in self.children(old) {
                    let id = out.insert_new(new, self.name(c), self.kind(c), self.meta(c));
                    if self.kind(c) == Kind::Dir {
                        stack.push((c, id));
                    }
                }
            }
        }
        out
    }

    /// The entry whose name holds arena offset `offset`, for hits met in increasing
    /// order: gallops
    /// forward from `from` (the previous hit's entry) instead of bisecting all
    /// records, so a common term's many hits touch memory close to each other.
    pub(crate) fn entry_at_offset_from(&self, offset: usize, from: EntryId) -> EntryId {
        let n = self.records.len();
        let mut lo = from as usize;
        let mut step = 1;
        let mut hi = lo + 1;
        while hi < n && self.offsets[hi] as usize <= offset {
            lo = hi;
            hi = lo + step;
            step *= 2;
        }
        let hi = hi.min(n);
        let i = self.offsets[lo..hi].partition_point(|&o| o as usize <= offset);
        (lo + i - 1) as EntryId
    }

    pub(crate) fn has_non_ascii_name(&self, id: EntryId) -> bool {
        self.records[id as usize].flags & FLAG_NON_ASCII != 0
    }

    pub fn entry(&self, id: EntryId) -> EntryRef<'_> {
        EntryRef { store: self, id }
    }
}

pub struct Children<'a> {
    store: &'a Store,
    next: EntryId,
}

impl Iterator for Children<'_> {
    type Item = EntryId;

    fn next(&mut self) -> Option<EntryId> {
        if self.next == NONE {
            return None;
        }
        let id = self.next;
        self.next = self.store.records[id as usize].next_sibling;
        Some(id)
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
        self.store.records[self.id as usize].size
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
        for c in self.store.children(self.id) {
            if !f(self.store.name(c), query_kind(self.store.kind(c))) {
                return;
            }
        }
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
        assert_eq!(std::mem::size_of::<Record>(), 40);
    }

    #[test]
    fn tree_operations() {
        let mut s = Store::new();
        let root = s.add_root(b"r", meta(0));
        let src = s.insert_new(root, b"src", Kind::Dir, meta(0));
        let main = s.insert_new(src, b"main.rs", Kind::File, meta(10));
        let _lib = s.insert_new(src, b"lib.rs", Kind::File, meta(20));
        assert_eq!(s.rel_path(main), b"src/main.rs");
        assert_eq!(
            s.lookup(root, b"src/lib.rs").map(|i| s.name(i)),
            Some(&b"lib.rs"[..])
        );
        assert_eq!(s.depth(main), 2);
        assert_eq!(s.len(), 4);
        let (id, created) = s.upsert(src, b"main.rs", Kind::File, meta(99));
        assert!(!created && id == main && s.meta(main).size == 99);
        // Rename the folder: the subtree follows, paths change.
        let docs = s.rename(src, root, b"docs");
        assert_eq!(
            s.rel_path(s.lookup(docs, b"main.rs").unwrap()),
            b"docs/main.rs"
        );
        assert!(s.lookup(root, b"src").is_none());
        assert_eq!(s.len(), 4);
        assert_eq!(s.remove(docs), 3);
        assert_eq!(s.len(), 1);
        let c = s.compact();
        assert_eq!(c.len(), 1);
        assert_eq!(c.capacity_ids(), 1);
    }

    #[test]
    fn arena_offsets_map_back_to_entries() {
        let mut s = Store::new();
        let root = s.add_root(b"root", meta(0));
        let a = s.insert_new(root, b"Alpha.TXT", Kind::File, meta(1));
        let b = s.insert_new(root, b"beta", Kind::File, meta(1));
        let hit = memchr::memmem::find(&s.lower, b"alpha.txt").unwrap();
        assert_eq!(s.entry_at_offset_from(hit, 0), a);
        let hit = memchr::memmem::find(&s.lower, b"eta").unwrap();
        assert_eq!(s.entry_at_offset_from(hit, 0), b);
        assert_eq!(s.entry_at_offset_from(hit, root), b);
        assert_eq!(s.entry_at_offset_from(hit, b), b);
        let renamed = s.rename(a, root, b"gamma");
        assert_eq!(
            s.entry_at_offset_from(memchr::memmem::find(&s.lower, b"gamma").unwrap(), 0),
            renamed
        );
    }
}
