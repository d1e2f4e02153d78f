//! The `ferret` binary: parse flags, open the roots and the index, then serve or
//! answer. The work lives in the library crates (`ferret-fs`, `ferret-index`,
//! `ferret-query`, `ferret-server`).

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let log_file = match &cli.command {
        cli::Command::Serve(args) => args.log_file.clone(),
        _ => None,
    };
    let quiet_default = !matches!(cli.command, cli::Command::Serve(_));
    if let Err(e) = init_logging(log_file.as_deref(), quiet_default) {
        eprintln!("ferret: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        cli::Command::Serve(args) => commands::serve(args),
        cli::Command::Index(args) => commands::index(args),
        cli::Command::Search(args) => commands::search(args),
        cli::Command::Grep(args) => commands::grep(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            tracing::debug!("{e:#}");
            eprintln!("ferret: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries the protocol with --stdio, results with
/// `search`) or to a file. `FERRET_LOG` or `RUST_LOG` set the level.
fn init_logging(log_file: Option<&std::path::Path>, quiet: bool) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "warn" } else { "info,rmcp=warn" };
    let filter = std::env::var("FERRET_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| default.into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(default)))
        .with_ansi(false);
    match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?;
            builder.with_writer(std::sync::Mutex::new(file)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}
