//! One function per subcommand (what they build from the flags is `setup`,
//! how they show long work is `progress`).

use std::{
    io::{IsTerminal, Write},
    process::ExitCode,
    time::{Duration, Instant},
};

use ferret_fs::{Denylist, Limits};
use ferret_index::{Index, IndexConfig, SortKey};
use ferret_server::{Ferret, Transport};

use crate::{
    cli, config,
    progress::{build_with_progress, with_content_progress},
    reload,
    setup::{
        ClientRootOpener, content_config, http_options, index_config, open_locate, open_roots,
        read_documents, read_policy, serve_policy, served_root_args,
    },
    shutdown, token,
};

/// How long a stdio server stopping on a signal lets its transport write
/// the answers of the calls that just ended.
const ANSWER_FLUSH: std::time::Duration = std::time::Duration::from_millis(300);

pub fn serve(args: cli::ServeArgs, start: reload::Start) -> anyhow::Result<ExitCode> {
    let started = std::time::SystemTime::now();
    let (deny, limits) = serve_policy(&args)?;
    let root_args = served_root_args(&args);
    if root_args.roots.is_empty() && args.stdio {
        return serve_client_roots(args, root_args, deny, limits, started, start);
    }
    let running_args = args.clone();
    let roots = open_roots(&root_args, deny, limits)?;
    for root in roots.roots() {
        tracing::info!(name = %root.name, path = %root.path.display(), writable = root.writable, "serving root");
    }
    let token = serve_token(&args)?;
    let http = http_options(&args, token.as_ref());
    if let Some(options) = &http {
        options.check().map_err(anyhow::Error::msg)?;
        let url = format!("http://{}/mcp", options.bind);
        eprintln!(
            "{}",
            token::startup_lines(token.as_ref(), &url, std::io::stderr().is_terminal())
        );
    }
    let config = index_config(&roots, &root_args, &args.index);
    let content_config = content_config(&args.content, &config, args.policy.max_file_bytes);
    let roots = std::sync::Arc::new(read_documents(roots, config.state_dir.as_deref()));
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    index.start();
    // Built (or loaded) in the background once the name index is ready.
    let content = content_config.map(|c| {
        let content = ferret_content::ContentIndex::new(c, roots.clone(), index.clone());
        content.start();
        content
    });
    let (locate, runtime) = locate_and_runtime(&args, &root_args)?;
    let grace = args.shutdown_grace;
    let task_after = args.task_after;
    let symbols_early = args.symbols_early;
    // What is saved at exit (the symbols table, the index and content index
    // served then) belongs to the server: ferret.toml may have replaced the
    // ones opened here (held by nothing else, so that their memory goes).
    let made: std::sync::OnceLock<Ferret> = std::sync::OnceLock::new();
    let made_here = &made;
    // The same server whatever the transport, told how it is reached.
    let make_server = move |transport: Transport| {
        let server = Ferret::with_locate(roots, index, transport, locate);
        if let Some(c) = content {
            server.set_content_index(c);
        }
        server.set_task_after(task_after);
        if symbols_early {
            server.build_symbols_early();
        }
        // Temporary files of writes killed in an earlier run, once the
        // index has walked the roots.
        let sweeper = server.clone();
        let _ = std::thread::Builder::new()
            .name("ferret-sweep".into())
            .spawn(move || sweeper.sweep_stale_temps(started));
        // ferret.toml read again on SIGHUP and when it changes.
        reload::Reloader::new(start, running_args, server.clone(), false).follow();
        let _ = made_here.set(server.clone());
        server
    };
    let result = runtime.block_on(async {
        match http {
            None => serve_stdio_until_stopped(make_server(Transport::Stdio), grace).await,
            Some(options) => {
                let stopping = shutdown::watch();
                let transport = Transport::Http {
                    bind: options.bind.to_string(),
                    sessions: options.sessions,
                };
                let server = make_server(transport);
                let (ending, signalled) = (server.clone(), stopping.clone());
                // On the signal axum stops accepting and waits for open requests;
                // listen streams are ended first, or it would wait on them forever.
                let serving = ferret_server::serve_http(server.clone(), options, async move {
                    signalled.cancelled().await;
                    ending.shutdown();
                });
                tokio::pin!(serving);
                tokio::select! {
                    r = &mut serving => r,
                    _ = async {
                        stopping.cancelled().await;
                        tokio::time::sleep(grace).await;
                    } => {
                        tracing::warn!(calls = server.in_flight(), "the grace period ran out; stopping with calls unfinished");
                        Ok(())
                    }
                }
            }
        }
    });
    // Flushed whatever ended the serving: the symbols table, the index
    // snapshot and the journal of what is served now.
    if let Some(server) = made.get() {
        server.close_served();
        if let Some(locate) = server.locate_roots() {
            locate.index.shutdown();
        }
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map(|()| ExitCode::SUCCESS)
}

/// Serve one stdio client until it closes stdin or a signal stops the
/// process (then the calls in flight get `grace` to finish).
async fn serve_stdio_until_stopped(server: Ferret, grace: Duration) -> anyhow::Result<()> {
    let stopping = shutdown::watch();
    let serving = ferret_server::serve_stdio(server.clone());
    tokio::pin!(serving);
    tokio::select! {
        r = &mut serving => r,
        _ = stopping.cancelled() => {
            server.shutdown();
            // Answer what is in flight (the client may still read), then stop.
            tokio::select! {
                r = &mut serving => r,
                settled = server.settled(grace) => {
                    if !settled {
                        tracing::warn!(calls = server.in_flight(), "the grace period ran out; stopping with calls unfinished");
                        return Ok(());
                    }
                    // A call counts as done when its work ends; its
                    // answer is written to stdout after that. Let
                    // the transport write it before stopping.
                    let _ = tokio::time::timeout(ANSWER_FLUSH, &mut serving).await;
                    Ok(())
                }
            }
        }
    }
}

/// `serve --stdio` with no root: the client's roots, or the folder ferret
/// starts in (`ferret_server::ClientRoots`), opened as operator roots are.
fn serve_client_roots(
    args: cli::ServeArgs,
    root_args: cli::RootArgs,
    deny: Denylist,
    limits: Limits,
    started: std::time::SystemTime,
    start: reload::Start,
) -> anyhow::Result<ExitCode> {
    let running_args = args.clone();
    let current_folder = std::env::current_dir().map_err(|e| {
        anyhow::anyhow!(
            "no --root given and the current folder cannot be read ({e}); name one with --root DIR"
        )
    })?;
    tracing::info!(
        ask_client = !args.no_client_roots,
        "no --root given: serving the client's roots once it names them, else the folder ferret started in"
    );
    let policy = ferret_fs::Policy {
        hidden: root_args.hidden,
        no_ignore: root_args.no_ignore,
        deny: deny.clone(),
        limits: limits.clone(),
    };
    let follow = ferret_server::ClientRoots {
        opener: Box::new(ClientRootOpener {
            root_args: root_args.clone(),
            index_args: args.index.clone(),
            content_args: args.content.clone(),
            deny,
            limits,
            writable: args.writable,
        }),
        current_folder,
        ask: !args.no_client_roots,
        writable: args.writable,
        policy,
        started,
    };
    let (locate, runtime) = locate_and_runtime(&args, &root_args)?;
    let server = runtime.block_on(async {
        let server = Ferret::following_client_roots(follow, Transport::Stdio, locate);
        server.set_task_after(args.task_after);
        if args.symbols_early {
            server.build_symbols_early();
        }
        // Roots come from the client: ferret.toml's changes are named, and
        // take a restart (SIGHUP no longer stops ferret).
        reload::Reloader::new(start, running_args, server.clone(), true).follow();
        server
    });
    let result = runtime.block_on(serve_stdio_until_stopped(
        server.clone(),
        args.shutdown_grace,
    ));
    // Whatever is served last: its index snapshot and journal flushed.
    server.close_served();
    if let Some(locate) = server.locate_roots() {
        locate.index.shutdown();
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map(|()| ExitCode::SUCCESS)
}

/// What both ways of serving start before the transport: the locate
/// roots and their index (the server stops the one it serves at exit) and
/// the tokio runtime.
fn locate_and_runtime(
    args: &cli::ServeArgs,
    root_args: &cli::RootArgs,
) -> anyhow::Result<(Option<ferret_server::Locate>, tokio::runtime::Runtime)> {
    let locate = open_locate(
        &args.locate_roots,
        args.locate_policy,
        root_args,
        &args.index,
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok((locate, runtime))
}

/// The token HTTP clients must send (`None` for stdio and `--no-token`).
fn serve_token(args: &cli::ServeArgs) -> anyhow::Result<Option<token::Token>> {
    if args.stdio {
        return Ok(None);
    }
    if args.token_on_command_line {
        tracing::warn!(
            "--token on the command line is visible to every account in `ps`; pass it in FERRET_TOKEN or with --token-file PATH instead"
        );
    }
    token::resolve(args)
}

/// `ferret token`: print the token `serve` uses with these flags, generating
/// it into the state folder if there is none yet; `--rotate` replaces it.
pub fn token(args: cli::TokenArgs) -> anyhow::Result<ExitCode> {
    let serve = &args.serve;
    if serve.no_token {
        anyhow::bail!(
            "--no-token (FERRET_NO_TOKEN) is set: serve runs without a token, so there is none to print; unset it to use one"
        );
    }
    if args.rotate {
        if serve.token.is_some() || serve.token_file.is_some() {
            anyhow::bail!(
                "the token is given with --token, FERRET_TOKEN or --token-file: change it there; --rotate replaces only the one ferret keeps in its state folder"
            );
        }
        let path = token::state_path(serve.index.state_dir_or_default().as_deref())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "there is no state folder (neither XDG_STATE_HOME nor HOME is set); give one with --state-dir DIR"
                )
            })?;
        let secret = token::rotate(&path).map_err(|e| {
            anyhow::anyhow!(
                "cannot write {}: {e}; choose a writable --state-dir",
                path.display()
            )
        })?;
        println!("{secret}");
        eprintln!(
            "ferret: a new token is in {}; restart `ferret serve` and give clients the new token",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let token = token::resolve(serve)?.ok_or_else(|| anyhow::anyhow!("no token is configured"))?;
    println!("{}", token.secret);
    if let token::Origin::State {
        path,
        created: true,
    } = &token.origin
    {
        eprintln!(
            "ferret: generated a token into {} (serve uses it from now on)",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn index(args: cli::IndexCommand) -> anyhow::Result<ExitCode> {
    // The deny rules and size bound `serve` has (flags, environment and the
    // configuration file alike): the content index is of the text it serves,
    // and its file is the one `serve` then loads.
    let (deny, limits) = read_policy(&args.policy)?;
    let roots = open_roots(&args.roots, deny, limits)?;
    let config = index_config(&roots, &args.roots, &args.index);
    let content_config = content_config(&args.content, &config, args.policy.max_file_bytes);
    let roots = std::sync::Arc::new(read_documents(roots, config.state_dir.as_deref()));
    let persisted = config.snapshot_path();
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    let started = Instant::now();
    build_with_progress(&index);
    let status = index.status();
    let saved = index.save_snapshot().map_err(anyhow::Error::msg)?;
    eprintln!(
        "indexed {} entries in {:.2}s{}",
        status.entries,
        started.elapsed().as_secs_f64(),
        match (saved, persisted) {
            (Some(bytes), Some(path)) => format!("; saved {} ({bytes} bytes)", path.display()),
            _ => "; not saved (--no-persist)".into(),
        }
    );
    if let Some(c) = content_config {
        let content = ferret_content::ContentIndex::new(c, roots, index.clone());
        let started = Instant::now();
        with_content_progress(&content, || content.build_now(false))
            .map_err(|e| anyhow::anyhow!("content index: {e}"))?;
        let s = content.status();
        eprintln!(
            "content index: {} files ({} of text) in {:.2}s{}{}",
            s.indexed_files,
            crate::units::mib(s.indexed_bytes),
            started.elapsed().as_secs_f64(),
            match content.file() {
                Some(path) if s.loaded_from_disk => format!(
                    "; {} was up to date ({}), checked against the disk",
                    path.display(),
                    crate::units::mib(s.size_bytes)
                ),
                Some(path) => format!(
                    "; saved {} ({})",
                    path.display(),
                    crate::units::mib(s.size_bytes)
                ),
                None => "; not saved (--no-persist)".into(),
            },
            if s.budget_reached {
                format!(
                    "; the budget (--content-index-max-bytes {}) was reached: {} files are searched directly",
                    crate::units::mib(s.max_total_bytes),
                    s.not_indexed.get("over_budget").copied().unwrap_or(0)
                )
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn search(args: cli::SearchCommand) -> anyhow::Result<ExitCode> {
    let roots = open_roots(&args.roots, Denylist::default(), Limits::default())?;
    let mut config = index_config(&roots, &args.roots, &args.index);
    // One search, then exit: the saved index is mapped and read in place.
    config.one_shot = true;
    // Checked before the index is read, in the command line's words (the
    // tool's own checks below name its JSON parameters).
    let clock = ferret_query::Clock::system();
    ferret_query::Query::compile(&args.query, &Default::default(), &clock)
        .map_err(|e| anyhow::anyhow!("{}", e.render(&args.query)))?;
    if let Some(sort) = &args.sort
        && SortKey::from_name(sort).is_none()
    {
        let names: Vec<&str> = SortKey::NAMES.iter().map(|(n, _)| *n).collect();
        anyhow::bail!("unknown sort `{sort}`; use {}", names.join(", "));
    }
    let index = saved_or_built(config)?;
    // Answered as the `search` tool answers an agent: the same order, the
    // same fuzzy fallback, close and partial names.
    let mut call = serde_json::Map::new();
    call.insert("query".into(), args.query.clone().into());
    if let Some(sort) = &args.sort {
        call.insert("sort".into(), sort.clone().into());
    }
    if args.descending {
        call.insert("descending".into(), true.into());
    }
    if let Some(path) = &args.path {
        call.insert("path".into(), path.clone().into());
    }
    let answer = ferret_server::search_once(&index, &roots, &call, args.limit)
        .map_err(anyhow::Error::msg)?;
    if let Some(warning) = &answer.warning {
        eprintln!("ferret: warning: {warning}");
    }
    if let Some(note) = answer.fuzzy {
        eprintln!("ferret: {note}");
    }
    let mut out = std::io::stdout().lock();
    for hit in &answer.hits {
        if args.json {
            writeln!(out, "{}", serde_json::to_string(hit)?)?;
        } else {
            writeln!(out, "{}", hit.path)?;
        }
    }
    if (answer.hits.len() as u64) < answer.total {
        eprintln!(
            "({} of {} matches; raise --limit for more)",
            answer.hits.len(),
            answer.total
        );
    }
    // Not matches: on stderr, so that the paths on stdout stay the answer.
    if !answer.close.is_empty() {
        eprintln!("ferret: names one letter off the word (not matches):");
        for hit in &answer.close {
            eprintln!("  {}", hit.path);
        }
    }
    if !answer.partial.is_empty() {
        eprintln!("ferret: no path holds every word; these lack the words named (not matches):");
        for (hit, missing) in &answer.partial {
            eprintln!("  {}  (without {})", hit.path, missing.join(", "));
        }
    }
    Ok(if answer.total == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn grep(args: cli::GrepCommand) -> anyhow::Result<ExitCode> {
    let (deny, limits) = read_policy(&args.policy)?;
    let roots = open_roots(&args.roots, deny, limits)?;
    let config = index_config(&roots, &args.roots, &args.index);
    let pattern = ferret_grep::Pattern {
        text: args.pattern.clone(),
        literal: args.literal,
        case_insensitive: args.case_insensitive,
        whole_word: args.whole_word,
        multiline: args.multiline,
    };
    let matcher = ferret_grep::compile(&pattern).map_err(anyhow::Error::msg)?;
    let clock = ferret_query::Clock::system();
    let filter = args.filter.clone().unwrap_or_default();
    let query = ferret_query::Query::compile(&filter, &Default::default(), &clock)
        .map_err(|e| anyhow::anyhow!("{}", e.render(&filter)))?;
    // Documents as their text, as `serve` reads them (extracted by this
    // binary, cached in the state folder).
    let roots = read_documents(roots, config.state_dir.as_deref());
    let documents = args
        .documents
        .unwrap_or_else(|| ferret_grep::names_documents(&filter, &[], args.path.as_deref()));
    let content_config = content_config(&args.content, &config, args.policy.max_file_bytes);
    let index = saved_or_built(config)?;
    let scope = ferret_grep::Scope {
        path: args.path.as_deref(),
        query,
        globs: Default::default(),
        // On the command line: no budget, nobody else to serve.
        stop: Default::default(),
    };
    let mut gathered = ferret_grep::gather(&index, &roots, &scope)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))?;
    // The saved content index narrows the files as in `serve`; without a
    // watcher, every file it answers for is first checked against the disk.
    let roots = std::sync::Arc::new(roots);
    let content = content_config.and_then(|mut c| {
        c.require_watcher = false;
        let content = ferret_content::ContentIndex::new(c, roots.clone(), index.clone());
        match content.open_saved() {
            Ok(_) => Some(content),
            Err(why) => {
                eprintln!("ferret: no content index used, every file is read: {why}");
                None
            }
        }
    });
    let narrowing = ferret_grep::narrow(content.as_ref(), &pattern, &mut gathered);
    if content.is_some() {
        match &narrowing.unused {
            Some(why) => {
                eprintln!("ferret: the content index was not used ({why}): every file is read")
            }
            None => eprintln!(
                "ferret: the content index narrowed {} files to {} ({} answered for; the others changed since it was saved, or are not in it, and are read)",
                narrowing.before, narrowing.after, narrowing.answered
            ),
        }
    }
    if gathered.walk_capped {
        eprintln!(
            "ferret: warning: a folder the index does not hold was listed to find its files and the listing stopped at {} files; the files past them are not searched: grep its subfolders one --path at a time, or pass --hidden/--no-ignore so that the index holds it",
            roots.policy.limits.max_walk_entries
        );
    }
    let options = ferret_grep::Options {
        before: args.context,
        after: args.context,
        output: if args.files {
            ferret_grep::Output::Files
        } else if args.count {
            ferret_grep::Output::Count
        } else {
            ferret_grep::Output::Content
        },
        limit: args.limit,
        max_file_bytes: roots.policy.limits.max_file_bytes,
        max_output_bytes: usize::MAX,
        // Alone on the command line: every core, no shared budget.
        budget: None,
        documents,
        ..ferret_grep::Options::default()
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    let outcome = ferret_grep::grep(
        &roots,
        &matcher,
        args.multiline,
        &gathered.candidates,
        &options,
        &never,
        None,
    );
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for l in &outcome.lines {
        // In a document: the page (slide, sheet and row, chapter) of the line.
        let part = l.part.as_ref().map(|p| p.describe());
        if args.json {
            let mut v = serde_json::json!({"path": l.path, "line": l.line, "text": l.text});
            if l.context {
                v["context"] = serde_json::json!(true);
            }
            if let Some(part) = &part {
                v["part"] = serde_json::json!(part);
            }
            writeln!(out, "{v}")?;
        } else {
            let sep = if l.context { '-' } else { ':' };
            let part = part.map(|p| format!(" ({p})")).unwrap_or_default();
            writeln!(out, "{}{sep}{}{part}{sep}{}", l.path, l.line, l.text)?;
        }
    }
    for f in &outcome.files {
        if args.json {
            writeln!(out, "{}", serde_json::json!({"path": f}))?;
        } else {
            writeln!(out, "{f}")?;
        }
    }
    for c in &outcome.counts {
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::json!({"path": c.path, "count": c.count})
            )?;
        } else {
            writeln!(out, "{}:{}", c.path, c.count)?;
        }
    }
    out.flush()?;
    let s = &outcome.skipped;
    if outcome.truncated || s.total() > 0 {
        eprintln!(
            "({} of {} shown; scanned {} files, {} bytes; skipped {} binary, {} too large, {} sensitive, {} changed, {} unreadable{})",
            outcome.count,
            outcome.total,
            outcome.files_scanned,
            outcome.bytes_scanned,
            s.binary,
            s.too_large,
            s.sensitive,
            s.changed,
            s.unreadable,
            if s.documents > 0 {
                format!(
                    ", {} documents not searched: pass --documents, or name them in --filter (ext:pdf)",
                    s.documents
                )
            } else {
                String::new()
            }
        );
    }
    Ok(if outcome.total == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `ferret config`: the configuration `serve` would run with, and the source of
/// every value.
pub fn config(
    command: &clap::Command,
    matches: &clap::ArgMatches,
    file: &config::ConfigFile,
) -> anyhow::Result<ExitCode> {
    let sub = command
        .find_subcommand("config")
        .expect("ferret has a config command");
    let sub_matches = matches
        .subcommand_matches("config")
        .expect("this is the config command");
    let mut out = std::io::stdout().lock();
    match &file.path {
        Some(p) => writeln!(out, "# configuration file: {}", p.display())?,
        None => writeln!(
            out,
            "# configuration file: none ({} does not exist; --config PATH or FERRET_CONFIG chooses one)",
            config::default_path()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "no default location".into())
        )?,
    }
    writeln!(
        out,
        "# precedence: command line > environment > file > default"
    )?;
    let rows = config::in_help_order(
        config::effective(sub, sub_matches, file),
        &crate::setup::as_defined("config"),
    );
    let width = rows.iter().map(|r| r.key.len()).max().unwrap_or(0);
    for row in rows {
        if row.key == "config" {
            continue;
        }
        let value = if row.value.is_empty() {
            if row.key == "root" {
                "(none: at least one is required)".to_string()
            } else {
                "(none)".to_string()
            }
        } else {
            row.value
        };
        writeln!(out, "{:<width$} = {value:<32} # {}", row.key, row.source)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `ferret completions SHELL`: a completion script from the same flag definitions.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let mut command = cli::Cli::command();
    clap_complete::generate(shell, &mut command, "ferret", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// `ferret man`: the manual page, with a section per subcommand.
pub fn man() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let command = cli::Cli::command();
    let mut out = std::io::stdout().lock();
    let page = clap_mangen::Man::new(command.clone());
    page.render(&mut out)?;
    for sub in command.get_subcommands() {
        if sub.is_hide_set() {
            continue;
        }
        let name = format!("ferret-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("ferret {}", sub.get_name()));
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let section = clap_mangen::Man::new(sub);
        section.render_description_section(&mut out)?;
        section.render_synopsis_section(&mut out)?;
        section.render_options_section(&mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The index the one-shot commands (`search`, `grep`) answer from: the saved
/// one, or one built now (with progress) and saved for next time.
fn saved_or_built(config: IndexConfig) -> anyhow::Result<Index> {
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    if !index.status().ready {
        eprintln!(
            "ferret: no saved index for these roots yet; building one (run `ferret index` to keep it)"
        );
        build_with_progress(&index);
        let _ = index.save_snapshot();
    }
    Ok(index)
}
