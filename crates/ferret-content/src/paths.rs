//! The paths of the files the index knows, each held once: its folders as a
//! tree (each folder its parent and its own name), a file as its folder and
//! its name. A path 900 bytes long in a tree of deep folders costs its file
//! name and a dozen bytes, not its whole text once per copy (the paths were
//! most of the index's memory on a tree of deep folders: 842 MiB of 920).
//!
//! Files are numbered as they are added and keep their number; one that is
//! removed is only no longer looked up by its path (the live index keeps its
//! files' numbers until its next merge, which starts a new set of paths from
//! the files still held, [`Paths::compacted`]). Looking a path up hashes its
//! parts one by one (a folder's hash is made from its parent's and its name,
//! so a file's is found without writing any folder's path) and compares the
//! file found with the path part by part from its end; a path is written out
//! only when it is asked for.
//!
//! Each folder also keeps its folders and its files as lists linked through
//! their numbers (4 bytes a file, 8 a folder: 4.2 MiB on a tree of 900,096
//! files in 99,904 folders, 76.3 MiB held before), so that what lies below a
//! folder is found by walking that part of the tree
//! ([`Paths::files_below`]), not by a pass over every file: a folder
//! created, moved or removed costs in proportion to what lies below it.
//!
//! Any string is a path here: its folders are what lies between its `/`s,
//! empty ones included (`a//b`, `/a`), so every path is written back exactly
//! as it was added.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// The folder of the paths with no `/`: it has no name and no parent.
pub(crate) const TOP: u32 = 0;

/// The end of a list of folders or files (no number).
const END: u32 = u32::MAX;

struct Folder {
    /// Made from the parent's hash and the name ([`Paths::child_hash`]).
    hash: u64,
    parent: u32,
    name: Name,
    /// Its folders and its files (every number ever added in it, removed
    /// ones included), each a list linked through `next`, newest first: what
    /// lies below a folder is found without a pass over every file.
    first_folder: u32,
    first_file: u32,
    /// The next folder in its parent's list.
    next: u32,
}

#[derive(Clone, Copy)]
struct Name {
    at: u32,
    len: u32,
}

#[derive(Clone, Copy)]
struct File {
    folder: u32,
    name: Name,
    /// The next file in its folder's list.
    next: u32,
}

/// The folder [`Paths::get_near`] last went through.
#[derive(Default)]
pub(crate) struct Near {
    folder: String,
    /// Its number, if held.
    id: Option<u32>,
    valid: bool,
}

/// The paths of the files, by number.
pub(crate) struct Paths {
    /// The names of the folders and files, one after another.
    names: String,
    folders: Vec<Folder>,
    /// Folders (never [`TOP`]) by their hash.
    folder_at: HashTable<u32>,
    files: Vec<File>,
    /// The files looked up by path, by the hash of their folder and name.
    by_path: HashTable<u32>,
    seed: foldhash::fast::RandomState,
    /// The first folder and file added unindexed ([`Paths::add_unindexed`]),
    /// not looked up until [`Paths::index_unindexed`].
    unindexed: Option<(u32, u32)>,
}

impl Default for Paths {
    fn default() -> Self {
        Paths::new()
    }
}

/// `path` as its folder's part (`None` at the top) and its name.
fn split(path: &str) -> (Option<&str>, &str) {
    match path.rsplit_once('/') {
        Some((folder, name)) => (Some(folder), name),
        None => (None, path),
    }
}

impl Paths {
    pub(crate) fn new() -> Paths {
        Paths {
            names: String::new(),
            folders: vec![Folder {
                hash: 0,
                parent: TOP,
                name: Name { at: 0, len: 0 },
                first_folder: END,
                first_file: END,
                next: END,
            }],
            folder_at: HashTable::new(),
            files: Vec::new(),
            by_path: HashTable::new(),
            seed: foldhash::fast::RandomState::default(),
            unindexed: None,
        }
    }

    /// Room made for `files` files (so a build or a load does not grow the
    /// arrays, and their copies, step by step).
    pub(crate) fn reserve(&mut self, files: usize, folders: usize, name_bytes: usize) {
        self.files.reserve_exact(files);
        self.by_path.reserve(files, |_| 0);
        self.folders.reserve_exact(folders);
        self.folder_at.reserve(folders, |_| 0);
        self.names.reserve_exact(name_bytes);
    }

    /// Files numbered so far (removed ones included).
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    /// Files looked up by their path.
    pub(crate) fn live(&self) -> usize {
        self.by_path.len()
    }

    /// Folders held ([`TOP`] included).
    pub(crate) fn folder_count(&self) -> usize {
        self.folders.len()
    }

    fn view(&self) -> View<'_> {
        View {
            names: &self.names,
            folders: &self.folders,
            files: &self.files,
        }
    }

    fn child_hash(&self, parent_hash: u64, name: &str) -> u64 {
        self.seed.hash_one((parent_hash, name))
    }

    fn name(&self, n: Name) -> &str {
        self.view().name(n)
    }

    /// `name` added to the names; `None` past 4 GiB of them.
    fn add_name(&mut self, name: &str) -> Option<Name> {
        let at = u32::try_from(self.names.len()).ok()?;
        let len = u32::try_from(name.len()).ok()?;
        at.checked_add(len)?;
        self.names.push_str(name);
        Some(Name { at, len })
    }

    /// The folder `name` in `parent`, made if missing; `None` when there is
    /// no room for its name (or `parent` is not a folder).
    pub(crate) fn folder(&mut self, parent: u32, name: &str) -> Option<u32> {
        let parent_hash = self.folders.get(parent as usize)?.hash;
        let hash = self.child_hash(parent_hash, name);
        let found = self.folder_at.find(hash, |&f| {
            let node = &self.folders[f as usize];
            node.parent == parent && self.name(node.name) == name
        });
        if let Some(&f) = found {
            return Some(f);
        }
        let id = self.push_folder(parent, name, hash)?;
        let folders = &self.folders;
        self.folder_at
            .insert_unique(hash, id, |&f| folders[f as usize].hash);
        Some(id)
    }

    /// A new folder `name` (of hash `hash`) in `parent`'s list, not looked
    /// up; `None` when there is no room.
    fn push_folder(&mut self, parent: u32, name: &str, hash: u64) -> Option<u32> {
        let id = u32::try_from(self.folders.len())
            .ok()
            .filter(|&id| id != END)?;
        let name = self.add_name(name)?;
        let next = std::mem::replace(&mut self.folders[parent as usize].first_folder, id);
        self.folders.push(Folder {
            hash,
            parent,
            name,
            first_folder: END,
            first_file: END,
            next,
        });
        Some(id)
    }

    /// A new file `name` in `folder`'s list, not looked up; `None` when
    /// there is no room (or `folder` is not one).
    fn push_file(&mut self, folder: u32, name: &str) -> Option<u32> {
        if folder as usize >= self.folders.len() {
            return None;
        }
        let id = u32::try_from(self.files.len())
            .ok()
            .filter(|&id| id != END)?;
        let name = self.add_name(name)?;
        let next = std::mem::replace(&mut self.folders[folder as usize].first_file, id);
        self.files.push(File { folder, name, next });
        Some(id)
    }

    /// A new folder `name` in `parent`, not looked up by its path until
    /// [`Paths::index_unindexed`]: for a listing that holds each folder
    /// once, made while the name index is locked, its tables after.
    pub(crate) fn folder_unindexed(&mut self, parent: u32, name: &str) -> Option<u32> {
        let parent_hash = self.folders.get(parent as usize)?.hash;
        // Two names that show alike (`caf%E9` as written, and the name of
        // the byte it escapes) are one folder here, as `folder` makes them:
        // only such names can meet, and only they are looked for among the
        // parent's folders.
        if name.contains('%') {
            let mut f = self.folders[parent as usize].first_folder;
            while f != END {
                let node = &self.folders[f as usize];
                if self.name(node.name) == name {
                    return Some(f);
                }
                f = node.next;
            }
        }
        let hash = self.child_hash(parent_hash, name);
        self.mark_unindexed();
        self.push_folder(parent, name, hash)
    }

    /// [`Paths::add`], not looked up by its path until
    /// [`Paths::index_unindexed`] (see [`Paths::folder_unindexed`]).
    pub(crate) fn add_unindexed(&mut self, folder: u32, name: &str) -> Option<u32> {
        self.mark_unindexed();
        self.push_file(folder, name)
    }

    fn mark_unindexed(&mut self) {
        if self.unindexed.is_none() {
            self.unindexed = Some((self.folders.len() as u32, self.files.len() as u32));
        }
    }

    /// Look up by their paths the folders and files added unindexed, in the
    /// order they were added: the tables [`Paths::folder`] and [`Paths::add`]
    /// make (a file takes its path over from an earlier one; of two folders
    /// of one path, which only names that show alike can make, the first is
    /// the one looked up).
    pub(crate) fn index_unindexed(&mut self) {
        let Some((folders_from, files_from)) = self.unindexed.take() else {
            return;
        };
        let view = View {
            names: &self.names,
            folders: &self.folders,
            files: &self.files,
        };
        let folders = &self.folders;
        for id in folders_from..folders.len() as u32 {
            let node = &folders[id as usize];
            let same = |&f: &u32| {
                let other = &folders[f as usize];
                other.parent == node.parent && view.name(other.name) == view.name(node.name)
            };
            if self.folder_at.find(node.hash, same).is_none() {
                self.folder_at
                    .insert_unique(node.hash, id, |&f| folders[f as usize].hash);
            }
        }
        let (files, seed) = (&self.files, &self.seed);
        for id in files_from..files.len() as u32 {
            let this = files[id as usize];
            let hash = view.hash(seed, this);
            match self
                .by_path
                .find_mut(hash, |&other| view.same(files[other as usize], this))
            {
                Some(slot) => *slot = id,
                None => {
                    self.by_path
                        .insert_unique(hash, id, |&f| view.hash(seed, files[f as usize]));
                }
            }
        }
    }

    /// The folder whose path is `path` (made with those above it if
    /// missing).
    fn folder_path(&mut self, path: Option<&str>) -> Option<u32> {
        let Some(path) = path else {
            return Some(TOP);
        };
        let mut folder = TOP;
        for part in path.split('/') {
            folder = self.folder(folder, part)?;
        }
        Some(folder)
    }

    /// The folder whose path is `path`, if held (never [`TOP`]: `""` is
    /// the folder of that name, as in `/abs`).
    pub(crate) fn folder_of(&self, path: &str) -> Option<u32> {
        debug_assert!(self.unindexed.is_none(), "looked up before index_unindexed");
        let mut hash = 0;
        for part in path.split('/') {
            hash = self.child_hash(hash, part);
        }
        let view = self.view();
        self.folder_at
            .find(hash, |&f| view.folder_is(f, path))
            .copied()
    }

    /// The folder at `path` (made with those above it if missing); `None`
    /// when there is no room for a name.
    pub(crate) fn make_folder(&mut self, path: &str) -> Option<u32> {
        self.folder_path(Some(path))
    }

    /// Every file number ever added in folder `f` or a folder below it
    /// (removed ones included: the caller asks which are live), in no
    /// order: a walk of that part of the tree, not a pass over every file.
    pub(crate) fn files_below(&self, f: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![f];
        while let Some(at) = stack.pop() {
            let Some(node) = self.folders.get(at as usize) else {
                continue;
            };
            let mut file = node.first_file;
            while file != END {
                out.push(file);
                file = self.files[file as usize].next;
            }
            let mut sub = node.first_folder;
            while sub != END {
                stack.push(sub);
                sub = self.folders[sub as usize].next;
            }
        }
        out
    }

    fn file_hash(&self, folder: u32, name: &str) -> u64 {
        self.child_hash(self.folders[folder as usize].hash, name)
    }

    /// The hash a path's file has, from its text alone.
    fn hash_of(&self, path: &str) -> u64 {
        let (folder, name) = split(path);
        let mut hash = 0;
        if let Some(folder) = folder {
            for part in folder.split('/') {
                hash = self.child_hash(hash, part);
            }
        }
        self.child_hash(hash, name)
    }

    /// Add the file `name` in `folder` as the next number, the one looked up
    /// by its path from now on (another file at that path no longer is).
    /// `None`: no room (past 4 GiB of names, or 2^32 files).
    pub(crate) fn add(&mut self, folder: u32, name: &str) -> Option<u32> {
        let id = self.push_file(folder, name)?;
        let hash = self.file_hash(folder, name);
        let (view, by_path, seed) = self.files_table();
        let files = view.files;
        let this = files[id as usize];
        let same = |&other: &u32| view.same(files[other as usize], this);
        match by_path.find_mut(hash, same) {
            Some(slot) => *slot = id,
            None => {
                by_path.insert_unique(hash, id, |&f| view.hash(seed, files[f as usize]));
            }
        }
        Some(id)
    }

    /// Add the file at `path` as the next number ([`Paths::add`]).
    pub(crate) fn push(&mut self, path: &str) -> Option<u32> {
        let (folder, name) = split(path);
        let folder = self.folder_path(folder)?;
        self.add(folder, name)
    }

    /// The number of the file at `path`, if one is looked up by it.
    pub(crate) fn get(&self, path: &str) -> Option<u32> {
        debug_assert!(self.unindexed.is_none(), "looked up before index_unindexed");
        let view = self.view();
        self.by_path
            .find(self.hash_of(path), |&id| view.is(id, path))
            .copied()
    }

    /// [`Paths::get`] for a run of paths, most in the folder of the one
    /// before (a caller's list of its scope comes folder by folder): the
    /// folder's part of the path is compared with the last one's, and its
    /// hash and number, found once, serve the run (a path 50 folders deep is
    /// then one hash of its name, not fifty).
    pub(crate) fn get_near(&self, path: &str, near: &mut Near) -> Option<u32> {
        debug_assert!(self.unindexed.is_none(), "looked up before index_unindexed");
        let (folder, name) = split(path);
        let Some(folder) = folder else {
            return self.get(path);
        };
        if !near.valid || near.folder != folder {
            near.folder.clear();
            near.folder.push_str(folder);
            near.valid = true;
            let mut hash = 0;
            for part in folder.split('/') {
                hash = self.child_hash(hash, part);
            }
            let view = self.view();
            near.id = self
                .folder_at
                .find(hash, |&f| view.folder_is(f, folder))
                .copied();
        }
        let f = near.id?;
        let hash = self.file_hash(f, name);
        let view = self.view();
        self.by_path
            .find(hash, |&id| {
                let file = view.files[id as usize];
                file.folder == f && view.name(file.name) == name
            })
            .copied()
    }

    /// The file at `path` no longer looked up by it; its number.
    pub(crate) fn remove(&mut self, path: &str) -> Option<u32> {
        debug_assert!(self.unindexed.is_none(), "looked up before index_unindexed");
        let hash = self.hash_of(path);
        let Paths {
            by_path,
            files,
            folders,
            names,
            ..
        } = self;
        let view = View {
            names,
            folders,
            files,
        };
        by_path
            .find_entry(hash, |&id| view.is(id, path))
            .ok()
            .map(|e| e.remove().0)
    }

    /// File `id` no longer looked up by its path (if it was).
    pub(crate) fn remove_id(&mut self, id: u32) {
        let Some(&file) = self.files.get(id as usize) else {
            return;
        };
        let hash = self.file_hash(file.folder, self.name(file.name));
        if let Ok(e) = self.by_path.find_entry(hash, |&f| f == id) {
            e.remove();
        }
    }

    /// The folder at `from` moved to `to` with all that lies below it (a
    /// folder renamed on disk): its files keep their numbers and are looked
    /// up by their new paths from now on, no longer by their old ones; the
    /// folders above `to` are made if missing. Costs a hash of each folder
    /// and live file below it: no file is read again. `false`, with nothing
    /// changed, when no folder is held at `from`, when `to` is `from` or lies
    /// below it, when a folder is already held at `to` (even one whose files
    /// are all gone) or a live file is, or when there is no room for a name.
    /// `Some` number of live files moved, `None` when refused.
    pub(crate) fn move_folder(&mut self, from: &str, to: &str) -> Option<usize> {
        let f = self.folder_of(from)?;
        if to == from
            || to
                .strip_prefix(from)
                .is_some_and(|rest| rest.starts_with('/'))
            || self.folder_of(to).is_some()
            || self.get(to).is_some()
        {
            return None;
        }
        let (above, name) = split(to);
        let parent = self.folder_path(above)?;
        let name = self.add_name(name)?;
        // The folders below (each after its parent) and their live files.
        let mut below = vec![f];
        let mut i = 0;
        while let Some(&at) = below.get(i) {
            let mut sub = self.folders[at as usize].first_folder;
            while sub != END {
                below.push(sub);
                sub = self.folders[sub as usize].next;
            }
            i += 1;
        }
        let mut files = Vec::new();
        for &at in &below {
            let mut file = self.folders[at as usize].first_file;
            while file != END {
                if self.is_live(file) {
                    files.push(file);
                }
                file = self.files[file as usize].next;
            }
        }
        // Out of the tables under their old hashes…
        for &id in &files {
            self.remove_id(id);
        }
        for &at in &below {
            let hash = self.folders[at as usize].hash;
            if let Ok(e) = self.folder_at.find_entry(hash, |&x| x == at) {
                e.remove();
            }
        }
        // …out of the old parent's list, into the new one's…
        let old_parent = self.folders[f as usize].parent;
        let after = self.folders[f as usize].next;
        if self.folders[old_parent as usize].first_folder == f {
            self.folders[old_parent as usize].first_folder = after;
        } else {
            let mut at = self.folders[old_parent as usize].first_folder;
            while at != END {
                if self.folders[at as usize].next == f {
                    self.folders[at as usize].next = after;
                    break;
                }
                at = self.folders[at as usize].next;
            }
        }
        let next = std::mem::replace(&mut self.folders[parent as usize].first_folder, f);
        let node = &mut self.folders[f as usize];
        node.parent = parent;
        node.name = name;
        node.next = next;
        // …and back under their new hashes, parents first.
        for &at in &below {
            let node = &self.folders[at as usize];
            let hash = self.child_hash(
                self.folders[node.parent as usize].hash,
                self.name(node.name),
            );
            self.folders[at as usize].hash = hash;
            let folders = &self.folders;
            self.folder_at
                .insert_unique(hash, at, |&x| folders[x as usize].hash);
        }
        let moved = files.len();
        let (view, by_path, seed) = self.files_table();
        for id in files {
            let hash = view.hash(seed, view.files[id as usize]);
            by_path.insert_unique(hash, id, |&x| view.hash(seed, view.files[x as usize]));
        }
        Some(moved)
    }

    /// The files' lookup table, to change, with what its hashes are made
    /// from, to read.
    fn files_table(&mut self) -> (View<'_>, &mut HashTable<u32>, &foldhash::fast::RandomState) {
        let Paths {
            names,
            folders,
            files,
            by_path,
            seed,
            ..
        } = self;
        (
            View {
                names,
                folders,
                files,
            },
            by_path,
            seed,
        )
    }

    /// Whether file `id` is looked up by its path.
    pub(crate) fn is_live(&self, id: u32) -> bool {
        let Some(&file) = self.files.get(id as usize) else {
            return false;
        };
        let hash = self.file_hash(file.folder, self.name(file.name));
        self.by_path.find(hash, |&f| f == id).is_some()
    }

    /// File `id`: its folder and its name.
    pub(crate) fn file(&self, id: u32) -> (u32, &str) {
        let f = self.files[id as usize];
        (f.folder, self.name(f.name))
    }

    /// Folder `f`: its parent and its name ([`TOP`]: itself, no name).
    pub(crate) fn folder_entry(&self, f: u32) -> (u32, &str) {
        let node = &self.folders[f as usize];
        (node.parent, self.name(node.name))
    }

    /// The path of file `id`, written into `out` (cleared).
    pub(crate) fn write(&self, id: u32, out: &mut String) {
        let (folder, name) = self.file(id);
        self.write_in(folder, Some(name), out);
    }

    /// The path of folder `f` (`""` for [`TOP`]), written into `out`.
    pub(crate) fn write_folder(&self, f: u32, out: &mut String) {
        self.write_in(f, None, out);
    }

    /// `last` in `folder`, or the folder itself: filled from its end, so no
    /// folder is visited twice to know its place.
    fn write_in(&self, folder: u32, last: Option<&str>, out: &mut String) {
        out.clear();
        let mut len = last.map_or(0, str::len);
        let mut at = folder;
        let mut first = last.is_none();
        while at != TOP {
            let node = &self.folders[at as usize];
            len += node.name.len as usize + usize::from(!first);
            first = false;
            at = node.parent;
        }
        let mut bytes = std::mem::take(out).into_bytes();
        bytes.resize(len, 0);
        let mut end = len;
        let mut put = |piece: &str| {
            bytes[end - piece.len()..end].copy_from_slice(piece.as_bytes());
            end -= piece.len();
        };
        let mut at = folder;
        let mut sep = match last {
            Some(l) => {
                put(l);
                true
            }
            None => false,
        };
        while at != TOP {
            let node = &self.folders[at as usize];
            if sep {
                put("/");
            }
            sep = true;
            put(self.name(node.name));
            at = node.parent;
        }
        // Every piece is a whole `str`, so this holds.
        *out = String::from_utf8(bytes).unwrap_or_default();
    }

    /// The path of file `id`.
    pub(crate) fn path(&self, id: u32) -> String {
        let mut out = String::new();
        self.write(id, &mut out);
        out
    }

    /// A new set of paths holding only the files `keep` names, numbered in
    /// that order, and the folders above them (the others are forgotten).
    pub(crate) fn compacted(&self, keep: impl IntoIterator<Item = u32>) -> Paths {
        let mut out = Paths::new();
        // Old folder number to new (`u32::MAX`: not made yet).
        let mut made = vec![u32::MAX; self.folders.len()];
        made[TOP as usize] = TOP;
        let mut chain = Vec::new();
        for id in keep {
            let (folder, name) = self.file(id);
            // The folders above it not made yet, made from the top down.
            let mut at = folder;
            while made[at as usize] == u32::MAX {
                chain.push(at);
                at = self.folders[at as usize].parent;
            }
            while let Some(f) = chain.pop() {
                let node = &self.folders[f as usize];
                // Held before, so there is room for it again.
                made[f as usize] = out
                    .folder(made[node.parent as usize], self.name(node.name))
                    .unwrap_or(TOP);
            }
            out.add(made[folder as usize], name);
        }
        out
    }

    /// Give back what the arrays hold beyond their length.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.names.shrink_to_fit();
        self.folders.shrink_to_fit();
        self.files.shrink_to_fit();
        let view = View {
            names: &self.names,
            folders: &self.folders,
            files: &self.files,
        };
        self.folder_at
            .shrink_to_fit(|&f| view.folders[f as usize].hash);
        let seed = &self.seed;
        self.by_path
            .shrink_to_fit(|&f| view.hash(seed, view.files[f as usize]));
    }
}

/// The parts of [`Paths`] a comparison reads, borrowed apart from its hash
/// table (which is changed while they are read).
struct View<'a> {
    names: &'a str,
    folders: &'a [Folder],
    files: &'a [File],
}

impl<'a> View<'a> {
    fn name(&self, n: Name) -> &'a str {
        // Every name was added as a whole `str`.
        &self.names[n.at as usize..(n.at + n.len) as usize]
    }

    /// Whether two files are in the same folder under the same name.
    fn same(&self, a: File, b: File) -> bool {
        a.folder == b.folder && self.name(a.name) == self.name(b.name)
    }

    /// A held file's hash (as [`Paths::file_hash`] makes it).
    fn hash(&self, seed: &foldhash::fast::RandomState, f: File) -> u64 {
        seed.hash_one((self.folders[f.folder as usize].hash, self.name(f.name)))
    }

    fn folder_is(&self, mut f: u32, path: &str) -> bool {
        let mut rest = path;
        loop {
            if f == TOP {
                return false;
            }
            let node = &self.folders[f as usize];
            let Some(before) = rest.strip_suffix(self.name(node.name)) else {
                return false;
            };
            if node.parent == TOP {
                return before.is_empty();
            }
            let Some(before) = before.strip_suffix('/') else {
                return false;
            };
            rest = before;
            f = node.parent;
        }
    }

    fn is(&self, id: u32, path: &str) -> bool {
        let file = self.files[id as usize];
        let (folder, name) = split(path);
        self.name(file.name) == name
            && match folder {
                None => file.folder == TOP,
                Some(f) => self.folder_is(file.folder, f),
            }
    }
}

#[cfg(test)]
mod tests;
