//! Secrets: well-known token formats (AWS access key ids, GitHub tokens,
//! OpenAI-style `sk-` keys, JWTs) and labelled passwords. For a labelled
//! password only the value is a detection, so the label stays readable:
//! `password: [SECRET]`.

use regex::Regex;

use super::{clean_left, clean_right, compile, prev_char};
use crate::{Detection, PiiKind};

const AWS_KEY_ID: &str = r"(?:AKIA|ASIA)[A-Z0-9]{16}";
const GITHUB: &str = r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}";
const SK_KEY: &str = r"sk-[A-Za-z0-9_\-]{20,}";
// header.payload.signature, both JSON parts starting `{"` = `eyJ`. The
// signature may be empty (`alg: none`).
const JWT: &str = r"eyJ[A-Za-z0-9_\-]{2,}\.eyJ[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*";
// A label, then `:`/`=`/`is` (or `：`/`是`/`为`), then the value (found in
// code). `"password": "…"` JSON keys are covered by the optional quote.
const LABEL: &str = concat!(
    r#"(?i)(?:(?:password|passwd|passphrase|passcode|pwd)["']?"#,
    r"(?:[ \t]*[:=：]|[ \t]+is[ \t])",
    r"|(?:密码|口令)[ \t]*(?:[:=：]|是|为))[ \t]*",
);

/// Words that follow "password is" / "password:" in ordinary prose about
/// passwords ("the password is incorrect"); never taken as the value.
#[rustfmt::skip]
const NOT_A_VALUE: &[&str] = &[
    "a", "an", "the", "my", "your", "his", "her", "our", "their", "its", "this", "that", "not",
    "too", "also", "still", "now", "only", "very", "so", "just", "being", "same", "required",
    "incorrect", "wrong", "invalid", "correct", "right", "empty", "blank", "missing", "expired",
    "set", "unset", "changed", "reset", "weak", "strong", "long", "short", "case-sensitive",
    "hidden", "encrypted", "hashed", "stored", "saved", "needed", "mandatory", "optional", "ok",
    "fine", "secure", "insecure", "safe", "none", "null", "protected", "different",
    "incorrectly", "here", "there", "below", "above", "what", "which", "how", "where", "when",
    "why", "and", "or", "for", "in", "on", "at", "of", "to", "is", "was", "be", "什么", "多少", "啥",
    "错的", "对的", "正确", "错误", "正确的", "错误的", "空的",
];

pub(crate) struct SecretRecognizer {
    tokens: [Regex; 4],
    label: Regex,
}

impl SecretRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            tokens: [
                compile(AWS_KEY_ID),
                compile(GITHUB),
                compile(SK_KEY),
                compile(JWT),
            ],
            label: compile(LABEL),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for (i, re) in self.tokens.iter().enumerate() {
            for m in re.find_iter(text) {
                let bounded = clean_left(text, m.start())
                    && prev_char(text, m.start()) != Some('-')
                    && clean_right(text, m.end());
                // `sk-` keys are random: a body without digits is a
                // hyphenated phrase (`sk-this-is-not-a-real-key-at-all`).
                let random = i != 2 || m.as_str()[3..].bytes().any(|b| b.is_ascii_digit());
                if bounded && random {
                    out.push(secret(m.start(), m.end()));
                }
            }
        }
        // Resume after each value, not after its label: a label inside a
        // value (`password=password=…`) is part of that value, and rescanning
        // it would make long label-dense inputs quadratic.
        let mut pos = 0;
        while let Some(m) = self.label.find_at(text, pos) {
            pos = m.end();
            // English labels must start a word (`mypassword` is not one);
            // `_` may precede them, as in `DB_PASSWORD=`.
            let label_start_ok = m.as_str().starts_with(['密', '口'])
                || !prev_char(text, m.start()).is_some_and(|c| c.is_ascii_alphanumeric());
            if !label_start_ok {
                continue;
            }
            if let Some((start, end)) = value_span(text, m.end()) {
                out.push(secret(start, end));
                pos = end;
            }
        }
    }
}

fn secret(start: usize, end: usize) -> Detection {
    Detection {
        kind: PiiKind::Secret,
        start,
        end,
    }
}

fn closing_quote(open: char) -> Option<char> {
    Some(match open {
        '"' => '"',
        '\'' => '\'',
        '`' => '`',
        '“' => '”',
        '‘' => '’',
        '「' => '」',
        '『' => '』',
        _ => return None,
    })
}

/// CJK and fullwidth punctuation ends an unquoted value (`密码是abc123，谢谢`).
fn is_cjk_punct(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303F}' | '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}'
        | '\u{FF3B}'..='\u{FF40}' | '\u{FF5B}'..='\u{FF65}' | '“' | '”' | '‘' | '’')
}

fn is_cjk_ideograph(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

/// The password value starting at `at`: the inside of a quoted string on the
/// same line, or else the run up to whitespace, CJK punctuation, or (for an
/// ASCII value) a Chinese character; minus trailing sentence punctuation.
fn value_span(text: &str, at: usize) -> Option<(usize, usize)> {
    let rest = &text[at..];
    let first = rest.chars().next()?;
    if let Some(close) = closing_quote(first) {
        let inner = at + first.len_utf8();
        let line = text[inner..].split('\n').next().unwrap_or("");
        if let Some(len) = line.find(close) {
            return (len > 0).then_some((inner, inner + len));
        }
    }
    let mut end = at;
    let mut ascii_so_far = true;
    for (i, c) in rest.char_indices() {
        if c.is_whitespace() || is_cjk_punct(c) || (ascii_so_far && i > 0 && is_cjk_ideograph(c)) {
            break;
        }
        ascii_so_far &= c.is_ascii();
        end = at + i + c.len_utf8();
    }
    let value =
        text[at..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
    let end = at + value.len();
    let skip = value.is_empty()
        || NOT_A_VALUE.contains(&value.to_lowercase().as_str())
        // Already scrubbed or masked: keep scrubbing idempotent.
        || value.starts_with("[SECRET")
        || value.chars().all(|c| c == '*');
    (!skip).then_some((at, end))
}

#[cfg(test)]
mod tests {
    use crate::detect::tests::found;
    use crate::PiiKind::Secret;

    fn secrets(text: &str) -> Vec<String> {
        found(text)
            .into_iter()
            .filter(|(k, _)| *k == Secret)
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn token_formats() {
        let ghp = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        let pat = format!("github_pat_{}", "11ABCDEFG0_abcdefghijklmnop");
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        for (text, want) in [
            (
                "key AKIAIOSFODNN7EXAMPLE here".to_owned(),
                "AKIAIOSFODNN7EXAMPLE".to_owned(),
            ),
            (
                "ASIAY34FZKBOKMUTVV7A".to_owned(),
                "ASIAY34FZKBOKMUTVV7A".to_owned(),
            ),
            (format!("token={ghp}"), ghp.clone()),
            (format!("use {pat}."), pat.clone()),
            (
                "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned(),
                "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned(),
            ),
            (
                "sk-1234567890abcdefghijKLMN".to_owned(),
                "sk-1234567890abcdefghijKLMN".to_owned(),
            ),
            (format!("Authorization: Bearer {jwt}"), jwt.to_owned()),
        ] {
            assert_eq!(secrets(&text), [want], "{text}");
        }
    }

    #[test]
    fn token_lookalikes_are_not_secrets() {
        for text in [
            "AKIAIOSFODNN7EXAMPL",   // 15 after the prefix
            "XAKIAIOSFODNN7EXAMPLE", // glued
            "ghp_short",
            "task-1234567890abcdefghijklmn", // `sk-` inside a word
            "sk-this-is-not-a-real-key-at-all",
            "eyJhbGciOiJIUzI1NiJ9 alone",
        ] {
            assert!(secrets(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn labelled_passwords_keep_the_label() {
        for (text, want) in [
            ("password: hunter2", "hunter2"),
            ("Password=hunter2;", "hunter2"),
            ("passwd hunter2", ""),
            ("pwd: s3cr3t!x", "s3cr3t!x"),
            ("my Password is hunter2.", "hunter2"),
            ("DB_PASSWORD=correct-horse", "correct-horse"),
            (r#"{"password": "two words"}"#, "two words"),
            ("密码：abc123", "abc123"),
            ("密码:abc123", "abc123"),
            ("密码是abc123，别告诉别人", "abc123"),
            ("我的密码是 芝麻开门", "芝麻开门"),
        ] {
            let got = secrets(text);
            if want.is_empty() {
                assert!(got.is_empty(), "{text}: {got:?}");
            } else {
                assert_eq!(got, [want], "{text}");
            }
        }
    }

    #[test]
    fn prose_about_passwords_is_not_a_secret() {
        for text in [
            "the password is incorrect",
            "Password: required",
            "passwordless login",
            "passwords: see vault",
            "password: [SECRET]",
            "密码是什么？",
            "mypassword: x",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }
}
