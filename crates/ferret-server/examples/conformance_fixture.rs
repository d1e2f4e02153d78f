//! Conformance fixture: a throwaway MCP server that exposes every tool, resource
//! and prompt the official conformance suites (`@modelcontextprotocol/conformance`
//! 0.1.16 and 0.2.0-alpha.12) call, so that `scripts/conformance` can check the
//! protocol layer ferret is built on (rmcp plus ferret's HTTP layer) scenario by
//! scenario.
//!
//! It never ships: it is an example of the `ferret-server` crate, not part of the
//! `ferret` binary, and it touches no files. What it shares with ferret is the
//! transport: it is served by `ferret_server::http::{mcp_router, serve_router}`,
//! with the same Host/Origin checks, so a pass here says something about ferret.
//!
//! One `/mcp` endpoint answers both protocol eras, as ferret does:
//! - handshake era (`initialize`, up to 2025-11-25): a session per client, and the
//!   server asks the client things (sampling, elicitation, roots) with requests of
//!   its own in the middle of a tool call;
//! - 2026-07-28: stateless; the server asks by answering `input_required` (MRTR)
//!   and the client retries with the answers; change notifications travel on
//!   `subscriptions/listen` streams.
//!
//! The tasks extension (SEP-2663: `greet`, `slow_compute`, `failing_job`, …)
//! runs on ferret's own task store (`ferret_server::tasks`), the one ferret's
//! long tool calls use.
//!
//! Usage: `conformance_fixture [--bind 127.0.0.1:PORT]` (default `127.0.0.1:0`).
//! It prints `ferret … listening on http://ADDR/mcp` on stderr and stops on
//! SIGINT or SIGTERM.

// Sampling, roots and logging are deprecated by SEP-2577, but they are still in
// both protocol eras and the suites exercise them.
#![allow(deprecated)]

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::{Context as _, bail};
use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use ferret_server::{
    http::{HttpOptions, mcp_router, serve_router},
    tasks::{Outcome, Task, Tasks},
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::*,
    service::{RequestContext, SubscriptionContext, SubscriptionSendError},
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// A 1×1 red PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// How long in-flight requests get after a stop signal. `subscriptions/listen`
/// streams never end by themselves, so waiting for every connection to close
/// could take forever.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The pause between log and progress notifications: the suites check that
/// notifications arrive while the call is still running.
const STEP: Duration = Duration::from_millis(50);

const WATCHED_URI: &str = "test://watched-resource";

/// The tools that take no arguments, as (name, description).
const NO_ARGUMENT_TOOLS: &[(&str, &str)] = &[
    ("test_simple_text", "Returns one text block"),
    ("test_image_content", "Returns a PNG image"),
    ("test_audio_content", "Returns a WAV clip"),
    (
        "test_embedded_resource",
        "Returns an embedded text resource",
    ),
    (
        "test_multiple_content_types",
        "Returns text, an image and an embedded resource",
    ),
    (
        "test_tool_with_logging",
        "Logs three messages while it runs",
    ),
    (
        "test_logging_tool",
        "Logs three messages while it runs (the 2026-07-28 suite's name)",
    ),
    (
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100 when given a progressToken",
    ),
    ("test_error_handling", "Always fails with a tool error"),
    (
        "test_elicitation_sep1034_defaults",
        "Elicits a form whose fields all have defaults (SEP-1034)",
    ),
    (
        "test_elicitation_sep1330_enums",
        "Elicits a form with the five enum shapes (SEP-1330)",
    ),
    (
        "test_missing_capability",
        "Needs the client's sampling capability; without it fails with -32021",
    ),
    (
        "test_streaming_elicitation",
        "Asks the user's name; in 2026-07-28 through input_required, never a request on the stream",
    ),
    (
        "test_trigger_tool_change",
        "Adds or removes test_dynamic_tool and announces the change",
    ),
    (
        "test_trigger_prompt_change",
        "Adds or removes test_dynamic_prompt and announces the change",
    ),
    (
        "test_trigger_resource_update",
        "Changes test://watched-resource and notifies its subscribers",
    ),
    (
        "test_input_required_result_elicitation",
        "MRTR: asks the user's name (key user_name)",
    ),
    (
        "test_input_required_result_sampling",
        "MRTR: asks the client's LLM a question (key capital_question)",
    ),
    (
        "test_input_required_result_list_roots",
        "MRTR: asks for the client's roots (key client_roots)",
    ),
    (
        "test_input_required_result_request_state",
        "MRTR: asks for a confirmation and checks its sealed requestState",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "MRTR: elicitation, sampling and roots in one round",
    ),
    (
        "test_input_required_result_multi_round",
        "MRTR: two rounds, carrying the first answer in requestState",
    ),
    (
        "test_input_required_result_tampered_state",
        "MRTR: rejects a requestState that fails its integrity check",
    ),
    (
        "test_input_required_result_capabilities",
        "MRTR: asks only for what the client declared it can answer",
    ),
];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = parse_bind()?;
    let options = HttpOptions {
        bind,
        allowed_hosts: vec![],
        allowed_origins: vec![],
        token: None,
        max_request_bytes: 4 << 20,
        // Handshake-era clients need a session: sampling, elicitation and logging
        // scenarios have the server send requests and notifications mid-call.
        // 2026-07-28 requests are stateless regardless.
        sessions: true,
        ui: None,
    };
    let shared = Arc::new(Shared::new());
    // Called once per session, or once per request when stateless.
    let app = mcp_router(move || Fixture::new(shared.clone()), &options);

    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            wait_for_stop_signal().await;
            stop.cancel();
        }
    });
    tokio::select! {
        served = serve_router(app, &options, stop.clone().cancelled_owned()) => served,
        () = async {
            stop.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

fn parse_bind() -> anyhow::Result<SocketAddr> {
    let mut args = std::env::args().skip(1);
    let mut bind: SocketAddr = "127.0.0.1:0".parse()?;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bind" => {
                let value = args.next().context("--bind needs an address")?;
                bind = value
                    .parse()
                    .with_context(|| format!("--bind {value}: not an IP:PORT address"))?;
            }
            other => bail!("unknown argument {other}; usage: conformance_fixture [--bind ADDR]"),
        }
    }
    // A test fixture with no authentication has no business off loopback.
    if !bind.ip().is_loopback() {
        bail!("--bind {bind}: the conformance fixture only binds loopback addresses");
    }
    Ok(bind)
}

async fn wait_for_stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut terminate) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/// Something listeners may want to hear about.
#[derive(Debug, Clone)]
enum Change {
    Tools,
    Prompts,
    Resource(String),
}

/// State shared by every handler instance: handlers are made per session, or per
/// request in the stateless era, so anything that must outlive one lives here.
struct Shared {
    /// Seals MRTR `requestState`: the client echoes it back, so it is untrusted.
    codec: RequestStateCodec,
    changes: broadcast::Sender<Change>,
    /// Flipped by `test_trigger_tool_change` / `test_trigger_prompt_change`, so
    /// that a list_changed notification reports a real change.
    dynamic_tool: AtomicBool,
    dynamic_prompt: AtomicBool,
    /// Bumped by `test_trigger_resource_update`.
    watched_revision: AtomicU64,
    /// The tasks extension (SEP-2663) on ferret's own task store.
    tasks: Arc<Tasks>,
}

impl Shared {
    fn new() -> Self {
        // A fresh key per process: sealed states only need to survive one run.
        let key = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        Self {
            codec: RequestStateCodec::new(key.into_bytes()),
            changes: broadcast::channel(64).0,
            dynamic_tool: AtomicBool::new(false),
            dynamic_prompt: AtomicBool::new(false),
            watched_revision: AtomicU64::new(0),
            tasks: Tasks::new(ferret_server::tasks::Limits::default()),
        }
    }
}

/// What a handshake-era session set with `logging/setLevel` and
/// `resources/subscribe`.
#[derive(Default)]
struct Session {
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<BTreeSet<String>>,
}

struct Fixture {
    shared: Arc<Shared>,
    session: Session,
    /// A receiver for the listen stream of this request. rmcp acknowledges a
    /// subscription before it calls `listen`, and a client may trigger a change
    /// as soon as it sees the acknowledgement; subscribing to `changes` here, in
    /// `accepted_subscription_filter`, means no change falls into that gap.
    listen_receiver: Mutex<Option<broadcast::Receiver<Change>>>,
}

impl Fixture {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            session: Session::default(),
            listen_receiver: Mutex::new(None),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        let no_args = || json!({"type": "object", "properties": {}});
        // First a tool without arguments: some suites probe `tools[0]` bare.
        let mut tools: Vec<Tool> = NO_ARGUMENT_TOOLS
            .iter()
            .map(|&(name, description)| tool(name, description, no_args()))
            .collect();
        let string_arg = |name: &str, description: &str| {
            json!({
                "type": "object",
                "properties": {name: {"type": "string", "description": description}},
                "required": [name]
            })
        };
        tools.extend([
            tool(
                "test_sampling",
                "Asks the client's LLM to answer the prompt (sampling)",
                string_arg("prompt", "The prompt to send to the LLM"),
            ),
            tool(
                "test_elicitation",
                "Asks the user for a username and an email (elicitation)",
                string_arg("message", "The message to show the user"),
            ),
            tool(
                "test_custom_header",
                "Echoes a region mirrored into the Mcp-Param-Region header (SEP-2243)",
                json!({
                    "type": "object",
                    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                    "required": ["region"]
                }),
            ),
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                json_schema_2020_12(),
            ),
        ]);
        let object = |properties: Value| json!({"type": "object", "properties": properties});
        tools.extend([
            tool(
                "greet",
                "Tasks: never a task; says Hello, {name}!",
                string_arg("name", "Who to greet"),
            ),
            tool(
                "slow_compute",
                "Tasks: sleeps `seconds`, as a task when the client declared the extension; settles cancelled on tasks/cancel",
                object(json!({"seconds": {"type": "number"}, "label": {"type": "string"}})),
            ),
            tool(
                "failing_job",
                "Tasks: only as a task (-32021 without the extension); after a second, a tool error",
                no_args(),
            ),
            tool(
                "protocol_error_job",
                "Tasks: a task that fails with a JSON-RPC error",
                no_args(),
            ),
            tool(
                "confirm_delete",
                "Tasks: a task that asks for a confirmation (input_required) before it completes",
                object(json!({"filename": {"type": "string"}})),
            ),
            tool(
                "multi_input",
                "Tasks: a task that asks two questions at once",
                no_args(),
            ),
            tool(
                "test_tool_with_task",
                "Tasks and MRTR: asks the user's name (key user_name), then answers with a task that greets them",
                no_args(),
            ),
        ]);
        if self.shared.dynamic_tool.load(Ordering::SeqCst) {
            tools.push(tool(
                "test_dynamic_tool",
                "Present after an odd number of test_trigger_tool_change calls",
                no_args(),
            ));
        }
        tools
    }

    fn prompts(&self) -> Vec<Prompt> {
        let arg = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        let mut prompts = vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt that quotes its two arguments"),
                Some(vec![
                    arg("arg1", "First test argument"),
                    arg("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that embeds a resource"),
                Some(vec![arg("resourceUri", "URI of the resource to embed")]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image"),
                None,
            ),
            Prompt::new(
                "test_input_required_result_prompt",
                Some("MRTR: asks the user for context (key user_context) before answering"),
                None,
            ),
        ];
        if self.shared.dynamic_prompt.load(Ordering::SeqCst) {
            prompts.push(Prompt::new(
                "test_dynamic_prompt",
                Some("Present after an odd number of test_trigger_prompt_change calls"),
                None,
            ));
        }
        prompts
    }

    /// The contents of a resource, or `None` when there is no such resource.
    fn resource_contents(&self, uri: &str) -> Option<ResourceContents> {
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
                    .with_mime_type("text/plain")
            }
            "test://static-binary" => {
                ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
            }
            WATCHED_URI => {
                let revision = self.shared.watched_revision.load(Ordering::SeqCst);
                ResourceContents::text(
                    format!("Watched resource content, revision {revision}"),
                    uri,
                )
                .with_mime_type("text/plain")
            }
            _ => {
                let id = uri
                    .strip_prefix("test://template/")?
                    .strip_suffix("/data")
                    .filter(|id| !id.is_empty() && !id.contains('/'))?;
                // Written out so the key order matches the suites' example.
                let text = format!(
                    r#"{{"id":{},"templateTest":true,"data":{}}}"#,
                    json!(id),
                    json!(format!("Data for ID: {id}"))
                );
                ResourceContents::text(text, uri).with_mime_type("application/json")
            }
        };
        Some(contents)
    }

    /// Log the way the request's era allows. 2026-07-28: only when the request
    /// asked for it with `_meta` logLevel. Handshake era: whatever passes the
    /// session's `logging/setLevel` (everything until one is set).
    async fn log(&self, ctx: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        let threshold = if is_stateless(ctx) {
            match ctx.meta.log_level() {
                Some(threshold) => threshold,
                None => return,
            }
        } else {
            lock(&self.session.log_level).unwrap_or(LoggingLevel::Debug)
        };
        if severity(level) < severity(threshold) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, json!(message))
            .with_logger("conformance-fixture");
        let _ = ctx.peer.notify_logging_message(param).await;
    }

    /// Ask the client one thing. Handshake era: a request of our own, answered
    /// before the call returns. 2026-07-28: an `input_required` result naming
    /// `key`, or the answer when the client's retry carries it.
    async fn ask(
        &self,
        ctx: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        key: &str,
        request: Value,
    ) -> Result<Answer, ErrorData> {
        let method = request["method"].as_str().unwrap_or_default().to_owned();
        let declared = declares(ctx, &method);
        if is_stateless(ctx) {
            // The server MUST NOT ask for what the client cannot answer.
            if !declared {
                return Err(ErrorData::missing_required_client_capability(
                    capability_for(&method),
                ));
            }
            if let Some(answer) = responses.and_then(|r| r.get(key)) {
                return Ok(Answer::Given(answer.clone()));
            }
            let mut requests = InputRequests::new();
            requests.insert(key.to_owned(), from_json(request));
            return Ok(Answer::Ask(InputRequiredResult::from_input_requests(
                requests,
            )));
        }
        if !declared {
            return Ok(Answer::Failed(format!(
                "the client did not declare the capability {method} needs"
            )));
        }
        let params = request["params"].clone();
        let result = match method.as_str() {
            "sampling/createMessage" => ctx
                .peer
                .create_message(from_json(params))
                .await
                .map(to_json),
            "elicitation/create" => ctx
                .peer
                .create_elicitation(from_json(params))
                .await
                .map(to_json),
            _ => ctx.peer.list_roots().await.map(to_json),
        };
        Ok(match result {
            Ok(answer) => Answer::Given(answer),
            Err(e) => Answer::Failed(format!("{method} failed: {e}")),
        })
    }

    /// Tell listeners and, in the handshake era, the calling session.
    async fn announce(&self, ctx: &RequestContext<RoleServer>, change: Change) {
        let _ = self.shared.changes.send(change.clone());
        if is_stateless(ctx) {
            // 2026-07-28 has no session to notify; listen streams heard it above.
            return;
        }
        let _ = match change {
            Change::Tools => ctx.peer.notify_tool_list_changed().await,
            Change::Prompts => ctx.peer.notify_prompt_list_changed().await,
            Change::Resource(uri) => {
                if !lock(&self.session.subscriptions).contains(&uri) {
                    return;
                }
                ctx.peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
            }
        };
    }

    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let responses = request.input_responses.as_ref();
        let args = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            "test_simple_text" => Ok(text("This is a simple text response for testing.")),
            "test_image_content" => Ok(CallToolResult::success(vec![ContentBlock::image(
                PNG_BASE64,
                "image/png",
            )])
            .into()),
            "test_audio_content" => Ok(CallToolResult::success(vec![ContentBlock::audio(
                wav_base64(),
                "audio/wav",
            )])
            .into()),
            "test_embedded_resource" => Ok(CallToolResult::success(vec![ContentBlock::resource(
                ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                )
                .with_mime_type("text/plain"),
            )])
            .into()),
            "test_multiple_content_types" => Ok(CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG_BASE64, "image/png"),
                ContentBlock::resource(
                    ResourceContents::text(
                        json!({"test": "data", "value": 123}).to_string(),
                        "test://mixed-content-resource",
                    )
                    .with_mime_type("application/json"),
                ),
            ])
            .into()),
            "test_tool_with_logging" | "test_logging_tool" => {
                self.log(&ctx, LoggingLevel::Info, "Tool execution started")
                    .await;
                tokio::time::sleep(STEP).await;
                self.log(&ctx, LoggingLevel::Info, "Tool processing data")
                    .await;
                tokio::time::sleep(STEP).await;
                self.log(&ctx, LoggingLevel::Info, "Tool execution completed")
                    .await;
                Ok(text("Tool with logging executed successfully"))
            }
            "test_tool_with_progress" => {
                let token = ctx.meta.get_progress_token();
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    if let Some(token) = &token {
                        let param = ProgressNotificationParam::new(token.clone(), progress)
                            .with_total(100.0)
                            .with_message(format!("Completed step {progress} of 100"));
                        let _ = ctx.peer.notify_progress(param).await;
                    }
                }
                Ok(text(match token {
                    Some(token) => format!("Progress reported for token {}", to_json(token)),
                    None => "Done (no progressToken, so no progress was reported)".to_owned(),
                }))
            }
            "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )])
            .into()),
            "test_sampling" | "test_missing_capability" => {
                let prompt = args
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or("Say hello.")
                    .to_owned();
                let question = sampling_request(&prompt, 100);
                Ok(
                    match self.ask(&ctx, responses, "sampling", question).await? {
                        Answer::Given(answer) => {
                            text(format!("LLM response: {}", sampled_text(&answer)))
                        }
                        Answer::Ask(ask) => ask.into(),
                        Answer::Failed(why) => {
                            tool_error(format!("Sampling not supported or error: {why}"))
                        }
                    },
                )
            }
            "test_elicitation" => {
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Please provide your details")
                    .to_owned();
                let question = form(
                    &message,
                    json!({
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    }),
                    json!(["username", "email"]),
                );
                self.elicit_and_report(&ctx, responses, question, "User response")
                    .await
            }
            "test_elicitation_sep1034_defaults" => {
                let question = form(
                    "Please review and update the form fields with defaults",
                    json!({
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {
                            "type": "string",
                            "description": "User status",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    }),
                    json!([]),
                );
                self.elicit_and_report(&ctx, responses, question, "Elicitation completed")
                    .await
            }
            "test_elicitation_sep1330_enums" => {
                let question = form(
                    "Please select options from the enum fields",
                    json!({
                        "untitledSingle": {
                            "type": "string",
                            "description": "Select one option",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "description": "Select one option with titles",
                            "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "description": "Select one option (legacy)",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "description": "Select multiple options",
                            "minItems": 1,
                            "maxItems": 3,
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {
                            "type": "array",
                            "description": "Select multiple options with titles",
                            "minItems": 1,
                            "maxItems": 3,
                            "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}
                            ]}
                        }
                    }),
                    json!([]),
                );
                self.elicit_and_report(&ctx, responses, question, "Elicitation completed")
                    .await
            }
            "json_schema_2020_12_tool" => {
                Ok(text(format!("Received arguments: {}", Value::Object(args))))
            }
            "test_streaming_elicitation" | "test_input_required_result_elicitation" => {
                let question = form(
                    "What is your name?",
                    json!({"name": {"type": "string"}}),
                    json!(["name"]),
                );
                Ok(
                    match self.ask(&ctx, responses, "user_name", question).await? {
                        Answer::Given(answer) => match accepted_content(&answer, "user_name")? {
                            Some(content) => {
                                text(format!("Hello, {}!", string_field(&content, "name")))
                            }
                            None => text("The user did not give a name."),
                        },
                        Answer::Ask(ask) => ask.into(),
                        Answer::Failed(why) => tool_error(why),
                    },
                )
            }
            "test_input_required_result_sampling" => {
                let question = sampling_request("What is the capital of France?", 100);
                Ok(
                    match self
                        .ask(&ctx, responses, "capital_question", question)
                        .await?
                    {
                        Answer::Given(answer) => {
                            text(format!("LLM response: {}", sampled_text(&answer)))
                        }
                        Answer::Ask(ask) => ask.into(),
                        Answer::Failed(why) => tool_error(why),
                    },
                )
            }
            "test_input_required_result_list_roots" => {
                let question = json!({"method": "roots/list", "params": {}});
                Ok(
                    match self.ask(&ctx, responses, "client_roots", question).await? {
                        Answer::Given(answer) => {
                            text(format!("Client roots: {}", root_uris(&answer)?))
                        }
                        Answer::Ask(ask) => ask.into(),
                        Answer::Failed(why) => tool_error(why),
                    },
                )
            }
            "test_trigger_tool_change" => {
                let now = !self.shared.dynamic_tool.fetch_xor(true, Ordering::SeqCst);
                self.announce(&ctx, Change::Tools).await;
                Ok(text(format!("test_dynamic_tool is now {}", presence(now))))
            }
            "test_trigger_prompt_change" => {
                let now = !self.shared.dynamic_prompt.fetch_xor(true, Ordering::SeqCst);
                self.announce(&ctx, Change::Prompts).await;
                Ok(text(format!(
                    "test_dynamic_prompt is now {}",
                    presence(now)
                )))
            }
            "test_trigger_resource_update" => {
                let revision = self.shared.watched_revision.fetch_add(1, Ordering::SeqCst) + 1;
                self.announce(&ctx, Change::Resource(WATCHED_URI.to_owned()))
                    .await;
                Ok(text(format!("{WATCHED_URI} is now at revision {revision}")))
            }
            "test_custom_header" => {
                let region = args
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Ok(text(format!("Region: {region}")))
            }
            "test_dynamic_tool" if self.shared.dynamic_tool.load(Ordering::SeqCst) => {
                Ok(text("This tool was added by test_trigger_tool_change."))
            }
            name @ ("test_input_required_result_request_state"
            | "test_input_required_result_multiple_inputs"
            | "test_input_required_result_multi_round"
            | "test_input_required_result_tampered_state"
            | "test_input_required_result_capabilities") => {
                if !is_stateless(&ctx) {
                    // requestState and several questions per round exist only in
                    // 2026-07-28; the handshake era has no way to express them.
                    return Ok(tool_error(format!(
                        "{name} needs protocol version 2026-07-28"
                    )));
                }
                self.run_stateful_mrtr(name, &request, &ctx)
            }
            name @ ("greet"
            | "slow_compute"
            | "failing_job"
            | "protocol_error_job"
            | "confirm_delete"
            | "multi_input"
            | "test_tool_with_task") => self.run_task_tool(name, &args, responses, &ctx).await,
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                Some(json!({"name": other})),
            )),
        }
    }

    /// The tools of the tasks scenarios. With the extension declared on the
    /// request, each (but `greet`) answers with a task on ferret's store;
    /// without it, the ones that can run plainly do, the others fail -32021.
    async fn run_task_tool(
        &self,
        name: &str,
        args: &JsonObject,
        responses: Option<&InputResponses>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks_declared = ctx
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let required = || {
            ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            )
        };
        let arg = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        let pause = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
        let label = arg("label");
        let confirm_question = |filename: &str| {
            form(
                &format!("Delete {filename}?"),
                json!({"confirm": {"type": "boolean"}}),
                json!(["confirm"]),
            )
        };
        match name {
            "greet" => Ok(text(format!("Hello, {}!", arg("name")))),
            "slow_compute" if !tasks_declared => {
                tokio::time::sleep(pause).await;
                Ok(text(format!("Computed {label} in {seconds} s")))
            }
            "slow_compute" => self.as_task(move |task| async move {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => Outcome::Completed(
                        CallToolResult::success(vec![ContentBlock::text(format!("Computed {label} in {seconds} s"))]),
                    ),
                    _ = task.cancelled() => Outcome::Cancelled,
                }
            }),
            "failing_job" | "test_tool_with_task" | "multi_input" if !tasks_declared => {
                Err(required())
            }
            "failing_job" => self.as_task(|task| async move {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => Outcome::Completed(
                        CallToolResult::error(vec![ContentBlock::text("failing_job failed, as it always does")]),
                    ),
                    _ = task.cancelled() => Outcome::Cancelled,
                }
            }),
            "protocol_error_job" => {
                let error = ErrorData::internal_error(
                    "protocol_error_job ends in a protocol-level error, as it always does",
                    None,
                );
                if !tasks_declared {
                    return Err(error);
                }
                self.as_task(|_task| async move {
                    tokio::time::sleep(STEP).await;
                    Outcome::Failed(error)
                })
            }
            "confirm_delete" if !tasks_declared => {
                let filename = arg("filename");
                let question = confirm_question(&filename);
                Ok(match self.ask(ctx, responses, "confirm", question).await? {
                    Answer::Given(answer) => text(confirmed(&filename, &answer)),
                    Answer::Ask(ask) => ask.into(),
                    Answer::Failed(why) => tool_error(why),
                })
            }
            "confirm_delete" => {
                let filename = arg("filename");
                let question: InputRequest = from_json(confirm_question(&filename));
                self.as_task(move |task| async move {
                    match task.ask("confirm", question).await {
                        Ok(answer) => Outcome::Completed(CallToolResult::success(vec![
                            ContentBlock::text(confirmed(&filename, &answer)),
                        ])),
                        Err(_) => Outcome::Cancelled,
                    }
                })
            }
            "multi_input" => {
                let name_question: InputRequest = from_json(form(
                    "What is your name?",
                    json!({"name": {"type": "string"}}),
                    json!(["name"]),
                ));
                let confirm: InputRequest = from_json(confirm_question("multi-input.txt"));
                self.as_task(move |task| async move {
                    let (name, sure) = tokio::join!(
                        task.ask("name", name_question),
                        task.ask("confirm", confirm)
                    );
                    match (name, sure) {
                        (Ok(name), Ok(sure)) => {
                            let name = accepted_content(&name, "name")
                                .ok()
                                .flatten()
                                .map(|c| string_field(&c, "name"))
                                .unwrap_or_default();
                            Outcome::Completed(CallToolResult::success(vec![ContentBlock::text(
                                format!("{name}: {}", confirmed("multi-input.txt", &sure)),
                            )]))
                        }
                        _ => Outcome::Cancelled,
                    }
                })
            }
            _ => {
                // test_tool_with_task: the question first (MRTR, before any
                // task exists), then the work as a task.
                let question = form(
                    "What is your name?",
                    json!({"name": {"type": "string"}}),
                    json!(["name"]),
                );
                let answer = match self.ask(ctx, responses, "user_name", question).await? {
                    Answer::Given(answer) => answer,
                    Answer::Ask(ask) => return Ok(ask.into()),
                    Answer::Failed(why) => return Ok(tool_error(why)),
                };
                let who = accepted_content(&answer, "user_name")?
                    .map(|c| string_field(&c, "name"))
                    .unwrap_or_else(|| "stranger".into());
                self.as_task(move |_task| async move {
                    tokio::time::sleep(STEP).await;
                    Outcome::Completed(CallToolResult::success(vec![ContentBlock::text(format!(
                        "Hello, {who}! (from a task)"
                    ))]))
                })
            }
        }
    }

    /// Answer with a task whose work is `work`.
    fn as_task<F, Fut>(&self, work: F) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(Arc<Task>) -> Fut,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        let (task, created) = self
            .shared
            .tasks
            .start("conformance", None)
            .map_err(|busy| ErrorData::internal_error(busy.0, None))?;
        let task = Arc::new(task);
        let running = work(task.clone());
        tokio::spawn(async move {
            let outcome = running.await;
            match Arc::try_unwrap(task) {
                Ok(task) => task.finish(outcome, None),
                Err(_) => unreachable!("the work has ended and dropped its handle"),
            }
        });
        Ok(CallToolResponse::Task(created))
    }

    /// Elicit a form and report the outcome the way the suites' descriptions
    /// show it: `<label>: action=…, content={…}`.
    async fn elicit_and_report(
        &self,
        ctx: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        question: Value,
        label: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(match self.ask(ctx, responses, "form", question).await? {
            Answer::Given(answer) => {
                let result: ElicitResult = parse_answer(&answer, "form")?;
                let content = result.content.unwrap_or_else(|| json!({}));
                text(format!(
                    "{label}: action={}, content={content}",
                    to_json(result.action).as_str().unwrap_or("?")
                ))
            }
            Answer::Ask(ask) => ask.into(),
            Answer::Failed(why) => tool_error(format!("Elicitation not supported or error: {why}")),
        })
    }

    /// The MRTR tools that carry state between rounds in `requestState`, sealed
    /// so a client cannot forge or alter it.
    fn run_stateful_mrtr(
        &self,
        name: &str,
        request: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let responses = request.input_responses.clone().unwrap_or_default();
        let state = match request.request_state.as_deref() {
            None => None,
            Some(sealed) => Some(self.open_state(name, sealed)?),
        };
        let ask = |requests: Vec<(&str, Value)>,
                   next: RoundState|
         -> Result<CallToolResponse, ErrorData> {
            let requests = requests
                .into_iter()
                .map(|(key, request)| (key.to_owned(), from_json(request)))
                .collect();
            Ok(
                InputRequiredResult::new(Some(requests), Some(self.seal_state(name, &next)?))
                    .into(),
            )
        };
        let name_question = || {
            form(
                "What is your name?",
                json!({"name": {"type": "string"}}),
                json!(["name"]),
            )
        };
        match name {
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let confirm = form(
                    "Please confirm",
                    json!({"ok": {"type": "boolean"}}),
                    json!(["ok"]),
                );
                match (state, responses.get("confirm")) {
                    (Some(_), Some(answer)) => {
                        let ok = accepted_content(answer, "confirm")?
                            .and_then(|c| c.get("ok").and_then(Value::as_bool));
                        Ok(text(format!(
                            "state-ok: requestState verified, confirmed={}",
                            ok.unwrap_or(false)
                        )))
                    }
                    // First round, or a retry without the answer: ask (again).
                    _ => ask(vec![("confirm", confirm)], RoundState::round(1)),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let questions = vec![
                    ("user_name", name_question()),
                    ("greeting", sampling_request("Generate a greeting", 50)),
                    (
                        "client_roots",
                        json!({"method": "roots/list", "params": {}}),
                    ),
                ];
                for (_, question) in &questions {
                    let method = question["method"].as_str().unwrap_or_default();
                    if !declares(ctx, method) {
                        return Err(ErrorData::missing_required_client_capability(
                            capability_for(method),
                        ));
                    }
                }
                let answered = questions
                    .iter()
                    .all(|(key, _)| responses.contains_key(*key));
                if state.is_none() || !answered {
                    return ask(questions, RoundState::round(1));
                }
                let name = accepted_content(&responses["user_name"], "user_name")?
                    .map(|c| string_field(&c, "name"))
                    .unwrap_or_else(|| "(no name)".into());
                let greeting = sampled_text(&responses["greeting"]);
                let roots = root_uris(&responses["client_roots"])?;
                Ok(text(format!(
                    "name={name}; greeting={greeting}; roots={roots}"
                )))
            }
            "test_input_required_result_multi_round" => {
                let color_question = form(
                    "Step 2: What is your favorite color?",
                    json!({"color": {"type": "string"}}),
                    json!(["color"]),
                );
                let step1 = form(
                    "Step 1: What is your name?",
                    json!({"name": {"type": "string"}}),
                    json!(["name"]),
                );
                match state {
                    Some(RoundState { round: 1, .. }) if responses.contains_key("step1") => {
                        let name = accepted_content(&responses["step1"], "step1")?
                            .map(|c| string_field(&c, "name"))
                            .unwrap_or_default();
                        // The name travels to round 3 inside the sealed state.
                        ask(
                            vec![("step2", color_question)],
                            RoundState {
                                round: 2,
                                name: Some(name),
                            },
                        )
                    }
                    Some(RoundState { round: 2, name }) if responses.contains_key("step2") => {
                        let color = accepted_content(&responses["step2"], "step2")?
                            .map(|c| string_field(&c, "color"))
                            .unwrap_or_default();
                        Ok(text(format!("{} likes {color}.", name.unwrap_or_default())))
                    }
                    Some(RoundState { round: 2, name }) => ask(
                        vec![("step2", color_question)],
                        RoundState { round: 2, name },
                    ),
                    _ => ask(vec![("step1", step1)], RoundState::round(1)),
                }
            }
            _ => {
                // test_input_required_result_capabilities: ask only what the
                // client declared it can answer.
                let wanted = [
                    ("user_name", name_question()),
                    ("greeting", sampling_request("Generate a greeting", 50)),
                    (
                        "client_roots",
                        json!({"method": "roots/list", "params": {}}),
                    ),
                ];
                let possible: Vec<(&str, Value)> = wanted
                    .into_iter()
                    .filter(|(_, q)| declares(ctx, q["method"].as_str().unwrap_or_default()))
                    .collect();
                if possible.is_empty() {
                    return Ok(text(
                        "The client declared none of elicitation, sampling and roots; nothing to ask.",
                    ));
                }
                let answered: Vec<&str> = possible
                    .iter()
                    .filter(|(key, _)| responses.contains_key(*key))
                    .map(|(key, _)| *key)
                    .collect();
                if state.is_some() && answered.len() == possible.len() {
                    return Ok(text(format!("Answered: {}", answered.join(", "))));
                }
                ask(possible, RoundState::round(1))
            }
        }
    }

    fn seal_state(&self, tool: &str, state: &RoundState) -> Result<String, ErrorData> {
        // Bound to the tool, so a state from one tool is no good for another.
        let options = SealOptions::new()
            .associated_data(tool.as_bytes())
            .ttl(Duration::from_secs(600));
        self.shared
            .codec
            .seal_json_with(state, &options)
            .map_err(|e| ErrorData::internal_error(format!("cannot seal requestState: {e}"), None))
    }

    fn open_state(&self, tool: &str, sealed: &str) -> Result<RoundState, ErrorData> {
        self.shared
            .codec
            .open_json_with(sealed, tool.as_bytes())
            .map_err(|e| {
                ErrorData::invalid_params(
                    format!("requestState failed its integrity check: {e}"),
                    None,
                )
            })
    }
}

/// The progress of a stateful MRTR tool, sealed into `requestState`.
#[derive(Serialize, Deserialize)]
struct RoundState {
    round: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

impl RoundState {
    fn round(round: u8) -> Self {
        Self { round, name: None }
    }
}

/// The outcome of [`Fixture::ask`].
enum Answer {
    /// The client's answer (a sampling, elicitation or roots result, as JSON).
    Given(Value),
    /// 2026-07-28: return this to the client and wait for its retry.
    Ask(InputRequiredResult),
    /// Handshake era: the client could not or would not answer.
    Failed(String),
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = from_json(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true},
            "logging": {},
            "completions": {},
            "extensions": {TASKS_EXTENSION_ID: {}}
        }));
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("ferret-conformance-fixture", ferret_server::VERSION)
                    .with_description(
                        "Test fixture for the MCP conformance suites; not part of ferret",
                    ),
            )
            .with_instructions(
                "A conformance test fixture. Its tools, resources and prompts are canned.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Lets rmcp check SEP-2243 Mcp-Param-* headers against the schema.
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_stateless(&ctx)
            && ctx.meta.contains_key(LOG_LEVEL_KEY)
            && ctx.meta.log_level().is_none()
        {
            return Err(ErrorData::invalid_params(
                format!("_meta {LOG_LEVEL_KEY} is not a log level"),
                None,
            ));
        }
        self.run_tool(request, ctx).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.shared.tasks.get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared
            .tasks
            .update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.tasks.cancel(&request.task_id)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let arg = |name: &str| -> Result<String, ErrorData> {
            args.get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("missing required argument {name}"), None)
                })
        };
        let user = |content: ContentBlock| PromptMessage::new(Role::User, content);
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(ContentBlock::text(
                "This is a simple prompt for testing.",
            ))],
            "test_prompt_with_arguments" => vec![user(ContentBlock::text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1")?,
                arg("arg2")?
            )))],
            "test_prompt_with_embedded_resource" => vec![
                user(ContentBlock::resource(
                    ResourceContents::text(
                        "Embedded resource content for testing.",
                        arg("resourceUri")?,
                    )
                    .with_mime_type("text/plain"),
                )),
                user(ContentBlock::text(
                    "Please process the embedded resource above.",
                )),
            ],
            "test_prompt_with_image" => vec![
                user(ContentBlock::image(PNG_BASE64, "image/png")),
                user(ContentBlock::text("Please analyze the image above.")),
            ],
            "test_input_required_result_prompt" => {
                let question = form(
                    "What context should the prompt use?",
                    json!({"context": {"type": "string"}}),
                    json!(["context"]),
                );
                match self
                    .ask(
                        &ctx,
                        request.input_responses.as_ref(),
                        "user_context",
                        question,
                    )
                    .await?
                {
                    Answer::Given(answer) => {
                        let context = accepted_content(&answer, "user_context")?
                            .map(|c| string_field(&c, "context"))
                            .unwrap_or_else(|| "(none given)".into());
                        vec![user(ContentBlock::text(format!(
                            "Answer using this context: {context}"
                        )))]
                    }
                    Answer::Ask(ask) => return Ok(ask.into()),
                    Answer::Failed(why) => {
                        return Err(ErrorData::internal_error(
                            format!("could not ask for context: {why}"),
                            None,
                        ));
                    }
                }
            }
            "test_dynamic_prompt" if self.shared.dynamic_prompt.load(Ordering::SeqCst) => {
                vec![user(ContentBlock::text(
                    "This prompt was added by test_trigger_prompt_change.",
                ))]
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt {other}"),
                    Some(json!({"name": other})),
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "Static text")
                .with_description("A fixed text resource")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "Static binary")
                .with_description("A fixed PNG image")
                .with_mime_type("image/png"),
            Resource::new(WATCHED_URI, "Watched resource")
                .with_description(
                    "Changes on test_trigger_resource_update; subscribe to hear about it",
                )
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "Template data")
                .with_description("JSON naming the id substituted into the URI")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match self.resource_contents(&request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            // rmcp turns this code into -32602 for 2026-07-28 peers (SEP-2164).
            None => Err(ErrorData::resource_not_found(
                "Resource not found",
                Some(json!({"uri": request.uri})),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.resource_contents(&request.uri).is_none() {
            return Err(ErrorData::resource_not_found(
                "Resource not found",
                Some(json!({"uri": request.uri})),
            ));
        }
        lock(&self.session.subscriptions).insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.session.subscriptions).remove(&request.uri);
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // rmcp dispatches logging/setLevel in both eras; 2026-07-28 removed it.
        if is_stateless(&ctx) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        *lock(&self.session.log_level) = Some(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(p), "arg1" | "arg2") if p.name == "test_prompt_with_arguments" => {
                &["paris", "park", "party", "test", "testing"]
            }
            (Reference::Resource(r), "id") if r.uri == "test://template/{id}/data" => {
                &["1", "2", "3", "123"]
            }
            _ => &[],
        };
        let prefix = request.argument.value.as_str();
        let values = candidates
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| c.to_string())
            .collect();
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        *lock(&self.listen_receiver) = Some(self.shared.changes.subscribe());
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed();
        for uri in requested.resource_subscriptions.iter().flatten() {
            if self.resource_contents(uri).is_some() {
                accepted = accepted.resource_subscription(uri.clone());
            }
        }
        Some(accepted.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(mut changes) = lock(&self.listen_receiver).take() else {
            return Err(ErrorData::internal_error(
                "listen without a subscription filter",
                None,
            ));
        };
        let accepted = context.accepted().clone();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let sink = context.sink();
            let sent = match change {
                Ok(Change::Tools) if accepted.tools_list_changed == Some(true) => {
                    sink.notify_tool_list_changed().await
                }
                Ok(Change::Prompts) if accepted.prompts_list_changed == Some(true) => {
                    sink.notify_prompt_list_changed().await
                }
                Ok(Change::Resource(uri))
                    if accepted
                        .resource_subscriptions
                        .as_ref()
                        .is_some_and(|uris| uris.contains(&uri)) =>
                {
                    sink.notify_resource_updated(uri).await
                }
                // Not asked for on this stream: the filter is the client's to set.
                Ok(_) => Ok(()),
                // A slow stream missed some changes; the client re-lists anyway.
                Err(broadcast::error::RecvError::Lagged(_)) => Ok(()),
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            match sent {
                Ok(()) => {}
                Err(SubscriptionSendError::SubscriptionClosed) => return Ok(()),
                Err(e) => {
                    return Err(ErrorData::internal_error(
                        format!("listen stream: {e}"),
                        None,
                    ));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// 2026-07-28 requests are self-contained (no `initialize`); everything else
/// belongs to a handshake-era session.
fn is_stateless(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// Whether the client declared the capability a server-to-client `method` needs.
fn declares(ctx: &RequestContext<RoleServer>, method: &str) -> bool {
    let caps = ctx.client_capabilities().unwrap_or_default();
    match method {
        "sampling/createMessage" => caps.sampling.is_some(),
        "elicitation/create" => caps.elicitation.is_some(),
        "roots/list" => caps.roots.is_some(),
        _ => false,
    }
}

fn capability_for(method: &str) -> ClientCapabilities {
    let name = match method {
        "sampling/createMessage" => "sampling",
        "elicitation/create" => "elicitation",
        _ => "roots",
    };
    from_json(json!({ name: {} }))
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn tool(name: &'static str, description: &'static str, input_schema: Value) -> Tool {
    let Value::Object(schema) = input_schema else {
        unreachable!("tool schemas are written as JSON objects")
    };
    Tool::new(name, description, Arc::new(schema))
}

fn text(message: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(message)]).into()
}

fn tool_error(message: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

fn presence(present: bool) -> &'static str {
    if present { "listed" } else { "gone" }
}

/// An `elicitation/create` request for a flat form.
fn form(message: &str, properties: Value, required: Value) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required}
        }
    })
}

/// What `confirm_delete` says of an elicitation answer.
fn confirmed(filename: &str, answer: &Value) -> String {
    let yes = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    if yes {
        format!("Deleted {filename}")
    } else {
        format!("Kept {filename}")
    }
}

fn sampling_request(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max_tokens
        }
    })
}

/// The content of an accepted elicitation, `None` when the user declined or
/// cancelled, or an error when `answer` is not an elicitation result at all.
fn accepted_content(answer: &Value, key: &str) -> Result<Option<Value>, ErrorData> {
    let result: ElicitResult = parse_answer(answer, key)?;
    Ok(match result.action {
        ElicitationAction::Accept => Some(result.content.unwrap_or_else(|| json!({}))),
        _ => None,
    })
}

/// Input responses come from the client, so they are checked like any input.
fn parse_answer<T: DeserializeOwned>(answer: &Value, key: &str) -> Result<T, ErrorData> {
    serde_json::from_value(answer.clone()).map_err(|e| {
        ErrorData::invalid_params(
            format!("inputResponses.{key} is not the expected result: {e}"),
            None,
        )
    })
}

fn string_field(content: &Value, field: &str) -> String {
    content
        .get(field)
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_default()
}

/// The text of a sampling result, whose `content` is one block or a list.
fn sampled_text(result: &Value) -> String {
    let blocks = match &result["content"] {
        Value::Array(blocks) => blocks.clone(),
        block => vec![block.clone()],
    };
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    if texts.is_empty() {
        "(no text in the sampling result)".to_owned()
    } else {
        texts.join(" ")
    }
}

fn root_uris(result: &Value) -> Result<String, ErrorData> {
    let roots: ListRootsResult = parse_answer(result, "client_roots")?;
    let uris: Vec<String> = roots.roots.into_iter().map(|r| r.uri).collect();
    Ok(if uris.is_empty() {
        "(none)".to_owned()
    } else {
        uris.join(", ")
    })
}

/// A 1 ms, 8 kHz, 16-bit mono WAV of silence.
fn wav_base64() -> String {
    let samples = [0u8; 16];
    let mut wav = Vec::with_capacity(44 + samples.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&16000u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&2u16.to_le_bytes()); // block align
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(&samples);
    BASE64.encode(wav)
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The fixture's JSON literals are written to rmcp's model; a mismatch is a bug
/// in this file, not bad input.
fn from_json<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(parsed) => parsed,
        Err(e) => panic!("fixture JSON does not fit rmcp's model: {e}"),
    }
}

fn to_json(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A poisoned lock only means another request panicked; the data is still fine.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
