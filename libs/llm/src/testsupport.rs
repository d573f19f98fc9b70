//! [`MockLlmServer`]: a wiremock server speaking the chat-completions
//! protocol, for tests of this crate and of the services built on the
//! [`LanguageModel`](crate::LanguageModel) port.
//!
//! Replies are queued in order ([`MockLlmServer::push_answer`],
//! [`MockLlmServer::push_status`], [`MockLlmServer::push_delay`]…); when the
//! queue is empty a responder set with [`MockLlmServer::respond_with`]
//! answers, else the fallback answer (default `{"memories": []}`). Every
//! request body is recorded ([`MockLlmServer::requests`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The fallback answer when nothing is queued and no responder is set.
pub const DEFAULT_FALLBACK: &str = r#"{"memories": []}"#;

type Responder = Arc<dyn Fn(&Value) -> String + Send + Sync>;

enum Reply {
    /// 200 with a chat completion whose content is the text.
    Answer(String),
    /// 200 with a chat completion, after a delay.
    Delayed(String, Duration),
    /// Any status with a raw body.
    Status(u16, String),
    /// A status and a JSON body (e.g. a completion without usage).
    Json(u16, Value),
    /// Full control (headers such as `Retry-After`).
    Template(ResponseTemplate),
}

struct State {
    queue: Mutex<VecDeque<Reply>>,
    responder: Mutex<Option<Responder>>,
    fallback: Mutex<String>,
    requests: Mutex<Vec<Value>>,
}

/// Locks, ignoring poisoning: a panicking test must not hide the real
/// failure behind a poisoned-mutex panic in the server.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A chat-completions server for tests. Dropping it stops the server.
pub struct MockLlmServer {
    server: MockServer,
    state: Arc<State>,
}

impl std::fmt::Debug for MockLlmServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlmServer")
            .field("uri", &self.uri())
            .finish_non_exhaustive()
    }
}

impl MockLlmServer {
    /// Starts a server answering `POST /v1/chat/completions`.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            responder: Mutex::new(None),
            fallback: Mutex::new(DEFAULT_FALLBACK.to_owned()),
            requests: Mutex::new(Vec::new()),
        });
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(Replier {
                state: Arc::clone(&state),
            })
            .mount(&server)
            .await;
        Self { server, state }
    }

    /// The base URL to put in [`LlmConfig`](crate::LlmConfig), ending in `/v1`.
    pub fn uri(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    /// Queues a 200 chat completion whose content is `text`, with a usage
    /// block (estimated at four characters a token).
    pub fn push_answer(&self, text: &str) -> &Self {
        self.push(Reply::Answer(text.to_owned()))
    }

    /// Queues an error (or any) status with a raw body.
    pub fn push_status(&self, status: u16, body: &str) -> &Self {
        self.push(Reply::Status(status, body.to_owned()))
    }

    /// Queues a 200 chat completion sent after `delay` (to test timeouts).
    pub fn push_delay(&self, text: &str, delay: Duration) -> &Self {
        self.push(Reply::Delayed(text.to_owned(), delay))
    }

    /// Queues a status with a JSON body, e.g. a completion built with
    /// [`completion_body`] and then edited.
    pub fn push_json(&self, status: u16, body: Value) -> &Self {
        self.push(Reply::Json(status, body))
    }

    /// Queues an arbitrary response (e.g. a 429 with `Retry-After`).
    pub fn push_response(&self, response: ResponseTemplate) -> &Self {
        self.push(Reply::Template(response))
    }

    /// Answers every request the queue does not, with the content `f`
    /// returns for the request body (see [`user_prompt`]).
    pub fn respond_with<F>(&self, f: F) -> &Self
    where
        F: Fn(&Value) -> String + Send + Sync + 'static,
    {
        *lock(&self.state.responder) = Some(Arc::new(f));
        self
    }

    /// The content answered when the queue is empty and no responder is
    /// set; default [`DEFAULT_FALLBACK`].
    pub fn set_fallback(&self, text: &str) -> &Self {
        *lock(&self.state.fallback) = text.to_owned();
        self
    }

    /// Every request body received so far, in order (including those whose
    /// answer the client gave up waiting for).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state.requests).clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }

    /// The user prompts received so far, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter_map(|body| user_prompt(body).map(str::to_owned))
            .collect()
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        lock(&self.state.queue).len()
    }

    /// The underlying wiremock server, for extra mocks.
    pub fn server(&self) -> &MockServer {
        &self.server
    }

    fn push(&self, reply: Reply) -> &Self {
        lock(&self.state.queue).push_back(reply);
        self
    }
}

/// The content of the first `user` message of a request body.
pub fn user_prompt(body: &Value) -> Option<&str> {
    body.get("messages")?
        .as_array()?
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?
        .get("content")?
        .as_str()
}

/// Moved to the crate root: `mnemo dev llm` answers with it too.
pub use crate::completion_body;

struct Replier {
    state: Arc<State>,
}

impl Respond for Replier {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        lock(&self.state.requests).push(body.clone());
        let queued = lock(&self.state.queue).pop_front();
        match queued {
            Some(Reply::Answer(text)) => {
                ResponseTemplate::new(200).set_body_json(completion_body(&body, &text))
            }
            Some(Reply::Delayed(text, delay)) => ResponseTemplate::new(200)
                .set_body_json(completion_body(&body, &text))
                .set_delay(delay),
            Some(Reply::Status(status, raw)) => {
                ResponseTemplate::new(status).set_body_raw(raw.into_bytes(), "application/json")
            }
            Some(Reply::Json(status, json)) => ResponseTemplate::new(status).set_body_json(json),
            Some(Reply::Template(template)) => template,
            None => {
                let responder = lock(&self.state.responder).clone();
                let text = match responder {
                    Some(responder) => responder(&body),
                    None => lock(&self.state.fallback).clone(),
                };
                ResponseTemplate::new(200).set_body_json(completion_body(&body, &text))
            }
        }
    }
}
