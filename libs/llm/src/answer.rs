//! Tolerant parsing of a model's JSON answer.
//!
//! Even when asked for JSON (and even in JSON mode) models wrap it: markdown
//! code fences, a sentence before or after, a trailing comma, a byte-order
//! mark, a `<think>…</think>` block from a reasoning model. [`parse_json`]
//! repairs exactly these and nothing more: valid JSON parses unchanged, and
//! anything else is a [`ParseError`] the caller can count and report.
//!
//! Error messages never quote the answer (it may hold end-user data).

use serde::de::DeserializeOwned;
use serde_json::Value;

/// How many candidate start positions are tried before giving up, so that a
/// long answer full of stray brackets cannot make parsing quadratic.
const MAX_CANDIDATES: usize = 64;

/// Why an answer holds no usable JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing but whitespace (or a think block).
    #[error("the answer is empty")]
    Empty,
    /// No `{…}` or `[…]` anywhere in the answer.
    #[error("the answer contains no JSON object or array")]
    NoJson,
    /// Something JSON-like was found, but it does not parse even after
    /// repair (or it is cut off). The message is serde's, with a position,
    /// never the answer's text.
    #[error("the answer's JSON is invalid: {0}")]
    Invalid(String),
    /// The JSON parsed but does not have the expected shape ([`parse`]).
    #[error("the answer's JSON does not have the expected shape: {0}")]
    Shape(String),
}

impl ParseError {
    /// A stable code for logs and batch records.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Empty => "answer_empty",
            ParseError::NoJson => "answer_no_json",
            ParseError::Invalid(_) => "answer_invalid_json",
            ParseError::Shape(_) => "answer_wrong_shape",
        }
    }
}

/// Parses the JSON in a model's answer. Tolerates, in this order: a UTF-8
/// BOM, a leading `<think>…</think>` block, markdown code fences (```` ```json
/// ```` or bare ```` ``` ````), prose before and after (the first balanced
/// top-level `{…}` or `[…]` is taken, braces inside strings do not count),
/// and trailing commas before `}` or `]`.
pub fn parse_json(text: &str) -> Result<Value, ParseError> {
    let text = text.trim_start_matches('\u{feff}').trim();
    // Valid JSON parses unchanged, even with "</think>" inside a string.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let text = strip_think(text).trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut first_error = None;
    if let Some(fenced) = fenced_block(text) {
        match extract(fenced) {
            Ok(value) => return Ok(value),
            Err(error) => first_error = Some(error),
        }
    }
    match extract(text) {
        Ok(value) => Ok(value),
        // The fenced block's verdict is the more precise one.
        Err(error) => Err(match (first_error, error) {
            (Some(ParseError::Invalid(m)), _) => ParseError::Invalid(m),
            (_, error) => error,
        }),
    }
}

/// [`parse_json`], then deserialises into `T`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, ParseError> {
    let value = parse_json(text)?;
    serde_json::from_value(value).map_err(|e| ParseError::Shape(e.to_string()))
}

/// The answer without a leading reasoning block: `<think>…</think>` at the
/// start (after whitespace) is dropped; an unterminated one leaves nothing.
/// Templates that put the opening tag in the prompt (DeepSeek-R1) produce
/// `…</think>answer` with no opening tag: when the text has a closing tag and
/// no opening one, everything up to it is dropped too — unless the text
/// starts like JSON (`{`, `[` or `"`), where the tag is string content.
pub fn strip_think(text: &str) -> &str {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix(OPEN) {
        return match rest.find(CLOSE) {
            Some(end) => rest[end + CLOSE.len()..].trim_start(),
            None => "",
        };
    }
    if !trimmed.starts_with(['{', '[', '"']) && !trimmed.contains(OPEN) {
        if let Some(end) = trimmed.find(CLOSE) {
            return trimmed[end + CLOSE.len()..].trim_start();
        }
    }
    text
}

/// The content of the first markdown code fence: from the line after the
/// opening ```` ``` ```` (and its language tag) to the next ```` ``` ```` or
/// the end of the text.
fn fenced_block(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body = match after.find('\n') {
        Some(newline) => &after[newline + 1..],
        // ```{"a":1}``` on one line: no language tag to skip.
        None => after,
    };
    let end = body.find("```").unwrap_or(body.len());
    Some(&body[..end])
}

/// The first balanced top-level `{…}` / `[…]` that parses, repaired of
/// trailing commas if needed.
fn extract(text: &str) -> Result<Value, ParseError> {
    let mut position = 0;
    let mut invalid: Option<ParseError> = None;
    for _ in 0..MAX_CANDIDATES {
        let Some(offset) = text[position..].find(['{', '[']) else {
            break;
        };
        let start = position + offset;
        match balanced_end(&text[start..]) {
            Some(Balance::Closed(length)) => {
                let candidate = &text[start..start + length];
                match parse_repaired(candidate) {
                    Ok(value) => return Ok(value),
                    Err(error) => {
                        invalid.get_or_insert(error);
                        // Top level only: never fall back to a fragment nested
                        // inside a broken object.
                        position = start + length;
                    }
                }
            }
            // A closer of the wrong kind: this bracket was prose.
            Some(Balance::Mismatched) => position = start + 1,
            None => {
                return Err(invalid.unwrap_or_else(|| {
                    ParseError::Invalid("unbalanced brackets (the answer is cut off?)".into())
                }))
            }
        }
    }
    Err(invalid.unwrap_or(ParseError::NoJson))
}

enum Balance {
    /// Byte length of the balanced span, closer included.
    Closed(usize),
    Mismatched,
}

/// Where the bracket opening `text` closes, string-aware; `None` when it
/// never does.
fn balanced_end(text: &str) -> Option<Balance> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (index, byte) in text.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                if stack.pop() != Some(byte) {
                    return Some(Balance::Mismatched);
                }
                if stack.is_empty() {
                    return Some(Balance::Closed(index + 1));
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_repaired(candidate: &str) -> Result<Value, ParseError> {
    match serde_json::from_str(candidate) {
        Ok(value) => Ok(value),
        Err(original) => serde_json::from_str(&remove_trailing_commas(candidate))
            .map_err(|_| ParseError::Invalid(original.to_string())),
    }
}

/// Drops every comma (outside strings) followed, after whitespace, by `}` or
/// `]`.
fn remove_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = text[index + 1..].trim_start().chars().next();
            if matches!(next, Some('}' | ']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_codes_are_stable() {
        assert_eq!(parse_json("").unwrap_err().code(), "answer_empty");
        assert_eq!(
            parse_json("no json here").unwrap_err().code(),
            "answer_no_json"
        );
        assert_eq!(ParseError::Shape("x".into()).code(), "answer_wrong_shape");
    }

    use serde_json::json;

    #[test]
    fn valid_json_parses_unchanged() {
        for text in [
            r#"{"memories": []}"#,
            r#"[1, 2, {"a": "b,}"}]"#,
            r#"{"nested": {"list": [1, [2, 3]], "s": "x \" } ] y"}}"#,
            "42",
            "\"a string\"",
            "null",
            r#"  {"a": 1}  "#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_json(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn code_fences_with_and_without_language() {
        let expected = json!({"memories": [{"text": "likes tea"}]});
        for text in [
            "```json\n{\"memories\": [{\"text\": \"likes tea\"}]}\n```",
            "```\n{\"memories\": [{\"text\": \"likes tea\"}]}\n```",
            "Here you go:\n```JSON\n{\"memories\": [{\"text\": \"likes tea\"}]}\n```\nAnything else?",
            "```{\"memories\": [{\"text\": \"likes tea\"}]}```",
            // An unterminated fence (answer cut after the JSON).
            "```json\n{\"memories\": [{\"text\": \"likes tea\"}]}\n",
        ] {
            assert_eq!(parse_json(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn prose_around_the_json() {
        assert_eq!(
            parse_json("Sure! The facts are {\"a\": [1, 2]} as requested.").unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(
            parse_json("Result: [\"x\", \"y\"]. Done.").unwrap(),
            json!(["x", "y"])
        );
        // A bracketed aside before the JSON is skipped.
        assert_eq!(
            parse_json("Answer [see below]: {\"ok\": true}").unwrap(),
            json!({"ok": true})
        );
        // A stray closer of the wrong kind.
        assert_eq!(
            parse_json("1) a [b} {\"ok\": true}").unwrap(),
            json!({"ok": true})
        );
    }

    #[test]
    fn trailing_commas_including_nested() {
        assert_eq!(
            parse_json(r#"{"a": [1, 2, [3, 4,],], "b": {"c": 1,},}"#).unwrap(),
            json!({"a": [1, 2, [3, 4]], "b": {"c": 1}})
        );
        assert_eq!(
            parse_json("```json\n[\n  {\"x\": 1},\n  {\"x\": 2},\n]\n```").unwrap(),
            json!([{"x": 1}, {"x": 2}])
        );
        // Commas inside strings stay.
        assert_eq!(
            parse_json(r#"{"a": "x,}", "b": "y, ]",}"#).unwrap(),
            json!({"a": "x,}", "b": "y, ]"})
        );
    }

    #[test]
    fn braces_inside_strings_do_not_count() {
        assert_eq!(
            parse_json(r#"The JSON: {"text": "use {curly} and [square] }}", "n": 1} end"#).unwrap(),
            json!({"text": "use {curly} and [square] }}", "n": 1})
        );
        assert_eq!(
            parse_json(r#"note {"q": "say \"}\" please"} ok"#).unwrap(),
            json!({"q": "say \"}\" please"})
        );
    }

    #[test]
    fn bom_and_think_blocks() {
        assert_eq!(parse_json("\u{feff}{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(
            parse_json("<think>The user wants {json}. Let me think [a lot].</think>\n{\"a\": 1}")
                .unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            parse_json("\u{feff}  <think>hmm</think>```json\n{\"a\": 1,}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            parse_json("reasoning without opening tag</think>{\"a\": 1}").unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn errors_are_clear() {
        assert_eq!(parse_json(""), Err(ParseError::Empty));
        assert_eq!(parse_json("\u{feff}  \n"), Err(ParseError::Empty));
        assert_eq!(parse_json("<think>only thoughts"), Err(ParseError::Empty));
        assert_eq!(parse_json("<think>x</think>  "), Err(ParseError::Empty));
        assert_eq!(
            parse_json("I could not find any facts."),
            Err(ParseError::NoJson)
        );
        assert!(matches!(
            parse_json(r#"{"a": 1 "b": 2}"#),
            Err(ParseError::Invalid(_))
        ));
        assert!(matches!(
            parse_json(r#"{"a": [1, 2"#),
            Err(ParseError::Invalid(_))
        ));
        // A broken outer object never yields its nested fragment.
        assert!(matches!(
            parse_json(r#"{"a": 1,, "b": {"c": 2}}"#),
            Err(ParseError::Invalid(_))
        ));
        // Messages do not quote the answer.
        let secret = r#"{"secret": "Alice's diagnosis" oops}"#;
        let message = parse_json(secret).unwrap_err().to_string();
        assert!(!message.contains("Alice"), "{message}");
    }

    #[test]
    fn typed_parse() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Out {
            memories: Vec<String>,
        }
        assert_eq!(
            parse::<Out>("```json\n{\"memories\": [\"a\",]}\n```").unwrap(),
            Out {
                memories: vec!["a".into()]
            }
        );
        assert!(matches!(
            parse::<Out>(r#"{"other": 1}"#),
            Err(ParseError::Shape(_))
        ));
    }

    #[test]
    fn strip_think_leaves_plain_text_alone() {
        assert_eq!(strip_think("plain"), "plain");
        assert_eq!(strip_think("  <think>a</think>  b"), "b");
        assert_eq!(strip_think("a <think>b</think> c"), "a <think>b</think> c");
        assert_eq!(strip_think(r#"{"a": "</think>"}"#), r#"{"a": "</think>"}"#);
        assert_eq!(
            parse_json(r#"{"a": "x</think>y"}"#).unwrap(),
            json!({"a": "x</think>y"})
        );
    }
}
