//! Roots from the client: a stdio server started with no `--root` serves the
//! folders its client names (MCP roots, handshake era), or else the folder it
//! was started in, and follows the client's changes.
//!
//! Nothing is served until the client has said: calls wait (at most
//! [`ROOTS_WAIT`]) for the first [`Stack`]. After `initialized`, a client that
//! declared the roots capability is asked `roots/list`; on
//! `notifications/roots/list_changed` it is asked again and, when the folders
//! differ, a new [`Stack`] replaces the old one whole: the dropped folders are
//! refused from that moment, the new ones searchable once their index is
//! built (an unchanged set of folders loads its saved index, so reopening a
//! project is quick). A client that declared no roots, a 2026-07-28 client
//! (that revision has no roots), one whose roots list names no usable
//! folder and `--no-client-roots` get the current folder, never `/`. Only `file://` URIs naming existing folders are
//! served; the binary's [`OpenServed`] gives them names and opens them with
//! the operator's policy (denylist, confinement, index settings), as it does
//! operator roots.

#![expect(
    deprecated,
    reason = "roots are deprecated by SEP-2577 but still asked of handshake-era clients"
)]

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use ferret_fs::{ErrorCode, FsError, Policy, Roots};
use ferret_index::{Index, IndexConfig};
use rmcp::{
    RoleServer,
    model::{ClientNotification, JsonRpcMessage},
    service::{Peer, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

use crate::{Ferret, Stack};

/// How long a call waits for the client's roots before it is answered
/// `NO_ROOTS`.
pub(crate) const ROOTS_WAIT: Duration = Duration::from_secs(30);

/// How long the client has to answer `roots/list`.
const LIST_WAIT: Duration = Duration::from_secs(10);

/// What one set of folders is served with (inside the server, its `Stack`).
pub struct Served {
    pub roots: Arc<Roots>,
    /// Started: walking and watching.
    pub index: Index,
    /// Started, when the content index is on.
    pub content: Option<ferret_content::ContentIndex>,
}

/// Opens what is served for a set of folders (absolute, existing): names,
/// the operator's policy, the index and content settings are the binary's.
pub trait OpenServed: Send + Sync + 'static {
    /// `folders`: each with the name the client gave it, if any.
    fn open(&self, folders: &[(Option<String>, PathBuf)]) -> Result<Served, String>;
}

/// How a stdio server with no operator roots finds its roots.
pub struct ClientRoots {
    pub opener: Box<dyn OpenServed>,
    /// Served when the client names no roots: the folder ferret started in.
    pub current_folder: PathBuf,
    /// Ask the client (`false`: `--no-client-roots`).
    pub ask: bool,
    /// The roots are served writable (`--writable`): the write tools are listed.
    pub writable: bool,
    /// The policy of the (empty) roots served before the client has said.
    pub policy: Policy,
    /// When this process started: the start-up sweep of each new set of
    /// roots removes only temporary files older than that.
    pub started: std::time::SystemTime,
}

/// Where the roots served now came from, for `diagnostics` and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Operator,
    NotYet,
    Client,
    CurrentFolder,
}

impl Origin {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::Operator => "operator",
            Origin::NotYet => "not yet known",
            Origin::Client => "client",
            Origin::CurrentFolder => "current folder",
        }
    }
}

#[derive(Default)]
struct State {
    /// The client's `initialize` declared roots (`None`: no `initialize`
    /// seen, a 2026-07-28 client or none yet).
    declared: Option<bool>,
    /// A first look was started.
    started: bool,
    from: Option<Origin>,
    folders: Vec<(Option<String>, PathBuf)>,
    /// Why nothing is served, when nothing is.
    problem: Option<String>,
    /// Changes the client announced; a look that began before the last one
    /// does not let waiting calls go on.
    changes: u64,
}

/// The following of one client's roots (one per stdio server).
pub(crate) struct Follow {
    config: ClientRoots,
    state: Mutex<State>,
    /// `true` once a first set of roots (possibly none) is in place.
    ready: tokio::sync::watch::Sender<bool>,
    /// One look at a time, in the order asked.
    looking: tokio::sync::Mutex<()>,
}

impl Follow {
    pub(crate) fn new(config: ClientRoots) -> Follow {
        Follow {
            config,
            state: Mutex::new(State::default()),
            ready: tokio::sync::watch::Sender::new(false),
            looking: tokio::sync::Mutex::new(()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The folder ferret started in, as the one folder to serve.
    fn current_folder(&self) -> (Vec<(Option<String>, PathBuf)>, Origin) {
        (
            vec![(None, self.config.current_folder.clone())],
            Origin::CurrentFolder,
        )
    }
}

/// A stdio transport that tells the server of a roots change as soon as the
/// notification is read, before any message after it. rmcp runs each
/// notification and request on a task of its own, so a `tools/call` sent
/// right after `notifications/roots/list_changed` could otherwise be served
/// by the old roots (seen once in the real-client suite).
pub(crate) struct Hearing<T> {
    pub(crate) transport: T,
    pub(crate) server: Ferret,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Hearing<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.transport.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && matches!(
                n.notification,
                ClientNotification::RootsListChangedNotification(_)
            )
        {
            self.server.roots_will_change();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.transport.close()
    }
}

/// What is served before the client has said: no root, an index of nothing.
pub(crate) fn none_yet(config: &ClientRoots) -> Stack {
    Stack {
        roots: Arc::new(Roots::none(config.policy.clone())),
        index: Index::open(IndexConfig::new(Vec::new())).expect("an index of no root opens"),
        content: None,
    }
}

/// The folders a `roots/list` answer names: `file://` URIs of existing
/// folders, each once; the rest counted as skipped.
fn usable(roots: &[rmcp::model::Root]) -> (Vec<(Option<String>, PathBuf)>, usize) {
    let mut folders: Vec<(Option<String>, PathBuf)> = Vec::new();
    let mut skipped = 0;
    for root in roots {
        let path = url::Url::parse(&root.uri)
            .ok()
            .filter(|u| u.scheme() == "file")
            .and_then(|u| u.to_file_path().ok())
            .filter(|p| p.is_absolute() && p.is_dir());
        match path {
            Some(p) if !folders.iter().any(|(_, q)| *q == p) => {
                let name = root.name.clone().filter(|n| !n.trim().is_empty());
                folders.push((name, p));
            }
            Some(_) => {}
            None => skipped += 1,
        }
    }
    (folders, skipped)
}

impl Ferret {
    /// Stop what is served now: its content index and index (their files
    /// saved). For a server that follows client roots, at exit.
    pub fn close_served(&self) {
        self.save_symbols();
        let stack = self.stack();
        if let Some(c) = &stack.content {
            c.shutdown();
        }
        stack.index.shutdown();
    }

    /// Where the roots served now came from.
    pub(crate) fn roots_from(&self) -> Origin {
        match &self.inner.client_roots {
            None => Origin::Operator,
            Some(f) => f.state().from.unwrap_or(Origin::NotYet),
        }
    }

    /// `initialize` said whether the client offers roots.
    pub(crate) fn client_declares_roots(&self, declared: bool) {
        if let Some(f) = &self.inner.client_roots {
            f.state().declared = Some(declared);
        }
    }

    /// `initialized`: take the first look at the client's roots.
    pub(crate) fn client_initialized(&self, peer: Peer<RoleServer>) {
        self.look_later(Some(peer));
    }

    /// Whether a change of the client's roots is followed.
    fn follows_changes(&self) -> bool {
        self.inner
            .client_roots
            .as_ref()
            .is_some_and(|f| f.config.ask && f.state().declared == Some(true))
    }

    /// `notifications/roots/list_changed` has just been read off the
    /// transport (see [`Hearing`]): calls read after it wait for the new
    /// roots, so a dropped folder is refused from the first call after the
    /// client said so.
    fn roots_will_change(&self) {
        if self.follows_changes()
            && let Some(f) = &self.inner.client_roots
        {
            f.state().changes += 1;
            f.ready.send_replace(false);
        }
    }

    /// `notifications/roots/list_changed`, as rmcp hands it over: look again.
    pub(crate) fn client_roots_changed(&self, peer: Peer<RoleServer>) {
        if self.follows_changes() {
            self.look_later(Some(peer));
        }
    }

    fn look_later(&self, peer: Option<Peer<RoleServer>>) {
        let Some(f) = &self.inner.client_roots else {
            return;
        };
        f.state().started = true;
        let this = self.clone();
        tokio::spawn(async move { this.look(peer).await });
    }

    /// Before a call: wait for the client's roots (a client that never sent
    /// `initialize`, one of the 2026-07-28 revision, gets the current folder).
    /// `Err` when nothing is served, saying why and how to fix it.
    pub(crate) async fn roots_in_place(&self, peer: &Peer<RoleServer>) -> Result<(), FsError> {
        let Some(f) = &self.inner.client_roots else {
            return Ok(());
        };
        // A call before `initialized` (or with no handshake at all) starts
        // the first look itself.
        if !f.state().started {
            self.look_later(Some(peer.clone()));
        }
        let mut ready = f.ready.subscribe();
        let waited = tokio::time::timeout(ROOTS_WAIT, ready.wait_for(|r| *r)).await;
        let s = f.state();
        if waited.is_err() {
            return Err(FsError::new(
                ErrorCode::NoRoots,
                format!(
                    "the client has not said which folders to serve within {} s",
                    ROOTS_WAIT.as_secs()
                ),
            )
            .hint("answer roots/list, or start ferret with --root DIR"));
        }
        match &s.problem {
            Some(problem) => Err(FsError::new(ErrorCode::NoRoots, problem.clone())
                .hint("open a folder in the client (its roots), or start ferret with --root DIR")),
            None => Ok(()),
        }
    }

    /// Ask the client (or take the current folder) and serve what it names;
    /// calls waiting for roots go on once it is done, whatever came of it.
    async fn look(&self, peer: Option<Peer<RoleServer>>) {
        let Some(f) = &self.inner.client_roots else {
            return;
        };
        let _one = f.looking.lock().await;
        let changes = f.state().changes;
        self.look_once(f, peer).await;
        // A change announced while this look ran has a look of its own
        // coming: calls keep waiting for that one.
        if f.state().changes == changes {
            f.ready.send_replace(true);
        }
    }

    async fn look_once(&self, f: &Follow, peer: Option<Peer<RoleServer>>) {
        let ask = f.config.ask && f.state().declared == Some(true);
        let (folders, from) = match (ask, peer) {
            (true, Some(peer)) => {
                let listed = tokio::time::timeout(LIST_WAIT, peer.list_roots()).await;
                match listed {
                    Ok(Ok(answer)) => {
                        let (folders, skipped) = usable(&answer.roots);
                        if skipped > 0 {
                            tracing::warn!(
                                skipped,
                                "client roots that are not file:// URIs of existing folders are not served"
                            );
                        }
                        if folders.is_empty() {
                            // A client that offers roots but names none (the
                            // Inspector does): the folder it started ferret in.
                            f.current_folder()
                        } else {
                            (folders, Origin::Client)
                        }
                    }
                    outcome => {
                        let why = match outcome {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("no answer within {} s", LIST_WAIT.as_secs()),
                        };
                        tracing::warn!(%why, "roots/list failed");
                        if f.state().from.is_some() {
                            // Keep serving what was served.
                            return;
                        }
                        f.current_folder()
                    }
                }
            }
            _ => f.current_folder(),
        };
        {
            let s = f.state();
            if s.from.is_some() && s.folders == folders && s.problem.is_none() {
                return;
            }
        }
        let problem = if from == Origin::CurrentFolder && folders[0].1 == Path::new("/") {
            Some(
                "ferret was started in `/` with no --root, and serving the whole disk is never a default"
                    .to_string(),
            )
        } else {
            None
        };
        let opened = match problem {
            Some(p) => Err(p),
            None => {
                let this = self.clone();
                let wanted = folders.clone();
                tokio::task::spawn_blocking(move || {
                    let f = this.inner.client_roots.as_ref().expect("following");
                    f.config.opener.open(&wanted)
                })
                .await
                .unwrap_or_else(|e| Err(format!("opening the roots failed: {e}")))
            }
        };
        let (stack, problem) = match opened {
            Ok(served) => (served, None),
            Err(problem) => (none_yet(&f.config), Some(problem)),
        };
        let names: Vec<String> = stack.roots.roots().iter().map(|r| r.name.clone()).collect();
        let old = self.install(Arc::new(stack));
        // The new roots' symbols table (the old one is saved as it is
        // replaced, see `symbols_tool::held_for`).
        self.start_symbols();
        {
            let mut s = f.state();
            s.folders = folders;
            s.from = Some(from);
            s.problem = problem.clone();
        }
        match &problem {
            None => tracing::info!(roots = ?names, from = from.as_str(), "serving roots"),
            Some(p) => tracing::warn!(problem = %p, "serving no root"),
        }
        // The old roots: their index saved and its watcher stopped, once
        // the calls still using them are done with them.
        let closing = tokio::task::spawn_blocking(move || {
            if let Some(c) = &old.content {
                c.shutdown();
            }
            old.index.shutdown();
        });
        drop(closing);
        if problem.is_none() && self.writes() {
            let sweeper = self.clone();
            let started = f.config.started;
            let _ = std::thread::Builder::new()
                .name("ferret-sweep".into())
                .spawn(move || sweeper.sweep_stale_temps(started));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_uris_of_existing_folders_are_served_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let folder_uri = url::Url::from_directory_path(dir.path())
            .unwrap()
            .to_string();
        let root = |uri: &str, name: Option<&str>| {
            let mut r = rmcp::model::Root::new(uri);
            r.name = name.map(String::from);
            r
        };
        let (folders, skipped) = usable(&[
            root(&folder_uri, Some("proj")),
            root(&folder_uri, None),
            root(url::Url::from_file_path(&file).unwrap().as_ref(), None),
            root("https://example.com/repo", None),
            root("file:///no/such/folder", None),
            root("not a uri", None),
        ]);
        assert_eq!(
            folders,
            vec![(Some("proj".to_string()), dir.path().to_path_buf())]
        );
        assert_eq!(skipped, 4);
    }

    #[test]
    fn percent_encoded_folders_are_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my project");
        std::fs::create_dir(&spaced).unwrap();
        let uri = url::Url::from_directory_path(&spaced).unwrap().to_string();
        assert!(uri.contains("my%20project"));
        let (folders, _) = usable(&[rmcp::model::Root::new(uri)]);
        assert_eq!(folders, vec![(None, spaced)]);
    }
}
