//! Which files may hold a match: a trigram query evaluated over the base's
//! posting lists as bit sets of file numbers.

use std::collections::HashMap;

use crate::{format::Base, pattern::Grams};

/// A set of file numbers.
#[derive(Default)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub(crate) fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    pub(crate) fn set(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut(i as usize / 64) {
            *w |= 1 << (i % 64);
        }
    }
    /// Set or clear `i`, growing the set to hold it.
    pub(crate) fn put(&mut self, i: u32, on: bool) {
        let w = i as usize / 64;
        if w >= self.0.len() {
            if !on {
                return;
            }
            // Doubled, as a vector grows: files are added one at a time.
            let len = (w + 1).max(self.0.len() * 2);
            self.0.resize(len, 0);
        }
        if on {
            self.0[w] |= 1 << (i % 64);
        } else {
            self.0[w] &= !(1 << (i % 64));
        }
    }
    pub(crate) fn has(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    pub(crate) fn all(n: usize) -> Bits {
        let mut b = Bits(vec![u64::MAX; n.div_ceil(64)]);
        if !n.is_multiple_of(64)
            && let Some(last) = b.0.last_mut()
        {
            *last = (1u64 << (n % 64)) - 1;
        }
        b
    }
    pub(crate) fn and(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a &= b;
        }
    }
    pub(crate) fn or(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    /// The numbers in the set, ascending.
    pub(crate) fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros();
                    w &= w - 1;
                    i as u32 * 64 + bit
                })
            })
        })
    }
}

/// The files of `base` whose trigrams satisfy `q`.
pub(crate) fn evaluate(base: &Base, q: &Grams) -> Bits {
    let n = base.doc_count();
    let mut memo: HashMap<u32, Bits> = HashMap::new();
    eval(base, q, n, &mut memo)
}

/// Terms of an AND beyond the rarest few are skipped once the running
/// answer holds few files (skipping a term only widens the answer).
pub(crate) const AND_TERMS: usize = 12;

pub(crate) fn eval(base: &Base, q: &Grams, n: usize, memo: &mut HashMap<u32, Bits>) -> Bits {
    match q {
        Grams::All => Bits::all(n),
        Grams::Gram(g) => {
            if let Some(b) = memo.get(g) {
                return Bits(b.0.clone());
            }
            let mut bits = Bits::new(n);
            if let Some(p) = base.posting(*g) {
                p.for_each(|d| bits.set(d));
            }
            memo.insert(*g, Bits(bits.0.clone()));
            bits
        }
        Grams::And(qs) => {
            // Rarest first: single trigrams by their list's length.
            let cost = |q: &Grams| match q {
                Grams::Gram(g) => base.posting(*g).map_or(0, |p| p.count as usize),
                _ => usize::MAX,
            };
            let mut order: Vec<&Grams> = qs.iter().collect();
            order.sort_by_key(|q| cost(q));
            let mut acc = Bits::all(n);
            for (i, q) in order.into_iter().enumerate() {
                if i >= AND_TERMS || acc.is_empty() {
                    break;
                }
                acc.and(&eval(base, q, n, memo));
            }
            acc
        }
        Grams::Or(qs) => {
            let mut acc = Bits::new(n);
            for q in qs {
                acc.or(&eval(base, q, n, memo));
            }
            acc
        }
    }
}
