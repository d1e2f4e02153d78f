//! The table's strings, each held once: names as written, containers, and
//! the parts of paths, interned in one arena of bytes and known by a `u32`.
//! Each is counted as it is used and released; one no longer used is
//! forgotten (its id used again), and the arena is rewritten once such
//! leftovers are half of it. Written here because the table needs ids that
//! stay put while the bytes move, which no kept crate gives.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// A [`foldhash`] hasher seeded once per table (names and paths come from
/// the served files).
pub(crate) type Seed = foldhash::fast::RandomState;

pub(crate) struct Strings {
    text: String,
    /// Where each id's bytes are: (start, length).
    spans: Vec<(u32, u32)>,
    /// How many uses each id has; 0: free.
    uses: Vec<u32>,
    free: Vec<u32>,
    lookup: HashTable<u32>,
    seed: Seed,
    /// Bytes of `text` that belong to no id.
    garbage: usize,
}

/// Rewrite the arena past this many leftover bytes, when they are at least
/// half of it (a few in tests, so that the table's tests rewrite it often).
const MIN_GARBAGE: usize = if cfg!(test) { 64 } else { 1 << 16 };

impl Strings {
    pub(crate) fn new(seed: Seed) -> Strings {
        Strings {
            text: String::new(),
            spans: Vec::new(),
            uses: Vec::new(),
            free: Vec::new(),
            lookup: HashTable::new(),
            seed,
            garbage: 0,
        }
    }

    pub(crate) fn get(&self, id: u32) -> &str {
        let (start, len) = self.spans[id as usize];
        &self.text[start as usize..(start + len) as usize]
    }

    /// The id of `s`, one more use of it.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        let hash = self.seed.hash_one(s);
        let Strings {
            text,
            spans,
            uses,
            lookup,
            ..
        } = self;
        let at = |id: &u32| {
            let (start, len) = spans[*id as usize];
            &text[start as usize..(start + len) as usize]
        };
        if let Some(&id) = lookup.find(hash, |id| at(id) == s) {
            uses[id as usize] += 1;
            return id;
        }
        let start = u32::try_from(self.text.len()).expect("the table's strings fit in 4 GiB");
        self.text.push_str(s);
        let span = (start, s.len() as u32);
        let id = match self.free.pop() {
            Some(id) => {
                self.spans[id as usize] = span;
                self.uses[id as usize] = 1;
                id
            }
            None => {
                self.spans.push(span);
                self.uses.push(1);
                (self.spans.len() - 1) as u32
            }
        };
        let Strings {
            text,
            spans,
            lookup,
            seed,
            ..
        } = self;
        lookup.insert_unique(hash, id, |id| {
            let (start, len) = spans[*id as usize];
            seed.hash_one(&text[start as usize..(start + len) as usize])
        });
        id
    }

    /// One use of `id` fewer; at none it is forgotten.
    pub(crate) fn release(&mut self, id: u32) {
        let uses = &mut self.uses[id as usize];
        *uses -= 1;
        if *uses > 0 {
            return;
        }
        let hash = self.seed.hash_one(self.get(id));
        if let Ok(entry) = self.lookup.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
        self.garbage += self.spans[id as usize].1 as usize;
        self.spans[id as usize] = (0, 0);
        self.free.push(id);
        if self.garbage >= MIN_GARBAGE && self.garbage * 2 >= self.text.len() {
            self.rewrite();
        }
    }

    /// The arena without its leftovers (ids unchanged).
    fn rewrite(&mut self) {
        let mut text = String::with_capacity(self.text.len() - self.garbage);
        for (span, &uses) in self.spans.iter_mut().zip(&self.uses) {
            if uses == 0 {
                continue;
            }
            let (start, len) = *span;
            let at = text.len() as u32;
            text.push_str(&self.text[start as usize..(start + len) as usize]);
            *span = (at, len);
        }
        self.text = text;
        self.garbage = 0;
    }

    /// Give back what the arrays hold beyond their length.
    pub(crate) fn shrink_to_fit(&mut self) {
        if self.garbage > 0 {
            self.rewrite();
        }
        self.text.shrink_to_fit();
        self.spans.shrink_to_fit();
        self.uses.shrink_to_fit();
        self.free.shrink_to_fit();
    }

    /// Ids in use, and the bytes they hold (for tests).
    #[cfg(test)]
    pub(crate) fn live(&self) -> (usize, usize) {
        let ids = self.uses.iter().filter(|&&u| u > 0).count();
        (ids, self.text.len() - self.garbage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_string_is_held_once_and_forgotten_when_no_longer_used() {
        let mut s = Strings::new(Seed::default());
        let a = s.intern("parse");
        let b = s.intern("query");
        assert_eq!(s.intern("parse"), a);
        assert_eq!((s.get(a), s.get(b)), ("parse", "query"));
        s.release(a);
        assert_eq!(s.get(a), "parse", "one use is left");
        s.release(a);
        assert_eq!(s.live(), (1, 5));
        // Its id is used again, for another string.
        let c = s.intern("other");
        assert_eq!(c, a);
        assert_eq!((s.get(b), s.get(c)), ("query", "other"));
    }

    #[test]
    fn the_arena_is_rewritten_and_ids_stay_put() {
        let mut s = Strings::new(Seed::default());
        let keep: Vec<(u32, String)> = (0..500)
            .map(|i| {
                let t = format!("kept_{i}");
                (s.intern(&t), t)
            })
            .collect();
        for round in 0..40 {
            let gone: Vec<u32> = (0..200)
                .map(|i| s.intern(&format!("{round}_{i}_{}", "x".repeat(40))))
                .collect();
            for id in gone {
                s.release(id);
            }
        }
        // 40 rounds of 9 KB left behind: rewritten whenever the leftovers
        // are half of it.
        assert!(s.text.len() < 3 * 9_200 + 5_000, "{} bytes", s.text.len());
        assert_eq!(s.live().0, 500);
        for (id, t) in &keep {
            assert_eq!(s.get(*id), t);
            assert_eq!(s.intern(t), *id);
        }
    }
}
