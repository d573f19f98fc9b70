//! `mnemo dev llm`: a deterministic OpenAI-compatible chat-completions
//! server, for trying LLM consolidation without a model and for measuring
//! the pipeline around the model (`mnemo eval consolidation`) against a
//! known, repeatable answerer.
//!
//! `POST /v1/chat/completions` answers by the purpose its system message
//! names (the first words of the consolidator's prompts):
//! - "You extract": every user message of at least 4 words becomes one
//!   memory whose content is the message text without a leading
//!   `"Name: "` speaker prefix, kind `fact`, tags the 2 longest distinct
//!   lowercase words (letters only, at least 3 of them), confidence 0.9,
//!   sources the message's index;
//! - "You maintain" (merge): `skip` for a candidate whose content equals an
//!   existing memory's (case-insensitively, trimmed), else `keep`; no
//!   relations;
//! - "You keep a short profile": the first 3 new memories joined by spaces.
//!
//! Every answer carries a `usage` block estimated as `mnemo_llm` estimates
//! (one token per four characters, rounded up). The answering logic is the
//! pure functions below; the server only frames them. It is not a model:
//! the memories it extracts are the messages themselves, so an evaluation
//! against it measures the pipeline (routing, dedupe, provenance, search),
//! not extraction quality.

use std::net::TcpListener;

use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::{json, Value};

/// What a request asks for, by its system message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Extract,
    Merge,
    Profile,
}

impl Purpose {
    /// The purpose a system message states, by its first words.
    pub fn of(system: &str) -> Option<Self> {
        let system = system.trim_start();
        [
            ("You extract", Purpose::Extract),
            ("You maintain", Purpose::Merge),
            ("You keep a short profile", Purpose::Profile),
        ]
        .into_iter()
        .find(|(prefix, _)| system.starts_with(prefix))
        .map(|(_, purpose)| purpose)
    }
}

/// Confidence of every extracted memory: above the LLM auto threshold, so
/// the mock's memories are stored, not reviewed.
const CONFIDENCE: f64 = 0.9;
/// Fewer words than this is small talk to the mock.
const MIN_WORDS: usize = 4;

/// `text` without a leading `"Name: "` speaker prefix (one to three
/// capitalised words before `": "`).
pub fn strip_speaker(text: &str) -> &str {
    let text = text.trim();
    let Some((name, rest)) = text.split_once(": ") else {
        return text;
    };
    let words: Vec<&str> = name.split_whitespace().collect();
    let is_name = !words.is_empty()
        && words.len() <= 3
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '\''))
        });
    if is_name {
        rest.trim()
    } else {
        text
    }
}

/// The 2 longest distinct lowercase words of at least 3 letters (letters
/// only), earliest first among equals.
pub fn tags(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphabetic()) {
        let word = word.to_lowercase();
        if word.chars().count() >= 3 && !words.contains(&word) {
            words.push(word);
        }
    }
    // Stable: equal lengths keep their order of appearance.
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    words.truncate(2);
    words
}

/// The extraction answer for the prompt's JSON (`{"messages": [{index,
/// role, content, …}]}`).
pub fn extraction_answer(input: &Value) -> Value {
    let messages = input["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let memories: Vec<Value> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m["role"]
                .as_str()
                .is_some_and(|r| r.eq_ignore_ascii_case("user"))
        })
        .filter_map(|(position, m)| {
            let content = strip_speaker(m["content"].as_str()?);
            if content.split_whitespace().count() < MIN_WORDS {
                return None;
            }
            let index = m["index"].as_u64().unwrap_or(position as u64 + 1);
            Some(json!({
                "content": content,
                "kind": "fact",
                "tags": tags(content),
                "confidence": CONFIDENCE,
                "sources": [index],
            }))
        })
        .collect();
    json!({ "memories": memories })
}

/// The merge answer for the prompt's JSON (`{"candidates": [{candidate,
/// content, kind}], "existing": [{id, content, kind}]}`): the mock relates
/// nothing.
pub fn merge_answer(input: &Value) -> Value {
    let normalised = |v: &Value| v.as_str().map(|s| s.trim().to_lowercase());
    let existing: Vec<(String, String)> = input["existing"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m["id"].as_str()?.to_owned(), normalised(&m["content"])?)))
        .collect();
    let decisions: Vec<Value> = input["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(position, c)| {
            let candidate = c["candidate"].as_u64().unwrap_or(position as u64);
            let content = normalised(&c["content"]).unwrap_or_default();
            match existing.iter().find(|(_, e)| *e == content) {
                Some((id, _)) => json!({
                    "candidate": candidate, "action": "skip", "target": null, "content": null,
                    "reason": format!("the same as {id}"),
                }),
                None => json!({
                    "candidate": candidate, "action": "keep", "target": null, "content": null,
                    "reason": "no existing memory says this",
                }),
            }
        })
        .collect();
    json!({ "decisions": decisions, "relations": [] })
}

/// The profile: the first 3 new memories joined with spaces (a profile is
/// never empty, so with no memory it says so).
pub fn profile_answer(input: &Value) -> String {
    let memories: Vec<&str> = input["new_memories"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(3)
        .collect();
    if memories.is_empty() {
        "Nothing is known about the user yet.".to_owned()
    } else {
        memories.join(" ")
    }
}

/// The first message of `role` in a chat-completions body.
fn message<'a>(request: &'a Value, role: &str) -> Option<&'a str> {
    request["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"].as_str() == Some(role))?["content"]
        .as_str()
}

/// The chat-completion body answering `request`, or why it cannot.
fn answer(request: &Value) -> Result<Value, String> {
    let system = message(request, "system").ok_or("no system message")?;
    let purpose = Purpose::of(system).ok_or(
        "the system message names no known purpose (You extract / maintain / keep a short profile)",
    )?;
    let prompt = message(request, "user").ok_or("no user message")?;
    let text = if purpose == Purpose::Profile {
        let input: Value = serde_json::from_str(prompt).unwrap_or(Value::Null);
        profile_answer(&input)
    } else {
        let input: Value = serde_json::from_str(prompt)
            .map_err(|e| format!("the user message is not JSON: {e}"))?;
        let answer = match purpose {
            Purpose::Merge => merge_answer(&input),
            _ => extraction_answer(&input),
        };
        answer.to_string()
    };
    Ok(mnemo_llm::completion_body(request, &text))
}

async fn chat_completions(body: web::Bytes) -> HttpResponse {
    let reply = serde_json::from_slice::<Value>(&body)
        .map_err(|e| format!("the body is not JSON: {e}"))
        .and_then(|request| answer(&request));
    match reply {
        Ok(completion) => HttpResponse::Ok().json(completion),
        Err(message) => HttpResponse::BadRequest().json(json!({
            "error": {"message": message, "type": "invalid_request_error"}
        })),
    }
}

/// The server on `listener` (not yet running: await or spawn it).
pub fn serve(listener: TcpListener) -> anyhow::Result<actix_web::dev::Server> {
    Ok(HttpServer::new(|| {
        App::new()
            // Consolidation prompts of long conversations exceed actix's 256 KiB default.
            .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
            .route("/v1/chat/completions", web::post().to(chat_completions))
    })
    .workers(2)
    .listen(listener)?
    .run())
}

/// Serves on `127.0.0.1:<port>` until Ctrl-C, after printing the base URL.
pub async fn run(port: u16) -> anyhow::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let port = listener.local_addr()?.port();
    let server = serve(listener)?;
    println!("MNEMO_LLM_BASE_URL=http://127.0.0.1:{port}/v1");
    println!("deterministic mock answers (memories are the user messages); Ctrl-C stops it");
    server.await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_llm::estimate_tokens;

    #[test]
    fn purposes_are_read_from_the_system_message() {
        assert_eq!(
            Purpose::of("You extract long-term memories"),
            Some(Purpose::Extract)
        );
        assert_eq!(Purpose::of("You maintain a user's"), Some(Purpose::Merge));
        assert_eq!(Purpose::of("You connect a"), None);
        assert_eq!(
            Purpose::of("You keep a short profile of"),
            Some(Purpose::Profile)
        );
        assert_eq!(Purpose::of("Hello"), None);
    }

    #[test]
    fn speaker_prefixes_are_dropped() {
        assert_eq!(
            strip_speaker("Caroline: I went to a group"),
            "I went to a group"
        );
        assert_eq!(strip_speaker("Mary Ann: hi there"), "hi there");
        assert_eq!(
            strip_speaker("note: this is lowercase"),
            "note: this is lowercase"
        );
        assert_eq!(strip_speaker("no prefix at all"), "no prefix at all");
    }

    #[test]
    fn tags_are_the_two_longest_distinct_words() {
        assert_eq!(
            tags("I adopted a Puppy and the puppy's name is Biscuit!"),
            vec!["adopted", "biscuit"]
        );
        assert_eq!(tags("Go to it, ok"), Vec::<String>::new());
        assert_eq!(tags("x9 cat"), vec!["cat"]);
    }

    #[test]
    fn extraction_makes_one_fact_per_long_user_message() {
        let input = json!({"messages": [
            {"index": 1, "role": "user", "content": "Caroline: I went to the LGBTQ support group yesterday."},
            {"index": 2, "role": "assistant", "content": "That sounds like a wonderful experience to share."},
            {"index": 3, "role": "user", "content": "Mel: Thanks, great!"},
            {"index": 4, "role": "user", "content": "I moved to Berlin last spring"},
        ]});
        let answer = extraction_answer(&input);
        let memories = answer["memories"].as_array().unwrap();
        assert_eq!(memories.len(), 2);
        assert_eq!(
            memories[0],
            json!({
                "content": "I went to the LGBTQ support group yesterday.",
                "kind": "fact",
                "tags": ["yesterday", "support"],
                "confidence": 0.9,
                "sources": [1],
            })
        );
        assert_eq!(memories[1]["content"], "I moved to Berlin last spring");
        assert_eq!(memories[1]["sources"], json!([4]));
    }

    #[test]
    fn merge_skips_exact_repeats_and_keeps_the_rest() {
        let input = json!({
            "candidates": [
                {"candidate": 0, "content": "  The user likes TEA. ", "kind": "preference"},
                {"candidate": 1, "content": "The user likes coffee.", "kind": "preference"},
            ],
            "existing": [{"id": "m1", "content": "the user likes tea.", "kind": "preference"}],
        });
        let answer = merge_answer(&input);
        assert_eq!(answer["relations"], json!([]));
        let decisions = answer["decisions"].as_array().unwrap().clone();
        assert_eq!(decisions.len(), 2);
        assert_eq!(decisions[0]["action"], "skip");
        assert_eq!(decisions[0]["target"], Value::Null);
        assert_eq!(decisions[1]["candidate"], 1);
        assert_eq!(decisions[1]["action"], "keep");
    }

    #[test]
    fn profiles_join_three_memories() {
        let input = json!({"previous_profile": null, "new_memories": ["A.", "B.", "C.", "D."]});
        assert_eq!(profile_answer(&input), "A. B. C.");
        assert!(!profile_answer(&json!({"new_memories": []})).is_empty());
    }

    #[test]
    fn completions_carry_estimated_usage() {
        let request = json!({
            "model": "mock",
            "messages": [
                {"role": "system", "content": "You maintain a user's memory."},
                {"role": "user", "content": "{\"candidates\": [], \"existing\": []}"},
            ],
        });
        let body = answer(&request).unwrap();
        let text = body["choices"][0]["message"]["content"].as_str().unwrap();
        assert_eq!(text, r#"{"decisions":[],"relations":[]}"#);
        assert_eq!(body["model"], "mock");
        let usage = &body["usage"];
        let prompt = estimate_tokens("You maintain a user's memory.")
            + estimate_tokens("{\"candidates\": [], \"existing\": []}");
        assert_eq!(usage["prompt_tokens"], prompt);
        assert_eq!(usage["completion_tokens"], estimate_tokens(text));
        assert!(answer(&json!({"messages": []})).is_err());
    }
}
