//! Long tool work: run on the blocking pool, report progress when the request
//! carries a `progressToken`, and stop when the caller goes away
//! (`notifications/cancelled`, or a closed HTTP response stream).

use std::{sync::Arc, time::Duration};

use ferret_fs::Meter;
use rmcp::{
    ErrorData, RoleServer,
    model::{ProgressNotificationParam, ProgressToken},
    service::{Peer, RequestContext},
};

/// How often progress is reported when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Stops the work when the call ends for any reason, including the handler's
/// future being dropped, and stops watching the request's token.
struct StopOnDrop {
    meter: Arc<Meter>,
    watcher: tokio::task::AbortHandle,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.meter.stop();
        self.watcher.abort();
    }
}

/// Where progress goes, when the request asked for it.
pub struct Progress {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    last: Option<u64>,
}

impl Progress {
    pub fn of(context: &RequestContext<RoleServer>) -> Option<Progress> {
        context.meta.get_progress_token().map(|token| Progress {
            token,
            peer: context.peer.clone(),
            last: None,
        })
    }

    /// Report `done` (of `total`, when known); progress must only increase, so
    /// a value not above the last one sent is skipped.
    pub async fn report(&mut self, done: u64, total: Option<u64>, message: String) {
        if self.last.is_some_and(|last| done <= last) {
            return;
        }
        self.last = Some(done);
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), done as f64).with_message(message);
        if let Some(total) = total {
            param = param.with_total(total as f64);
        }
        let _ = self.peer.notify_progress(param).await;
    }
}

/// "12 of 40 files scanned", or "12 files scanned" while the total is unknown.
pub fn counted(unit: &'static str) -> impl Fn(u64, Option<u64>) -> String {
    move |done, total| match total {
        Some(total) => format!("{done} of {total} {unit}"),
        None => format!("{done} {unit}"),
    }
}

/// Run `work` on the blocking pool with a fresh [`Meter`] to tick. The meter
/// is stopped when the request is cancelled, and read every 250 ms to report
/// progress (worded by `describe`) when the request asked for it.
pub async fn run_metered<T: Send + 'static>(
    context: &RequestContext<RoleServer>,
    describe: impl Fn(u64, Option<u64>) -> String,
    work: impl FnOnce(Arc<Meter>) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let meter = Arc::new(Meter::new());
    let watcher = {
        let ct = context.ct.clone();
        let meter = meter.clone();
        tokio::spawn(async move {
            ct.cancelled().await;
            meter.stop();
        })
    };
    let _stop = StopOnDrop {
        meter: meter.clone(),
        watcher: watcher.abort_handle(),
    };
    let for_work = meter.clone();
    let mut task = tokio::task::spawn_blocking(move || work(for_work));
    let joined = match Progress::of(context) {
        None => (&mut task).await,
        Some(mut progress) => {
            let mut tick = tokio::time::interval(PROGRESS_EVERY);
            tick.tick().await;
            let joined = loop {
                tokio::select! {
                    r = &mut task => break r,
                    _ = tick.tick() => {
                        let (done, total) = meter.read();
                        progress.report(done, total, describe(done, total)).await;
                    }
                }
            };
            // Where the work got to, even when it took less than one tick; sent
            // before the result, so progress still ends with the request.
            let (done, total) = meter.read();
            progress.report(done, total, describe(done, total)).await;
            joined
        }
    };
    joined.map_err(|e| ErrorData::internal_error(format!("tool task failed: {e}"), None))
}
