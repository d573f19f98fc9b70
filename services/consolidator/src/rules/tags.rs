//! Tags: 1–3 lowercase keywords from what a candidate is about.
//!
//! English: content words of the pattern's object (stop words, pronouns and
//! the pattern's own verbs left out). Chinese: the object noun phrase when it
//! is short once leading verbs and trailing particles are cut ("吃辣" → "辣",
//! "北京海淀区"), plus any ASCII words ("markdown"). When nothing is left the
//! kind's name is the tag.

use std::sync::LazyLock;

use mnemo_domain::MemoryKind;
use regex::Regex;

use super::patterns::Lang;
use super::text::words;

pub(crate) const MAX_TAGS: usize = 3;

const EN_STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "always",
    "am",
    "an",
    "and",
    "any",
    "are",
    "around",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "can't",
    "cannot",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don't",
    "down",
    "during",
    "each",
    "else",
    "especially",
    "etc",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "i'd",
    "i'll",
    "i'm",
    "i've",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "just",
    "kind",
    "like",
    "lot",
    "me",
    "more",
    "most",
    "much",
    "my",
    "myself",
    "never",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "pretty",
    "quite",
    "rather",
    "really",
    "same",
    "she",
    "should",
    "so",
    "some",
    "sort",
    "still",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "around",
    "approximately",
    "roughly",
    "usually",
    "mostly",
    "generally",
    "actually",
    "anymore",
    "ever",
    "whenever",
    "definitely",
    "absolutely",
    "totally",
    "truly",
    "lately",
    "currently",
    "now",
    "started",
    "just",
    "since",
    "years",
    "year",
    "months",
    "month",
    "weeks",
    "week",
    "time",
    "times",
    "lots",
    "bit",
    "maybe",
    "probably",
    "want",
    "go",
    "going",
    "make",
    "sure",
    "use",
    "using",
    "answer",
    "reply",
    "respond",
    "call",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "first",
    "last",
    "new",
    "old",
    "lot",
    "many",
    "several",
    "named",
    "called",
    "next",
    "later",
    "soon",
];

static ZH_LEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:请|吃|喝|看|玩|用|去|听|做|在|是|当|学|练|弹|打|穿|住在|住|一名|一位|一个|一只|一条|一家|个|名|位|只|条|的|了|着|过|很|特别|非常|都|也|还|对|和|跟|把|被|给|从|到|跑|养|读|写|有)+").expect("static regex")
});
static ZH_TRAILING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:了|吧|啊|呀|呢|哦|啦|的|工作|上班|上学|读书|过敏)+$").expect("static regex")
});
static ASCII_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#]|[0-9]+[A-Za-z]+").expect("static regex")
});
/// PII placeholders from the scrubber ("[EMAIL]") are not keywords.
static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[[A-Z_]+\]").expect("static regex"));

pub(crate) fn tags(
    lang: Lang,
    kind: MemoryKind,
    content: &str,
    object: Option<&str>,
    tag: Option<&str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |candidate: String| {
        let candidate = candidate.trim().to_lowercase();
        if !candidate.is_empty() && !out.contains(&candidate) && out.len() < MAX_TAGS {
            out.push(candidate);
        }
    };
    let source = PLACEHOLDER
        .replace_all(object.unwrap_or(content), " ")
        .into_owned();
    if let Some(tag) = tag {
        let tag = tag.trim();
        if !tag.is_empty() {
            push(tag.to_owned());
        }
    }
    match lang {
        Lang::En => {
            for word in words(&source) {
                if word.chars().count() >= 2 && !EN_STOP_WORDS.contains(&word.as_str()) {
                    push(word);
                }
            }
        }
        Lang::Zh => {
            if let Some(phrase) = zh_object_phrase(&source) {
                push(phrase);
            }
            for word in ASCII_WORD.find_iter(&source) {
                let word = word.as_str().to_lowercase();
                if !EN_STOP_WORDS.contains(&word.as_str()) {
                    push(word);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(kind.as_str().to_owned());
    }
    out
}

/// The object noun phrase of a Chinese clause, if it is short enough to be a
/// keyword (at most 8 characters, no ASCII).
fn zh_object_phrase(object: &str) -> Option<String> {
    let mut phrase: &str = object.trim();
    // Up to the first comma or sentence mark.
    if let Some(cut) = phrase.find(['，', ',', '。', '；', '！', '？']) {
        phrase = &phrase[..cut];
    }
    let phrase = ZH_LEADING.replace(phrase, "");
    let phrase = ZH_TRAILING.replace(&phrase, "").into_owned();
    // "含花生的菜" → "含花生": keep what precedes a 的 when it is a word.
    let phrase = match phrase.split_once('的') {
        Some((before, _)) if before.chars().count() >= 2 => before.to_owned(),
        _ => phrase,
    };
    // A word, not a clause: CJK with at most a few ASCII letters or digits
    // ("方案B"), no spaces.
    let length = phrase.chars().count();
    let word_like = phrase
        .chars()
        .all(|c| super::text::is_cjk(c) || c.is_ascii_alphanumeric())
        && phrase.chars().any(super::text::is_cjk);
    ((1..=8).contains(&length) && word_like).then_some(phrase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_tags_are_content_words() {
        assert_eq!(
            tags(
                Lang::En,
                MemoryKind::Preference,
                "I really love spicy Sichuan food",
                Some("spicy Sichuan food"),
                None
            ),
            vec!["spicy", "sichuan", "food"]
        );
        assert_eq!(
            tags(
                Lang::En,
                MemoryKind::Fact,
                "My name is [PERSON]",
                Some("[PERSON]"),
                Some("name")
            ),
            vec!["name"]
        );
    }

    #[test]
    fn chinese_tags_take_the_object_phrase() {
        assert_eq!(
            tags(
                Lang::Zh,
                MemoryKind::Preference,
                "我喜欢吃辣",
                Some("吃辣"),
                None
            ),
            vec!["辣"]
        );
        assert_eq!(
            tags(
                Lang::Zh,
                MemoryKind::Rule,
                "报告请用 Markdown 表格输出",
                Some("用 Markdown 表格输出"),
                None
            ),
            vec!["markdown"]
        );
        assert_eq!(
            tags(
                Lang::Zh,
                MemoryKind::Decision,
                "我们决定暑假和全家人一起开车环游整个欧洲大陆",
                Some("暑假和全家人一起开车环游整个欧洲大陆"),
                None
            ),
            vec!["decision"]
        );
    }
}
