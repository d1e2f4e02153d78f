//! What the crate's unit tests share.

/// Numbers below `n`, drawn by a xorshift generator from `seed` (the same
/// each run; a seed of 0 is taken as 1, which xorshift needs).
pub(crate) fn below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed.max(1);
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}
