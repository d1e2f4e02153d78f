//! The held files' folders as a tree: each folder its parent and its own
//! name (an id in [`Strings`]), so a path costs its file name and a folder
//! id, not its whole text (a path 900 bytes long in a tree of deep
//! folders is held as a few dozen). A path is written out again when it is
//! asked for; looking one up hashes its text and compares it part by part
//! from its end, without writing anything.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::strings::{Seed, Strings};

/// The folder of paths with no `/` in them.
pub(crate) const TOP: u32 = 0;

struct Folder {
    parent: u32,
    name: u32,
    /// Files and folders in it (a folder is forgotten at none).
    uses: u32,
}

pub(crate) struct Folders {
    nodes: Vec<Folder>,
    free: Vec<u32>,
    /// Folder ids (never [`TOP`]) by the hash of their path.
    by_path: HashTable<u32>,
    seed: Seed,
}

/// `path` as (its folder's path, or `None` at the top, and its name).
pub(crate) fn split(path: &str) -> (Option<&str>, &str) {
    match path.rsplit_once('/') {
        Some((folder, name)) => (Some(folder), name),
        None => (None, path),
    }
}

impl Folders {
    pub(crate) fn new(seed: Seed) -> Folders {
        Folders {
            nodes: vec![Folder {
                parent: TOP,
                name: u32::MAX,
                uses: 0,
            }],
            free: Vec::new(),
            by_path: HashTable::new(),
            seed,
        }
    }

    /// Whether `folder`'s path is `path` (compared from the end).
    fn is(&self, strings: &Strings, mut folder: u32, path: &str) -> bool {
        let mut rest = path;
        loop {
            let node = &self.nodes[folder as usize];
            let Some(before) = rest.strip_suffix(strings.get(node.name)) else {
                return false;
            };
            if node.parent == TOP {
                return before.is_empty();
            }
            let Some(before) = before.strip_suffix('/') else {
                return false;
            };
            rest = before;
            folder = node.parent;
        }
    }

    /// Whether the file `name` in `folder` has the path `path`.
    pub(crate) fn holds(&self, strings: &Strings, folder: u32, name: u32, path: &str) -> bool {
        let Some(before) = path.strip_suffix(strings.get(name)) else {
            return false;
        };
        if folder == TOP {
            return before.is_empty();
        }
        before
            .strip_suffix('/')
            .is_some_and(|f| self.is(strings, folder, f))
    }

    /// Write the path of the file `name` in `folder` into `out` (cleared).
    pub(crate) fn write(&self, strings: &Strings, folder: u32, name: u32, out: &mut String) {
        write(&self.nodes, strings, folder, strings.get(name), out);
    }

    /// The folder at `path`, when it holds anything.
    pub(crate) fn get(&self, strings: &Strings, path: &str) -> Option<u32> {
        let hash = self.seed.hash_one(path);
        self.by_path
            .find(hash, |&f| self.is(strings, f, path))
            .copied()
    }

    /// The folder at `path` (`None`: the top), made when missing, with one
    /// more use.
    pub(crate) fn enter(&mut self, strings: &mut Strings, path: Option<&str>) -> u32 {
        let Some(path) = path else {
            return TOP;
        };
        // The nearest folder above that is held, then those below it, made
        // one by one (a loop, not recursion: a tree may be deeper than a
        // stack).
        let mut missing = Vec::new();
        let mut rest = path;
        let mut parent = loop {
            if let Some(f) = self.get(strings, rest) {
                break f;
            }
            match rest.rsplit_once('/') {
                Some((above, name)) => {
                    missing.push(name);
                    rest = above;
                }
                None => {
                    missing.push(rest);
                    break TOP;
                }
            }
        };
        if parent != TOP {
            self.nodes[parent as usize].uses += 1;
        }
        while let Some(name) = missing.pop() {
            let node = Folder {
                parent,
                name: strings.intern(name),
                // The folder (or file) below it.
                uses: 1,
            };
            let id = match self.free.pop() {
                Some(id) => {
                    self.nodes[id as usize] = node;
                    id
                }
                None => {
                    self.nodes.push(node);
                    (self.nodes.len() - 1) as u32
                }
            };
            let hash = self.seed.hash_one(path_of(&self.nodes, strings, id));
            let Folders {
                nodes,
                by_path,
                seed,
                ..
            } = self;
            by_path.insert_unique(hash, id, |&f| seed.hash_one(path_of(nodes, strings, f)));
            parent = id;
        }
        parent
    }

    /// One use of `folder` fewer; at none it is forgotten, and so on up.
    pub(crate) fn leave(&mut self, strings: &mut Strings, mut folder: u32) {
        while folder != TOP {
            let node = &mut self.nodes[folder as usize];
            node.uses -= 1;
            if node.uses > 0 {
                return;
            }
            let hash = self.seed.hash_one(path_of(&self.nodes, strings, folder));
            if let Ok(entry) = self.by_path.find_entry(hash, |&f| f == folder) {
                entry.remove();
            }
            let node = &self.nodes[folder as usize];
            let (parent, name) = (node.parent, node.name);
            strings.release(name);
            self.free.push(folder);
            folder = parent;
        }
    }

    /// Give back what the arrays hold beyond their length.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.free.shrink_to_fit();
    }

    /// Whether `folder` is one of `within` or below one of them.
    pub(crate) fn under(&self, mut folder: u32, within: &std::collections::HashSet<u32>) -> bool {
        while folder != TOP {
            if within.contains(&folder) {
                return true;
            }
            folder = self.nodes[folder as usize].parent;
        }
        false
    }
}

/// Write the path of `last` in `folder` into `out` (cleared): filled from
/// its end, so no folder is visited twice to know its place.
fn write(nodes: &[Folder], strings: &Strings, folder: u32, last: &str, out: &mut String) {
    let mut len = last.len();
    let mut at = folder;
    while at != TOP {
        let node = &nodes[at as usize];
        len += strings.get(node.name).len() + 1;
        at = node.parent;
    }
    let mut bytes = std::mem::take(out).into_bytes();
    bytes.clear();
    bytes.resize(len, 0);
    let mut end = len;
    let mut put = |piece: &str| {
        bytes[end - piece.len()..end].copy_from_slice(piece.as_bytes());
        end -= piece.len();
    };
    put(last);
    let mut at = folder;
    while at != TOP {
        let node = &nodes[at as usize];
        put("/");
        put(strings.get(node.name));
        at = node.parent;
    }
    // Every piece is a whole `str`, so this holds.
    *out = String::from_utf8(bytes).expect("joined from whole strings");
}

/// A folder's own path.
fn path_of(nodes: &[Folder], strings: &Strings, folder: u32) -> String {
    let mut out = String::new();
    let node = &nodes[folder as usize];
    write(
        nodes,
        strings,
        node.parent,
        strings.get(node.name),
        &mut out,
    );
    out
}
