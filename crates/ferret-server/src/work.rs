//! Long tool work: run on the blocking pool, report progress when the request
//! carries a `progressToken`, and stop when the caller goes away
//! (`notifications/cancelled`, or a closed HTTP response stream).
//!
//! A call offered a task ([`TaskOffer`]: the client declared the tasks
//! extension) that is still running after the offer's delay answers with a
//! `CreateTaskResult` instead; the same work then goes on, detached from the
//! request, reporting through the task's status message, stopped by
//! `tasks/cancel` through the same `Meter`, its result kept in the task.

use std::{sync::Arc, time::Duration};

use ferret_fs::Meter;
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResponse, CallToolResult, ProgressNotificationParam, ProgressToken},
    service::{Peer, RequestContext},
};
use tokio::task::JoinHandle;

use crate::tasks::{Outcome, Tasks};

/// How often progress is reported when the client asked for it, and how often
/// a task's status message is refreshed.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Stops the work when whoever holds it goes away (the call ends for any
/// reason, including the handler's future being dropped; or the task's
/// follower ends), and stops watching the request's token.
struct StopOnDrop {
    meter: Arc<Meter>,
    watcher: Option<tokio::task::AbortHandle>,
}

impl StopOnDrop {
    /// The request's cancellation no longer stops the work: it became a task.
    fn detach_from_request(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.meter.stop();
        self.detach_from_request();
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
pub fn counted(unit: &'static str) -> impl Fn(u64, Option<u64>) -> String + Send + Sync + 'static {
    move |done, total| match total {
        Some(total) => format!("{done} of {total} {unit}"),
        None => format!("{done} {unit}"),
    }
}

/// The offer to answer a call with a task.
pub struct TaskOffer {
    pub tasks: Arc<Tasks>,
    /// Who asks: the bounds of [`crate::tasks::Limits`] are per client.
    pub client: String,
    /// Answer with a task once the work has run this long (zero: at once).
    pub after: Duration,
    /// Called with the result when the work of a call that became a task
    /// ends (and dropped, unused, when the call ends without becoming one).
    pub on_end: Box<dyn FnOnce(&CallToolResult) + Send>,
}

/// The work and how it stops.
struct Running<T> {
    meter: Arc<Meter>,
    stop: StopOnDrop,
    job: JoinHandle<T>,
}

fn start<T: Send + 'static>(
    context: &RequestContext<RoleServer>,
    work: impl FnOnce(Arc<Meter>) -> T + Send + 'static,
) -> Running<T> {
    let meter = Arc::new(Meter::new());
    let watcher = {
        let ct = context.ct.clone();
        let meter = meter.clone();
        tokio::spawn(async move {
            ct.cancelled().await;
            meter.stop();
        })
    };
    let stop = StopOnDrop {
        meter: meter.clone(),
        watcher: Some(watcher.abort_handle()),
    };
    let for_work = meter.clone();
    let job = tokio::task::spawn_blocking(move || work(for_work));
    Running { meter, stop, job }
}

fn joined<T>(r: Result<T, tokio::task::JoinError>) -> Result<T, ErrorData> {
    r.map_err(|e| ErrorData::internal_error(format!("tool task failed: {e}"), None))
}

/// Run `work` on the blocking pool with a fresh [`Meter`] to tick. The meter
/// is stopped when the request is cancelled, and read every 250 ms to report
/// progress (worded by `describe`) when the request asked for it.
pub async fn run_metered<T: Send + 'static>(
    context: &RequestContext<RoleServer>,
    describe: impl Fn(u64, Option<u64>) -> String,
    work: impl FnOnce(Arc<Meter>) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let mut running = start(context, work);
    let mut progress = Progress::of(context);
    let r = wait(&mut running, progress.as_mut(), &describe, None).await;
    match r {
        Waited::Done(r) => joined(r),
        Waited::Due => unreachable!("no delay was given"),
    }
}

enum Waited<T> {
    Done(Result<T, tokio::task::JoinError>),
    /// The delay passed with the work still running.
    Due,
}

/// Wait for the work, reporting progress, at most `delay` when one is given.
async fn wait<T>(
    running: &mut Running<T>,
    mut progress: Option<&mut Progress>,
    describe: &impl Fn(u64, Option<u64>) -> String,
    delay: Option<Duration>,
) -> Waited<T> {
    let due = async {
        match delay {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(due);
    // The first tick one period from now: an interval's immediate first tick
    // still waits for the timer wheel (which rounds up to the next
    // millisecond), and that wait came before every quick answer.
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let outcome = loop {
        tokio::select! {
            r = &mut running.job => break Waited::Done(r),
            _ = &mut due => break Waited::Due,
            _ = tick.tick(), if progress.is_some() => {
                let (done, total) = running.meter.read();
                if let Some(p) = progress.as_mut() {
                    p.report(done, total, describe(done, total)).await;
                }
            }
        }
    };
    if matches!(outcome, Waited::Done(_))
        && let Some(p) = progress
    {
        // Where the work got to, even when it took less than one tick; sent
        // before the result, so progress still ends with the request.
        let (done, total) = running.meter.read();
        p.report(done, total, describe(done, total)).await;
    }
    outcome
}

/// Run a tool's `work` like [`run_metered`]; with an `offer`, a call still
/// running after the offer's delay answers with a task (when the store has
/// room: otherwise it stays an ordinary call) and goes on as one.
pub async fn run_call(
    context: &RequestContext<RoleServer>,
    describe: impl Fn(u64, Option<u64>) -> String + Send + Sync + 'static,
    offer: Option<TaskOffer>,
    work: impl FnOnce(Arc<Meter>) -> CallToolResult + Send + 'static,
) -> Result<CallToolResponse, ErrorData> {
    let mut running = start(context, work);
    let mut progress = Progress::of(context);
    if let Some(offer) = offer {
        let waited = if offer.after.is_zero() {
            // At once, however quick the work would have been.
            Waited::Due
        } else {
            wait(
                &mut running,
                progress.as_mut(),
                &describe,
                Some(offer.after),
            )
            .await
        };
        match waited {
            Waited::Done(r) => return joined(r).map(CallToolResponse::Complete),
            Waited::Due if context.ct.is_cancelled() => {}
            Waited::Due => {
                let (done, total) = running.meter.read();
                match offer
                    .tasks
                    .start(&offer.client, Some(describe(done, total)))
                {
                    Ok((task, created)) => {
                        running.stop.detach_from_request();
                        // Nobody waits on the request any more.
                        running.meter.unhurry();
                        tokio::spawn(follow(running, task, describe, offer.on_end));
                        return Ok(CallToolResponse::Task(created));
                    }
                    Err(busy) => {
                        tracing::debug!(reason = %busy.0, "no task for this call; it runs as an ordinary one");
                    }
                }
            }
        }
    }
    match wait(&mut running, progress.as_mut(), &describe, None).await {
        Waited::Done(r) => joined(r).map(CallToolResponse::Complete),
        Waited::Due => unreachable!("no delay was given"),
    }
}

/// The rest of a call that became a task: refresh its status message, stop
/// the work on `tasks/cancel`, keep its result.
async fn follow(
    mut running: Running<CallToolResult>,
    task: crate::tasks::Task,
    describe: impl Fn(u64, Option<u64>) -> String,
    on_end: Box<dyn FnOnce(&CallToolResult) + Send>,
) {
    // The first tick one period from now: an interval's immediate first tick
    // still waits for the timer wheel (which rounds up to the next
    // millisecond), and that wait came before every quick answer.
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut cancel_heard = false;
    let r = loop {
        tokio::select! {
            r = &mut running.job => break r,
            _ = task.cancelled(), if !cancel_heard => {
                cancel_heard = true;
                running.meter.stop();
            }
            _ = tick.tick() => {
                let (done, total) = running.meter.read();
                task.status(describe(done, total));
            }
        }
    };
    let (done, total) = running.meter.read();
    let mut message = describe(done, total);
    match joined(r) {
        Ok(mut result) => {
            if cancel_heard {
                // What the cancel did: the work says when it stopped
                // part-way (grep answers CANCELLED itself, with its counts);
                // otherwise it had finished, or was a copy or a move, which
                // are never stopped half-way, and its result is whole.
                let failed = result.is_error == Some(true);
                let code = result
                    .structured_content
                    .as_ref()
                    .and_then(|s| s["error"]["code"].as_str());
                if running.meter.was_cut_short() || code == Some("CANCELLED") {
                    message.push_str("; stopped by tasks/cancel, partial results");
                    if !failed {
                        result = crate::render::cancelled(result);
                    }
                } else if failed {
                    message.push_str("; it failed before tasks/cancel could stop it");
                } else {
                    message.push_str("; tasks/cancel came too late: it ran to its end");
                    result = crate::render::cancel_too_late(result);
                }
            }
            on_end(&result);
            task.finish(Outcome::Completed(result), Some(message));
        }
        Err(e) => task.finish(Outcome::Failed(e), Some(message)),
    }
    drop(running.stop);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{Limits, Tasks};

    /// A task whose work waits for `tasks/cancel`, then answers what
    /// `finish` makes of its meter: the task as `tasks/get` shows it.
    async fn cancelled_task(
        finish: impl FnOnce(&Meter) -> CallToolResult + Send + 'static,
    ) -> serde_json::Value {
        let tasks = Tasks::new(Limits::default());
        let (task, seed) = tasks.start("a", None).unwrap();
        let id = seed.task.task_id.clone();
        let meter = Arc::new(Meter::new());
        let for_work = meter.clone();
        let job = tokio::task::spawn_blocking(move || {
            while !for_work.cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            finish(&for_work)
        });
        let running = Running {
            meter: meter.clone(),
            stop: StopOnDrop {
                meter,
                watcher: None,
            },
            job,
        };
        let follower = tokio::spawn(follow(running, task, counted("files"), Box::new(|_| {})));
        tasks.cancel(&id).unwrap();
        tokio::time::timeout(Duration::from_secs(5), follower)
            .await
            .expect("the task ends once its work stops")
            .unwrap();
        serde_json::to_value(tasks.get(&id).unwrap()).unwrap()
    }

    /// A task cut short by `tasks/cancel` answers CANCELLED whatever the
    /// tool: the work here knows nothing of cancellation but stopping, and
    /// saying that it stopped part-way.
    #[tokio::test]
    async fn a_cancelled_task_says_so_whatever_its_tool() {
        let got = cancelled_task(|meter| {
            meter.cut_short();
            crate::render::ok(
                serde_json::json!({"hits": [], "total": 3}),
                "3 matches so far".into(),
            )
        })
        .await;
        let result = &got["result"];
        assert_eq!(result["isError"], true, "{got}");
        assert_eq!(result["structuredContent"]["error"]["code"], "CANCELLED");
        assert_eq!(
            result["structuredContent"]["total"], 3,
            "partial results kept"
        );
        assert!(
            got["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("stopped by tasks/cancel, partial results"),
            "{got}"
        );
    }

    /// Work that runs to its end whatever the cancel (a copy, or work that
    /// had just finished) answers its whole result, saying that the cancel
    /// came too late: not CANCELLED, which would send an agent to run it
    /// again (and a copy run again meets ALREADY_EXISTS).
    #[tokio::test]
    async fn a_cancel_that_came_too_late_says_the_work_completed() {
        let got = cancelled_task(|_| {
            crate::render::ok(
                serde_json::json!({"op": "copy", "entries": 40}),
                "copy folder a (40 entries) to b".into(),
            )
        })
        .await;
        let result = &got["result"];
        assert_eq!(result["isError"], false, "{got}");
        let s = &result["structuredContent"];
        assert_eq!(s["entries"], 40, "{got}");
        assert!(s.get("error").is_none(), "{got}");
        assert!(s["cancel"].as_str().unwrap().contains("too late"), "{got}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("not cancelled: ")
                && text.ends_with("copy folder a (40 entries) to b"),
            "{text}"
        );
        assert!(
            got["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("tasks/cancel came too late: it ran to its end"),
            "{got}"
        );
    }

    /// A failure of its own is not dressed as a cancellation.
    #[tokio::test]
    async fn a_task_that_failed_before_the_cancel_keeps_its_error() {
        let got = cancelled_task(|_| {
            crate::render::tool_error(&ferret_fs::FsError::new(
                ferret_fs::ErrorCode::AlreadyExists,
                "`b` already exists; nothing was changed",
            ))
        })
        .await;
        let result = &got["result"];
        assert_eq!(
            result["structuredContent"]["error"]["code"], "ALREADY_EXISTS",
            "{got}"
        );
        assert!(
            got["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("it failed before tasks/cancel could stop it"),
            "{got}"
        );
    }
}
