//! The MCP server: seven tools, each one REST call made with the caller's
//! token. Their descriptions are written for the model that chooses
//! between them: what each is for and when to call it.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Extensions, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::{tool, tool_handler, tool_router, ServerHandler};
use secrecy::SecretString;
use serde_json::Value;
use uuid::Uuid;

use crate::api::{self, ApiClient, ApiRequest, ToolError};
use crate::requests::{
    self, ForgetMemoryArgs, GetContextArgs, ListMemoriesArgs, MemoryIdArgs, RecallArgs,
    RememberArgs, SubjectArgs,
};

/// The mnemo token a tool call is made with. Over HTTP the endpoint puts
/// it into the request's extensions only after verifying it, so a tool
/// never sees a token that was not checked first.
#[derive(Clone)]
pub struct CallerToken(pub SecretString);

#[derive(Clone)]
enum Credentials {
    /// stdio: one client, one token, for the life of the process.
    Fixed(CallerToken),
    /// HTTP: each request's own token, from its extensions.
    PerRequest,
}

/// What the server tells a client about itself when it connects; clients
/// show it to the model beside the tool list.
const INSTRUCTIONS: &str = "mnemo is long-term memory about the people you talk with. Each \
person is a subject, named by the opaque id your application uses for them. Before answering a \
user, call get_context with the conversation so far and use its block as background knowledge \
about them. After each turn, call remember with the new messages (the user's and yours, with one \
session id per conversation): mnemo turns conversations into memories by itself. Use recall to \
look up something specific, and forget_memory when the user asks you to forget something.";

// What each tool is for and when to call it: the model that picks among
// the tools reads these. One line each: a client shows a line break as one.

const REMEMBER: &str = "Record what was said in a conversation with a person (the subject), so \
that mnemo remembers it. Call it after each turn with the new messages: the user's and your \
reply, with one session id per conversation. mnemo turns conversations into memories by itself, \
in the background, and every message can be found by `recall` moments later. With `memory` \
instead of `messages`, write one memory directly: for something durable the user stated that is \
worth keeping as is (a preference, fact, decision or rule). Returns what was recorded, with the \
message ids (a message sent again with the same id is not recorded twice).";

const RECALL: &str = "Search what mnemo remembers about a person: their memories (facts, \
preferences, decisions, rules) and what was said in past conversations (episodes), best first, \
each with its score and where it came from. Use it to look up something specific about the user \
(e.g. \"where does she live?\"), or to find a memory's id before `forget_memory` or \
`memory_history`. For the background to answer with, prefer `get_context`.";

const GET_CONTEXT: &str = "Get the memory block for your next answer: what mnemo remembers about \
the person that bears on the conversation so far, as text ready to use, within a token budget. \
Call it before answering each user message, with the conversation so far (or a query), and treat \
the text as background knowledge about the user. The structured result also lists the memories \
and episodes the block used.";

const LIST_MEMORIES: &str = "List the memories mnemo holds about a person, newest first, one \
page at a time (pass `next_cursor` back as `cursor` for the next page), optionally by kind, tag \
and state. Use it to review what is known; to find something specific, use `recall`. The list \
trails writes by a moment.";

const MEMORY_HISTORY: &str = "Show every version of one memory, oldest first: what changed, \
when, by whom, why, and the messages it came from. Use it to explain why mnemo believes \
something, or how a memory changed.";

const FORGET_MEMORY: &str = "Forget one memory: mark it deleted, with the reason, so that it is \
no longer recalled or put into context. Use it when the user asks you to forget something or a \
memory is wrong; find its id with `recall` or `list_memories` first. Its history keeps the \
record of what happened; erasing everything about a person is an administrator's request to the \
API, not this tool.";

const EXPORT_SUBJECT: &str = "For administrators: export everything mnemo holds about a person \
(their messages, every memory with its full history, the receipts of erasures), as the GDPR \
right of access requires. The token needs the `gdpr:export` scope, and each export is recorded \
in the audit log. Not for answering questions: use `get_context` or `recall`.";

#[derive(Clone)]
pub struct MnemoTools {
    api: ApiClient,
    credentials: Credentials,
    tool_router: ToolRouter<Self>,
}

impl MnemoTools {
    /// Every call made with `token` (stdio).
    pub fn with_token(api: ApiClient, token: SecretString) -> Self {
        Self::new(api, Credentials::Fixed(CallerToken(token)))
    }

    /// Each call made with the [`CallerToken`] of its HTTP request.
    pub fn per_request(api: ApiClient) -> Self {
        Self::new(api, Credentials::PerRequest)
    }

    fn new(api: ApiClient, credentials: Credentials) -> Self {
        MnemoTools {
            api,
            credentials,
            tool_router: Self::tool_router(),
        }
    }

    fn token(&self, extensions: &Extensions) -> Option<CallerToken> {
        match &self.credentials {
            Credentials::Fixed(token) => Some(token.clone()),
            // rmcp's HTTP service puts the request's head into the MCP
            // request's extensions; the endpoint put the token into it.
            Credentials::PerRequest => extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<CallerToken>())
                .cloned(),
        }
    }

    async fn call(
        &self,
        extensions: &Extensions,
        request: Result<ApiRequest, ToolError>,
    ) -> CallToolResult {
        let request = match request {
            Ok(request) => request,
            Err(error) => return error.into_result(),
        };
        let Some(CallerToken(token)) = self.token(extensions) else {
            return ToolError::new("missing_token", "this call carries no mnemo token")
                .into_result();
        };
        match self.api.send(&token, &request).await {
            Ok(response) => {
                tracing::debug!(method = %request.method, path = %request.path, status = response.status, "mnemo call");
                api::tool_result(response)
            }
            Err(error) => {
                tracing::warn!(method = %request.method, path = %request.path, error = %error, "mnemo call failed");
                api::unreachable(self.api.base_url(), &error)
            }
        }
    }
}

#[tool_router]
impl MnemoTools {
    #[tool(description = REMEMBER, annotations(
        title = "Remember",
        read_only_hint = false,
        destructive_hint = false,
        open_world_hint = false
    ))]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let request = requests::remember(args, || Uuid::now_v7().to_string());
        self.call(&extensions, request).await
    }

    #[tool(description = RECALL, annotations(
        title = "Recall",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        self.call(&extensions, requests::recall(args)).await
    }

    #[tool(description = GET_CONTEXT, annotations(
        title = "Get context",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn get_context(
        &self,
        Parameters(args): Parameters<GetContextArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let result = self.call(&extensions, requests::get_context(args)).await;
        block_as_text(result)
    }

    #[tool(description = LIST_MEMORIES, annotations(
        title = "List memories",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_memories(
        &self,
        Parameters(args): Parameters<ListMemoriesArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        self.call(&extensions, requests::list_memories(args)).await
    }

    #[tool(description = MEMORY_HISTORY, annotations(
        title = "Memory history",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn memory_history(
        &self,
        Parameters(args): Parameters<MemoryIdArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        self.call(&extensions, requests::memory_history(args)).await
    }

    #[tool(description = FORGET_MEMORY, annotations(
        title = "Forget a memory",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn forget_memory(
        &self,
        Parameters(args): Parameters<ForgetMemoryArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        self.call(&extensions, requests::forget_memory(args)).await
    }

    #[tool(description = EXPORT_SUBJECT, annotations(
        title = "Export a subject",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn export_subject(
        &self,
        Parameters(args): Parameters<SubjectArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        self.call(&extensions, requests::export_subject(args)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MnemoTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// A context answer's text is its block, which is what the model should
/// read; the whole answer (scores, provenance) stays the structured
/// content.
fn block_as_text(mut result: CallToolResult) -> CallToolResult {
    if result.is_error == Some(true) {
        return result;
    }
    let block = result
        .structured_content
        .as_ref()
        .and_then(|answer| answer.get("block"))
        .and_then(Value::as_str);
    if let Some(block) = block {
        let text = match block.is_empty() {
            true => "Nothing mnemo remembers about this person bears on the conversation yet.",
            false => block,
        };
        result.content = vec![ContentBlock::text(text)];
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::{tool_result, ApiResponse};

    fn tools() -> MnemoTools {
        MnemoTools::per_request(ApiClient::new("http://127.0.0.1:9").unwrap())
    }

    #[test]
    fn the_seven_tools_are_listed_with_descriptions_and_object_schemas() {
        let listed = tools().tool_router.list_all();
        let mut names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "export_subject",
                "forget_memory",
                "get_context",
                "list_memories",
                "memory_history",
                "recall",
                "remember"
            ]
        );
        for tool in &listed {
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(description.len() > 80, "{}: {description}", tool.name);
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        }
        // A client shows a line break as one: every description is one line.
        for tool in &listed {
            let mut texts = vec![Value::from(tool.description.as_deref().unwrap_or_default())];
            collect_descriptions(&Value::Object((*tool.input_schema).clone()), &mut texts);
            for text in texts {
                assert!(
                    !text.as_str().unwrap().contains('\n'),
                    "{}: {text}",
                    tool.name
                );
            }
        }
        let recall = listed.iter().find(|tool| tool.name == "recall").unwrap();
        let required = recall.input_schema["required"].as_array().unwrap();
        assert!(required.contains(&json!("subject")) && required.contains(&json!("query")));
    }

    fn collect_descriptions(schema: &Value, into: &mut Vec<Value>) {
        match schema {
            Value::Object(fields) => {
                for (name, value) in fields {
                    match (name.as_str(), value) {
                        ("description", Value::String(_)) => into.push(value.clone()),
                        _ => collect_descriptions(value, into),
                    }
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|item| collect_descriptions(item, into)),
            _ => {}
        }
    }

    #[test]
    fn a_token_comes_from_the_http_request_only_when_the_endpoint_put_it_there() {
        let tools = tools();
        assert!(tools.token(&Extensions::new()).is_none());
        let (mut parts, ()) = http::Request::new(()).into_parts();
        let mut extensions = Extensions::new();
        extensions.insert(parts.clone());
        assert!(
            tools.token(&extensions).is_none(),
            "an Authorization header alone is not a verified token"
        );
        parts
            .extensions
            .insert(CallerToken(SecretString::from("verified")));
        extensions.insert(parts);
        assert!(tools.token(&extensions).is_some());
    }

    #[test]
    fn get_context_reads_as_its_block() {
        let answer = json!({"block": "Relevant memories about the user:\n- [preference] tea\n",
                            "tokens": 12, "query_tokens": 3, "memories": [], "episodes": []});
        let result = block_as_text(tool_result(ApiResponse {
            status: 200,
            body: answer.clone(),
        }));
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            "Relevant memories about the user:\n- [preference] tea\n"
        );
        assert_eq!(result.structured_content, Some(answer));

        let empty = block_as_text(tool_result(ApiResponse {
            status: 200,
            body: json!({"block": "", "tokens": 0}),
        }));
        assert!(empty.content[0].as_text().unwrap().text.contains("Nothing"));

        let refused = block_as_text(tool_result(ApiResponse {
            status: 403,
            body: json!({"error": {"code": "subject_forbidden", "message": "no"}}),
        }));
        assert_eq!(refused.is_error, Some(true));
        assert!(refused.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("subject_forbidden"));
    }
}
