//! What a search answers with: each match as a path shown to agents, with its
//! kind, size and times.

use crate::store::{EntryId, Kind, Store, UNKNOWN_TIME};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub path: String,
    pub kind: ferret_query::Kind,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub created: Option<String>,
    /// With relevance and fuzzy orders: how good the match is (higher is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

pub fn rfc3339(secs: i64) -> Option<String> {
    if secs == UNKNOWN_TIME {
        return None;
    }
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The path shown to agents: relative to the root, prefixed by the root's name
/// when there are several roots.
pub fn display_path(store: &Store, id: EntryId) -> String {
    let mut out = String::new();
    display_path_into(store, id, &mut Vec::new(), &mut out);
    out
}

/// [`display_path`] written into `out`, `bytes` a buffer for the raw path:
/// for a loop over many entries, without an allocation for each.
pub fn display_path_into(store: &Store, id: EntryId, bytes: &mut Vec<u8>, out: &mut String) {
    bytes.clear();
    let several = store.roots().len() > 1;
    if several {
        let (_, root) = store.root_of(id);
        bytes.extend_from_slice(store.name(root));
        if store.parent(id) != crate::store::NONE {
            bytes.push(b'/');
        }
    }
    store.rel_path_into(id, bytes);
    out.clear();
    if bytes.is_empty() && !several {
        out.push('.');
    } else {
        // Names that are not UTF-8 escaped, so that the path reads back
        // (`find_display_path` and the file layer read it so).
        ferret_names::push_shown_path(out, bytes);
    }
}

/// The entry a path as [`display_path`] spells it names, if the index has it.
pub fn find_display_path(store: &Store, path: &str) -> Option<EntryId> {
    let roots = store.roots();
    if roots.len() > 1 {
        let (root, rel) = path.split_once('/').unwrap_or((path, ""));
        let &id = roots
            .iter()
            .find(|&&r| ferret_names::shown(store.name(r)) == root)?;
        lookup_shown(store, id, rel)
    } else {
        let rel = if path == "." { "" } else { path };
        lookup_shown(store, *roots.first()?, rel)
    }
}

/// The entry below `at` at the path `rel` as shown: each name as written,
/// else (an escaped name, see `ferret_names`) the name of the bytes it
/// stands for, as the file layer reads a path.
pub(crate) fn lookup_shown(store: &Store, mut at: EntryId, rel: &str) -> Option<EntryId> {
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        at = child_shown(store, at, part)?;
    }
    Some(at)
}

/// The child of `at` whose name shows as `part`: the name as written,
/// else the bytes an escaped name stands for.
pub(crate) fn child_shown(store: &Store, at: EntryId, part: &str) -> Option<EntryId> {
    store
        .child(at, part.as_bytes())
        .or_else(|| ferret_names::escaped_bytes(part).and_then(|bytes| store.child(at, &bytes)))
}

pub fn hit(store: &Store, id: EntryId) -> Hit {
    let kind = store.kind(id);
    let meta = store.meta(id);
    Hit {
        path: display_path(store, id),
        kind: crate::store::query_kind(kind),
        size: (kind != Kind::Dir).then_some(meta.size),
        modified: rfc3339(meta.mtime),
        created: rfc3339(meta.btime),
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, Meta};

    /// Paths as shown, one root and several, and the buffers reused from
    /// one entry to the next give the same.
    #[test]
    fn paths_as_shown() {
        let mut one = Store::new();
        let r = one.add_root(b"/srv/r", Meta::default());
        let a = one.insert_new(r, b"a", Kind::Dir, Meta::default());
        let b = one.insert_new(a, b"b\xffc", Kind::Dir, Meta::default());
        let f = one.insert_new(b, b"f.rs", Kind::File, Meta::default());
        assert_eq!(display_path(&one, r), ".");
        assert_eq!(display_path(&one, a), "a");
        assert_eq!(display_path(&one, f), "a/b%FFc/f.rs");
        assert_eq!(one.rel_path(f), b"a/b\xffc/f.rs");
        assert_eq!(find_display_path(&one, "a/b%FFc/f.rs"), Some(f));
        // A name as written first, the escaped one only where it is not.
        let twin = one.insert_new(a, b"b%FFc", Kind::Dir, Meta::default());
        assert_eq!(find_display_path(&one, "a/b%FFc"), Some(twin));
        assert_eq!(find_display_path(&one, "a/b%FFc/f.rs"), None);

        let mut two = Store::new();
        let r1 = two.add_root(b"one", Meta::default());
        let r2 = two.add_root(b"two", Meta::default());
        let x = two.insert_new(r2, b"x", Kind::Dir, Meta::default());
        let y = two.insert_new(x, b"y.txt", Kind::File, Meta::default());
        let z = two.insert_new(r1, b"z", Kind::File, Meta::default());
        let (mut bytes, mut out) = (Vec::new(), String::new());
        for (id, shown) in [
            (r2, "two"),
            (y, "two/x/y.txt"),
            (z, "one/z"),
            (x, "two/x"),
            (r1, "one"),
        ] {
            assert_eq!(display_path(&two, id), shown);
            display_path_into(&two, id, &mut bytes, &mut out);
            assert_eq!(out, shown);
            assert_eq!(find_display_path(&two, shown), Some(id));
        }
    }
}
