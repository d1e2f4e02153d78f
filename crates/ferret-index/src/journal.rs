//! The change journal: what was created, modified, deleted, renamed or moved, and
//! when, in SQLite in the state directory. Bounded by age and by row count.

use std::path::Path;

use rusqlite::{Connection, params};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Modified,
    Deleted,
    Renamed,
    Moved,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Modified => "modified",
            Action::Deleted => "deleted",
            Action::Renamed => "renamed",
            Action::Moved => "moved",
        }
    }

    pub fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "created" => Action::Created,
            "modified" => Action::Modified,
            "deleted" => Action::Deleted,
            "renamed" => Action::Renamed,
            "moved" => Action::Moved,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub action: Action,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub kind: ferret_query::Kind,
    /// Unix milliseconds.
    #[serde(skip)]
    pub at_ms: i64,
    pub by: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct ChangesQuery {
    pub action: Option<Action>,
    pub path_prefix: Option<String>,
    pub name: Option<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub offset: u64,
    pub limit: u64,
}

pub struct Journal {
    conn: Connection,
    pub max_age_ms: i64,
    pub max_rows: u64,
    writes_since_prune: u64,
}

impl Journal {
    pub fn open(path: &Path, max_age_ms: i64, max_rows: u64) -> rusqlite::Result<Journal> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        Self::init(Connection::open(path)?, max_age_ms, max_rows)
    }

    pub fn in_memory(max_age_ms: i64, max_rows: u64) -> rusqlite::Result<Journal> {
        Self::init(Connection::open_in_memory()?, max_age_ms, max_rows)
    }

    fn init(conn: Connection, max_age_ms: i64, max_rows: u64) -> rusqlite::Result<Journal> {
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS changes (
                 id INTEGER PRIMARY KEY,
                 at_ms INTEGER NOT NULL,
                 action TEXT NOT NULL,
                 path TEXT NOT NULL,
                 name TEXT NOT NULL,
                 old_path TEXT,
                 kind TEXT NOT NULL,
                 by TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS changes_at ON changes(at_ms);",
        )?;
        Ok(Journal {
            conn,
            max_age_ms,
            max_rows,
            writes_since_prune: 0,
        })
    }

    /// Move everything written so far from the write-ahead log into the
    /// database file (at shutdown, so that the file alone is complete).
    pub fn checkpoint(&self) -> rusqlite::Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
    }

    /// `PRAGMA integrity_check`, for `doctor`.
    pub fn integrity_ok(&self) -> bool {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
            .map(|s| s == "ok")
            .unwrap_or(false)
    }

    pub fn record(&mut self, changes: &[Change]) -> rusqlite::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO changes (at_ms, action, path, name, old_path, kind, by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for c in changes {
                let name = c.path.rsplit('/').next().unwrap_or(&c.path);
                stmt.execute(params![
                    c.at_ms,
                    c.action.as_str(),
                    c.path,
                    name,
                    c.old_path,
                    c.kind.as_str(),
                    c.by
                ])?;
            }
        }
        tx.commit()?;
        self.writes_since_prune += changes.len() as u64;
        if self.writes_since_prune >= 1000 {
            self.prune(chrono::Utc::now().timestamp_millis())?;
        }
        Ok(())
    }

    /// Drop rows older than the age bound, then the oldest beyond the row bound.
    pub fn prune(&mut self, now_ms: i64) -> rusqlite::Result<u64> {
        self.writes_since_prune = 0;
        let mut removed = self.conn.execute(
            "DELETE FROM changes WHERE at_ms < ?1",
            params![now_ms - self.max_age_ms],
        )? as u64;
        removed += self.conn.execute(
            "DELETE FROM changes WHERE id <= (SELECT id FROM changes ORDER BY id DESC LIMIT 1 OFFSET ?1)",
            params![self.max_rows as i64],
        )? as u64;
        Ok(removed)
    }

    pub fn len(&self) -> u64 {
        self.conn
            .query_row("SELECT COUNT(*) FROM changes", [], |r| r.get::<_, i64>(0))
            .unwrap_or(0) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Newest first, with the total number of matching rows.
    pub fn query(&self, q: &ChangesQuery) -> rusqlite::Result<(Vec<Change>, u64)> {
        let mut sql = String::from(" FROM changes WHERE 1=1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(a) = q.action {
            sql.push_str(" AND action = ?");
            args.push(a.as_str().to_string().into());
        }
        if let Some(p) = q
            .path_prefix
            .as_deref()
            .filter(|p| !p.is_empty() && *p != ".")
        {
            let p = p.trim_end_matches('/');
            sql.push_str(" AND (path = ? OR substr(path, 1, ?) = ? OR old_path = ? OR substr(old_path, 1, ?) = ?)");
            let with_slash = format!("{p}/");
            args.push(p.to_string().into());
            args.push((with_slash.len() as i64).into());
            args.push(with_slash.clone().into());
            args.push(p.to_string().into());
            args.push((with_slash.len() as i64).into());
            args.push(with_slash.into());
        }
        if let Some(n) = q.name.as_deref().filter(|n| !n.is_empty()) {
            sql.push_str(" AND instr(lower(name), lower(?)) > 0");
            args.push(n.to_string().into());
        }
        if let Some(s) = q.since_ms {
            sql.push_str(" AND at_ms >= ?");
            args.push(s.into());
        }
        if let Some(u) = q.until_ms {
            sql.push_str(" AND at_ms <= ?");
            args.push(u.into());
        }
        let total: i64 = self.conn.query_row(
            &format!("SELECT COUNT(*){sql}"),
            rusqlite::params_from_iter(args.iter()),
            |r| r.get(0),
        )?;
        let mut page_args = args.clone();
        page_args.push((q.limit as i64).into());
        page_args.push((q.offset as i64).into());
        let mut stmt = self.conn.prepare(&format!(
            "SELECT action, path, old_path, kind, at_ms, by{sql} ORDER BY at_ms DESC, id DESC LIMIT ? OFFSET ?"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(page_args.iter()), |r| {
            let action: String = r.get(0)?;
            let kind: String = r.get(3)?;
            let by: String = r.get(5)?;
            Ok(Change {
                action: Action::parse(&action).unwrap_or(Action::Modified),
                path: r.get(1)?,
                old_path: r.get(2)?,
                kind: ferret_query::Kind::from_name(&kind),
                at_ms: r.get(4)?,
                by: if by == "ferret" { "ferret" } else { "external" },
            })
        })?;
        Ok((rows.collect::<Result<Vec<_>, _>>()?, total as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(action: Action, path: &str, at_ms: i64) -> Change {
        Change {
            action,
            path: path.into(),
            old_path: None,
            kind: ferret_query::Kind::File,
            at_ms,
            by: "external",
        }
    }

    #[test]
    fn records_filters_and_pages_newest_first() {
        let mut j = Journal::in_memory(i64::MAX / 2, 1_000_000).unwrap();
        j.record(&[
            change(Action::Created, "src/a.rs", 1000),
            change(Action::Modified, "src/a.rs", 2000),
            change(Action::Deleted, "docs/b.md", 3000),
            change(Action::Created, "src2/c.rs", 4000),
        ])
        .unwrap();
        let q = |f: fn(&mut ChangesQuery)| {
            let mut q = ChangesQuery {
                limit: 50,
                ..Default::default()
            };
            f(&mut q);
            j.query(&q).unwrap()
        };
        let (all, total) = q(|_| {});
        assert_eq!(total, 4);
        assert_eq!(all[0].path, "src2/c.rs");
        let (src, _) = q(|q| q.path_prefix = Some("src".into()));
        assert_eq!(src.len(), 2, "src/ must not match src2/");
        let (created, _) = q(|q| q.action = Some(Action::Created));
        assert_eq!(created.len(), 2);
        let (named, _) = q(|q| q.name = Some("B.MD".into()));
        assert_eq!(named.len(), 1);
        let (window, _) = q(|q| {
            q.since_ms = Some(2000);
            q.until_ms = Some(3000)
        });
        assert_eq!(window.len(), 2);
        let (page, total) = q(|q| {
            q.limit = 1;
            q.offset = 1
        });
        assert_eq!((page.len(), total, page[0].at_ms), (1, 4, 3000));
    }

    #[test]
    fn bounded_by_age_and_rows() {
        let mut j = Journal::in_memory(10_000, 3).unwrap();
        let rows: Vec<Change> = (0..6)
            .map(|i| change(Action::Created, "x", 100_000 + i))
            .collect();
        j.record(&rows).unwrap();
        j.record(&[change(Action::Created, "old", 1)]).unwrap();
        j.prune(100_010).unwrap();
        assert_eq!(j.len(), 3);
        assert!(j.integrity_ok());
    }
}
