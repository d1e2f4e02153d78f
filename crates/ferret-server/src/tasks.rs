//! Long tool calls as MCP tasks (the `io.modelcontextprotocol/tasks`
//! extension, SEP-2663): the store behind `tasks/get`, `tasks/update` and
//! `tasks/cancel`, shared by every connection of a server.
//!
//! A task is created by [`Tasks::start`], which makes it visible to
//! `tasks/get` before the `CreateTaskResult` goes out; the work then reports
//! through its [`Task`] handle (status message, questions for the client)
//! and ends with [`Task::finish`]. `tasks/cancel` fires the handle's
//! cancellation, which the work turns into a stopped `Meter`.
//!
//! Why ferret keeps its own store rather than rmcp's `TaskManager`: that one
//! counts a task's TTL from its creation and aborts a task still running when
//! it runs out (a long folder copy would be cut off and failed), sweeps only
//! when it is called (an idle server keeps every result), and has no bound on
//! what one client leaves running or stored. Here a task's result is kept for
//! [`Limits::retention`] after the work ends (`ttlMs` is reported as the time
//! from creation to that moment, and grows while the work runs), a sweeper
//! drops expired tasks on time, and [`Limits`] bounds running and kept tasks
//! per client and in all. The wire types are rmcp's.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, Weak},
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData,
    model::{
        CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, InputRequest, InputRequests,
        InputResponses, JsonObject, Task as TaskState, TaskPayload, TaskStatus,
    },
};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// How many tasks may run and be kept, and for how long results stay.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long a task (its result) is kept after its work ends.
    pub retention: Duration,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
    /// Tasks one client may have running at once.
    pub running_per_client: usize,
    /// Tasks running at once, all clients together.
    pub running_total: usize,
    /// Tasks (running or ended, not yet dropped) one client may have.
    pub kept_per_client: usize,
    /// Tasks kept, all clients together.
    pub kept_total: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            retention: Duration::from_secs(10 * 60),
            poll_interval: Duration::from_millis(500),
            running_per_client: 8,
            running_total: 32,
            kept_per_client: 64,
            kept_total: 256,
        }
    }
}

/// How a task's work ended.
#[derive(Debug)]
pub enum Outcome {
    /// The call's result, `isError` results included (SEP-2663: `completed`).
    Completed(CallToolResult),
    /// A JSON-RPC error the call would have answered (`failed`).
    Failed(ErrorData),
    /// The work stopped on `tasks/cancel` with nothing to show (`cancelled`).
    Cancelled,
}

/// Why [`Tasks::start`] made no task; the call then runs as an ordinary one.
#[derive(Debug, PartialEq, Eq)]
pub struct Busy(pub String);

/// The tasks of one server.
pub struct Tasks {
    limits: Limits,
    entries: Mutex<HashMap<String, Entry>>,
    sweeping: std::sync::Once,
}

struct Entry {
    client: String,
    created: Instant,
    created_at: String,
    updated_at: String,
    status_message: Option<String>,
    /// When the work ended; `None` while it runs.
    ended: Option<Instant>,
    /// The terminal payload, once the work ended.
    outcome: Option<TaskPayload>,
    cancel: CancellationToken,
    /// Questions waiting for `tasks/update`, by key.
    asking: BTreeMap<String, (InputRequest, oneshot::Sender<Value>)>,
    /// Every key ever asked: a key is never reused over a task's life.
    asked: HashSet<String>,
}

impl Entry {
    fn running(&self) -> bool {
        self.outcome.is_none()
    }

    fn touch(&mut self) {
        self.updated_at = now();
    }

    /// The time from creation to when the task may be dropped: the work's
    /// time so far (all of it, once it ended) plus the retention.
    fn ttl(&self, retention: Duration) -> Duration {
        let worked = match self.ended {
            Some(ended) => ended.duration_since(self.created),
            None => self.created.elapsed(),
        };
        worked + retention
    }

    fn expired(&self, retention: Duration) -> bool {
        self.ended.is_some_and(|ended| ended.elapsed() >= retention)
    }

    fn state(&self, id: &str, limits: &Limits) -> TaskState {
        let payload_status = match (&self.outcome, self.asking.is_empty()) {
            (Some(p), _) => p.status(),
            (None, true) => TaskStatus::Working,
            (None, false) => TaskStatus::InputRequired,
        };
        let mut task = TaskState::new(
            id,
            payload_status,
            self.created_at.clone(),
            self.updated_at.clone(),
        )
        .with_ttl_ms(millis(self.ttl(limits.retention)))
        .with_poll_interval_ms(millis(limits.poll_interval));
        task.status_message = self.status_message.clone();
        task
    }

    fn detailed(&self, id: &str, limits: &Limits) -> DetailedTask {
        let payload = match &self.outcome {
            Some(p) => p.clone(),
            None if self.asking.is_empty() => TaskPayload::Working,
            None => TaskPayload::InputRequired {
                input_requests: self
                    .asking
                    .iter()
                    .map(|(k, (r, _))| (k.clone(), r.clone()))
                    .collect::<InputRequests>(),
            },
        };
        DetailedTask::new(self.state(id, limits), payload)
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no task `{id}`: it never existed, its result was dropped after its ttlMs, or ferret restarted since (tasks live in memory); call the tool again"
        ),
        Some(serde_json::json!({"taskId": id})),
    )
}

fn object(value: Result<Value, serde_json::Error>) -> JsonObject {
    match value {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

impl Tasks {
    pub fn new(limits: Limits) -> Arc<Tasks> {
        Arc::new(Tasks {
            limits,
            entries: Mutex::new(HashMap::new()),
            sweeping: std::sync::Once::new(),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make a task for `client`'s call, visible to `tasks/get` from now on,
    /// unless that would pass a bound. Call from within the tokio runtime.
    pub fn start(
        self: &Arc<Self>,
        client: &str,
        status_message: Option<String>,
    ) -> Result<(Task, CreateTaskResult), Busy> {
        self.keep_sweeping();
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
        let l = &self.limits;
        let mine = entries.values().filter(|e| e.client == client);
        let (mut running, mut kept) = (0, 0);
        for e in mine {
            kept += 1;
            running += usize::from(e.running());
        }
        let running_total = entries.values().filter(|e| e.running()).count();
        let refuse = if running >= l.running_per_client {
            Some(format!(
                "this client has {running} tasks running (the bound is {})",
                l.running_per_client
            ))
        } else if kept >= l.kept_per_client {
            Some(format!(
                "this client has {kept} tasks kept (the bound is {})",
                l.kept_per_client
            ))
        } else if running_total >= l.running_total {
            Some(format!(
                "{running_total} tasks are running (the bound is {})",
                l.running_total
            ))
        } else if entries.len() >= l.kept_total {
            Some(format!(
                "{} tasks are kept (the bound is {})",
                entries.len(),
                l.kept_total
            ))
        } else {
            None
        };
        if let Some(why) = refuse {
            return Err(Busy(why));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let at = now();
        let entry = Entry {
            client: client.to_string(),
            created: Instant::now(),
            created_at: at.clone(),
            updated_at: at,
            status_message,
            ended: None,
            outcome: None,
            cancel: CancellationToken::new(),
            asking: BTreeMap::new(),
            asked: HashSet::new(),
        };
        let seed = entry.state(&id, l);
        let cancel = entry.cancel.clone();
        entries.insert(id.clone(), entry);
        drop(entries);
        let task = Task {
            tasks: Arc::downgrade(self),
            id,
            cancel,
            finished: false,
        };
        Ok((task, CreateTaskResult::new(seed)))
    }

    /// `tasks/get`: the task as it is now, its result or error once ended.
    pub fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
        let entry = entries.get(id).ok_or_else(|| unknown(id))?;
        Ok(GetTaskResult::new(entry.detailed(id, &self.limits)))
    }

    /// `tasks/update`: hand answers to the questions they name; answers to
    /// keys not being asked (never asked, already answered) are ignored.
    pub fn update(&self, id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        for (key, value) in responses {
            if let Some((_, answer)) = entry.asking.remove(&key) {
                let _ = answer.send(value);
            }
        }
        entry.touch();
        Ok(())
    }

    /// `tasks/cancel`: ask the work to stop. Acknowledged at once; the task
    /// ends when the work has stopped. A task that already ended is left as
    /// it is.
    pub fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        if entry.running() {
            entry.cancel.cancel();
            // Questions cannot be answered any more: their waiters wake.
            entry.asking.clear();
            entry.touch();
        }
        Ok(())
    }

    /// Tasks running and kept (running or ended), all clients together.
    pub fn counts(&self) -> (usize, usize) {
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
        let running = entries.values().filter(|e| e.running()).count();
        (running, entries.len())
    }

    /// Stop every running task's work (the server is stopping: nobody could
    /// fetch their results after a restart).
    pub fn shutdown(&self) {
        for entry in self.lock().values_mut().filter(|e| e.running()) {
            entry.cancel.cancel();
            entry.asking.clear();
        }
    }

    /// Drop the tasks whose retention has passed.
    pub fn sweep(&self) {
        let mut entries = self.lock();
        self.sweep_locked(&mut entries);
    }

    fn sweep_locked(&self, entries: &mut HashMap<String, Entry>) {
        let retention = self.limits.retention;
        entries.retain(|_, e| !e.expired(retention));
    }

    /// Sweep in the background too, so that results are dropped on time even
    /// when nobody calls; the sweeper ends with the store.
    fn keep_sweeping(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.sweeping.call_once(|| {
            let every = (self.limits.retention / 4)
                .clamp(Duration::from_millis(10), Duration::from_secs(30));
            let tasks: Weak<Tasks> = Arc::downgrade(self);
            runtime.spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    match tasks.upgrade() {
                        Some(tasks) => tasks.sweep(),
                        None => return,
                    }
                }
            });
        });
    }

    fn with_entry(&self, id: &str, f: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.lock().get_mut(id) {
            f(entry);
        }
    }
}

/// The work's handle on its task. Dropping it without [`Task::finish`] (the
/// work panicked) ends the task as failed.
#[derive(Debug)]
pub struct Task {
    tasks: Weak<Tasks>,
    id: String,
    cancel: CancellationToken,
    finished: bool,
}

/// A question the client will not answer: the task was cancelled, or it is gone.
#[derive(Debug)]
pub struct NotAnswered;

impl Task {
    /// Resolves when `tasks/cancel` (or the server's shutdown) asked the work to stop.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Say how the work is getting on (`statusMessage`).
    pub fn status(&self, message: String) {
        let Some(tasks) = self.tasks.upgrade() else {
            return;
        };
        tasks.with_entry(&self.id, |e| {
            if e.running() && e.status_message.as_deref() != Some(message.as_str()) {
                e.status_message = Some(message);
                e.touch();
            }
        });
    }

    /// Ask the client something (`input_required` until `tasks/update`
    /// answers `key`). A key is used once over the task's life.
    pub async fn ask(&self, key: &str, request: InputRequest) -> Result<Value, NotAnswered> {
        let (answer, answered) = oneshot::channel();
        {
            let tasks = self.tasks.upgrade().ok_or(NotAnswered)?;
            let mut entries = tasks.lock();
            let entry = entries.get_mut(&self.id).ok_or(NotAnswered)?;
            if !entry.running() || self.cancel.is_cancelled() || !entry.asked.insert(key.into()) {
                return Err(NotAnswered);
            }
            entry.asking.insert(key.into(), (request, answer));
            entry.touch();
        }
        answered.await.map_err(|_| NotAnswered)
    }

    /// End the task: its outcome is what `tasks/get` answers until it is dropped.
    pub fn finish(mut self, outcome: Outcome, status_message: Option<String>) {
        self.finished = true;
        self.end(outcome, status_message);
    }

    fn end(&self, outcome: Outcome, status_message: Option<String>) {
        let Some(tasks) = self.tasks.upgrade() else {
            return;
        };
        let payload = match outcome {
            Outcome::Completed(result) => TaskPayload::Completed {
                result: object(serde_json::to_value(&result)),
            },
            Outcome::Failed(error) => TaskPayload::Failed {
                error: object(serde_json::to_value(&error)),
            },
            Outcome::Cancelled => TaskPayload::Cancelled,
        };
        tasks.with_entry(&self.id, |e| {
            if e.running() {
                e.outcome = Some(payload);
                e.ended = Some(Instant::now());
                e.asking.clear();
                if status_message.is_some() {
                    e.status_message = status_message;
                }
                e.touch();
            }
        });
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if !self.finished {
            self.end(
                Outcome::Failed(ErrorData::internal_error(
                    "the task's work stopped without a result; call the tool again",
                    None,
                )),
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, TaskStatus};

    fn small(retention_ms: u64) -> Limits {
        Limits {
            retention: Duration::from_millis(retention_ms),
            running_per_client: 2,
            running_total: 3,
            kept_per_client: 3,
            kept_total: 4,
            ..Limits::default()
        }
    }

    fn status(tasks: &Tasks, id: &str) -> TaskStatus {
        tasks.get(id).unwrap().task.status()
    }

    #[tokio::test]
    async fn a_task_is_visible_at_once_and_keeps_its_result() {
        let tasks = Tasks::new(Limits::default());
        let (task, seed) = tasks.start("a", Some("starting".into())).unwrap();
        let id = seed.task.task_id.clone();
        assert_eq!(seed.task.status, TaskStatus::Working);
        assert_eq!(seed.task.ttl_ms, Some(600_000));
        assert_eq!(seed.task.poll_interval_ms, Some(500));
        let got = tasks.get(&id).unwrap();
        assert_eq!(got.task.task.status_message.as_deref(), Some("starting"));
        task.status("half way".into());
        assert_eq!(
            tasks.get(&id).unwrap().task.task.status_message.as_deref(),
            Some("half way")
        );
        task.finish(
            Outcome::Completed(CallToolResult::success(vec![ContentBlock::text("42")])),
            None,
        );
        let done = tasks.get(&id).unwrap();
        assert_eq!(done.task.status(), TaskStatus::Completed);
        let wire = serde_json::to_value(&done).unwrap();
        assert_eq!(wire["result"]["content"][0]["text"], "42");
        assert_eq!(wire["resultType"], "complete");
        assert!(wire["ttlMs"].as_u64().unwrap() >= 600_000);
    }

    #[tokio::test]
    async fn results_are_dropped_after_the_retention_without_any_call() {
        let tasks = Tasks::new(small(60));
        let (task, seed) = tasks.start("a", None).unwrap();
        task.finish(Outcome::Cancelled, None);
        assert_eq!(status(&tasks, &seed.task.task_id), TaskStatus::Cancelled);
        tokio::time::sleep(Duration::from_millis(150)).await;
        // The background sweeper dropped it: nothing looked it up meanwhile.
        assert_eq!(tasks.entries.lock().unwrap().len(), 0);
        let err = tasks.get(&seed.task.task_id).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(
            err.message.contains("call the tool again"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_running_task_is_never_dropped_and_its_ttl_grows() {
        let tasks = Tasks::new(small(30));
        let (task, seed) = tasks.start("a", None).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let got = tasks.get(&seed.task.task_id).unwrap();
        assert_eq!(got.task.status(), TaskStatus::Working);
        assert!(
            got.task.task.ttl_ms.unwrap() >= 130,
            "{:?}",
            got.task.task.ttl_ms
        );
        drop(task);
        // Dropped without an outcome: failed, with a JSON-RPC error inlined.
        let wire = serde_json::to_value(tasks.get(&seed.task.task_id).unwrap()).unwrap();
        assert_eq!(wire["status"], "failed");
        assert_eq!(wire["error"]["code"], -32603);
    }

    #[tokio::test]
    async fn bounds_per_client_and_in_all() {
        let tasks = Tasks::new(small(10_000));
        let (a1, _) = tasks.start("a", None).unwrap();
        let (_a2, _) = tasks.start("a", None).unwrap();
        let busy = tasks.start("a", None).unwrap_err();
        assert!(busy.0.contains("2 tasks running"), "{busy:?}");
        let (_b1, _) = tasks.start("b", None).unwrap();
        assert!(
            tasks
                .start("c", None)
                .unwrap_err()
                .0
                .contains("3 tasks are running")
        );
        a1.finish(Outcome::Cancelled, None);
        // One of a's slots is free again, but what it kept still counts.
        let (_a3, _) = tasks.start("a", None).unwrap();
        assert!(
            tasks
                .start("a", None)
                .unwrap_err()
                .0
                .contains("tasks running")
        );
        assert_eq!(tasks.counts(), (3, 4));
        assert!(
            tasks
                .start("d", None)
                .unwrap_err()
                .0
                .contains("3 tasks are running")
        );
        // a has 3 kept, its bound: even with a slot free it gets no more.
        drop(_a3);
        assert!(
            tasks
                .start("a", None)
                .unwrap_err()
                .0
                .contains("3 tasks kept")
        );
        // Everything kept counts in all: 4, the bound.
        assert!(
            tasks
                .start("d", None)
                .unwrap_err()
                .0
                .contains("4 tasks are kept")
        );
    }

    #[tokio::test]
    async fn cancel_reaches_the_work_and_an_ended_task_stays_as_it_was() {
        let tasks = Tasks::new(Limits::default());
        let (task, seed) = tasks.start("a", None).unwrap();
        let id = seed.task.task_id.clone();
        tasks.cancel(&id).unwrap();
        tokio::time::timeout(Duration::from_secs(1), task.cancelled())
            .await
            .expect("the work hears the cancel");
        task.finish(
            Outcome::Completed(CallToolResult::error(vec![ContentBlock::text("CANCELLED")])),
            Some("cancelled; partial results".into()),
        );
        tasks.cancel(&id).unwrap();
        let got = tasks.get(&id).unwrap();
        assert_eq!(got.task.status(), TaskStatus::Completed);
        assert_eq!(
            got.task.task.status_message.as_deref(),
            Some("cancelled; partial results")
        );
        assert!(tasks.cancel("no-such-task").is_err());
        assert!(tasks.update("no-such-task", InputResponses::new()).is_err());
    }

    #[tokio::test]
    async fn questions_wait_for_their_answers_and_keys_are_used_once() {
        let tasks = Tasks::new(Limits::default());
        let (task, seed) = tasks.start("a", None).unwrap();
        let id = seed.task.task_id.clone();
        let question: InputRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap();
        let task = Arc::new(task);
        let asking = {
            let (task, question) = (task.clone(), question.clone());
            tokio::spawn(async move { task.ask("sure", question).await })
        };
        while status(&tasks, &id) != TaskStatus::InputRequired {
            tokio::task::yield_now().await;
        }
        let wire = serde_json::to_value(tasks.get(&id).unwrap()).unwrap();
        assert_eq!(
            wire["inputRequests"]["sure"]["method"],
            "elicitation/create"
        );
        let mut answers = InputResponses::new();
        answers.insert("other".into(), serde_json::json!({"ignored": true}));
        answers.insert("sure".into(), serde_json::json!({"action": "accept"}));
        tasks.update(&id, answers).unwrap();
        let answer = asking.await.unwrap().unwrap();
        assert_eq!(answer["action"], "accept");
        assert_eq!(status(&tasks, &id), TaskStatus::Working);
        assert!(
            task.ask("sure", question).await.is_err(),
            "a key is used once"
        );
    }
}
