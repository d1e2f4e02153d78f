//! Resource subscriptions, driven by the index's watcher (never by polling).
//!
//! One hub per server. Handshake-era connections subscribe with
//! `resources/subscribe` and are told through their peer; 2026-07-28 clients
//! open a `subscriptions/listen` stream whose sink adds the `subscriptionId`.
//! A subscription to a file hears of that file; one to a folder hears of the
//! folder and of its direct entries (created, written, moved, deleted).
//!
//! The index publishes the paths it saw change ([`ferret_index::Index::touches`]);
//! a thread hands each batch to a tokio task, which waits a moment so that one
//! save (often several kernel events, plus ferret's own echo) gives one
//! notification per URI.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use ferret_index::Index;
use rmcp::{
    RoleServer,
    model::ResourceUpdatedNotificationParam,
    service::{Peer, SubscriptionSink},
};

/// How long changes are gathered before subscribers are told.
const COALESCE: Duration = Duration::from_millis(40);

/// Where a subscriber's notifications go.
#[derive(Clone)]
enum Sink {
    /// A handshake-era connection: `notifications/resources/updated` on its peer.
    Peer(Peer<RoleServer>),
    /// A `subscriptions/listen` stream (2026-07-28).
    Listen(SubscriptionSink),
}

struct Subscriber {
    sink: Sink,
    /// Watched path (as shown to agents) → the URI the client subscribed with.
    watched: HashMap<String, String>,
}

/// Identifies a subscriber: a connection (legacy) or one listen request.
pub type SubscriberId = u64;

#[derive(Default)]
struct State {
    next: SubscriberId,
    subscribers: HashMap<SubscriberId, Subscriber>,
}

pub struct Hub {
    /// The index followed, and whether it is followed yet (from the first
    /// subscription on).
    index: Mutex<(Index, bool)>,
    state: Mutex<State>,
}

impl Hub {
    pub fn new(index: Index) -> Hub {
        Hub {
            index: Mutex::new((index, false)),
            state: Mutex::new(State::default()),
        }
    }

    /// Follow `index` from now on: the roots served were replaced (a stdio
    /// client's roots changed). Subscriptions are kept; the old index's feed
    /// ends with its watcher.
    pub fn follow(self: &Arc<Self>, index: Index) {
        let mut followed = self.index.lock().unwrap_or_else(|p| p.into_inner());
        let started = followed.1;
        *followed = (index.clone(), started);
        drop(followed);
        if started {
            self.bridge(&index);
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh id for a connection or a listen stream.
    pub fn new_id(&self) -> SubscriberId {
        let mut s = self.state();
        s.next += 1;
        s.next
    }

    /// Add `path` (shown form) under `uri` to subscriber `id`, creating it with
    /// `sink` if it is new. Starts following the index on first use.
    fn watch(self: &Arc<Self>, id: SubscriberId, sink: Sink, path: String, uri: String) {
        self.start();
        let mut s = self.state();
        s.subscribers
            .entry(id)
            .or_insert_with(|| Subscriber {
                sink,
                watched: HashMap::new(),
            })
            .watched
            .insert(path, uri);
    }

    /// `resources/subscribe` of a handshake-era connection.
    pub fn subscribe_peer(
        self: &Arc<Self>,
        id: SubscriberId,
        peer: Peer<RoleServer>,
        path: String,
        uri: String,
    ) {
        self.watch(id, Sink::Peer(peer), path, uri);
    }

    /// `resources/unsubscribe`: forget every path subscribed with `uri`.
    pub fn unsubscribe(&self, id: SubscriberId, uri: &str) {
        let mut s = self.state();
        if let Some(sub) = s.subscribers.get_mut(&id) {
            sub.watched.retain(|_, u| u != uri);
            if sub.watched.is_empty() {
                s.subscribers.remove(&id);
            }
        }
    }

    /// A `subscriptions/listen` stream watching `paths` (shown form → URI).
    pub fn listen(
        self: &Arc<Self>,
        id: SubscriberId,
        sink: SubscriptionSink,
        paths: Vec<(String, String)>,
    ) {
        for (path, uri) in paths {
            self.watch(id, Sink::Listen(sink.clone()), path, uri);
        }
    }

    /// Forget a connection or a finished listen stream.
    pub fn forget(&self, id: SubscriberId) {
        self.state().subscribers.remove(&id);
    }

    /// How many subscribers are registered (for diagnostics).
    pub fn count(&self) -> usize {
        self.state().subscribers.len()
    }

    fn start(self: &Arc<Self>) {
        let index = {
            let mut followed = self.index.lock().unwrap_or_else(|p| p.into_inner());
            if followed.1 {
                return;
            }
            followed.1 = true;
            followed.0.clone()
        };
        self.bridge(&index);
    }

    /// Hand `index`'s change feed to the dispatching task.
    fn bridge(self: &Arc<Self>, index: &Index) {
        {
            let feed = index.touches();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<String>>();
            // The index's feed is a std channel (the index crate has no async);
            // this thread only moves batches across.
            let bridge = std::thread::Builder::new()
                .name("ferret-subscriptions".into())
                .spawn(move || {
                    while let Ok(batch) = feed.recv() {
                        if tx.send(batch).is_err() {
                            break;
                        }
                    }
                });
            if let Err(e) = bridge {
                tracing::warn!("resource subscriptions unavailable: {e}");
                return;
            }
            let hub = Arc::downgrade(self);
            tokio::spawn(async move {
                while let Some(first) = rx.recv().await {
                    let mut touched: BTreeSet<String> = first.into_iter().collect();
                    tokio::time::sleep(COALESCE).await;
                    while let Ok(more) = rx.try_recv() {
                        touched.extend(more);
                    }
                    let Some(hub) = hub.upgrade() else { break };
                    hub.dispatch(&touched).await;
                }
            });
        }
    }

    /// Tell every subscriber whose watched paths were touched, once per URI.
    async fn dispatch(&self, touched: &BTreeSet<String>) {
        let due: Vec<(SubscriberId, Sink, Vec<String>)> = {
            let s = self.state();
            s.subscribers
                .iter()
                .filter_map(|(&id, sub)| {
                    let uris: BTreeSet<&String> = touched
                        .iter()
                        .flat_map(|p| [Some(p.as_str()), parent_of(p)])
                        .flatten()
                        .filter_map(|p| sub.watched.get(p))
                        .collect();
                    (!uris.is_empty())
                        .then(|| (id, sub.sink.clone(), uris.into_iter().cloned().collect()))
                })
                .collect()
        };
        for (id, sink, uris) in due {
            for uri in uris {
                let sent = match &sink {
                    Sink::Peer(peer) => peer
                        .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                        .await
                        .is_ok(),
                    Sink::Listen(sink) => sink.notify_resource_updated(uri.clone()).await.is_ok(),
                };
                if !sent {
                    // The connection or the stream is gone.
                    tracing::debug!(subscriber = id, "subscriber gone; dropped");
                    self.forget(id);
                    break;
                }
            }
        }
    }
}

/// The folder holding `path` (shown form): a change there is news for it.
fn parent_of(path: &str) -> Option<&str> {
    match path.rsplit_once('/') {
        Some((parent, _)) => Some(parent),
        None if path != "." => Some("."),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_news_for_the_folder_holding_it() {
        assert_eq!(parent_of("src/main.rs"), Some("src"));
        assert_eq!(parent_of("README.md"), Some("."));
        assert_eq!(parent_of("."), None);
        assert_eq!(parent_of("code/src"), Some("code"));
    }
}
