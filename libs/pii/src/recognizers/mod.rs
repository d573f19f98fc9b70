//! One module per PII kind. Each recognizer runs a regex for candidates and a
//! validator in code, and pushes surviving spans into a shared vector; the
//! detector resolves overlaps afterwards.
//!
//! Regexes here use `[0-9]` rather than `\d` (Unicode digits would let
//! fullwidth or Arabic-Indic digits through to validators that assume ASCII)
//! and never use `\b`: the Unicode word boundary sees no boundary between a
//! Chinese character and a Latin one, so `手机13812345678` would be missed.
//! Boundaries are checked by hand with the ASCII-only helpers below.

pub(crate) mod card;
pub(crate) mod cn_id;
pub(crate) mod email;
pub(crate) mod iban;
pub(crate) mod ip;
pub(crate) mod phone;
pub(crate) mod secret;
pub(crate) mod ssn;

use regex::Regex;

/// Compiles a built-in pattern. The patterns are constants covered by tests,
/// so a failure is a programming error, not a runtime condition.
pub(crate) fn compile(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(re) => re,
        Err(e) => panic!("built-in PII pattern does not compile: {e}"),
    }
}

pub(crate) fn prev_char(text: &str, at: usize) -> Option<char> {
    text[..at].chars().next_back()
}

pub(crate) fn next_char(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

/// ASCII word character: what glues a token to its neighbour.
pub(crate) fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The span does not start in the middle of an ASCII word.
pub(crate) fn clean_left(text: &str, start: usize) -> bool {
    !prev_char(text, start).is_some_and(is_word)
}

/// The span does not end in the middle of an ASCII word.
pub(crate) fn clean_right(text: &str, end: usize) -> bool {
    !next_char(text, end).is_some_and(is_word)
}

/// Characters that continue a number when a digit follows them, as in
/// `1.2.3.4.5`, `2024/01/15`, `1,234,567` or `12:30`.
fn is_numeric_joiner(c: char) -> bool {
    matches!(c, '.' | ',' | '-' | '/' | ':')
}

/// Like [`clean_left`], and the span is not the tail of a longer number nor
/// of a hyphenated identifier (`INV-2024-000123`, `ref/12345678`).
pub(crate) fn numeric_left(text: &str, start: usize) -> bool {
    if !clean_left(text, start) {
        return false;
    }
    let mut before = text[..start].chars().rev();
    match (before.next(), before.next()) {
        (Some(j @ ('-' | '/')), Some(c)) => !(is_word(c) || (j == '-' && c == '-')),
        (Some(j), Some(d)) => !(is_numeric_joiner(j) && d.is_ascii_digit()),
        _ => true,
    }
}

/// Like [`clean_right`], and the span is not the head of a longer number.
pub(crate) fn numeric_right(text: &str, end: usize) -> bool {
    if !clean_right(text, end) {
        return false;
    }
    let mut after = text[end..].chars();
    match (after.next(), after.next()) {
        (Some(j), Some(d)) => !(is_numeric_joiner(j) && d.is_ascii_digit()),
        _ => true,
    }
}

/// At most the last `max` bytes of `text[..at]`, cut on a char boundary:
/// context windows stay bounded however long the text.
pub(crate) fn window_before(text: &str, at: usize, max: usize) -> &str {
    let mut from = at.saturating_sub(max);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..at]
}

/// At most the first `max` bytes of `text[at..]`, cut on a char boundary.
pub(crate) fn window_after(text: &str, at: usize, max: usize) -> &str {
    let mut to = (at + max).min(text.len());
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    &text[at..to]
}

/// Next char boundary after `at` (for restarting a bounded search).
pub(crate) fn next_boundary(text: &str, at: usize) -> usize {
    at + next_char(text, at).map_or(1, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_ascii_only() {
        let text = "手机13812345678号";
        let start = "手机".len();
        let end = start + 11;
        assert!(clean_left(text, start) && clean_right(text, end));
        assert!(!clean_left("a1", 1));
        assert!(!numeric_left("1.2", 2));
        assert!(numeric_left("v. 2", 3));
        assert!(!numeric_left("INV-2", 4));
        assert!(numeric_left("call -2", 6));
        assert!(!numeric_right("12,5", 2));
        assert!(numeric_right("12, 5", 2));
    }
}
