//! Text helpers of the rule strategy: language detection, sentence and clause
//! splitting, punctuation trimming. Pure functions over `&str`.

/// A CJK ideograph (the Chinese patterns apply to a clause holding one).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}')
}

pub(crate) fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// Curly quotes and full-width spaces to their ASCII forms, so one pattern
/// covers "I’m" and "I'm".
pub(crate) fn normalise_punctuation(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{3000}' | '\u{00A0}' => ' ',
            other => other,
        })
        .collect()
}

/// Characters that end a sentence. A '.' only ends one when followed by
/// whitespace or the end of the text, so "3.5", "e.g" and "v1.2" stay whole.
fn ends_sentence(chars: &[char], index: usize) -> bool {
    match chars[index] {
        '!' | '?' | ';' | '\n' | '。' | '！' | '？' | '；' | '…' | '~' | '～' => true,
        '.' => chars.get(index + 1).is_none_or(|next| next.is_whitespace()),
        _ => false,
    }
}

/// Sentences of a message, each with its terminator kept (the question mark
/// matters to the question check).
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut index = 0;
    while index < chars.len() {
        current.push(chars[index]);
        if ends_sentence(&chars, index) {
            // Keep runs like "?!" or "。。。" with the sentence they end.
            while index + 1 < chars.len() && ends_sentence(&chars, index + 1) {
                index += 1;
                current.push(chars[index]);
            }
            push_trimmed(&mut out, &current);
            current.clear();
        }
        index += 1;
    }
    push_trimmed(&mut out, &current);
    out
}

fn push_trimmed(out: &mut Vec<String>, piece: &str) {
    let trimmed = piece.trim();
    if !trimmed.is_empty() {
        out.push(trimmed.to_owned());
    }
}

/// One clause of a sentence and the separator that preceded it (used when an
/// elaboration is glued back onto the clause before it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Clause {
    pub text: String,
    pub separator: &'static str,
}

/// English words that, after " and " / " but ", start a new statement about
/// the user ("I live in Paris and work as a nurse"). A bare verb means the
/// subject carries over from the clause before.
const EN_SUBJECT_STARTS: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "im", "we", "we're", "we've", "my", "our", "let's",
];
const EN_CARRIED_VERBS: &[&str] = &[
    "work", "live", "love", "like", "hate", "prefer", "speak", "have", "own", "use", "enjoy", "am",
    "can't", "don't", "never", "always",
];
const EN_CONJUNCTIONS: &[&str] = &["and", "but", "so", "because", "while", "although", "though"];

/// Clauses of one sentence: split at commas (ASCII and full-width) and at
/// English conjunctions that start a new statement. "、" is an
/// enumeration comma and does not split, nor does a colon ("we've decided:
/// no more meetings on Fridays").
pub(crate) fn clauses(sentence: &str) -> Vec<Clause> {
    let mut pieces: Vec<Clause> = Vec::new();
    let mut current = String::new();
    let mut separator: &'static str = "";
    for c in sentence.chars() {
        match c {
            ',' | '，' => {
                push_clause(&mut pieces, &current, separator);
                current.clear();
                separator = if c == ',' { ", " } else { "，" };
            }
            _ => current.push(c),
        }
    }
    push_clause(&mut pieces, &current, separator);
    pieces
        .into_iter()
        .flat_map(|clause| split_conjunctions(&clause))
        .collect()
}

fn push_clause(out: &mut Vec<Clause>, text: &str, separator: &'static str) {
    let trimmed = text.trim();
    if !trimmed.is_empty() {
        out.push(Clause {
            text: trimmed.to_owned(),
            separator,
        });
    }
}

/// "I live in Paris and I work as a nurse" → two clauses; "I live with my
/// partner and two cats" stays one (no subject or known verb after "and").
fn split_conjunctions(clause: &Clause) -> Vec<Clause> {
    if has_cjk(&clause.text) {
        return vec![clause.clone()];
    }
    let words: Vec<&str> = clause.text.split_whitespace().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut separator = clause.separator;
    let mut index = 1;
    while index + 1 < words.len() {
        let word = words[index].to_ascii_lowercase();
        let next = words[index + 1]
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_ascii_lowercase();
        if EN_CONJUNCTIONS.contains(&word.as_str())
            && (EN_SUBJECT_STARTS.contains(&next.as_str())
                || EN_CARRIED_VERBS.contains(&next.as_str()))
        {
            out.push(Clause {
                text: words[start..index].join(" "),
                separator,
            });
            separator = " and ";
            start = index + 1;
            index += 2;
            continue;
        }
        index += 1;
    }
    out.push(Clause {
        text: words[start..].join(" "),
        separator,
    });
    out
}

/// Trailing punctuation and spaces off, e.g. "I love tea!!" → "I love tea".
pub(crate) fn trim_end_punctuation(text: &str) -> &str {
    text.trim_end_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '.' | '!'
                    | '?'
                    | ';'
                    | ','
                    | '~'
                    | '。'
                    | '！'
                    | '？'
                    | '；'
                    | '，'
                    | '～'
                    | '…'
                    | '、'
            )
    })
    .trim_start()
}

/// Lowercased words of an English text (letters, digits, apostrophes, '-').
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(|c: char| c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_keep_decimals_and_terminators() {
        assert_eq!(
            sentences("I'm 1.8m tall. Do you know? 我住在北京。好的"),
            vec!["I'm 1.8m tall.", "Do you know?", "我住在北京。", "好的"]
        );
    }

    #[test]
    fn conjunctions_split_only_before_a_new_statement() {
        let split: Vec<String> = clauses("I live in Paris and work as a nurse")
            .into_iter()
            .map(|c| c.text)
            .collect();
        assert_eq!(split, vec!["I live in Paris", "work as a nurse"]);
        assert_eq!(clauses("I live with my partner and two cats").len(), 1);
        assert_eq!(clauses("我喜欢苹果、香蕉，尤其是青苹果").len(), 2);
    }
}
