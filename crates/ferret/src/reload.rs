//! Settings changed live: `ferret.toml` read again on SIGHUP and when the
//! file changes (looked at every second), and what changed served without a
//! restart.
//!
//! The command line is parsed again with the new file (so flags and the
//! environment still win over it), every setting compared with the one
//! running, and what changed applied: new roots, deny rules, writable
//! roots, budgets and the content index's settings make a new stack, whose
//! index and content index are made from the running ones
//! (`Index::open_adopting`, `ContentIndex::adopting`), so that a root that
//! did not change is neither walked nor read again; the running index is
//! kept as it is when its roots and settings are the same. The new stack is
//! served in one step once its index holds every root: roots that leave
//! are refused, and new ones found, from the same moment. (Dropping the
//! leaving roots first, in a step of its own, was tried: it made their
//! refusal earlier only when the new roots take long to walk, and cost a
//! second copy of the kept roots' entries and of their orders: with a
//! million kept entries the new root was found after 6.8 s instead of
//! about 4, docs/benchmarks.md.) The locate roots and policy, `task-after`
//! and `symbols-early` change in place. Settings that only a restart can
//! change (the address, the token, logging …) are named as such.
//!
//! A file that does not parse, names an unknown key or a bad value, or a
//! root that cannot be opened, changes nothing: the running settings stay,
//! and the log and `diagnostics` say why, with the line.

use std::{
    ffi::OsString,
    os::unix::fs::MetadataExt,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use ferret_index::{Index, IndexConfig};
use ferret_server::{Ferret, Locate, Reload, Setting, Settings};

use crate::{
    cli, config,
    setup::{
        content_config, index_config, open_roots, read_documents, root_name, serve_policy,
        served_root_args,
    },
};

/// How often the file is looked at.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Settings only a restart changes: the transport, its address and
/// guards, the token, logging, where state is kept, how ferret stops.
const RESTART: &[&str] = &[
    "stdio",
    "bind",
    "allowed-host",
    "allowed-origin",
    "token",
    "token-file",
    "no-token",
    "http-sessions",
    "no-ui",
    "ui-downloads",
    "max-request-bytes",
    "log-file",
    "log-format",
    "state-dir",
    "no-persist",
    "no-client-roots",
    "shutdown-grace",
    "config",
];

/// How a setting that takes a restart shows the value the file now has.
const RESTART_NOTE: &str = " (now `";

/// Settings that make a new stack (roots, their index and content index).
const STACK: &[&str] = &[
    "root",
    "hidden",
    "no-ignore",
    "writable",
    "deny",
    "max-file-bytes",
    "max-response-bytes",
    "max-response-chars",
    "max-line-chars",
    "max-image-bytes",
    "content-index",
    "content-index-max-bytes",
    "content-index-max-file-bytes",
    "journal-max-age",
    "journal-max-entries",
    "rescan-every",
];

/// What `serve` started with, for reading the file again.
pub(crate) struct Start {
    /// The command line, parsed again with each new file.
    pub argv: Vec<OsString>,
    /// The file (the one asked for, else the default location).
    pub file: Option<PathBuf>,
    /// Every setting as `serve` started.
    pub effective: Vec<Setting>,
}

impl Start {
    pub(crate) fn of(argv: Vec<OsString>, parsed: &cli::Parsed) -> Start {
        Start {
            file: config::requested_path(&argv).map(|(p, _)| p),
            argv,
            effective: effective(parsed),
        }
    }
}

/// Every setting of `serve` with its value and source, in `--help`'s order.
pub(crate) fn effective(parsed: &cli::Parsed) -> Vec<Setting> {
    let (Some(sub), Some(matches)) = (
        parsed.command.find_subcommand("serve"),
        parsed.matches.subcommand_matches("serve"),
    ) else {
        return Vec::new();
    };
    let order = crate::setup::as_defined("serve");
    config::in_help_order(config::effective(sub, matches, &parsed.file), &order)
        .into_iter()
        .filter(|r| r.key != "config")
        .map(|r| Setting {
            key: r.key,
            value: r.value,
            source: r.source.to_string(),
        })
        .collect()
}

/// Reads the file again and serves what changed; one reload at a time.
pub(crate) struct Reloader {
    start: Start,
    server: Ferret,
    /// Roots come from the stdio client: only a restart applies the file.
    client_roots: bool,
    state: Mutex<State>,
}

struct State {
    args: cli::ServeArgs,
    effective: Vec<Setting>,
    reloads: u64,
    last: Option<Reload>,
}

/// The file as last looked at: (length, modification time, inode, change
/// time), `None` when there is none.
type Look = Option<(u64, i64, i64, u64, i64, i64)>;

fn look(path: &std::path::Path) -> Look {
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

impl Reloader {
    pub(crate) fn new(
        start: Start,
        args: cli::ServeArgs,
        server: Ferret,
        client_roots: bool,
    ) -> Arc<Reloader> {
        let reloader = Arc::new(Reloader {
            state: Mutex::new(State {
                args,
                effective: start.effective.clone(),
                reloads: 0,
                last: None,
            }),
            start,
            server,
            client_roots,
        });
        reloader.publish();
        reloader
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `diagnostics` and the page show.
    fn publish(&self) {
        let s = self.state();
        self.server.set_settings(Settings {
            file: self.start.file.as_ref().map(|p| p.display().to_string()),
            file_exists: self.start.file.as_ref().is_some_and(|p| p.exists()),
            reloads: s.reloads,
            last_reload: s.last.clone(),
            effective: s.effective.clone(),
        });
    }

    /// Follow SIGHUP (inside the runtime) and the file (on a thread). The
    /// signal's handler is in place when this returns (before ferret says
    /// it listens): SIGHUP's default would stop ferret.
    pub(crate) fn follow(self: &Arc<Self>) {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(hup) => self.on_sighup(hup),
            Err(e) => tracing::warn!(
                "cannot watch for SIGHUP ({e}); ferret.toml is still read again when it changes"
            ),
        }
        self.on_change();
    }

    fn on_sighup(self: &Arc<Self>, mut hup: tokio::signal::unix::Signal) {
        let on_signal = self.clone();
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                let at = Instant::now();
                let this = on_signal.clone();
                let _ = tokio::task::spawn_blocking(move || this.reload("SIGHUP", at)).await;
            }
        });
    }

    fn on_change(self: &Arc<Self>) {
        let Some(path) = self.start.file.clone() else {
            return;
        };
        let on_change = self.clone();
        let _ = std::thread::Builder::new()
            .name("ferret-settings".into())
            .spawn(move || {
                let mut seen = look(&path);
                loop {
                    std::thread::sleep(LOOK_EVERY);
                    let now = look(&path);
                    if now == seen {
                        continue;
                    }
                    let at = Instant::now();
                    // An editor may write in steps: read it once it holds still.
                    std::thread::sleep(Duration::from_millis(100));
                    seen = look(&path);
                    on_change.reload("the file changed", at);
                }
            });
    }

    /// Read the file again and serve what changed (or keep the running
    /// settings, saying why). `at`: when it was asked for.
    pub(crate) fn reload(&self, cause: &str, at: Instant) {
        // One at a time (the state's lock is held throughout).
        let mut state = self.state();
        let mut report = Reload {
            at: ferret_index::now_rfc3339(),
            cause: cause.to_string(),
            ..Reload::default()
        };
        match self.apply(&mut state, &mut report) {
            Ok(()) => {
                report.applied = true;
                report.ms = at.elapsed().as_millis() as u64;
                if report.changed.is_empty() {
                    tracing::info!(cause, "ferret.toml read again: nothing changed");
                } else {
                    tracing::info!(
                        cause,
                        changed = ?report.changed,
                        roots_added = ?report.roots_added,
                        roots_removed = ?report.roots_removed,
                        restart_needed = ?report.restart_needed,
                        ms = report.ms,
                        "ferret.toml read again: the new settings are served"
                    );
                }
            }
            Err(error) => {
                tracing::warn!(
                    cause,
                    "ferret.toml not applied, the running settings are kept: {error}"
                );
                report.applied = false;
                report.error = Some(error);
                report.ms = at.elapsed().as_millis() as u64;
            }
        }
        state.reloads += 1;
        // A read that changed nothing does not hide the last change (or
        // the last error, unless it clears it).
        let failed_before = state.last.as_ref().is_some_and(|l| !l.applied);
        if !(report.applied && report.changed.is_empty()) || failed_before || state.last.is_none() {
            state.last = Some(report);
        }
        drop(state);
        self.publish();
    }

    fn apply(&self, state: &mut State, report: &mut Reload) -> Result<(), String> {
        let parsed = cli::parse_again(self.start.argv.clone())?;
        let cli::Command::Serve(new) = &parsed.cli.command else {
            return Err("ferret is not serving".into());
        };
        let new = new.clone();
        let mut rows = effective(&parsed);
        report.changed = rows
            .iter()
            .filter(|r| {
                !state
                    .effective
                    .iter()
                    .any(|o| o.key == r.key && o.value == r.value)
            })
            .map(|r| r.key.clone())
            .collect();
        if report.changed.is_empty() {
            state.effective = rows;
            return Ok(());
        }
        let changed = report.changed.clone();
        let live = |keys: &[&str]| changed.iter().any(|k| keys.contains(&k.as_str()));
        report.restart_needed = report
            .changed
            .iter()
            .filter(|k| RESTART.contains(&k.as_str()) || self.client_roots)
            .cloned()
            .collect();
        if !self.client_roots {
            // What can be refused is checked before anything changes: the
            // new settings are served whole or not at all.
            let locate = live(&["locate-root", "locate"]);
            if locate {
                self.check_locate(&new)?;
            }
            if live(STACK) {
                check_stack(&new)?;
                self.replace_stack(&new, report)?;
            }
            if locate {
                self.replace_locate(&new)?;
            }
            if live(&["task-after"]) {
                self.server.set_task_after(new.task_after);
            }
            if live(&["symbols-early"]) {
                self.server.set_symbols_early(new.symbols_early);
            }
        }
        // What a restart changes keeps its running value, with a note.
        for row in &mut rows {
            if report.restart_needed.contains(&row.key)
                && let Some(old) = state.effective.iter().find(|o| o.key == row.key)
            {
                let wanted = row.value.clone();
                *row = old.clone();
                // (The running value's source, without an earlier note.)
                let running = old.source.split(RESTART_NOTE).next().unwrap_or_default();
                row.source = format!(
                    "{running}{RESTART_NOTE}{}`, which takes a restart)",
                    if wanted.is_empty() { "(none)" } else { &wanted }
                );
            }
        }
        state.effective = rows;
        state.args = new;
        Ok(())
    }

    /// New roots, rules, budgets: a new stack made from the running one.
    fn replace_stack(&self, new: &cli::ServeArgs, report: &mut Reload) -> Result<(), String> {
        let (deny, limits) = serve_policy(new).map_err(|e| e.to_string())?;
        let wanted = served_root_args(new);
        let running: Vec<(String, PathBuf)> = self
            .server
            .roots()
            .roots()
            .iter()
            .map(|r| (r.name.clone(), r.path.clone()))
            .collect();
        let named: Vec<(String, PathBuf)> = wanted
            .roots
            .iter()
            .map(|s| {
                (
                    root_name(s),
                    std::fs::canonicalize(&s.path).unwrap_or_else(|_| s.path.clone()),
                )
            })
            .collect();
        let kept: Vec<usize> = (0..named.len())
            .filter(|&i| running.contains(&named[i]))
            .collect();
        report.roots_added = named
            .iter()
            .filter(|n| !running.contains(n))
            .map(|n| n.0.clone())
            .collect();
        report.roots_removed = running
            .iter()
            .filter(|r| !named.contains(r))
            .map(|r| r.0.clone())
            .collect();
        report.roots_kept = kept.iter().map(|&i| named[i].0.clone()).collect();
        self.serve(&wanted, new, deny, limits)?;
        if !self.server.writes_listed() && wanted.roots.iter().any(|r| r.writable) {
            report.restart_needed.push(
                "writable (the write tools are listed when ferret starts: restart to offer them)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Open `root_args` with `new`'s settings, made from what is served,
    /// and serve it once its index is ready.
    fn serve(
        &self,
        root_args: &cli::RootArgs,
        new: &cli::ServeArgs,
        deny: ferret_fs::Denylist,
        limits: ferret_fs::Limits,
    ) -> Result<(), String> {
        let roots = open_roots(root_args, deny, limits).map_err(|e| e.to_string())?;
        for root in roots.roots() {
            tracing::info!(name = %root.name, path = %root.path.display(), writable = root.writable, "serving root");
        }
        let running_roots = self.server.roots();
        let running = self.server.index();
        let running_content = self.server.content_index();
        let config = index_config(&roots, root_args, &new.index);
        let content_config = content_config(&new.content, &config, new.policy.max_file_bytes);
        // The documents' cache and counters go over.
        let roots = match running_roots.documents() {
            Some(d) => roots.with_documents(d.clone()),
            None => read_documents(roots, config.state_dir.as_deref()),
        };
        let roots = Arc::new(roots);
        let index = if same_index(running.config(), &config) {
            // The same roots and index settings: the running index as it is.
            running.clone()
        } else {
            let index = Index::open_adopting(config, &running)?;
            index.start();
            index
        };
        let content = content_config.map(|c| {
            let deny_same =
                running_roots.policy.deny.extra_patterns() == roots.policy.deny.extra_patterns();
            match &running_content {
                Some(r) if index.same_as(&running) && deny_same && same_budget(r, &c) => r.clone(),
                Some(r) => {
                    let content =
                        ferret_content::ContentIndex::adopting(c, roots.clone(), index.clone(), r);
                    content.start();
                    content
                }
                None => {
                    let content =
                        ferret_content::ContentIndex::new(c, roots.clone(), index.clone());
                    content.start();
                    content
                }
            }
        });
        // Served once it holds every root: until then the running stack
        // answers (its roots as they were when the new index took over).
        while !index.wait_ready(Duration::from_millis(100)) {}
        if let Some(c) = content.as_ref().filter(|c| c.adopts()) {
            // Taken over in a moment: grep narrows from the first call.
            c.wait_ready(Duration::from_secs(5), &|| false);
        }
        if let Some(carried) = index.carried() {
            tracing::info!(
                carried = ?carried.roots,
                walked = ?carried.walked,
                entries = carried.entries,
                ms = carried.ms,
                "index made from the running one"
            );
        }
        self.server.replace_served(ferret_server::Served {
            roots,
            index,
            content,
        });
        Ok(())
    }

    /// Whether `new`'s locate roots can be served: listed at start, and
    /// each one opens.
    fn check_locate(&self, new: &cli::ServeArgs) -> Result<(), String> {
        if new.locate_roots.is_empty() {
            return Ok(());
        }
        if !self.server.locate_listed() {
            return Err(
                "`locate-root` was not set when ferret started, so the locate tool is not listed; restart ferret to offer it".into(),
            );
        }
        ferret_fs::Roots::open(&new.locate_roots, ferret_fs::Policy::default())
            .map(|_| ())
            .map_err(|e| format!("locate-root: {e}"))
    }

    /// New locate roots or policy; the locate index is kept when its roots
    /// are the same, else made from the running one.
    fn replace_locate(&self, new: &cli::ServeArgs) -> Result<(), String> {
        if new.locate_roots.is_empty() {
            return self.server.replace_locate(None);
        }
        let specs: Vec<_> = new
            .locate_roots
            .iter()
            .cloned()
            .map(|mut s| {
                s.writable = false;
                s
            })
            .collect();
        let roots = ferret_fs::Roots::open(&specs, ferret_fs::Policy::default())
            .map_err(|e| format!("locate-root: {e}"))?;
        let config = index_config(&roots, &served_root_args(new), &new.index);
        let index = match self.server.locate_roots() {
            Some(old) if same_index(old.index.config(), &config) => old.index.clone(),
            Some(old) => {
                let index = Index::open_adopting(config, &old.index)?;
                index.start();
                index
            }
            None => {
                let index = Index::open(config)?;
                index.start();
                index
            }
        };
        self.server.replace_locate(Some(Locate {
            roots,
            index,
            policy: new.locate_policy,
        }))
    }
}

/// Whether `new`'s roots can be served: the deny patterns parse, a root is
/// left, and every root opens.
fn check_stack(new: &cli::ServeArgs) -> Result<(), String> {
    let (deny, limits) = serve_policy(new).map_err(|e| e.to_string())?;
    let wanted = served_root_args(new);
    if wanted.roots.is_empty() {
        return Err(
            "no root is left: name at least one `root` in ferret.toml (or on the command line)"
                .into(),
        );
    }
    open_roots(&wanted, deny, limits)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Whether an index of `b` would be the running index of `a`: the same
/// roots (names and folders), rules and journal and rescan settings.
fn same_index(a: &IndexConfig, b: &IndexConfig) -> bool {
    let roots = |c: &IndexConfig| -> Vec<(String, PathBuf)> {
        c.roots
            .iter()
            .map(|r| (r.name.clone(), r.path.clone()))
            .collect()
    };
    roots(a) == roots(b)
        && a.rules.hidden == b.rules.hidden
        && a.rules.no_ignore == b.rules.no_ignore
        && a.state_dir == b.state_dir
        && a.journal_max_age == b.journal_max_age
        && a.journal_max_rows == b.journal_max_rows
        && a.limit_rescan_every == b.limit_rescan_every
}

/// Whether the running content index has `c`'s budgets.
fn same_budget(running: &ferret_content::ContentIndex, c: &ferret_content::Config) -> bool {
    let b = &running.config().budget;
    b.max_total_bytes == c.budget.max_total_bytes && b.max_file_bytes == c.budget.max_file_bytes
}
