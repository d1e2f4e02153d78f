//! The `ferret` binary: parse flags, open the roots, serve. The work lives in the
//! library crates (`ferret-fs`, `ferret-server`).

mod cli;

use std::process::ExitCode;

use clap::Parser;
use ferret_fs::{Denylist, Limits, Policy, Roots};
use ferret_server::{Ferret, HttpOptions, Transport};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Serve(args) => {
            if let Err(e) = init_logging(&args) {
                eprintln!("ferret: {e}");
                return ExitCode::FAILURE;
            }
            match serve(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e:#}");
                    eprintln!("ferret: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn init_logging(args: &cli::ServeArgs) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("FERRET_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info,rmcp=warn".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("info")))
        .with_ansi(false);
    // Logs never go to stdout: with --stdio it carries the protocol.
    match &args.log_file {
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

fn serve(args: cli::ServeArgs) -> anyhow::Result<()> {
    let deny = Denylist::with_patterns(&args.deny).map_err(anyhow::Error::msg)?;
    let policy = Policy {
        hidden: args.hidden,
        no_ignore: args.no_ignore,
        deny,
        limits: Limits {
            max_file_bytes: args.max_file_bytes,
            max_response_bytes: args.max_response_bytes as usize,
            max_line_chars: args.max_line_chars.max(1),
            max_image_bytes: args.max_image_bytes,
            ..Limits::default()
        },
    };
    let roots = Roots::open(&args.roots, policy)?;
    for root in roots.roots() {
        tracing::info!(name = %root.name, path = %root.path.display(), "serving root");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if args.stdio {
        let server = Ferret::new(roots, Transport::Stdio);
        return runtime.block_on(ferret_server::serve_stdio(server));
    }
    let options = HttpOptions {
        bind: args.bind,
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        token: args.token,
        max_request_bytes: args.max_request_bytes as usize,
    };
    options.check().map_err(anyhow::Error::msg)?;
    let server = Ferret::new(
        roots,
        Transport::Http {
            bind: args.bind.to_string(),
        },
    );
    runtime.block_on(ferret_server::serve_http(
        server,
        options,
        shutdown_signal(),
    ))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
    tracing::info!("shutting down");
}
