//! The pass the content build's two radix sorts share (a run's pairs by
//! trigram, `build.rs`; a large file's segment entries by trigram,
//! `segments.rs`): stable, one twelve-bit digit at a time.

/// Values of a twelve-bit digit.
pub(crate) const DIGITS: usize = 4096;

/// Place each of `from` in `to` (as long) by its `digit` (below
/// [`DIGITS`]), keeping their order within a digit. `counts` holds how many
/// of `from` have each digit; it is left at zero. Slices, not vectors: the
/// stores then cannot move a vector's own fields, which the loop would
/// otherwise load again after every store.
#[inline]
pub(crate) fn scatter<T: Copy>(
    from: &[T],
    to: &mut [T],
    counts: &mut [u32; DIGITS],
    digit: impl Fn(T) -> usize,
) {
    // Each digit's first place.
    let mut at = 0;
    for c in counts.iter_mut() {
        (*c, at) = (at, at + *c);
    }
    for &v in from {
        let next = &mut counts[digit(v)];
        to[*next as usize] = v;
        *next += 1;
    }
    counts.fill(0);
}
