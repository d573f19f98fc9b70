//! Tokens and a cursor over them: what the phrase rules read.
//!
//! English words and numbers are runs of letters or digits, so a rule that
//! reads `today` never matches inside `todays`; every Han character is a
//! token of its own, since Chinese has no spaces to find words by (the
//! Chinese rules guard against compound words themselves). Phrase patterns
//! are tokenized the same way, so `"the day before yesterday"` and
//! `"上个星期"` are both just sequences of tokens to compare.

use std::ops::Range;

/// What a token is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A run of letters other than Han characters.
    Word,
    /// A run of ASCII digits.
    Number,
    /// One Han character.
    Han,
    /// Any other single character that is not white space.
    Symbol,
}

#[derive(Debug, Clone)]
pub(super) struct Token<'a> {
    pub text: &'a str,
    pub kind: Kind,
    /// Byte range in the scanned text; always on char boundaries.
    pub span: Range<usize>,
}

/// The tokens of a text, white space skipped.
pub(super) struct Tokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Tokens<'a> {
    pub fn new(text: &'a str) -> Self {
        Tokens { text, at: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let start = self.at + self.text[self.at..].find(|c: char| !c.is_whitespace())?;
        let rest = &self.text[start..];
        let mut chars = rest.char_indices();
        let (_, first) = chars.next()?;
        let kind = kind_of(first);
        let len = match kind {
            Kind::Word | Kind::Number => chars
                .find(|&(_, c)| kind_of(c) != kind)
                .map_or(rest.len(), |(offset, _)| offset),
            Kind::Han | Kind::Symbol => first.len_utf8(),
        };
        let end = start + len;
        self.at = end;
        Some(Token {
            text: &self.text[start..end],
            kind,
            span: start..end,
        })
    }
}

fn kind_of(c: char) -> Kind {
    if c.is_ascii_digit() {
        Kind::Number
    } else if is_han(c) {
        Kind::Han
    } else if c.is_alphabetic() {
        Kind::Word
    } else {
        Kind::Symbol
    }
}

/// CJK unified ideographs (with extensions A to F and the compatibility
/// block) and the ideographic zero.
pub(super) fn is_han(c: char) -> bool {
    matches!(
        c,
        '\u{3400}'..='\u{4DBF}'
            | '\u{4E00}'..='\u{9FFF}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{20000}'..='\u{2FA1F}'
            | '〇'
    )
}

/// A position in a token slice. A rule reads forward from where the scan
/// put it; the scan keeps the position only if the rule found a date, so a
/// rule that gives up need not rewind.
pub(super) struct Cursor<'a> {
    tokens: &'a [Token<'a>],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(tokens: &'a [Token<'a>], at: usize) -> Self {
        Cursor { tokens, at }
    }

    /// The index of the next token to read.
    pub fn position(&self) -> usize {
        self.at
    }

    pub fn at_end(&self) -> bool {
        self.at >= self.tokens.len()
    }

    pub fn next_kind(&self) -> Option<Kind> {
        self.tokens.get(self.at).map(|token| token.kind)
    }

    /// The text of the token at `position`.
    pub fn text_at(&self, position: usize) -> Option<&'a str> {
        self.tokens.get(position).map(|token| token.text)
    }

    /// The text of the token read last.
    pub fn last_text(&self) -> Option<&'a str> {
        self.text_at(self.at.checked_sub(1)?)
    }

    /// Takes the next token if `accept` likes it.
    pub fn take_if(&mut self, accept: impl FnOnce(&Token<'a>) -> bool) -> Option<&'a Token<'a>> {
        let token = self.tokens.get(self.at).filter(|token| accept(token))?;
        self.at += 1;
        Some(token)
    }

    /// Reads every token of `pattern` (letters compared without case), or
    /// nothing.
    pub fn phrase(&mut self, pattern: &str) -> bool {
        // Most patterns are refused by the next token alone: compare it
        // with the pattern's first bytes before splitting the pattern (the
        // scan tries every rule's patterns at every token). An ASCII case
        // change keeps byte lengths, so the bytes of an equal first token
        // are the pattern's first bytes.
        let Some(next) = self.tokens.get(self.at) else {
            return pattern.trim_start().is_empty();
        };
        // Nearly every pattern starts with a visible ASCII character, which
        // is no white space: only the others pay for the Unicode trim.
        let pattern = match pattern.as_bytes().first() {
            Some(first) if first.is_ascii_graphic() => pattern,
            _ => pattern.trim_start(),
        };
        let starts_alike = pattern
            .get(..next.text.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(next.text));
        if !starts_alike {
            return false;
        }
        let start = self.at;
        for expected in Tokens::new(pattern) {
            let matched = self.take_if(|token| token.text.eq_ignore_ascii_case(expected.text));
            if matched.is_none() {
                self.at = start;
                return false;
            }
        }
        true
    }

    /// The value of the longest phrase of `table` found at the cursor, so
    /// `a couple of` wins over `a`.
    pub fn lookup<T: Copy>(&mut self, table: &[(&str, T)]) -> Option<T> {
        let start = self.at;
        let mut best: Option<(usize, T)> = None;
        for &(pattern, value) in table {
            self.at = start;
            if self.phrase(pattern) && best.is_none_or(|(end, _)| self.at > end) {
                best = Some((self.at, value));
            }
        }
        self.at = best.map_or(start, |(end, _)| end);
        best.map(|(_, value)| value)
    }

    /// Runs `read` and rewinds if it finds nothing, for optional parts in
    /// the middle of a phrase.
    pub fn attempt<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let start = self.at;
        let found = read(self);
        if found.is_none() {
            self.at = start;
        }
        found
    }

    /// A number written with at most `max_digits` digits (at most 9).
    pub fn number(&mut self, max_digits: usize) -> Option<u32> {
        self.attempt(|cursor| {
            let token = cursor
                .take_if(|token| token.kind == Kind::Number && token.text.len() <= max_digits)?;
            token.text.parse().ok()
        })
    }

    /// Whether the next token starts right where the last one read ended
    /// (`7th`, `2023-05-07`).
    pub fn touching(&self) -> bool {
        self.at
            .checked_sub(1)
            .is_some_and(|last| self.touch(last, self.at))
    }

    /// Whether the token before `position` is `word`, in any case.
    pub fn word_before(&self, position: usize, word: &str) -> bool {
        position
            .checked_sub(1)
            .and_then(|before| self.text_at(before))
            .is_some_and(|text| text.eq_ignore_ascii_case(word))
    }

    /// Whether the token right before `position`, touching it, is a Han
    /// character among `chars`.
    pub fn han_before(&self, position: usize, chars: &str) -> bool {
        position
            .checked_sub(1)
            .is_some_and(|before| self.touch(before, position) && self.is_han_among(before, chars))
    }

    /// Whether the next token, touching the last one read, is a Han
    /// character among `chars`.
    pub fn han_next(&self, chars: &str) -> bool {
        self.touching() && self.is_han_among(self.at, chars)
    }

    fn touch(&self, before: usize, after: usize) -> bool {
        match (self.tokens.get(before), self.tokens.get(after)) {
            (Some(before), Some(after)) => before.span.end == after.span.start,
            _ => false,
        }
    }

    fn is_han_among(&self, position: usize, chars: &str) -> bool {
        self.tokens
            .get(position)
            .is_some_and(|token| token.kind == Kind::Han && chars.contains(token.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        Tokens::new(text).map(|token| token.text).collect()
    }

    #[test]
    fn splits_words_numbers_han_and_symbols() {
        assert_eq!(
            texts("On May 7th, 2023-05-07 我昨天"),
            ["On", "May", "7", "th", ",", "2023", "-", "05", "-", "07", "我", "昨", "天"]
        );
        assert_eq!(texts("café todays"), ["café", "todays"]);
        assert_eq!(texts("  \n "), Vec::<&str>::new());
    }

    #[test]
    fn a_phrase_matches_whole_tokens_in_any_case() {
        let tokens: Vec<_> = Tokens::new("MAY 7 ma may").collect();
        let matches = |at: usize, pattern: &str| {
            let mut cursor = Cursor::new(&tokens, at);
            let matched = cursor.phrase(pattern);
            (matched, cursor.position())
        };
        assert_eq!(matches(0, "may 7"), (true, 2));
        assert_eq!(matches(0, " May  7"), (true, 2));
        // The next token only starts like the pattern, or the pattern only
        // starts like the token: no match, and the cursor stays.
        assert_eq!(matches(2, "may"), (false, 2));
        assert_eq!(matches(0, "mayday"), (false, 0));
        assert_eq!(matches(0, "may 8"), (false, 0));
        assert_eq!(matches(3, "may 7"), (false, 3));
        // At the end only the empty phrase is found.
        assert_eq!(matches(4, "may"), (false, 4));
        assert_eq!(matches(4, " "), (true, 4));
        // Not ASCII: compared as is.
        let han: Vec<_> = Tokens::new("昨天").collect();
        assert!(Cursor::new(&han, 0).phrase("昨 天"));
        assert!(!Cursor::new(&han, 0).phrase("今 天"));
    }

    #[test]
    fn lookup_prefers_the_longest_phrase() {
        let tokens: Vec<_> = Tokens::new("a couple of days").collect();
        let mut cursor = Cursor::new(&tokens, 0);
        let table = [("a", 1), ("a couple of", 2), ("a couple", 3)];
        assert_eq!(cursor.lookup(&table), Some(2));
        assert_eq!(cursor.position(), 3);
    }
}
