//! Stopping on SIGINT/SIGTERM. The first signal stops new connections and lets
//! calls in flight finish within the grace period; the caller then flushes the
//! index snapshot and the journal and exits 0. A second signal exits at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Exit status after a second signal: the work in flight was abandoned.
pub const ABANDONED: i32 = 130;

/// Start watching for signals; the token is cancelled on the first one. Must
/// be called inside the runtime.
pub fn watch() -> CancellationToken {
    let stopping = CancellationToken::new();
    let token = stopping.clone();
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!(
                "cannot watch for signals; stop ferret by closing its input or killing it"
            );
            return;
        };
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        tracing::info!(
            "{name}: finishing the calls in flight, then stopping (send it again to stop at once)"
        );
        token.cancel();
        let again = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        eprintln!("ferret: {again} again: exiting at once, calls in flight are abandoned");
        std::process::exit(ABANDONED);
    });
    stopping
}
