//! The `ferret` binary: parse flags (and `ferret.toml`), open the roots and the
//! index, then serve or answer. The work lives in the library crates
//! (`ferret-fs`, `ferret-index`, `ferret-query`, `ferret-server`).

mod commands;
mod doctor;
mod progress;
mod reload;
mod setup;
mod shutdown;
mod token;
mod units;

use ferret_cli::{cli, config};

use std::process::ExitCode;

fn main() -> ExitCode {
    // Started again by itself to extract one document's text (ferret-docs).
    if let Some(code) = ferret_docs::worker_main_if_asked() {
        return ExitCode::from(code as u8);
    }
    // The index's arrays are large: give them mappings of their own, so a
    // finished build leaves no freed holes in the heap (docs/benchmarks.md).
    ferret_index::map_large_allocations();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = match cli::parse(argv.clone()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ferret: {e}");
            return ExitCode::from(2);
        }
    };
    let mut parsed = parsed;
    let on_command_line = |sub: &str| {
        parsed
            .matches
            .subcommand_matches(sub)
            .and_then(|m| m.value_source("token"))
            == Some(clap::parser::ValueSource::CommandLine)
    };
    let typed = ["serve", "doctor", "token"]
        .into_iter()
        .any(on_command_line);
    match &mut parsed.cli.command {
        cli::Command::Serve(a) => a.token_on_command_line = typed,
        cli::Command::Doctor(a) => a.serve.token_on_command_line = typed,
        cli::Command::Token(a) => a.serve.token_on_command_line = typed,
        _ => {}
    }
    let (log_file, log_format) = match &parsed.cli.command {
        cli::Command::Serve(a) => (a.log_file.clone(), a.log_format.as_str()),
        cli::Command::Doctor(a) => (a.serve.log_file.clone(), a.serve.log_format.as_str()),
        _ => (None, "text"),
    };
    let quiet_default = !matches!(parsed.cli.command, cli::Command::Serve(_));
    if let Err(e) = init_logging(log_file.as_deref(), log_format == "json", quiet_default) {
        eprintln!("ferret: {e}");
        return ExitCode::FAILURE;
    }
    // What `serve` reads ferret.toml again with, when it changes.
    let start = matches!(parsed.cli.command, cli::Command::Serve(_))
        .then(|| reload::Start::of(argv, &parsed));
    let result = match parsed.cli.command {
        cli::Command::Serve(args) => commands::serve(args, start.expect("made for serve")),
        cli::Command::Index(args) => commands::index(args),
        cli::Command::Search(args) => commands::search(args),
        cli::Command::Grep(args) => commands::grep(args),
        cli::Command::Doctor(args) => doctor::run(args),
        cli::Command::Token(args) => commands::token(args),
        cli::Command::Config(_) => commands::config(&parsed.command, &parsed.matches, &parsed.file),
        cli::Command::Completions { shell } => commands::completions(shell),
        cli::Command::Man => commands::man(),
    };
    match result {
        Ok(code) => code,
        // `ferret man | head`: the reader left; nothing is wrong.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::debug!("{e:#}");
            eprintln!("ferret: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries the protocol with --stdio, results with
/// `search`) or to a file, as text or JSON lines. `FERRET_LOG` or `RUST_LOG`
/// set the level.
fn init_logging(log_file: Option<&std::path::Path>, json: bool, quiet: bool) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    // rmcp's own lines can carry whole messages: its debug lines requests and
    // results (file contents included), its info lines notifications, and the
    // warnings of `rmcp::service` every error answered, with what the caller
    // sent. They are shown only to an operator who names rmcp in the filter;
    // otherwise only rmcp's transport warnings (a refused Host or Origin) and
    // errors remain.
    const RMCP: &str = "rmcp=warn,rmcp::service=error";
    let default = if quiet { "warn" } else { "info" };
    let mut filter = std::env::var("FERRET_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| default.into());
    if !filter.contains("rmcp") {
        filter.push(',');
        filter.push_str(RMCP);
    }
    let filter =
        EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(format!("{default},{RMCP}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    let writer = match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "cannot open log file {}: {e}; choose another --log-file",
                        path.display()
                    )
                })?;
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    if json {
        builder.json().with_writer(writer).init();
    } else {
        builder.with_writer(writer).init();
    }
    Ok(())
}
