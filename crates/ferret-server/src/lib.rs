//! ferret's MCP layer: the tools of `docs/tools.md` served through `rmcp`, over
//! stdio and Streamable HTTP, in both protocol eras (the `initialize` handshake and
//! the stateless 2026-07-28 revision; rmcp dispatches between them).
//!
//! This crate turns requests into calls on [`ferret_fs::Roots`] and results into
//! MCP content. It knows nothing of how files are read or confined.
//!
//! Where things are: this file holds the server's state ([`Ferret`], shared
//! by every connection, and what belongs to one connection); `handler`
//! answers each MCP request (`rmcp`'s `ServerHandler`); `dispatch` runs one
//! tool call; each tool's arguments and answer are in `index_tools`
//! (search, locate), `changes_tool`, `grep_tool`, `read_tool`, `tools` (list,
//! stat) and `write_tools`; `work` and `tasks` carry long calls.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use ferret_fs::{Policy, Roots};
//! let roots = Roots::open(&["./docs".parse().unwrap()], Policy::default())?;
//! let index = ferret_index::Index::open(ferret_index::IndexConfig::new(vec![])).map_err(anyhow::Error::msg)?;
//! let server = ferret_server::Ferret::new(roots, index, ferret_server::Transport::Stdio);
//! ferret_server::serve_stdio(server).await
//! # }
//! ```

mod args;
mod changes_tool;
mod clean_lines;
mod client_roots;
mod completion;
mod diagnostics;
mod dispatch;
mod fit;
#[doc(hidden)]
pub mod fuzzing;
mod grep_tool;
mod handler;
pub mod http;
mod index_tools;
mod links;
pub mod locate;
mod logging;
mod prompts;
mod read_tool;
mod removed;
mod render;
mod resources;
mod schema;
mod settings;
mod stats;
mod subscriptions;
mod symbols_tool;
pub mod tasks;
mod tools;
mod work;
mod write_tools;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_fs::Roots;
use ferret_index::Index;
#[expect(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 but still served"
)]
use rmcp::model::LoggingLevel;
use rmcp::{ServiceExt, model::Tool};
use tokio_util::sync::CancellationToken;

pub use client_roots::{ClientRoots, OpenServed, Served};
pub use http::{HttpOptions, serve_http};
pub use index_tools::{Answer, search_once};
pub use locate::{Locate, LocatePolicy};
pub use settings::{Reload, Setting, Settings};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How this server is reached, for `diagnostics` and for what a connection can do.
#[derive(Debug, Clone)]
pub enum Transport {
    Stdio,
    Http {
        bind: String,
        /// Handshake-era clients get a session (`--http-sessions`).
        sessions: bool,
    },
}

impl Transport {
    fn describe(&self) -> String {
        match self {
            Transport::Stdio => "stdio".into(),
            Transport::Http { bind, sessions } => format!(
                "streamable-http http://{bind}/mcp ({})",
                if *sessions {
                    "handshake-era sessions on"
                } else {
                    "stateless"
                }
            ),
        }
    }

    /// A handshake-era connection that lasts one HTTP request: nothing can be
    /// sent to it later (no subscriptions, no remembered log level, no questions).
    fn one_request_per_connection(&self) -> bool {
        matches!(
            self,
            Transport::Http {
                sessions: false,
                ..
            }
        )
    }
}

/// What is served, held as one: the roots, their index, and the content
/// index `grep` narrows its candidates with (when on). Replaced whole when
/// a stdio client's roots change (`client_roots.rs`) or the operator's
/// settings do (`settings.rs`): a call works on the one it took when it
/// began.
pub(crate) use client_roots::Served as Stack;

struct Inner {
    stack: std::sync::RwLock<Arc<Stack>>,
    /// Where the roots come from when no operator named them (`None`: the
    /// operator did).
    client_roots: Option<client_roots::Follow>,
    /// The write tools are offered (some root is writable, or client roots
    /// are served writable).
    writes: bool,
    transport: Transport,
    tools: Vec<Tool>,
    stats: stats::Stats,
    started: Instant,
    hub: Arc<subscriptions::Hub>,
    /// The locate roots, replaced when the settings change.
    locate: std::sync::RwLock<Option<Arc<Locate>>>,
    /// `locate` is listed (there were locate roots at start).
    locate_listed: bool,
    /// The operator's settings, for `diagnostics` and the page.
    settings: Mutex<settings::Settings>,
    /// Times the stack was replaced.
    generation: AtomicU64,
    /// Seals the `requestState` of consent questions (2026-07-28 era).
    consent_seal: locate::Seal,
    /// Cancelled when the server shuts down: long-lived streams end gracefully.
    shutdown: CancellationToken,
    /// Tool calls, prompts and tasks being worked on, so that a shutdown can
    /// wait for them.
    in_flight: AtomicUsize,
    settled: tokio::sync::Notify,
    /// Long calls answered as MCP tasks (for clients that declare them).
    tasks: Arc<tasks::Tasks>,
    /// How long a call that may become a task runs before it does, in ms.
    task_after_ms: AtomicU64,
    /// Temporary files of killed writes removed at start (`None` until the
    /// sweep has run; see [`Ferret::sweep_stale_temps`]).
    stale_temps: Mutex<Option<StaleTemps>>,
    /// Every source file's definitions, for `symbols`.
    symbols: symbols_tool::Symbols,
    /// Each stack's symbols table is built in the background once its
    /// index is ready (else by the first call that needs it).
    symbols_early: AtomicBool,
}

/// What the start-up sweep of `.ferret-tmp-*` files did.
#[derive(Debug, Clone, Default, serde::Serialize)]
struct StaleTemps {
    removed: u64,
    /// Found but kept: not ferret's name, not older than this process, or
    /// not removable (the reason is logged without the path).
    kept: u64,
}

/// Counts a call (or a task's work) as in flight while it lives.
struct InFlight(Arc<Inner>);

impl InFlight {
    fn new(inner: &Arc<Inner>) -> InFlight {
        inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

/// By default a call that may become a task does so after running this long.
pub const DEFAULT_TASK_AFTER: Duration = Duration::from_secs(1);

/// What belongs to one connection: a stdio peer, an HTTP session, or (stateless
/// HTTP) one request.
struct Connection {
    id: subscriptions::SubscriberId,
    #[expect(
        deprecated,
        reason = "MCP logging is deprecated by SEP-2577 but still served"
    )]
    log_level: Mutex<Option<LoggingLevel>>,
    hub: Arc<subscriptions::Hub>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.hub.forget(self.id);
    }
}

/// The MCP server: cheap to clone; [`Ferret::for_new_connection`] makes the
/// handler of each connection.
#[derive(Clone)]
pub struct Ferret {
    inner: Arc<Inner>,
    connection: Arc<Connection>,
}

impl Ferret {
    pub fn new(roots: impl Into<Arc<Roots>>, index: Index, transport: Transport) -> Ferret {
        Ferret::with_locate(roots, index, transport, None)
    }

    pub fn with_locate(
        roots: impl Into<Arc<Roots>>,
        index: Index,
        transport: Transport,
        locate: Option<Locate>,
    ) -> Ferret {
        let roots: Arc<Roots> = roots.into();
        let writes = roots.roots().iter().any(|r| r.writable);
        let stack = Stack {
            roots,
            index,
            content: None,
        };
        Ferret::serving(stack, None, writes, transport, locate)
    }

    /// A stdio server with no operator roots: it serves the client's roots
    /// (or the folder it started in) once the client has said which, and
    /// follows their changes; see [`ClientRoots`].
    pub fn following_client_roots(
        follow: ClientRoots,
        transport: Transport,
        locate: Option<Locate>,
    ) -> Ferret {
        let writes = follow.writable;
        let stack = client_roots::none_yet(&follow);
        Ferret::serving(
            stack,
            Some(client_roots::Follow::new(follow)),
            writes,
            transport,
            locate,
        )
    }

    fn serving(
        stack: Stack,
        client_roots: Option<client_roots::Follow>,
        writes: bool,
        transport: Transport,
        locate: Option<Locate>,
    ) -> Ferret {
        let mut file_tools = tools::definitions();
        let diagnostics = file_tools.pop().expect("diagnostics is the last file tool");
        let mut tools = vec![index_tools::search_definition()];
        if locate.is_some() {
            tools.push(index_tools::locate_definition());
        }
        tools.push(grep_tool::definition());
        tools.push(symbols_tool::definition());
        tools.extend(file_tools);
        tools.push(changes_tool::changes_definition());
        if writes {
            tools.extend(write_tools::definitions());
        }
        tools.push(diagnostics);
        let hub = Arc::new(subscriptions::Hub::new(stack.index.clone()));
        let inner = Arc::new(Inner {
            stack: std::sync::RwLock::new(Arc::new(stack)),
            client_roots,
            writes,
            transport,
            tools,
            stats: stats::Stats::default(),
            started: Instant::now(),
            hub,
            locate_listed: locate.is_some(),
            locate: std::sync::RwLock::new(locate.map(Arc::new)),
            settings: Mutex::new(settings::Settings::default()),
            generation: AtomicU64::new(0),
            consent_seal: locate::Seal::new(),
            shutdown: CancellationToken::new(),
            in_flight: AtomicUsize::new(0),
            settled: tokio::sync::Notify::new(),
            tasks: tasks::Tasks::new(tasks::Limits::default()),
            task_after_ms: AtomicU64::new(DEFAULT_TASK_AFTER.as_millis() as u64),
            stale_temps: Mutex::new(None),
            symbols: symbols_tool::Symbols::default(),
            symbols_early: AtomicBool::new(false),
        });
        Ferret::connected(inner)
    }

    fn connected(inner: Arc<Inner>) -> Ferret {
        let connection = Arc::new(Connection {
            id: inner.hub.new_id(),
            log_level: Mutex::new(None),
            hub: inner.hub.clone(),
        });
        Ferret { inner, connection }
    }

    /// The handler for one new connection (a stdio peer, an HTTP session, or one
    /// stateless HTTP request): shared state, fresh per-connection state.
    pub fn for_new_connection(&self) -> Ferret {
        Ferret::connected(self.inner.clone())
    }

    /// End long-lived streams (`subscriptions/listen`) gracefully: call when the
    /// server is asked to stop.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.tasks.shutdown();
    }

    /// How long a `grep`, `list`, `search`, `locate` or `manage` call from a
    /// client that declared the tasks extension runs before it answers with a
    /// task instead (zero: at once).
    pub fn set_task_after(&self, after: Duration) {
        let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        self.inner.task_after_ms.store(ms, Ordering::Relaxed);
    }

    /// Build each served stack's symbols table in the background once its
    /// index is ready (this one now, and those of client roots as they
    /// come), instead of in the first `symbols` call.
    pub fn build_symbols_early(&self) {
        self.inner.symbols_early.store(true, Ordering::Relaxed);
        self.start_symbols();
    }

    /// The background build of the served stack's symbols table, when
    /// asked for and there is something to build.
    pub(crate) fn start_symbols(&self) {
        if self.inner.symbols_early.load(Ordering::Relaxed) {
            self.start_symbols_build();
        }
    }

    /// The background build of the served stack's symbols table, now (a
    /// `symbols` call found more files to parse than it parses itself);
    /// nothing when one runs already.
    pub(crate) fn start_symbols_build(&self) {
        let stack = self.stack();
        if stack.roots.roots().is_empty() {
            return;
        }
        let this = self.clone();
        let _ = std::thread::Builder::new()
            .name("ferret-symbols".into())
            .spawn(move || {
                let serving =
                    || !this.inner.shutdown.is_cancelled() && Arc::ptr_eq(&this.stack(), &stack);
                symbols_tool::build(&this.inner.symbols, &stack, &serving);
            });
    }

    /// Save the symbols table (when it changed since it was read back or
    /// saved) and stop its background build: at exit.
    pub fn save_symbols(&self) {
        self.inner.symbols.save(true);
    }

    /// How many tool calls and prompts are being answered now.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Wait until no call is in flight, at most `within`; whether that happened.
    pub async fn settled(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.inner.settled.notified();
            if self.in_flight() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.in_flight() == 0;
            }
        }
    }

    /// What is served now (see [`Stack`]).
    pub(crate) fn stack(&self) -> Arc<Stack> {
        self.inner
            .stack
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The roots served now.
    pub fn roots(&self) -> Arc<Roots> {
        self.stack().roots.clone()
    }

    /// Remove the `.ferret-tmp-*` files that writes killed before they
    /// finished left in writable roots: once the index's first walk has met
    /// them (in the folders it walks), each removed through its root's handle
    /// when it bears a name ferret makes and is older than `started` (this
    /// process's start). Blocks until the index is ready; run it on a thread
    /// of its own. `diagnostics` reports what it did.
    pub fn sweep_stale_temps(&self, started: std::time::SystemTime) {
        let inner = &self.inner;
        let stack = self.stack();
        if !stack.roots.roots().iter().any(|r| r.writable) {
            stack.index.take_own_temps();
            return;
        }
        // Ready, and done comparing a loaded snapshot with the disk: the
        // first walk is over.
        loop {
            if inner.shutdown.is_cancelled() {
                return;
            }
            if stack.index.wait_ready(Duration::from_secs(1)) && !stack.index.status().reconciling {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut done = StaleTemps::default();
        for path in stack.index.take_own_temps() {
            match stack.roots.remove_stale_temp(&path, started) {
                Ok(true) => done.removed += 1,
                Ok(false) => done.kept += 1,
                Err(e) => {
                    tracing::warn!(code = ?e.code, "a stale temporary file could not be removed");
                    done.kept += 1;
                }
            }
        }
        if done.removed > 0 {
            tracing::info!(
                removed = done.removed,
                "removed temporary files left by writes killed before they finished"
            );
        }
        *inner.stale_temps.lock().unwrap_or_else(|p| p.into_inner()) = Some(done);
    }

    /// Let `grep` (and `search`'s `content:`) take their candidates from a
    /// content index built over these same roots. Set once, before serving.
    pub fn set_content_index(&self, content: ferret_content::ContentIndex) {
        let mut stack = self.inner.stack.write().unwrap_or_else(|p| p.into_inner());
        *stack = Arc::new(Stack {
            roots: stack.roots.clone(),
            index: stack.index.clone(),
            content: Some(content),
        });
    }

    /// The content index of the roots served now, when on.
    pub fn content_index(&self) -> Option<ferret_content::ContentIndex> {
        self.stack().content.clone()
    }

    /// Whether the write tools are offered.
    fn writes(&self) -> bool {
        self.inner.writes
    }

    /// The index of the roots served now.
    pub fn index(&self) -> Index {
        self.stack().index.clone()
    }

    /// The tools this server lists, in order.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    #[expect(
        deprecated,
        reason = "MCP logging is deprecated by SEP-2577 but still served"
    )]
    fn connection_log_level(&self) -> Option<LoggingLevel> {
        *self
            .connection
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// Serve one client over stdin/stdout until it closes stdin. A client that
/// closes before it says anything (a 2026-07-28 client that only probed, a host
/// checking that the command starts) has done nothing wrong: that is a normal end.
pub async fn serve_stdio(server: Ferret) -> anyhow::Result<()> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = removed::Explaining(client_roots::Hearing {
        transport: rmcp::transport::async_rw::AsyncRwTransport::new_server(
            clean_lines::cleaned(stdin),
            stdout,
        ),
        server: server.clone(),
    });
    let running = match server.serve(transport).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("the client closed stdin before its first request");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    running.waiting().await?;
    Ok(())
}
