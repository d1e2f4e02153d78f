//! The dictionary of distinct folded names: where each is defined (its
//! postings: file slot and place in that file's definitions), and a map
//! from each three-byte piece to the names holding it, so that a name asked
//! for is looked up among the few names that can hold it (a name holds the
//! query only if it holds each of its pieces), not by a pass over every
//! symbol.
//!
//! Held compactly: the names' bytes in one arena, a name defined once holds
//! its one posting in place, and each piece's names are ascending ids kept
//! as the differences between them in LEB128 bytes. A name no longer defined
//! keeps its id (ids only grow, so each piece's list stays ascending) until
//! such names outnumber the rest; then the dictionary is written again in
//! the same order. Written here because no kept crate keeps a substring
//! index of short strings that is updated in place.

use std::{collections::HashMap, hash::BuildHasher};

use hashbrown::HashTable;

use crate::strings::Seed;

/// Where one name is defined.
#[derive(Debug, Clone)]
enum Post {
    None,
    One((u32, u32)),
    /// An index into [`Names::many`].
    Many(u32),
}

/// The ids of the names holding one piece: ascending, as LEB128 differences.
#[derive(Default)]
struct Grams {
    last: u32,
    count: u32,
    bytes: Vec<u8>,
}

impl Grams {
    fn push(&mut self, id: u32) {
        let mut d = if self.count == 0 { id } else { id - self.last };
        loop {
            let b = (d & 0x7f) as u8;
            d >>= 7;
            if d == 0 {
                self.bytes.push(b);
                break;
            }
            self.bytes.push(b | 0x80);
        }
        self.last = id;
        self.count += 1;
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut at = 0;
        let mut id = 0u32;
        let mut first = true;
        std::iter::from_fn(move || {
            if at >= self.bytes.len() {
                return None;
            }
            let mut d = 0u32;
            let mut shift = 0;
            loop {
                let b = self.bytes[at];
                at += 1;
                d |= u32::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            id = if first { d } else { id + d };
            first = false;
            Some(id)
        })
    }
}

pub(crate) struct Names {
    text: String,
    /// Where each name starts in `text` (it ends where the next starts).
    starts: Vec<u32>,
    /// Which of a few character classes each name holds (see [`mask`]): a
    /// name lacking one the query has cannot hold the query's letters.
    masks: Vec<u64>,
    postings: Vec<Post>,
    /// The postings of names defined more than once.
    many: Vec<Vec<(u32, u32)>>,
    many_free: Vec<u32>,
    lookup: HashTable<u32>,
    grams: HashMap<[u8; 3], Grams, Seed>,
    seed: Seed,
    /// Names with no postings.
    dead: usize,
}

/// A bit per character class: letters and digits by their ASCII value
/// modulo 63, anything else in the last bit.
pub(crate) fn mask(folded: &str) -> u64 {
    folded.bytes().fold(0, |m, b| {
        m | if b.is_ascii() { 1 << (b % 63) } else { 1 << 63 }
    })
}

/// The dictionary is written again past this many names no longer defined,
/// when they outnumber the rest (a few in tests, so that the table's tests
/// write it again often).
const MIN_DEAD: usize = if cfg!(test) { 8 } else { 1 << 12 };

impl Names {
    pub(crate) fn new(seed: Seed) -> Names {
        Names {
            text: String::new(),
            starts: Vec::new(),
            masks: Vec::new(),
            postings: Vec::new(),
            many: Vec::new(),
            many_free: Vec::new(),
            lookup: HashTable::new(),
            grams: HashMap::with_hasher(seed.clone()),
            seed,
            dead: 0,
        }
    }

    /// How many ids there are (some may be defined nowhere now).
    pub(crate) fn len(&self) -> u32 {
        self.starts.len() as u32
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        let i = id as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.text.len(), |&e| e as usize);
        &self.text[self.starts[i] as usize..end]
    }

    pub(crate) fn mask_of(&self, id: u32) -> u64 {
        self.masks[id as usize]
    }

    /// Where `id` is defined: (file slot, index in its definitions).
    pub(crate) fn postings(&self, id: u32) -> &[(u32, u32)] {
        match &self.postings[id as usize] {
            Post::None => &[],
            Post::One(p) => std::slice::from_ref(p),
            Post::Many(k) => &self.many[*k as usize],
        }
    }

    pub(crate) fn is_live(&self, id: u32) -> bool {
        !matches!(self.postings[id as usize], Post::None)
    }

    fn find(&self, folded: &str) -> Option<u32> {
        let hash = self.seed.hash_one(folded);
        self.lookup
            .find(hash, |&id| self.name(id) == folded)
            .copied()
    }

    fn intern(&mut self, folded: &str) -> u32 {
        if let Some(id) = self.find(folded) {
            return id;
        }
        let id = self.len();
        let start = u32::try_from(self.text.len()).expect("the table's names fit in 4 GiB");
        self.text.push_str(folded);
        self.starts.push(start);
        self.masks.push(mask(folded));
        self.postings.push(Post::None);
        self.dead += 1;
        let mut seen: Vec<[u8; 3]> = Vec::new();
        for w in folded.as_bytes().windows(3) {
            let g = [w[0], w[1], w[2]];
            if !seen.contains(&g) {
                seen.push(g);
                self.grams.entry(g).or_default().push(id);
            }
        }
        let hash = self.seed.hash_one(folded);
        let Names {
            text,
            starts,
            lookup,
            seed,
            ..
        } = self;
        lookup.insert_unique(hash, id, |&other| {
            let i = other as usize;
            let end = starts.get(i + 1).map_or(text.len(), |&e| e as usize);
            seed.hash_one(&text[starts[i] as usize..end])
        });
        id
    }

    /// `folded` is defined at `posting`.
    pub(crate) fn add(&mut self, folded: &str, posting: (u32, u32)) {
        let id = self.intern(folded);
        let post = &mut self.postings[id as usize];
        match post {
            Post::None => {
                *post = Post::One(posting);
                self.dead -= 1;
            }
            Post::One(first) => {
                let both = vec![*first, posting];
                let k = match self.many_free.pop() {
                    Some(k) => {
                        self.many[k as usize] = both;
                        k
                    }
                    None => {
                        self.many.push(both);
                        (self.many.len() - 1) as u32
                    }
                };
                *post = Post::Many(k);
            }
            Post::Many(k) => self.many[*k as usize].push(posting),
        }
    }

    /// `folded` is no longer defined in the file at `slot`.
    pub(crate) fn remove(&mut self, folded: &str, slot: u32) {
        let Some(id) = self.find(folded) else {
            return;
        };
        let post = &mut self.postings[id as usize];
        match post {
            Post::None => {}
            Post::One((s, _)) => {
                if *s == slot {
                    *post = Post::None;
                    self.dead += 1;
                }
            }
            Post::Many(k) => {
                let k = *k;
                let list = &mut self.many[k as usize];
                list.retain(|&(s, _)| s != slot);
                let left = match list.as_slice() {
                    [] => Some(Post::None),
                    [one] => Some(Post::One(*one)),
                    _ => None,
                };
                if let Some(left) = left {
                    if matches!(left, Post::None) {
                        self.dead += 1;
                    }
                    *post = left;
                    self.many[k as usize] = Vec::new();
                    self.many_free.push(k);
                }
            }
        }
        if self.dead >= MIN_DEAD && self.dead * 2 > self.starts.len() {
            self.rewrite();
        }
    }

    /// The dictionary again with only the names defined now, in the same
    /// order (so answers keep theirs).
    fn rewrite(&mut self) {
        let mut old = std::mem::replace(self, Names::new(self.seed.clone()));
        self.many = std::mem::take(&mut old.many);
        self.many_free = std::mem::take(&mut old.many_free);
        for id in 0..old.starts.len() as u32 {
            let post = &old.postings[id as usize];
            if matches!(post, Post::None) {
                continue;
            }
            let new = self.intern(old.name(id));
            self.postings[new as usize] = post.clone();
            self.dead -= 1;
        }
    }

    /// Give back what the arrays hold beyond their length.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.masks.shrink_to_fit();
        self.postings.shrink_to_fit();
        for list in &mut self.many {
            list.shrink_to_fit();
        }
        self.many.shrink_to_fit();
        for g in self.grams.values_mut() {
            g.bytes.shrink_to_fit();
        }
    }

    /// The ids of names that hold `q` (folded), ascending.
    pub(crate) fn holding(&self, q: &str) -> Vec<u32> {
        let live = |id: &u32| self.is_live(*id);
        if q.is_empty() {
            return (0..self.len()).filter(live).collect();
        }
        let qm = mask(q);
        let check = |id: &u32| {
            self.masks[*id as usize] & qm == qm && self.is_live(*id) && self.name(*id).contains(q)
        };
        if q.len() < 3 {
            return (0..self.len()).filter(check).collect();
        }
        // The rarest piece's names, checked whole.
        let mut rarest: Option<&Grams> = None;
        for w in q.as_bytes().windows(3) {
            match self.grams.get(&[w[0], w[1], w[2]]) {
                None => return Vec::new(),
                Some(list) => {
                    if rarest.is_none_or(|r| list.count < r.count) {
                        rarest = Some(list);
                    }
                }
            }
        }
        rarest.map_or_else(Vec::new, |list| list.ids().filter(check).collect())
    }

    /// Names with postings, and all ids (for tests).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.starts.len() - self.dead, self.starts.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_lists_give_back_their_ids() {
        let mut g = Grams::default();
        let ids = [0, 1, 5, 127, 128, 300, 16_384, 16_385, 2_000_000, u32::MAX];
        for id in ids {
            g.push(id);
        }
        assert_eq!(g.ids().collect::<Vec<_>>(), ids);
        assert_eq!(g.count, ids.len() as u32);
    }

    #[test]
    fn names_are_found_by_a_part_and_forgotten_when_defined_nowhere() {
        let mut n = Names::new(Seed::default());
        n.add("parsequery", (0, 0));
        n.add("query", (0, 1));
        n.add("query", (1, 0));
        n.add("other", (1, 1));
        let names = |n: &Names, q: &str| -> Vec<String> {
            n.holding(q)
                .iter()
                .map(|&id| n.name(id).to_string())
                .collect()
        };
        assert_eq!(names(&n, "query"), ["parsequery", "query"]);
        assert_eq!(names(&n, "er"), ["parsequery", "query", "other"]);
        assert_eq!(n.postings(n.find("query").unwrap()), [(0, 1), (1, 0)]);
        n.remove("query", 0);
        assert_eq!(n.postings(n.find("query").unwrap()), [(1, 0)]);
        n.remove("parsequery", 0);
        assert_eq!(names(&n, "query"), ["query"]);
        assert_eq!(n.counts(), (2, 3));
    }

    #[test]
    fn the_dictionary_is_written_again_in_its_order_once_mostly_unused() {
        let mut n = Names::new(Seed::default());
        let total = MIN_DEAD * 3;
        for i in 0..total {
            n.add(&format!("name{i}"), (i as u32, 0));
        }
        for i in (0..total).filter(|i| i % 4 != 0) {
            n.remove(&format!("name{i}"), i as u32);
        }
        let (live, ids) = n.counts();
        assert_eq!(live, total / 4);
        assert!(ids < total, "written again: {ids} ids");
        let held: Vec<&str> = n.holding("name").iter().map(|&id| n.name(id)).collect();
        let want: Vec<String> = (0..total)
            .filter(|i| i % 4 == 0)
            .map(|i| format!("name{i}"))
            .collect();
        assert_eq!(held, want);
        assert_eq!(n.postings(n.find("name8").unwrap()), [(8, 0)]);
    }
}
