//! The tools' arguments and their mapping to REST requests. Pure: no I/O,
//! so every mapping is unit-tested. The argument types are what a model
//! sees as the tools' input schemas: their doc comments are the field
//! descriptions, one line each, since a client shows a line break as one.
//! Their field names are the API's, so a body is mostly the arguments
//! serialized, and the API's validation stays the only one.

use mnemo_domain::{Classified, MemoryId, SubjectId};
use reqwest::Method;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api::{ApiRequest, ToolError};

/// Who spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
    Tool,
}

/// What a memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Fact,
    Preference,
    Decision,
    Rule,
    Status,
}

/// Where a memory is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Active,
    PendingReview,
    Archived,
    Superseded,
    Deleted,
    Erased,
}

/// What a search looks through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Include {
    /// Curated, versioned memories.
    Memories,
    /// Every posted message, as it was said (after PII scrubbing).
    Episodes,
}

/// How a search retrieves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Meaning and words, fused (the default).
    Hybrid,
    /// Meaning only.
    Semantic,
    /// Words only (BM25).
    Keyword,
}

/// One conversation message to record.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageArg {
    pub role: Role,
    /// What was said; not blank. Personal data (e-mail addresses, phone numbers, card numbers, ...) is scrubbed by the tenant's policy before anything is stored.
    pub content: String,
    /// Your id for this message, unique for the subject (1 to 128 characters). Sending the same id again records nothing new, so a retry is safe. When absent, the tool makes one and returns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When it was said, RFC 3339 (e.g. `2025-05-08T13:56:00Z`). Default: now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The conversation (session) it belongs to: letters, digits and `. _ : -`. A session's messages are consolidated together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The agent taking part (same rules as a session id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// One memory to write directly.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryArg {
    /// The memory, as one self-contained statement about the user, e.g. `Prefers green tea over coffee`.
    pub content: String,
    pub kind: Kind,
    /// Up to 20 short labels (letters, digits, spaces, `- _ . :`), e.g. `drinks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// How sure you are, 0 to 1. Default 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// How much it matters, 0 to 1. Default: from the confidence and kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    /// The session it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The agent writing it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Ids of messages already recorded for this subject that it comes from (its provenance).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// Conditions on what is searched; all must hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Only memories of these kinds (episodes have no kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<Kind>,
    /// Only memories with all these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Only what belongs to this session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only what belongs to this agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only from this instant on (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Only up to this instant (RFC 3339, inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Only memories at least this important, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_importance: Option<f64>,
    /// Also search memories the forgetter archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_archived: Option<bool>,
}

const SUBJECT: &str = "The subject: the person the conversation is with, as the opaque id \
    your application uses for them (1 to 128 letters, digits and `. _ : -`, starting with a \
    letter or digit; never an e-mail address or a name).";

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    #[schemars(description = SUBJECT)]
    pub subject: String,
    /// The new messages of the conversation, oldest first (1 to 100 per call). Give either `messages` or `memory`.
    #[serde(default)]
    pub messages: Vec<MessageArg>,
    /// Instead of messages: one memory to write directly, when you know a durable fact, preference, decision or rule worth keeping as is.
    pub memory: Option<MemoryArg>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    #[schemars(description = SUBJECT)]
    pub subject: String,
    /// What you want to know, in natural language (e.g. `what does she drink in the morning?`).
    pub query: String,
    /// How many results at most, 1 to 100. Default 10.
    pub k: Option<u32>,
    /// What to search: `memories`, `episodes` (past messages as said), or both (the default).
    pub include: Option<Vec<Include>>,
    /// `hybrid` (default), `semantic` or `keyword`.
    pub mode: Option<Mode>,
    pub filters: Option<Filters>,
}

/// One message of the conversation so far.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextMessageArg {
    pub role: Role,
    pub content: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetContextArgs {
    #[schemars(description = SUBJECT)]
    pub subject: String,
    /// The conversation so far, oldest first; its last user and assistant turns make the query. Give either `messages` or `query`.
    #[serde(default)]
    pub messages: Vec<ContextMessageArg>,
    /// Instead of messages: what to find memories about.
    pub query: Option<String>,
    /// Estimated tokens the block may take, 16 to 32000. Default 400.
    pub token_budget: Option<u32>,
    /// How many memories to consider at most, 1 to 100. Default 8.
    pub max_memories: Option<u32>,
    /// Put the subject's profile (a rolling summary) at the top of the block.
    pub include_profile: Option<bool>,
    /// What to draw from: `memories`, `episodes`, or both (the default).
    pub include: Option<Vec<Include>>,
    pub filters: Option<Filters>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemoriesArgs {
    #[schemars(description = SUBJECT)]
    pub subject: String,
    /// Only these kinds.
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Only memories with all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only these states. Default: every state but `deleted`.
    #[serde(default)]
    pub states: Vec<State>,
    /// Page size, 1 to 500. Default 50.
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, to get the next one.
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryIdArgs {
    /// The memory's id (a UUID, as `recall` or `list_memories` return it).
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetMemoryArgs {
    /// The memory's id (a UUID, as `recall` or `list_memories` return it).
    pub id: String,
    /// Why it is forgotten (e.g. `the user asked to forget this`); kept in the memory's history.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubjectArgs {
    #[schemars(description = SUBJECT)]
    pub subject: String,
}

/// The ids go into the path: checked here only so that an argument can
/// never change the route (a `/` or a `..`); the API checks them again and
/// answers the same `invalid_id`.
fn subject(raw: &str) -> Result<SubjectId, ToolError> {
    SubjectId::parse(raw).map_err(|e| ToolError::new(e.code(), e.to_string()))
}

fn memory(raw: &str) -> Result<MemoryId, ToolError> {
    MemoryId::parse(raw.trim()).map_err(|e| ToolError::new(e.code(), e.to_string()))
}

fn invalid(message: &str) -> ToolError {
    ToolError::new("invalid_arguments", message)
}

/// A value's wire name (`pending_review`), as serde writes it.
fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        other => unreachable!("an enum of unit variants serializes to a string: {other:?}"),
    }
}

fn comma_separated<T: Serialize>(values: &[T]) -> String {
    values.iter().map(wire).collect::<Vec<_>>().join(",")
}

/// Sets `field` in `body` when there is a value.
fn put(body: &mut Value, field: &str, value: Option<impl Serialize>) {
    if let Some(value) = value {
        body[field] = json!(value);
    }
}

/// `POST …/messages`, or with `memory`, `POST …/memories`. A message
/// without an id gets one from `new_id`: with every id chosen before the
/// request, sending it again after a lost answer records nothing twice.
pub fn remember(
    args: RememberArgs,
    mut new_id: impl FnMut() -> String,
) -> Result<ApiRequest, ToolError> {
    let subject = subject(&args.subject)?;
    match (args.messages.is_empty(), args.memory) {
        (true, Some(memory)) => Ok(ApiRequest::post(
            format!("/v1/subjects/{subject}/memories"),
            json!(memory),
        )),
        (false, None) => {
            let messages: Vec<MessageArg> = args
                .messages
                .into_iter()
                .map(|mut message| {
                    message.id.get_or_insert_with(&mut new_id);
                    message
                })
                .collect();
            Ok(ApiRequest {
                idempotent: true,
                ..ApiRequest::post(
                    format!("/v1/subjects/{subject}/messages"),
                    json!({ "messages": messages }),
                )
            })
        }
        (false, Some(_)) => Err(invalid(
            "give either messages or memory, not both: call remember twice",
        )),
        (true, None) => Err(invalid(
            "give the new conversation messages, or one memory to write",
        )),
    }
}

/// `POST …/search`.
pub fn recall(args: RecallArgs) -> Result<ApiRequest, ToolError> {
    let subject = subject(&args.subject)?;
    let mut body = json!({ "query": args.query });
    put(&mut body, "k", args.k);
    put(&mut body, "include", args.include);
    put(&mut body, "mode", args.mode);
    put(&mut body, "filters", args.filters);
    Ok(ApiRequest::post(
        format!("/v1/subjects/{subject}/search"),
        body,
    ))
}

/// `POST …/context`. A `query` is sent as the one user turn the block is
/// built for.
pub fn get_context(args: GetContextArgs) -> Result<ApiRequest, ToolError> {
    let subject = subject(&args.subject)?;
    let mut body = match (args.messages.is_empty(), args.query) {
        (false, None) => json!({ "messages": args.messages }),
        (true, Some(query)) => json!({
            "messages": [{"role": "user", "content": query}],
            "last_n": 1,
        }),
        (false, Some(_)) => return Err(invalid("give either messages or query, not both")),
        (true, None) => {
            return Err(invalid(
                "give the conversation so far as messages, or a query",
            ))
        }
    };
    put(&mut body, "token_budget", args.token_budget);
    put(&mut body, "max_memories", args.max_memories);
    put(&mut body, "include_profile", args.include_profile);
    put(&mut body, "include", args.include);
    put(&mut body, "filters", args.filters);
    Ok(ApiRequest::post(
        format!("/v1/subjects/{subject}/context"),
        body,
    ))
}

/// `GET …/memories`, one page.
pub fn list_memories(args: ListMemoriesArgs) -> Result<ApiRequest, ToolError> {
    let subject = subject(&args.subject)?;
    let mut query = Vec::new();
    if !args.kinds.is_empty() {
        query.push(("kind", comma_separated(&args.kinds)));
    }
    if !args.tags.is_empty() {
        query.push(("tag", args.tags.join(",")));
    }
    if !args.states.is_empty() {
        query.push(("state", comma_separated(&args.states)));
    }
    if let Some(limit) = args.limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(cursor) = args.cursor {
        query.push(("cursor", cursor));
    }
    Ok(ApiRequest {
        query,
        ..ApiRequest::get(format!("/v1/subjects/{subject}/memories"))
    })
}

/// `GET /v1/memories/{id}/history`.
pub fn memory_history(args: MemoryIdArgs) -> Result<ApiRequest, ToolError> {
    let id = memory(&args.id)?;
    Ok(ApiRequest::get(format!("/v1/memories/{id}/history")))
}

/// `DELETE /v1/memories/{id}`, idempotent in the API (a deleted memory
/// stays deleted and nothing more is recorded).
pub fn forget_memory(args: ForgetMemoryArgs) -> Result<ApiRequest, ToolError> {
    let id = memory(&args.id)?;
    Ok(ApiRequest {
        method: Method::DELETE,
        path: format!("/v1/memories/{id}"),
        query: Vec::new(),
        body: args.reason.map(|reason| json!({ "reason": reason })),
        idempotent: true,
    })
}

/// `GET …/export`.
pub fn export_subject(args: SubjectArgs) -> Result<ApiRequest, ToolError> {
    let subject = subject(&args.subject)?;
    Ok(ApiRequest::get(format!("/v1/subjects/{subject}/export")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).expect("valid arguments")
    }

    fn numbered() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("generated-{n}")
        }
    }

    #[test]
    fn remember_posts_the_messages_and_names_those_without_an_id() {
        let request = remember(
            args(json!({
                "subject": "user-42",
                "messages": [
                    {"role": "user", "content": "I live in Lyon", "session": "s1"},
                    {"role": "assistant", "content": "Noted!", "id": "m2", "session": "s1"},
                    {"role": "user", "content": "And I love tea"},
                ],
            })),
            numbered(),
        )
        .unwrap();
        assert_eq!(request.method, Method::POST);
        assert_eq!(request.path, "/v1/subjects/user-42/messages");
        assert!(request.query.is_empty());
        assert!(
            request.idempotent,
            "every message has its id before sending"
        );
        assert_eq!(
            request.body.unwrap(),
            json!({"messages": [
                {"role": "user", "content": "I live in Lyon", "id": "generated-1", "session": "s1"},
                {"role": "assistant", "content": "Noted!", "id": "m2", "session": "s1"},
                {"role": "user", "content": "And I love tea", "id": "generated-2"},
            ]})
        );
    }

    #[test]
    fn remember_with_a_memory_writes_the_memory() {
        let request = remember(
            args(json!({
                "subject": "user-42",
                "memory": {"content": "Prefers green tea", "kind": "preference", "tags": ["drinks"], "confidence": 0.9},
            })),
            numbered(),
        )
        .unwrap();
        assert_eq!(request.method, Method::POST);
        assert_eq!(request.path, "/v1/subjects/user-42/memories");
        assert!(
            !request.idempotent,
            "a second post would write a second memory"
        );
        assert_eq!(
            request.body.unwrap(),
            json!({"content": "Prefers green tea", "kind": "preference", "tags": ["drinks"], "confidence": 0.9})
        );
    }

    #[test]
    fn remember_wants_messages_or_a_memory_but_not_both() {
        for value in [
            json!({"subject": "u"}),
            json!({"subject": "u", "messages": [{"role": "user", "content": "hi"}],
                   "memory": {"content": "x", "kind": "fact"}}),
        ] {
            let error = remember(args(value), numbered()).unwrap_err();
            assert_eq!(error.code, "invalid_arguments");
        }
    }

    #[test]
    fn ids_that_could_change_the_route_are_refused_as_the_api_would() {
        for subject in ["../memories", "a/b", "", " u", "jane@example.com"] {
            let error = export_subject(SubjectArgs {
                subject: subject.to_owned(),
            })
            .unwrap_err();
            assert_eq!(error.code, "invalid_id", "{subject:?}");
        }
        for id in ["../../v1/subjects/u/export", "not-a-uuid", ""] {
            let error = memory_history(MemoryIdArgs { id: id.to_owned() }).unwrap_err();
            assert_eq!(error.code, "invalid_id", "{id:?}");
        }
    }

    #[test]
    fn unknown_arguments_and_values_are_refused_by_the_schema() {
        assert!(serde_json::from_value::<RecallArgs>(
            json!({"subject": "u", "query": "q", "top_k": 3})
        )
        .is_err());
        assert!(serde_json::from_value::<RememberArgs>(
            json!({"subject": "u", "messages": [{"role": "narrator", "content": "x"}]})
        )
        .is_err());
    }

    #[test]
    fn recall_sends_only_what_was_given() {
        let request = recall(args(json!({"subject": "user-42", "query": "tea?"}))).unwrap();
        assert_eq!(request.path, "/v1/subjects/user-42/search");
        assert_eq!(request.body.unwrap(), json!({"query": "tea?"}));

        let request = recall(args(json!({
            "subject": "user-42",
            "query": "tea?",
            "k": 3,
            "include": ["memories"],
            "mode": "keyword",
            "filters": {"kinds": ["preference", "fact"], "tags": ["drinks"], "from": "2025-01-01T00:00:00Z",
                        "min_importance": 0.5, "include_archived": true},
        })))
        .unwrap();
        assert_eq!(
            request.body.unwrap(),
            json!({
                "query": "tea?",
                "k": 3,
                "include": ["memories"],
                "mode": "keyword",
                "filters": {"kinds": ["preference", "fact"], "tags": ["drinks"], "from": "2025-01-01T00:00:00Z",
                            "min_importance": 0.5, "include_archived": true},
            })
        );
    }

    #[test]
    fn get_context_takes_the_conversation_or_a_query() {
        let request = get_context(args(json!({
            "subject": "user-42",
            "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
            "token_budget": 200,
        })))
        .unwrap();
        assert_eq!(request.method, Method::POST);
        assert_eq!(request.path, "/v1/subjects/user-42/context");
        assert_eq!(
            request.body.unwrap(),
            json!({
                "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
                "token_budget": 200,
            })
        );

        let request = get_context(args(json!({
            "subject": "user-42", "query": "morning drink", "include_profile": true,
        })))
        .unwrap();
        assert_eq!(
            request.body.unwrap(),
            json!({
                "messages": [{"role": "user", "content": "morning drink"}],
                "last_n": 1,
                "include_profile": true,
            })
        );

        for value in [
            json!({"subject": "u"}),
            json!({"subject": "u", "query": "q", "messages": [{"role": "user", "content": "x"}]}),
        ] {
            assert_eq!(
                get_context(args(value)).unwrap_err().code,
                "invalid_arguments"
            );
        }
    }

    #[test]
    fn list_memories_maps_filters_and_the_cursor_to_the_query() {
        let request = list_memories(args(json!({"subject": "user-42"}))).unwrap();
        assert_eq!(request.method, Method::GET);
        assert_eq!(request.path, "/v1/subjects/user-42/memories");
        assert!(request.query.is_empty());
        assert_eq!(request.body, None);

        let cursor = "0190a5b6-1d1b-7c3e-9a61-3b4f1f0c2d11";
        let request = list_memories(args(json!({
            "subject": "user-42",
            "kinds": ["preference", "fact"],
            "tags": ["drinks", "home"],
            "states": ["active", "pending_review"],
            "limit": 20,
            "cursor": cursor,
        })))
        .unwrap();
        assert_eq!(
            request.query,
            vec![
                ("kind", "preference,fact".to_owned()),
                ("tag", "drinks,home".to_owned()),
                ("state", "active,pending_review".to_owned()),
                ("limit", "20".to_owned()),
                ("cursor", cursor.to_owned()),
            ]
        );
    }

    #[test]
    fn history_forget_and_export_address_the_right_resources() {
        let id = "0190a5b6-1d1b-7c3e-9a61-3b4f1f0c2d11";
        let request = memory_history(MemoryIdArgs { id: id.to_owned() }).unwrap();
        assert_eq!(
            (request.method, request.path.as_str()),
            (Method::GET, format!("/v1/memories/{id}/history").as_str())
        );

        let request = forget_memory(ForgetMemoryArgs {
            id: id.to_owned(),
            reason: Some("the user asked".to_owned()),
        })
        .unwrap();
        assert_eq!(request.method, Method::DELETE);
        assert_eq!(request.path, format!("/v1/memories/{id}"));
        assert_eq!(request.body, Some(json!({"reason": "the user asked"})));
        let request = forget_memory(ForgetMemoryArgs {
            id: id.to_owned(),
            reason: None,
        })
        .unwrap();
        assert_eq!(request.body, None);

        let request = export_subject(SubjectArgs {
            subject: "user-42".to_owned(),
        })
        .unwrap();
        assert_eq!(
            (request.method, request.path.as_str()),
            (Method::GET, "/v1/subjects/user-42/export")
        );
    }
}
