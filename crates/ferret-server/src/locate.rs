//! `locate`: a names-only search of the operator's locate roots (places where
//! the agent may learn that a file exists and where, but may not read, list or
//! grep), under a policy: `deny`, `ask` (the user is asked before each search),
//! or `allow`.
//!
//! Asking is real. In the handshake era ferret sends `elicitation/create` to a
//! client that declared elicitation and waits for the user's answer. In the
//! 2026-07-28 era, where a server may not send requests, the call answers with
//! an `InputRequiredResult`: the question, plus a `requestState` sealed with an
//! HMAC key that lives only in this process, bound to a digest of the call's
//! arguments and carrying a fresh nonce. An answer is accepted once per state:
//! its nonce is remembered until the state expires (ten minutes), so the same
//! consent cannot be sent again, and a state issued for other arguments, by
//! another process, tampered with or expired is refused. The seal proves that
//! ferret asked and the nonce that the answer is used once; that a person (not
//! the client itself) answered is the client's promise, as with every
//! elicitation. An answer counts as consent only when it is `accept` with
//! `allow: true`; anything else (a missing or non-boolean `allow`, an unknown
//! action) is not a yes. A declined or cancelled request never runs the search.

use std::{
    collections::HashMap,
    str::FromStr,
    sync::Mutex,
    time::{Duration, Instant},
};

use ferret_fs::{ErrorCode, FsError, Roots, Target};
use ferret_index::Index;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, ClientCapabilities, ElicitRequest, ElicitRequestParams,
        ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, InputRequests,
        InputRequiredResult, JsonObject, RequestStateCodec, SealOptions,
    },
    service::{ElicitationMode, RequestContext},
};
use serde_json::json;

use crate::logging::is_stateless_era;

/// `--locate deny|ask|allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocatePolicy {
    Deny,
    Ask,
    Allow,
}

impl LocatePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            LocatePolicy::Deny => "deny",
            LocatePolicy::Ask => "ask",
            LocatePolicy::Allow => "allow",
        }
    }
}

impl FromStr for LocatePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "deny" => Ok(LocatePolicy::Deny),
            "ask" => Ok(LocatePolicy::Ask),
            "allow" => Ok(LocatePolicy::Allow),
            other => Err(format!(
                "`{other}` is not a locate policy; use deny, ask or allow"
            )),
        }
    }
}

/// The locate roots, their index and the policy.
pub struct Locate {
    /// Handles of the locate roots (never given to the file tools): they name
    /// the folders the index walks and turn shown paths into full ones.
    pub roots: Roots,
    pub index: Index,
    pub policy: LocatePolicy,
}

impl Locate {
    /// The full path of a path as the locate index shows it.
    pub fn full_path(&self, shown: &str) -> String {
        match self.roots.resolve(shown) {
            Ok(Target::In(root, rel)) if rel.is_root() => root.path.display().to_string(),
            Ok(Target::In(root, rel)) => root.path.join(rel.as_str()).display().to_string(),
            _ => shown.to_string(),
        }
    }

    pub fn root_paths(&self) -> Vec<String> {
        self.roots
            .roots()
            .iter()
            .map(|r| r.path.display().to_string())
            .collect()
    }
}

/// How to enable locate, for every refusal.
const HOW_TO_ALLOW: &str = "the operator can let locate run without asking: start ferret with --locate allow (FERRET_LOCATE=allow)";

pub fn disabled() -> FsError {
    FsError::new(
        ErrorCode::LocateDisabled,
        "locate is disabled by the operator (--locate deny)",
    )
    .hint("the operator can enable it with --locate ask (the user is asked each time) or --locate allow")
}

/// The locate roots were removed from the settings while ferret ran.
pub fn no_roots_now() -> FsError {
    FsError::new(
        ErrorCode::LocateDisabled,
        "locate has no roots: they were removed from ferret.toml while ferret ran",
    )
    .hint(
        "the operator can add `locate-root` to ferret.toml again; ferret reads it when it changes",
    )
}

/// What the user said, or why nobody could be asked.
pub enum Consent {
    Granted,
    Declined,
    Cancelled,
    /// The answer was `accept` without `allow: true`: not a yes.
    Unclear,
    /// This client cannot be asked (handshake era); the message says why.
    Unavailable(String),
    /// Ask the client to ask the user, then call again (2026-07-28).
    InputRequired(InputRequiredResult),
}

/// Key of the consent question in `inputRequests` / `inputResponses`.
const CONSENT_KEY: &str = "consent";
/// How long a question may wait for its answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(10 * 60);
/// The sealed payload: this prefix, then the state's nonce.
const STATE_PREFIX: &str = "ferret/locate-consent/v2 ";
/// Answered states remembered at most (each for at most `ANSWER_WITHIN`); past
/// this, the oldest are forgotten first.
const REMEMBERED_AT_MOST: usize = 100_000;

/// Seals consent questions with a key of this process, and remembers which
/// sealed states have been answered, until they expire.
pub struct Seal {
    codec: RequestStateCodec,
    answered: Mutex<HashMap<String, Instant>>,
}

impl Default for Seal {
    fn default() -> Self {
        Seal::new()
    }
}

impl Seal {
    /// A fresh random HMAC key for this process's `requestState`s: 32 bytes
    /// from the kernel (two v4 UUIDs, as before, held only 244 random bits).
    pub fn new() -> Seal {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the kernel's random source is available");
        Seal {
            codec: RequestStateCodec::try_new(key).expect("32 bytes is a long enough key"),
            answered: Mutex::new(HashMap::new()),
        }
    }

    /// A state for a question about the call whose digest is `digest`.
    fn seal(&self, digest: &[u8]) -> String {
        let payload = format!("{STATE_PREFIX}{}", uuid::Uuid::new_v4().simple());
        self.codec.seal_with(
            payload.as_bytes(),
            &SealOptions::new()
                .associated_data(digest)
                .ttl(ANSWER_WITHIN),
        )
    }

    /// The nonce of a state this process issued for this digest, not expired.
    fn open(&self, state: &str, digest: &[u8]) -> Result<String, String> {
        let payload = self
            .codec
            .open_with(state, digest)
            .map_err(|e| e.to_string())?;
        String::from_utf8(payload)
            .ok()
            .and_then(|p| p.strip_prefix(STATE_PREFIX).map(str::to_string))
            .ok_or_else(|| "not a consent state".to_string())
    }

    /// Mark a state's nonce answered; `false` when it already was.
    fn answer_once(&self, nonce: &str) -> bool {
        let now = Instant::now();
        let mut answered = self.answered.lock().unwrap_or_else(|p| p.into_inner());
        answered.retain(|_, until| *until > now);
        if answered.contains_key(nonce) {
            return false;
        }
        if answered.len() >= REMEMBERED_AT_MOST
            && let Some(oldest) = answered
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(n, _)| n.clone())
        {
            answered.remove(&oldest);
        }
        answered.insert(nonce.to_string(), now + ANSWER_WITHIN);
        true
    }
}

/// What a consent is bound to: the tool and its exact arguments.
fn digest_of(arguments: Option<&JsonObject>) -> Vec<u8> {
    let canonical = serde_json::to_string(&json!({
        "tool": "locate",
        "arguments": arguments.cloned().unwrap_or_default(),
    }))
    .unwrap_or_default();
    ferret_fs::checksum(canonical.as_bytes()).into_bytes()
}

fn question(locate: &Locate, query: &str) -> ElicitRequestParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "allow": {
                "type": "boolean",
                "title": "Allow this search",
                "description": "The agent learns which names match and where they are; it still cannot read them.",
                "default": true,
            }
        },
        "required": ["allow"],
    }))
    .expect("the consent schema is a valid elicitation schema");
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "An agent asks ferret to search file names under {} for `{query}`. Allow this one search?",
            locate.root_paths().join(", ")
        ),
        requested_schema: schema,
    }
}

/// What an answer means: only `accept` with `allow: true` is a yes.
fn answer_of(result: &ElicitResult) -> Consent {
    match result.action {
        ElicitationAction::Accept => {
            match result
                .content
                .as_ref()
                .and_then(|c| c.get("allow"))
                .and_then(|v| v.as_bool())
            {
                Some(true) => Consent::Granted,
                Some(false) => Consent::Declined,
                None => Consent::Unclear,
            }
        }
        ElicitationAction::Decline => Consent::Declined,
        // Cancel, and any action a newer client may add: not a yes.
        _ => Consent::Cancelled,
    }
}

/// Ask the user, in whichever way this request's era allows.
/// `one_request_connection`: a handshake-era connection that ends with this
/// request (stateless HTTP), which cannot carry a question to the client.
pub async fn ask(
    locate: &Locate,
    seal: &Seal,
    request: &CallToolRequestParams,
    query: &str,
    one_request_connection: bool,
    context: &RequestContext<RoleServer>,
) -> Result<Consent, ErrorData> {
    if is_stateless_era(context) {
        ask_by_input_required(locate, seal, request, query, context)
    } else if one_request_connection {
        Ok(Consent::Unavailable(
            "this HTTP connection has no session, so ferret cannot put a question to the client (start ferret with --http-sessions, or use stdio or a 2026-07-28 client)".into(),
        ))
    } else {
        Ok(ask_by_elicitation(locate, query, context).await)
    }
}

fn ask_by_input_required(
    locate: &Locate,
    seal: &Seal,
    request: &CallToolRequestParams,
    query: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Consent, ErrorData> {
    let declared = context
        .meta
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    if !declared {
        let mut required = ClientCapabilities::default();
        required.elicitation = Some(Default::default());
        let mut error = ErrorData::missing_required_client_capability(required);
        error.message = format!(
            "locate asks the user before each search (--locate ask), and this request did not declare the elicitation capability; {HOW_TO_ALLOW}"
        )
        .into();
        return Err(error);
    }
    let digest = digest_of(request.arguments.as_ref());
    let refused = |why: &str| {
        ErrorData::invalid_params(
            format!(
                "requestState {why}; call locate again without requestState to ask the user again"
            ),
            Some(json!({"parameter": "requestState"})),
        )
    };
    if let Some(state) = &request.request_state {
        let nonce = seal.open(state, &digest).map_err(|e| {
            refused(&format!(
                "was not issued by this server for these arguments, or it expired ({e})"
            ))
        })?;
        if let Some(answer) = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(CONSENT_KEY))
        {
            let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
                ErrorData::invalid_params(
                    format!("inputResponses.{CONSENT_KEY} is not an elicitation result: {e}; nothing was searched"),
                    Some(json!({"parameter": "inputResponses"})),
                )
            })?;
            if !seal.answer_once(&nonce) {
                tracing::info!("locate: refused a consent answer sent a second time");
                return Err(refused(
                    "was already answered: a consent counts once, for one search",
                ));
            }
            return Ok(answer_of(&answer));
        }
        // The state is ours but the answer is missing: ask again.
    }
    let mut requests = InputRequests::new();
    requests.insert(
        CONSENT_KEY.into(),
        InputRequest::Elicitation(ElicitRequest::new(question(locate, query))),
    );
    Ok(Consent::InputRequired(InputRequiredResult::new(
        Some(requests),
        Some(seal.seal(&digest)),
    )))
}

async fn ask_by_elicitation(
    locate: &Locate,
    query: &str,
    context: &RequestContext<RoleServer>,
) -> Consent {
    let peer = &context.peer;
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return Consent::Unavailable(
            "the client did not declare the elicitation capability".into(),
        );
    }
    let asked = peer.create_elicitation_with_timeout(question(locate, query), Some(ANSWER_WITHIN));
    tokio::select! {
        answer = asked => match answer {
            Ok(result) => answer_of(&result),
            Err(e) => Consent::Unavailable(format!("asking the user failed: {e}")),
        },
        _ = context.ct.cancelled() => Consent::Cancelled,
    }
}

/// The refusal for a client that cannot be asked.
pub fn unavailable(why: &str) -> FsError {
    FsError::new(
        ErrorCode::LocateDisabled,
        format!("locate needs the user's consent (--locate ask) and cannot ask: {why}"),
    )
    .hint(HOW_TO_ALLOW)
}

pub fn declined() -> FsError {
    FsError::new(
        ErrorCode::Declined,
        "the user declined this locate search; nothing was searched",
    )
    .hint("do not repeat the same search; ask the user what they want instead")
}

pub fn unclear() -> FsError {
    FsError::new(
        ErrorCode::Cancelled,
        "the answer accepted the question without saying `allow: true`; that is not a consent, and nothing was searched",
    )
    .hint("answer with action accept and content {\"allow\": true} to allow this search")
}

pub fn cancelled() -> FsError {
    FsError::new(
        ErrorCode::Cancelled,
        "the user dismissed the question; nothing was searched",
    )
    .hint("ask again only if the user still wants this search")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_refuse_typos() {
        assert_eq!("ask".parse::<LocatePolicy>(), Ok(LocatePolicy::Ask));
        assert_eq!(" allow ".parse::<LocatePolicy>(), Ok(LocatePolicy::Allow));
        assert!(
            "yes"
                .parse::<LocatePolicy>()
                .unwrap_err()
                .contains("deny, ask or allow")
        );
    }

    #[test]
    fn a_consent_is_bound_to_its_arguments_and_this_process() {
        let seal = Seal::new();
        let mut a = JsonObject::new();
        a.insert("query".into(), json!("report"));
        let sealed = seal.seal(&digest_of(Some(&a)));
        assert!(seal.open(&sealed, &digest_of(Some(&a))).is_ok());
        let mut b = a.clone();
        b.insert("query".into(), json!("passwords"));
        assert!(seal.open(&sealed, &digest_of(Some(&b))).is_err());
        let mut tampered = sealed.clone();
        tampered.insert(sealed.len() / 2, 'x');
        assert!(seal.open(&tampered, &digest_of(Some(&a))).is_err());
        assert!(
            Seal::new().open(&sealed, &digest_of(Some(&a))).is_err(),
            "another process's key"
        );
        let foreign = seal.codec.seal_with(
            b"something else",
            &SealOptions::new().associated_data(&digest_of(Some(&a))),
        );
        assert!(
            seal.open(&foreign, &digest_of(Some(&a))).is_err(),
            "not a consent state"
        );
    }

    #[test]
    fn each_state_is_answered_once() {
        let seal = Seal::new();
        let digest = digest_of(None);
        let first = seal.open(&seal.seal(&digest), &digest).unwrap();
        let second = seal.open(&seal.seal(&digest), &digest).unwrap();
        assert_ne!(first, second, "every question has its own nonce");
        assert!(seal.answer_once(&first));
        assert!(!seal.answer_once(&first), "the same answer again");
        assert!(seal.answer_once(&second));
    }

    #[test]
    fn answers_map_to_consent() {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        assert!(
            matches!(answer_of(&r), Consent::Unclear),
            "accept without allow is not a yes"
        );
        r.content = Some(json!({"allow": "yes"}));
        assert!(matches!(answer_of(&r), Consent::Unclear));
        r.content = Some(json!({"allow": true}));
        assert!(matches!(answer_of(&r), Consent::Granted));
        r.content = Some(json!({"allow": false}));
        assert!(matches!(answer_of(&r), Consent::Declined));
        assert!(matches!(
            answer_of(&ElicitResult::new(ElicitationAction::Decline)),
            Consent::Declined
        ));
        assert!(matches!(
            answer_of(&ElicitResult::new(ElicitationAction::Cancel)),
            Consent::Cancelled
        ));
    }
}
