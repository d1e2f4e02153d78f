//! The change journal, live: server-sent events of `Index::changes` rows,
//! woken by `Index::touches`.
//!
//! One thread per server follows the index's touch feed (a blocking channel)
//! while a page is listening, and ticks a `watch` counter after each batch;
//! every event stream then reads the journal rows newer than the last one it
//! sent. The journal is the source, so a stream shows exactly what the
//! `changes` tool would answer, with its action filter; touches only say when
//! to look. A stream sends its last rows first (a backlog, oldest first), and
//! resumes after the `Last-Event-ID` the browser sends when it reconnects.

use std::{
    collections::HashSet,
    convert::Infallible,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::response::{
    IntoResponse, Response,
    sse::{Event, KeepAlive, Sse},
};
use ferret_index::{Action, Change, ChangesQuery, Index};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::{Source, error::ApiError, params::Params};

/// Touches are published just before their journal rows are written: wait
/// this long after a batch so that the rows are there (and a burst is one read).
const SETTLE: Duration = Duration::from_millis(30);
/// Rows a new stream starts with.
const BACKLOG: u64 = 100;
/// Rows read per wake-up; a bigger burst shows its newest rows.
const BATCH: u64 = 500;
/// How often a stream re-sends the index status when it changed (entries
/// grow during the first build without journal rows).
const STATUS_EVERY: Duration = Duration::from_secs(2);

/// How often the feed looks whether the index it follows was replaced.
const REPLACED_EVERY: Duration = Duration::from_secs(1);

/// Wakes event streams when the index reports changes.
pub struct Feed {
    source: Arc<dyn Source>,
    tick: watch::Sender<u64>,
    following: Mutex<bool>,
}

impl Feed {
    pub fn new(source: Arc<dyn Source>) -> Arc<Feed> {
        Arc::new(Feed {
            source,
            tick: watch::channel(0).0,
            following: Mutex::new(false),
        })
    }

    /// A receiver that changes after each batch of changes; starts following
    /// the index when nobody was.
    pub fn subscribe(self: &Arc<Feed>) -> watch::Receiver<u64> {
        let rx = self.tick.subscribe();
        let mut following = self.following.lock().unwrap_or_else(|p| p.into_inner());
        if !*following {
            *following = true;
            let feed = self.clone();
            std::thread::Builder::new()
                .name("ferret-web-journal".into())
                .spawn(move || feed.follow())
                .map_err(|e| tracing::warn!("page: cannot follow the journal: {e}"))
                .ok();
        }
        rx
    }

    fn follow(self: Arc<Feed>) {
        use std::sync::mpsc::RecvTimeoutError;
        // The index served now; a new one when the settings replace it
        // (streams are woken then too: the journal they read is its own).
        let mut generation = self.source.generation();
        let mut touches = self.source.index().touches();
        loop {
            match touches.recv_timeout(REPLACED_EVERY) {
                Ok(_) => {
                    std::thread::sleep(SETTLE);
                    while touches.try_recv().is_ok() {}
                }
                Err(RecvTimeoutError::Timeout) if self.source.generation() != generation => {
                    generation = self.source.generation();
                    touches = self.source.index().touches();
                }
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let mut following = self.following.lock().unwrap_or_else(|p| p.into_inner());
            if self.tick.receiver_count() == 0 {
                // Nobody listens: stop (dropping `touches` unregisters it).
                *following = false;
                return;
            }
            drop(following);
            self.tick.send_modify(|n| *n = n.wrapping_add(1));
        }
        *self.following.lock().unwrap_or_else(|p| p.into_inner()) = false;
    }
}

/// A change as the page shows it.
pub fn change_json(c: &Change) -> Value {
    let at = chrono::DateTime::from_timestamp_millis(c.at_ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    json!({
        "action": c.action.as_str(),
        "path": c.path,
        "old_path": c.old_path,
        "kind": c.kind,
        "at": at,
        "at_ms": c.at_ms,
        "by": c.by,
    })
}

/// What a stream has sent: the newest time, and the rows at that very
/// millisecond (a later read starting there must not repeat them).
#[derive(Default)]
struct Cursor {
    at_ms: i64,
    sent: HashSet<(String, &'static str, Option<String>)>,
}

impl Cursor {
    /// `rows` (newest first) minus those already sent, oldest first.
    fn take(&mut self, rows: Vec<Change>) -> Vec<Change> {
        let mut fresh = Vec::new();
        for c in rows.into_iter().rev() {
            let key = (c.path.clone(), c.action.as_str(), c.old_path.clone());
            if c.at_ms < self.at_ms || (c.at_ms == self.at_ms && self.sent.contains(&key)) {
                continue;
            }
            if c.at_ms > self.at_ms {
                self.at_ms = c.at_ms;
                self.sent.clear();
            }
            self.sent.insert(key);
            fresh.push(c);
        }
        fresh
    }
}

/// The index's state as the status line shows it.
pub fn status_json(index: &Index) -> Value {
    status_with(index, last_change(index))
}

/// The newest journalled change, as the status line shows it.
fn last_change(index: &Index) -> Value {
    index
        .changes(&ChangesQuery {
            limit: 1,
            ..ChangesQuery::default()
        })
        .ok()
        .and_then(|(rows, _)| rows.first().map(change_json))
        .unwrap_or(Value::Null)
}

fn status_with(index: &Index, last_change: Value) -> Value {
    let s = index.status();
    json!({
        "entries": s.entries,
        "ready": s.ready,
        "reconciling": s.reconciling,
        "updated_at": s.updated_at,
        "watcher": s.watcher,
        "last_change": last_change,
    })
}

/// `action=any|created|modified|deleted|renamed|moved`.
pub fn action_param(params: &Params) -> Result<Option<Action>, ApiError> {
    Ok(params
        .choice(
            &["action"],
            &["any", "created", "modified", "deleted", "renamed", "moved"],
        )?
        .and_then(Action::parse))
}

/// Rows newer than the cursor (or the backlog, for a new stream), and the
/// newest change for the status line.
fn read(
    index: &Index,
    action: Option<Action>,
    since: Option<i64>,
) -> Result<(Vec<Change>, Value), String> {
    let (rows, _) = index.changes(&ChangesQuery {
        action,
        since_ms: since,
        limit: if since.is_some() { BATCH } else { BACKLOG },
        ..ChangesQuery::default()
    })?;
    Ok((rows, last_change(index)))
}

/// The event stream of one page.
pub fn stream(
    source: Arc<dyn Source>,
    feed: &Arc<Feed>,
    stop: CancellationToken,
    action: Option<Action>,
    resume_after: Option<i64>,
) -> Response {
    let (tx, rx) = mpsc::channel(64);
    let mut ticks = feed.subscribe();
    tokio::spawn(async move {
        let mut cursor = Cursor::default();
        let mut since = resume_after;
        if let Some(at) = resume_after {
            cursor.at_ms = at;
        }
        let mut last_status = Value::Null;
        let mut last = Value::Null;
        let mut every = tokio::time::interval(STATUS_EVERY);
        // The journal is read when the touch feed says something changed (and
        // once at the start); the periodic tick only refreshes the status line
        // (entries, watcher), which needs no journal query.
        let mut rows_due = true;
        loop {
            let source2 = source.clone();
            let previous = last.clone();
            let got = tokio::task::spawn_blocking(move || {
                let index = source2.index();
                let (rows, last) = if rows_due {
                    read(&index, action, since)?
                } else {
                    (Vec::new(), previous)
                };
                let status = status_with(&index, last.clone());
                Ok::<_, String>((rows, last, status))
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
            let (rows, status) = match got {
                Ok((rows, newest, status)) => {
                    last = newest;
                    (rows, status)
                }
                Err(e) => {
                    tracing::warn!("page: the journal could not be read: {e}");
                    (Vec::new(), last_status.clone())
                }
            };
            for c in cursor.take(rows) {
                let event = Event::default()
                    .event("change")
                    .id(c.at_ms.to_string())
                    .data(change_json(&c).to_string());
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            // From now on only rows newer than what was sent (or, after an
            // empty backlog, every row).
            since = Some(cursor.at_ms);
            if status != last_status {
                let event = Event::default().event("status").data(status.to_string());
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
                last_status = status;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tx.closed() => return,
                changed = ticks.changed() => {
                    if changed.is_err() { return }
                    rows_due = true;
                }
                _ = every.tick() => rows_due = false,
            }
        }
    });
    Sse::new(ReceiverStream::<Result<Event, Infallible>>::new(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, at_ms: i64) -> Change {
        Change {
            action: Action::Created,
            path: path.into(),
            old_path: None,
            kind: ferret_query::Kind::File,
            at_ms,
            by: "external",
        }
    }

    #[test]
    fn a_cursor_sends_each_row_once_oldest_first() {
        let mut c = Cursor::default();
        let first = c.take(vec![change("b", 20), change("a", 10)]);
        assert_eq!(
            first.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        // A read from the cursor's millisecond sees `b` again and a new row there.
        let second = c.take(vec![change("c", 20), change("b", 20)]);
        assert_eq!(
            second.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            ["c"]
        );
        let third = c.take(vec![change("d", 30), change("c", 20), change("a", 10)]);
        assert_eq!(
            third.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            ["d"]
        );
    }

    /// A source whose index the test replaces, as new settings do.
    struct Replaced {
        roots: Arc<ferret_fs::Roots>,
        index: Mutex<(Index, u64)>,
    }

    impl Source for Replaced {
        fn roots(&self) -> Arc<ferret_fs::Roots> {
            self.roots.clone()
        }
        fn index(&self) -> Index {
            self.index.lock().unwrap().0.clone()
        }
        fn generation(&self) -> u64 {
            self.index.lock().unwrap().1
        }
    }

    fn index_of(dir: &std::path::Path) -> Index {
        Index::open(ferret_index::IndexConfig::new(vec![
            ferret_index::IndexRoot::new("r", dir),
        ]))
        .unwrap()
    }

    #[test]
    fn the_feed_ticks_when_the_index_records_a_change_and_follows_a_new_index() {
        let dir = tempfile::tempdir().unwrap();
        let index = index_of(dir.path());
        let source = Arc::new(Replaced {
            roots: Arc::new(ferret_fs::Roots::none(Default::default())),
            index: Mutex::new((index.clone(), 0)),
        });
        let feed = Feed::new(source.clone());
        let mut rx = feed.subscribe();
        // The follower registers its touch listener on its own thread.
        std::thread::sleep(Duration::from_millis(100));
        index.record(&[change("new.txt", chrono::Utc::now().timestamp_millis())]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let mut ticked = || {
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(5), rx.changed()).await
            })
        };
        assert!(
            matches!(ticked(), Ok(Ok(()))),
            "no tick after a recorded change"
        );
        let (rows, last) = read(&index, None, None).unwrap();
        assert_eq!(rows[0].path, "new.txt");
        assert_eq!(last["path"], "new.txt");
        assert_eq!(status_json(&index)["last_change"]["path"], "new.txt");
        // The settings replace the index: the feed follows the new one.
        let other = tempfile::tempdir().unwrap();
        let replacement = index_of(other.path());
        *source.index.lock().unwrap() = (replacement.clone(), 1);
        assert!(matches!(ticked(), Ok(Ok(()))), "a tick for the new index");
        std::thread::sleep(Duration::from_millis(100));
        replacement.record(&[change("later.txt", chrono::Utc::now().timestamp_millis())]);
        assert!(
            matches!(ticked(), Ok(Ok(()))),
            "no tick after a change recorded by the new index"
        );
    }
}
