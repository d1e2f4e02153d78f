//! One tool call, from its arguments to its answer: which tool, on which
//! thread, whether it may become a task, and what every call shares once
//! answered (near paths for a missing one, uses for the relevance order).

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, CallToolResult},
    service::RequestContext,
};
use serde_json::json;

use crate::{
    Ferret, InFlight, LocatePolicy, Transport, args, changes_tool, fit, grep_tool, index_tools,
    links, locate, logging, read_tool, render, symbols_tool, tools, work, write_tools,
};

impl Ferret {
    /// Run one tool. Arguments are checked first (malformed → `-32602`); the file
    /// work runs on the blocking pool so that it never stalls the protocol loop.
    pub(crate) async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.as_ref();
        let this = self.clone();
        let tool = request.name.clone();
        let done = match request.name.as_ref() {
            "search" => {
                let mut call = index_tools::parse_search(args)?;
                call.links = links::wanted(context);
                let offer = self.task_offer(context, "search");
                return work::run_call(context, search_progress, offer, move |meter| {
                    let s = this.stack();
                    let budget = s.roots.policy.limits.max_response_chars;
                    let found = index_tools::find(
                        &s.index,
                        &s.roots,
                        s.content.as_ref(),
                        &call,
                        &meter,
                        None,
                    );
                    fit::shown_within(budget, "search", found, call.limit, |found, shown| {
                        found.answer(&s.roots, &call, shown)
                    })
                })
                .await;
            }
            "locate" if self.inner.locate_listed => {
                return self.locate(&request, context).await;
            }
            "grep" => {
                let mut call = grep_tool::parse(args, &self.roots())?;
                call.links = links::wanted(context);
                let offer = self.task_offer(context, "grep");
                return grep_tool::run(this, call, context, offer).await;
            }
            "symbols" => {
                let mut call = symbols_tool::parse(args)?;
                let offer = self.task_offer(context, "symbols");
                return work::run_call(
                    context,
                    work::counted("files read for symbols"),
                    offer,
                    move |meter| {
                        let stack = this.stack();
                        let budget = stack.roots.policy.limits.max_response_chars;
                        fit::within(budget, "symbols", |over| {
                            if let Some(n) = over.and_then(|o| o.scaled_count("count")) {
                                call.limit = call.limit.min(n);
                            }
                            symbols_tool::symbols(
                                &this.inner.symbols,
                                &stack,
                                &call,
                                &meter,
                                &|| this.start_symbols_build(),
                            )
                        })
                    },
                )
                .await;
            }
            "changes" => {
                let mut query = changes_tool::parse_changes(args)?;
                // `path` named as every tool takes it (absolute inside a
                // root, `./`, `..`), as shown in the journal; outside every
                // root: refused as the other tools refuse it. A path
                // deleted since is still a prefix (resolved as written).
                if let Some(p) = query.path_prefix.take() {
                    match self.roots().resolve(&p) {
                        Ok(ferret_fs::Target::AllRoots) => {}
                        Ok(ferret_fs::Target::In(root, rel)) => {
                            let shown = self.roots().display(root, &rel);
                            query.path_prefix = (shown != ".").then_some(shown);
                        }
                        Err(e) => return Ok(render::tool_error(&e).into()),
                    }
                }
                let budget = self.roots().policy.limits.max_response_chars;
                blocking(move || {
                    let index = this.index();
                    let mut failed = None;
                    let answer = fit::within(budget, "changes", |over| {
                        if let Some(n) = over.and_then(|o| o.scaled_count("count")) {
                            query.limit = query.limit.min(n as u64);
                        }
                        changes_tool::changes(&index, &query).unwrap_or_else(|e| {
                            failed = Some(e);
                            CallToolResult::error(Vec::new())
                        })
                    });
                    match failed {
                        Some(e) => Err(e),
                        None => Ok(answer),
                    }
                })
                .await??
            }
            "read" => {
                // Metered: the line count (and the checksum) of a large file
                // reads it to its end, and stops when the caller goes away.
                let (path, mut req, mode) = read_tool::parse_read(args)?;
                work::run_metered(context, bytes_read, move |meter| {
                    req.meter = Some(meter);
                    let stack = this.stack();
                    let roots = &stack.roots;
                    let outlines = symbols_tool::Outlines {
                        symbols: &this.inner.symbols,
                        stack: &stack,
                    };
                    let budget = roots.policy.limits.max_response_chars;
                    fit::within(budget, "read", |over| {
                        if let Some(o) = &over {
                            // The window's text, scaled: the answer is mostly it.
                            let shown = o
                                .answer
                                .structured_content
                                .as_ref()
                                .and_then(|s| s["text"].as_str())
                                .map_or(usize::MAX, str::len);
                            let now = req.max_bytes.unwrap_or(usize::MAX).min(shown);
                            req.max_bytes = Some(((now as f64 * o.keep) as usize).max(1));
                        }
                        match &mode {
                            read_tool::ReadMode::Window => read_tool::read(roots, &path, &req),
                            read_tool::ReadMode::Outline => {
                                let max = over
                                    .as_ref()
                                    .and_then(|o| o.scaled_count("count"))
                                    .unwrap_or(req.max_lines as usize);
                                symbols_tool::outline(&outlines, &path, req.start_line, max)
                            }
                            read_tool::ReadMode::Symbol(name, line) => {
                                symbols_tool::read_symbol(&outlines, &path, name, *line, &req)
                            }
                        }
                    })
                })
                .await?
            }
            "list" => {
                let (path, mut req, details) = tools::parse_list(args)?;
                let offer = self.task_offer(context, "list");
                let after = self.after(&tool, args);
                return work::run_call(
                    context,
                    work::counted("entries walked"),
                    offer,
                    move |meter| {
                        req.meter = Some(meter);
                        let roots = this.roots();
                        let budget = roots.policy.limits.max_response_chars;
                        after(fit::within(budget, "list", |over| {
                            if let Some(n) = over.and_then(|o| o.scaled_count("count")) {
                                req.limit = req.limit.min(n);
                            }
                            tools::list(&roots, &path, &req, details)
                        }))
                    },
                )
                .await;
            }
            "stat" => {
                let paths = tools::parse_stat(args)?;
                blocking(move || tools::stat(&this.roots(), &paths)).await?
            }
            "write" if self.writes() => {
                let (path, req) = write_tools::parse_write(args)?;
                blocking(move || {
                    let s = this.stack();
                    write_tools::write(&s.roots, &s.index, &path, &req)
                })
                .await?
            }
            "edit" if self.writes() => {
                let (path, req) = write_tools::parse_edit(args)?;
                blocking(move || {
                    let s = this.stack();
                    write_tools::edit(&s.roots, &s.index, &path, &req)
                })
                .await?
            }
            "manage" if self.writes() => {
                let (path, mut req) = write_tools::parse_manage(args)?;
                let offer = self.task_offer(context, "manage");
                return work::run_call(
                    context,
                    work::counted("entries copied"),
                    offer,
                    move |meter| {
                        req.meter = Some(meter);
                        {
                            let s = this.stack();
                            write_tools::manage(&s.roots, &s.index, &path, &req)
                        }
                    },
                )
                .await;
            }
            "diagnostics" => {
                args::Args::new("diagnostics", args, &[], "{}")?;
                self.diagnostics()
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool `{other}`; this server has {}",
                        self.inner
                            .tools
                            .iter()
                            .map(|t| t.name.as_ref())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Some(json!({"tool": other})),
                ));
            }
        };
        // A missing path's near paths can wait for the first build: off the
        // async workers.
        let done = if wants_near_paths(&tool, &done) {
            let (this, args) = (self.clone(), args.cloned());
            blocking(move || this.after_tool(&tool, args.as_ref(), done)).await?
        } else {
            self.after_tool(&tool, args, done)
        };
        Ok(CallToolResponse::from(done))
    }

    /// [`Ferret::after_tool`] for work that may become a task (`list`, the
    /// one such tool `after_tool` has anything to do for): run where the work
    /// runs (the blocking pool), so that a task's result gets it too.
    fn after(
        &self,
        tool: &str,
        args: Option<&rmcp::model::JsonObject>,
    ) -> impl FnOnce(CallToolResult) -> CallToolResult + Send + 'static {
        let (this, tool, args) = (self.clone(), tool.to_string(), args.cloned());
        move |done| this.after_tool(&tool, args.as_ref(), done)
    }

    /// The existing paths near a missing one (as an agent typed it), for
    /// `suggested_paths`. Blocking: just after start it gives the first
    /// build a moment before looking.
    pub(crate) fn near_paths(&self, path: &str) -> Vec<String> {
        let stack = self.stack();
        let Ok(ferret_fs::Target::In(root, rel)) = stack.roots.resolve(path) else {
            // With several roots, a path given without its root's name
            // (`src/main.rs`): the roots that hold it, else what is near
            // it in each.
            if !stack.roots.is_multi() {
                return Vec::new();
            }
            let bare = path.trim().trim_start_matches("./");
            let in_roots: Vec<String> = stack
                .roots
                .roots()
                .iter()
                .map(|r| format!("{}/{bare}", r.name))
                .collect();
            let held: Vec<String> = in_roots
                .iter()
                .filter(|p| stack.roots.entry_kind(p).is_some())
                .cloned()
                .collect();
            if !held.is_empty() {
                return held;
            }
            stack.index.wait_ready(std::time::Duration::from_secs(2));
            let mut near: Vec<String> = in_roots
                .iter()
                .filter(|p| matches!(stack.roots.resolve(p), Ok(ferret_fs::Target::In(..))))
                .flat_map(|p| stack.index.suggest(p, 5))
                .collect();
            near.truncate(5);
            return near;
        };
        stack.index.wait_ready(std::time::Duration::from_secs(2));
        stack.index.suggest(&stack.roots.display(root, &rel), 5)
    }

    /// What every tool call shares once answered: a missing path gets the
    /// existing paths near it (`suggested_paths`), and files read or edited
    /// count as used for the relevance order (grep records its matches
    /// itself, from its outcome).
    fn after_tool(
        &self,
        tool: &str,
        args: Option<&rmcp::model::JsonObject>,
        mut done: CallToolResult,
    ) -> CallToolResult {
        if done.is_error == Some(true) {
            if wants_near_paths(tool, &done)
                && let Some(path) = args.and_then(|a| a.get("path")).and_then(|p| p.as_str())
            {
                let near = self.near_paths(path);
                render::suggest_paths(&mut done, &near);
            }
            return done;
        }
        if matches!(tool, "read" | "edit" | "write")
            && let Some(path) = done
                .structured_content
                .as_ref()
                .and_then(|s| s["path"].as_str())
        {
            self.index().record_use(path, 1.0);
        }
        done
    }

    /// `locate`: check, ask for consent where the policy says so, then search
    /// the locate index and show full paths.
    async fn locate(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Listed at start; its roots may have been removed from the
        // settings since.
        let Some(locate) = self.locate_roots() else {
            return Ok(render::tool_error(&locate::no_roots_now()).into());
        };
        let call = index_tools::parse_locate(request.arguments.as_ref())?;
        match locate.policy {
            LocatePolicy::Deny => return Ok(render::tool_error(&locate::disabled()).into()),
            LocatePolicy::Allow => {}
            LocatePolicy::Ask => {
                let consent = locate::ask(
                    &locate,
                    &self.inner.consent_seal,
                    request,
                    call.query_text(),
                    self.inner.transport.one_request_per_connection(),
                    context,
                )
                .await?;
                match consent {
                    locate::Consent::Granted => {}
                    locate::Consent::InputRequired(ask) => return Ok(ask.into()),
                    locate::Consent::Declined => {
                        return Ok(render::tool_error(&locate::declined()).into());
                    }
                    locate::Consent::Cancelled => {
                        return Ok(render::tool_error(&locate::cancelled()).into());
                    }
                    locate::Consent::Unclear => {
                        return Ok(render::tool_error(&locate::unclear()).into());
                    }
                    locate::Consent::Unavailable(why) => {
                        return Ok(render::tool_error(&locate::unavailable(&why)).into());
                    }
                }
            }
        }
        let this = self.clone();
        let offer = self.task_offer(context, "locate");
        work::run_call(context, search_progress, offer, move |meter| {
            let show = |p: &str| locate.full_path(p);
            let budget = this.roots().policy.limits.max_response_chars;
            let found = index_tools::find(
                &locate.index,
                &locate.roots,
                None,
                &call,
                &meter,
                Some(&show),
            );
            fit::shown_within(budget, "locate", found, call.limit, |found, shown| {
                found.answer(&locate.roots, &call, shown)
            })
        })
        .await
    }

    /// Whether this connection can be answered with tasks: not a
    /// handshake-era connection that lasts one request (nothing it sent
    /// earlier, such as its capabilities, reaches the next request).
    pub(crate) fn serves_tasks(&self, handshake: bool) -> bool {
        !(handshake && self.inner.transport.one_request_per_connection())
    }

    /// The offer to answer a long call with a task, when the request declared
    /// the tasks extension (its `_meta` capabilities, or the handshake's).
    fn task_offer(
        &self,
        context: &RequestContext<RoleServer>,
        tool: &'static str,
    ) -> Option<work::TaskOffer> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if !declared {
            return None;
        }
        let started = Instant::now();
        let in_flight = InFlight::new(&self.inner);
        let inner = self.inner.clone();
        Some(work::TaskOffer {
            tasks: self.inner.tasks.clone(),
            client: self.task_client(context),
            after: Duration::from_millis(self.inner.task_after_ms.load(Ordering::Relaxed)),
            on_end: Box::new(move |result| {
                let ok = result.is_error != Some(true);
                inner.stats.record(tool, started.elapsed(), ok);
                tracing::debug!(
                    tool,
                    ms = started.elapsed().as_millis() as u64,
                    ok,
                    "task ended"
                );
                drop(in_flight);
            }),
        })
    }

    /// Who a task belongs to, for the bounds on tasks per client: the
    /// connection (stdio, an HTTP session); over stateless HTTP, where every
    /// request is a connection of its own, the bearer token it brings and
    /// the name it gives in `clientInfo`.
    fn task_client(&self, context: &RequestContext<RoleServer>) -> String {
        let per_request = matches!(self.inner.transport, Transport::Http { .. })
            && (logging::is_stateless_era(context)
                || self.inner.transport.one_request_per_connection());
        if !per_request {
            return format!("connection {}", self.connection.id);
        }
        use std::hash::{Hash, Hasher};
        let mut token = std::collections::hash_map::DefaultHasher::new();
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(axum::http::header::AUTHORIZATION))
            .map(|v| v.as_bytes())
            .hash(&mut token);
        let name = context
            .meta
            .client_info()
            .map(|i| i.name)
            .or_else(|| context.peer.peer_info().map(|i| i.client_info.name.clone()))
            .unwrap_or_default();
        format!("http {:016x} {name}", token.finish())
    }
}

/// Whether a result is a missing path of a tool that offers the paths near
/// it (`suggested_paths`).
fn wants_near_paths(tool: &str, done: &CallToolResult) -> bool {
    done.is_error == Some(true)
        && matches!(tool, "read" | "list" | "stat" | "edit")
        && done
            .structured_content
            .as_ref()
            .and_then(|s| s["error"]["code"].as_str())
            == Some("NOT_FOUND")
}

/// Progress of a search: the first build of the index, then (with `content:`)
/// the files searched.
fn search_progress(done: u64, total: Option<u64>) -> String {
    match total {
        Some(total) => format!("{done} of {total} files searched for content"),
        None => format!("waiting for the index: {done} entries walked"),
    }
}

/// Progress of a `read` that counts a large file's lines: bytes read.
fn bytes_read(done: u64, total: Option<u64>) -> String {
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    match total {
        Some(total) => format!("{:.0} of {:.0} MB read", mb(done), mb(total)),
        None => format!("{:.0} MB read", mb(done)),
    }
}

/// Run file or index work on the blocking pool, off the protocol loop.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ErrorData::internal_error(format!("task failed: {e}"), None))
}

pub(crate) fn static_name(name: &str) -> &'static str {
    match name {
        "search" => "search",
        "locate" => "locate",
        "grep" => "grep",
        "symbols" => "symbols",
        "changes" => "changes",
        "read" => "read",
        "list" => "list",
        "stat" => "stat",
        "write" => "write",
        "edit" => "edit",
        "manage" => "manage",
        "diagnostics" => "diagnostics",
        _ => "unknown",
    }
}
