//! What a search is asked ([`SearchRequest`]: a compiled query, an order, a
//! page) and what it answers ([`SearchOutcome`]); re-exported by `search`.

use ferret_query::Query;

use crate::hits::Hit;
use crate::store::EntryId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    Name,
    /// Folder by folder, each folder's entries in name order (as a file manager's
    /// tree shows them).
    Path,
    Size,
    Modified,
    Created,
    Extension,
    /// Most likely meant first (see [`crate::rank`]); each hit carries its score.
    Relevance,
}

impl SortKey {
    /// Every order by the name the tools, the command line and the page
    /// give it.
    pub const NAMES: [(&'static str, SortKey); 7] = [
        ("name", SortKey::Name),
        ("path", SortKey::Path),
        ("size", SortKey::Size),
        ("modified", SortKey::Modified),
        ("created", SortKey::Created),
        ("extension", SortKey::Extension),
        ("relevance", SortKey::Relevance),
    ];

    /// The order named `name` (one of [`SortKey::NAMES`]).
    pub fn from_name(name: &str) -> Option<SortKey> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, key)| key)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Extension,
    Kind,
    Folder,
}

/// What to look for, already compiled.
pub struct SearchRequest<'q> {
    pub query: &'q Query,
    /// Only entries at or below this folder (a root's record, or any folder).
    pub under: Option<EntryId>,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    pub group_by: Option<GroupBy>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Group {
    pub group: String,
    pub count: u64,
}

#[derive(Debug, Default)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    pub groups: Option<Vec<Group>>,
    /// All matches (or all groups with `group_by`).
    pub total: u64,
    /// A fuzzy answer whose best match holds some word neither as typed
    /// (its letters side by side, case and word separators aside), nor one
    /// typo off, nor as an abbreviation of its last folders and name
    /// (initials: `tu` for `tokio-util`), only as letters scattered along
    /// its path (`ssl context` finding `libcst/codemod/_context.py`, its
    /// `s`, `s` and `l` apart). Read off the page: `false` with `limit: 0`.
    pub scattered: bool,
}
