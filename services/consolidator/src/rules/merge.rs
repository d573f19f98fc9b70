//! The rule-based merge: Skip a near-exact textual duplicate, Supersede the
//! same slot with a new value ("I live in Paris" over "I live in Lyon"),
//! otherwise Keep. Only where the rule is certain — everything subtler
//! (inclusion, paraphrase, merging two memories into a better one) is left
//! to the LLM strategy; the rules never answer `MergeInto`, because that
//! needs new wording they cannot write.

use std::sync::LazyLock;

use regex::Regex;

use super::text::{has_cjk, trim_end_punctuation, words};
use crate::strategy::{Candidate, ExistingMemory, MergeAction, MergeDecision};

/// Words that do not change what a statement says ("I really love green
/// tea" is "I love green tea"). Negations are deliberately absent.
const EN_FILLERS: &[&str] = &[
    "i",
    "user",
    "the",
    "a",
    "an",
    "really",
    "just",
    "actually",
    "very",
    "so",
    "also",
    "truly",
    "absolutely",
    "definitely",
    "totally",
    "quite",
    "pretty",
    "currently",
    "still",
    "now",
    "honestly",
    "basically",
    "he",
    "she",
    "they",
];
static ZH_FILLERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:我们|我|用户|他|她)|真的|其实|非常|特别|很|挺|了|的|啊|呀|吧|呢|哦|啦|现在|目前",
    )
    .expect("static regex")
});

/// The text of a memory with punctuation, case, fillers and the subject
/// taken out; two memories with the same key say the same thing.
pub(crate) fn duplicate_key(text: &str) -> String {
    if has_cjk(text) {
        let kept: String = text
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        ZH_FILLERS.replace_all(&kept, "").into_owned()
    } else {
        words(text)
            .into_iter()
            .filter(|w| !EN_FILLERS.contains(&w.as_str()))
            .map(|w| stem(&w).to_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// "loves" → "love", "lives" → "live": enough to match a third-person
/// rewrite of the same statement.
fn stem(word: &str) -> &str {
    if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        &word[..word.len() - 1]
    } else {
        word
    }
}

/// A single-valued attribute of someone: where they live, their job, …
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slot {
    /// "residence", "job", "favourite:colour", …
    pub name: String,
    /// Whose attribute: "" for the user, "daughter" for "my daughter is 6".
    pub subject: String,
    pub value: String,
    pub chinese: bool,
}

struct SlotPattern {
    name: &'static str,
    regex: Regex,
}

fn slot(name: &'static str, source: &str) -> SlotPattern {
    SlotPattern {
        name,
        regex: Regex::new(&format!("(?i){source}")).expect("static slot regex"),
    }
}

const EN_VALUE: &str = r"(?P<v>[^,.;!?]+)";
const ZH_VALUE: &str = r"(?P<v>[^，,。；;！!？?]+)";

static SLOTS: LazyLock<Vec<SlotPattern>> = LazyLock::new(|| {
    let v = EN_VALUE;
    let z = ZH_VALUE;
    vec![
        slot(
            "residence",
            &format!(
                r"\b(?:live|lives|living|reside|resides|residing|based|located)\s+(?:in|at)\s+{v}"
            ),
        ),
        slot(
            "job",
            &format!(r"\b(?:work|works|working)\s+as\s+(?:an?\s+)?{v}"),
        ),
        slot(
            "workplace",
            &format!(r"\b(?:work|works|working)\s+(?:at|for)\s+{v}"),
        ),
        slot("name", &format!(r"\bname\s+is\s+{v}")),
        slot(
            "age",
            r"^(?:i'm|i am|im)\s+(?P<v>\d{1,3})(?:\s*(?:years? old|yo|y/o))?$",
        ),
        slot(
            "age",
            r"\b(?:is|am|are)\s+(?P<v>\d{1,3})\s*(?:years? old|yo|y/o)\b",
        ),
        slot(
            "favourite",
            &format!(r"\bfavou?rite\s+(?P<k>[a-z][a-z -]{{0,30}}?)\s+(?:is|are)\s+{v}"),
        ),
        slot(
            "attribute",
            &format!(
                r"\b(?P<k>budget|birthday|email|e-mail|phone number|address|salary|rent|height|weight|timezone|time zone|native language|mother tongue)\s+(?:is|are)\s+(?:around\s+|about\s+|roughly\s+)?{v}"
            ),
        ),
        slot(
            "residence",
            &format!(r"(?:住在|定居在|生活在|居住在|定居|住){z}"),
        ),
        slot("workplace", r"在(?P<v>[^，,。；！？]+?)(?:工作|上班|任职)"),
        slot("job", &format!(r"(?:工作|职业)是{z}")),
        slot("job", &format!(r"是(?:一名|一位){z}")),
        slot("name", &format!(r"(?:名字(?:是|叫)|^(?:我|用户)叫){z}")),
        slot("age", r"(?P<v>[0-9一二三四五六七八九十两]+多?)岁"),
        slot(
            "favourite",
            &format!(r"最(?:喜欢|爱)的(?P<k>[^是]{{1,10}}?)是{z}"),
        ),
        slot(
            "attribute",
            &format!(
                r"(?P<k>预算|生日|邮箱|电话|手机号|地址|工资|身高|体重|时区|母语)(?:是|为|大概是|大约是|在|有)?{z}"
            ),
        ),
    ]
});

/// Words before the slot that make the statement something other than a
/// plain present fact: negation, past, future, wishes.
static EN_UNCERTAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:not|don't|doesn't|didn't|dont|no longer|never|used|will|'ll|going|plan|plans|planning|want|wants|would|might|may|could|should|hope|if|moving|move|maybe|probably|think|former|previously|once)\b|n't\b")
        .expect("static regex")
});
static ZH_UNCERTAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"不|没|以前|曾经|之前|打算|想|要|将|会|准备|计划|如果|搬|可能|也许|原来")
        .expect("static regex")
});
const EN_SUBJECT_FILLERS: &[&str] = &[
    "i",
    "i'm",
    "im",
    "we",
    "we're",
    "user",
    "the",
    "my",
    "our",
    "user's",
    "currently",
    "now",
    "still",
    "also",
    "really",
    "actually",
    "he",
    "she",
    "they",
    "their",
    "his",
    "her",
    "is",
    "am",
    "are",
    "s",
];
static ZH_SUBJECT_FILLERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"我们|我|用户|的|现在|目前|一直|也|还|家|一家").expect("static regex")
});
static EN_VALUE_CUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s+(?:with|and|since|for|because|but|near|where|which|who|now|currently|these days|at the moment)\b.*$")
        .expect("static regex")
});
static ZH_VALUE_CUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:和|跟|，|了|的|吧|啊|呢|左右|附近).*$").expect("static regex")
});

/// The slot a memory fills, when a rule can tell for certain.
pub(crate) fn slot_of(text: &str) -> Option<Slot> {
    let text = trim_end_punctuation(text.trim());
    let chinese = has_cjk(text);
    for pattern in SLOTS.iter() {
        // As in `match_clause`: most texts fill no slot, and `is_match`
        // says so without allocating capture slots.
        if !pattern.regex.is_match(text) {
            continue;
        }
        let Some(captures) = pattern.regex.captures(text) else {
            continue;
        };
        let whole = captures.get(0).expect("group 0");
        let prefix = &text[..whole.start()];
        let subject = subject_of(prefix, chinese)?;
        let raw_value = captures.name("v")?.as_str().trim();
        let value = if chinese {
            ZH_VALUE_CUT.replace(raw_value, "").trim().to_lowercase()
        } else {
            EN_VALUE_CUT.replace(raw_value, "").trim().to_lowercase()
        };
        let value = value
            .trim_start_matches("the ")
            .trim_start_matches("a ")
            .trim_start_matches("an ")
            .trim()
            .to_owned();
        if value.is_empty() {
            return None;
        }
        let name = match captures.name("k") {
            Some(key) => format!("{}:{}", pattern.name, key.as_str().trim().to_lowercase()),
            None => pattern.name.to_owned(),
        };
        return Some(Slot {
            name,
            subject,
            value,
            chinese,
        });
    }
    None
}

/// Whose slot it is, from the words before it; `None` when those words make
/// the statement uncertain ("I used to live in…", "我打算住在…").
fn subject_of(prefix: &str, chinese: bool) -> Option<String> {
    if chinese {
        if ZH_UNCERTAIN.is_match(prefix) {
            return None;
        }
        let rest: String = ZH_SUBJECT_FILLERS
            .replace_all(prefix, "")
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect();
        (rest.chars().count() <= 6).then_some(rest)
    } else {
        if EN_UNCERTAIN.is_match(prefix) {
            return None;
        }
        let rest: Vec<String> = words(prefix)
            .into_iter()
            .filter(|w| !EN_SUBJECT_FILLERS.contains(&w.as_str()))
            .collect();
        (rest.len() <= 3).then(|| rest.join(" "))
    }
}

pub(crate) fn decide(
    index: usize,
    candidate: &Candidate,
    existing: &[ExistingMemory],
) -> MergeDecision {
    let key = duplicate_key(&candidate.content);
    if !key.is_empty() {
        if let Some(duplicate) = existing
            .iter()
            .find(|memory| duplicate_key(&memory.content) == key)
        {
            return MergeDecision {
                candidate: index,
                action: MergeAction::Skip,
                reason: format!("textual duplicate of memory {}", duplicate.id),
            };
        }
    }
    if let Some(new_slot) = slot_of(&candidate.content) {
        let mut best: Option<(&ExistingMemory, Slot)> = None;
        for memory in existing.iter().filter(|m| m.kind == candidate.kind) {
            let Some(old_slot) = slot_of(&memory.content) else {
                continue;
            };
            let same_slot = old_slot.name == new_slot.name
                && old_slot.subject == new_slot.subject
                && old_slot.chinese == new_slot.chinese;
            let better = best
                .as_ref()
                .is_none_or(|(current, _)| memory.similarity > current.similarity);
            if same_slot && better {
                best = Some((memory, old_slot));
            }
        }
        if let Some((memory, old_slot)) = best {
            if old_slot.value.contains(&new_slot.value) {
                return MergeDecision {
                    candidate: index,
                    action: MergeAction::Skip,
                    reason: format!(
                        "memory {} already holds {} = {:?}",
                        memory.id, new_slot.name, old_slot.value
                    ),
                };
            }
            return MergeDecision {
                candidate: index,
                action: MergeAction::Supersede { target: memory.id },
                reason: format!(
                    "{} changes from {:?} to {:?} (memory {})",
                    new_slot.name, old_slot.value, new_slot.value, memory.id
                ),
            };
        }
    }
    MergeDecision {
        candidate: index,
        action: MergeAction::Keep,
        reason: "new information".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_ignore_fillers_but_not_negation() {
        assert_eq!(
            duplicate_key("I really love green tea!"),
            duplicate_key("User loves green tea")
        );
        assert_ne!(
            duplicate_key("I like coffee"),
            duplicate_key("I don't like coffee")
        );
        assert_eq!(
            duplicate_key("我真的很喜欢绿茶"),
            duplicate_key("我喜欢绿茶。")
        );
    }

    #[test]
    fn slots_know_their_subject_and_value() {
        let mine = slot_of("I live in Lisbon with my partner").unwrap();
        assert_eq!(
            (
                mine.name.as_str(),
                mine.subject.as_str(),
                mine.value.as_str()
            ),
            ("residence", "", "lisbon")
        );
        let hers = slot_of("My daughter is 6 years old").unwrap();
        assert_eq!(
            (hers.name.as_str(), hers.subject.as_str()),
            ("age", "daughter")
        );
        assert_eq!(slot_of("I used to live in Lyon"), None);
        assert_eq!(slot_of("我打算住在上海"), None);
        let zh = slot_of("我住在北京海淀区").unwrap();
        assert_eq!(
            (zh.name.as_str(), zh.value.as_str()),
            ("residence", "北京海淀区")
        );
        let budget = slot_of("My budget is around 2000 euros").unwrap();
        assert_eq!(
            (budget.name.as_str(), budget.value.as_str()),
            ("attribute:budget", "2000 euros")
        );
    }
}
