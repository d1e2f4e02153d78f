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

/// The paths matching `query` (up to 1,000), sorted.
pub(crate) fn paths_of(index: &crate::Index, query: &str) -> Vec<String> {
    let q = ferret_query::Query::compile(
        query,
        &ferret_query::Options::default(),
        &ferret_query::Clock::system(),
    )
    .unwrap();
    let mut out: Vec<String> = index
        .search(&crate::SearchRequest {
            query: &q,
            under: None,
            sort: crate::SortKey::Name,
            descending: false,
            offset: 0,
            limit: 1000,
            group_by: None,
        })
        .hits
        .into_iter()
        .map(|h| h.path)
        .collect();
    out.sort();
    out
}
