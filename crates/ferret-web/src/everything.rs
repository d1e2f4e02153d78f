//! Everything's HTTP JSON API, implemented from its documented behaviour, for
//! the scripts, mobile apps and MCP wrappers that speak it:
//!
//! `GET /?search=QUERY&json=1` with `offset`, `count`, `sort` (`name`, `path`,
//! `size`, `date_modified`; also `extension`, `date_created`), `ascending`,
//! `case`, `wholeword`, `regex`, `path` (match whole paths) and the column
//! switches `path_column`, `size_column`, `date_modified_column`,
//! `date_created_column`, each also under its one-letter name where Everything
//! has one (`s`, `j`, `o`, `c`, `i`, `w`, `r`, `p`). The answer is
//! `{"totalResults": N, "results": [{"type": "file"|"folder", "name", "path",
//! "size", "date_modified"}]}`: `path` is the absolute parent folder, `size` a
//! decimal string, dates Windows FILETIME (100 ns ticks since 1601-01-01 UTC)
//! as decimal strings; a value ferret does not know (a folder's size) is `""`.

use ferret_fs::Roots;
use ferret_index::{Hit, SearchOutcome};
use ferret_query::Options;
use serde_json::{Map, Value, json};

use crate::{
    error::ApiError,
    params::Params,
    search::{self, SearchSpec},
};

/// Everything's JSON answers are unbounded by default; ferret answers at most
/// this many rows at once (`totalResults` still counts them all; page with
/// `offset`).
pub const MAX_COUNT: usize = 10_000;

/// The sorts ferret serves, by Everything's names.
const SORTS: &[&str] = &[
    "name",
    "path",
    "size",
    "date_modified",
    "extension",
    "date_created",
];

/// Seconds from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
const FILETIME_UNIX_OFFSET_SECS: i64 = 11_644_473_600;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Columns {
    pub path: bool,
    pub size: bool,
    pub date_modified: bool,
    pub date_created: bool,
}

/// Whether the query string asks for Everything's JSON (`json=1` or `j=1`).
pub fn asks_for_json(params: &Params) -> Result<bool, ApiError> {
    params.flag(&["json", "j"], false)
}

pub fn parse(p: &Params) -> Result<(SearchSpec, Columns), ApiError> {
    let spec = SearchSpec {
        text: p.get(&["search", "s", "q"]).unwrap_or("").to_string(),
        options: Options {
            match_case: p.flag(&["case", "i"], false)?,
            whole_word: p.flag(&["wholeword", "w"], false)?,
            regex: p.flag(&["regex", "r"], false)?,
            match_path: p.flag(&["path", "p"], false)?,
        },
        sort: p
            .choice(&["sort"], SORTS)?
            .and_then(search::sort_key)
            .unwrap_or_default(),
        descending: !p.flag(&["ascending"], true)?,
        offset: p.number(&["offset", "o"], u32::MAX as u64)?.unwrap_or(0) as usize,
        // Clients pass 4294967295 for "all": cap, never refuse.
        limit: p
            .number(&["count", "c"], u64::MAX)?
            .map_or(MAX_COUNT, |c| (c as usize).min(MAX_COUNT)),
        fuzzy: false,
        fall_back: false,
    };
    let columns = Columns {
        path: p.flag(&["path_column"], false)?,
        size: p.flag(&["size_column"], false)?,
        date_modified: p.flag(&["date_modified_column"], false)?,
        date_created: p.flag(&["date_created_column"], false)?,
    };
    Ok((spec, columns))
}

pub fn answer(roots: &Roots, outcome: &SearchOutcome, columns: Columns) -> Value {
    let results: Vec<Value> = outcome
        .hits
        .iter()
        .map(|h| row(roots, h, columns))
        .collect();
    json!({"totalResults": outcome.total, "results": results})
}

fn row(roots: &Roots, hit: &Hit, columns: Columns) -> Value {
    let (parent, name) = search::split(&hit.path);
    let mut o = Map::new();
    let kind = if hit.kind == ferret_query::Kind::Dir {
        "folder"
    } else {
        "file"
    };
    o.insert("type".into(), kind.into());
    o.insert("name".into(), name.into());
    if columns.path {
        let folder = search::absolute(roots, if parent.is_empty() { "." } else { parent })
            .unwrap_or_default();
        o.insert("path".into(), folder.into());
    }
    if columns.size {
        o.insert(
            "size".into(),
            hit.size.map(|s| s.to_string()).unwrap_or_default().into(),
        );
    }
    if columns.date_modified {
        o.insert("date_modified".into(), filetime(&hit.modified).into());
    }
    if columns.date_created {
        o.insert("date_created".into(), filetime(&hit.created).into());
    }
    Value::Object(o)
}

/// An RFC 3339 time as a FILETIME decimal string; `""` when unknown.
fn filetime(rfc3339: &Option<String>) -> String {
    rfc3339
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .and_then(|t| {
            let secs = t.timestamp().checked_add(FILETIME_UNIX_OFFSET_SECS)?;
            let ticks = (secs as i128) * 10_000_000 + i128::from(t.timestamp_subsec_nanos() / 100);
            u64::try_from(ticks).ok()
        })
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetime_counts_100ns_ticks_since_1601() {
        assert_eq!(
            filetime(&Some("1970-01-01T00:00:00Z".into())),
            "116444736000000000"
        );
        // 2026-01-02T03:04:05Z is Unix 1767323045.
        assert_eq!(
            filetime(&Some("2026-01-02T03:04:05Z".into())),
            ((1_767_323_045u64 + 11_644_473_600) * 10_000_000).to_string()
        );
        assert_eq!(filetime(&None), "");
    }

    #[test]
    fn everything_parameters_and_their_short_names() {
        let (spec, cols) = parse(&Params::parse(Some(
            "s=*.pdf&o=20&c=4294967295&sort=date_modified&ascending=0&i=1&w=1&r=0&p=1&path_column=1&size_column=1",
        )))
        .unwrap();
        assert_eq!(spec.text, "*.pdf");
        assert_eq!((spec.offset, spec.limit), (20, MAX_COUNT));
        assert_eq!(spec.sort, ferret_index::SortKey::Modified);
        assert!(spec.descending);
        assert_eq!(
            spec.options,
            Options {
                match_case: true,
                whole_word: true,
                regex: false,
                match_path: true
            }
        );
        assert!(cols.path && cols.size && !cols.date_modified);
        let e = parse(&Params::parse(Some("search=x&sort=run_count"))).unwrap_err();
        assert!(e.message.contains("date_modified"), "{}", e.message);
        let (spec, _) = parse(&Params::parse(Some("search=x"))).unwrap();
        assert!(!spec.descending && spec.limit == MAX_COUNT && spec.offset == 0);
    }

    #[test]
    fn rows_carry_only_the_columns_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::open(
            &[dir.path().to_str().unwrap().parse().unwrap()],
            Default::default(),
        )
        .unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let outcome = SearchOutcome {
            hits: vec![
                Hit {
                    path: "docs/report.pdf".into(),
                    kind: ferret_query::Kind::File,
                    size: Some(12_345),
                    modified: Some("1970-01-01T00:00:01Z".into()),
                    created: None,
                    score: None,
                },
                Hit {
                    path: "docs".into(),
                    kind: ferret_query::Kind::Dir,
                    size: None,
                    modified: None,
                    created: None,
                    score: None,
                },
            ],
            groups: None,
            total: 7,
            scattered: false,
        };
        let all = Columns {
            path: true,
            size: true,
            date_modified: true,
            date_created: false,
        };
        let v = answer(&roots, &outcome, all);
        assert_eq!(v["totalResults"], 7);
        assert_eq!(
            v["results"][0],
            json!({"type": "file", "name": "report.pdf", "path": real.join("docs").to_str().unwrap(),
                   "size": "12345", "date_modified": "116444736010000000"})
        );
        assert_eq!(
            v["results"][1],
            json!({"type": "folder", "name": "docs", "path": real.to_str().unwrap(), "size": "", "date_modified": ""})
        );
        let bare = answer(&roots, &outcome, Columns::default());
        assert_eq!(
            bare["results"][0],
            json!({"type": "file", "name": "report.pdf"})
        );
    }
}
