//! Context injection (seed 001): turn the last messages of a conversation
//! into a query, and the memories and episodes found into a compact block
//! the agent puts in its prompt, within a token budget: a memories section
//! (a kind marker, the content, a relative time and the importance) and a
//! "from past conversations" section (the date, who said it, what was
//! said).

use chrono::{DateTime, Utc};
use mnemo_domain::events::Role;
use mnemo_domain::MemoryKind;

/// A rough token count that needs no tokenizer: about four characters per
/// token for alphabetic scripts, one per CJK character. Budgets are
/// approximate by design; the caller leaves headroom.
pub fn estimate_tokens(text: &str) -> usize {
    let mut cjk = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff)
}

/// "just now", "5 minutes ago", "3 days ago", "2 months ago".
pub fn relative_time(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - at).num_seconds().max(0);
    let (value, unit) = match seconds {
        0..=59 => return "just now".to_owned(),
        60..=3_599 => (seconds / 60, "minute"),
        3_600..=86_399 => (seconds / 3_600, "hour"),
        86_400..=2_591_999 => (seconds / 86_400, "day"),
        2_592_000..=31_535_999 => (seconds / 2_592_000, "month"),
        _ => (seconds / 31_536_000, "year"),
    };
    format!("{value} {unit}{} ago", if value == 1 { "" } else { "s" })
}

pub fn kind_marker(kind: MemoryKind) -> &'static str {
    match kind {
        MemoryKind::Fact => "[fact]",
        MemoryKind::Preference => "[preference]",
        MemoryKind::Decision => "[decision]",
        MemoryKind::Rule => "[rule]",
        MemoryKind::Status => "[status]",
    }
}

/// What a line of the block is.
#[derive(Debug, Clone, Copy)]
pub enum LineKind {
    Memory(MemoryKind),
    /// An episode, and who said it.
    Episode(Role),
}

pub struct BlockLine<'a> {
    pub kind: LineKind,
    pub content: std::borrow::Cow<'a, str>,
    /// A memory's last change; an episode's message time.
    pub updated_at: DateTime<Utc>,
    pub importance: f32,
}

const MEMORIES_HEADER: &str = "Relevant memories about the user (most relevant first):\n";
const EPISODES_HEADER: &str = "From past conversations (most relevant first):\n";

fn line_text(line: &BlockLine<'_>, now: DateTime<Utc>) -> String {
    match line.kind {
        LineKind::Memory(kind) => format!(
            "- {} {} ({}, importance {:.2})\n",
            kind_marker(kind),
            line.content.trim(),
            relative_time(line.updated_at, now),
            line.importance
        ),
        // The date itself, not "3 months ago": what was said is often about
        // its own day ("yesterday"), which the reader resolves from it.
        LineKind::Episode(role) => format!(
            "- [{}] {}: {}\n",
            line.updated_at.format("%Y-%m-%d"),
            crate::episodes::role_name(role),
            line.content.trim(),
        ),
    }
}

/// The formatted block, the positions of the lines that fit the budget
/// (ascending), and the tokens spent. Lines
/// are ranked across both sections and taken in that order, then shown by
/// section: memories first. A line that does not fit is skipped and the
/// next ones are still tried, so one long turn does not leave the rest of
/// the budget unspent; nothing ranked lower ever displaces a line ranked
/// higher. A section's header is paid for with its first line.
pub fn format_block(
    lines: &[BlockLine<'_>],
    token_budget: usize,
    now: DateTime<Utc>,
) -> (String, Vec<usize>, usize) {
    let mut memories = String::new();
    let mut episodes = String::new();
    let mut used = 0;
    let mut included = Vec::new();
    for (position, line) in lines.iter().enumerate() {
        let (section, header) = match line.kind {
            LineKind::Memory(_) => (&mut memories, MEMORIES_HEADER),
            LineKind::Episode(_) => (&mut episodes, EPISODES_HEADER),
        };
        let text = line_text(line, now);
        let header_cost = if section.is_empty() {
            estimate_tokens(header)
        } else {
            0
        };
        let cost = estimate_tokens(&text) + header_cost;
        if used + cost > token_budget {
            continue;
        }
        if section.is_empty() {
            section.push_str(header);
        }
        used += cost;
        section.push_str(&text);
        included.push(position);
    }
    if included.is_empty() {
        return (String::new(), included, 0);
    }
    // Each section starts with its header line; nothing else between them,
    // so what was counted is what is sent.
    let block = memories + &episodes;
    (block, included, used)
}

/// The profile at the top of a context block: a heading and the summary.
pub fn profile_section(summary: &str) -> String {
    format!("Profile of the user:\n{}\n", summary.trim())
}

/// The query for the next turn: the last `n` user and assistant messages,
/// oldest first, joined by newlines.
pub fn build_query<'a>(
    messages: impl DoubleEndedIterator<Item = (&'a str, &'a str)>,
    n: usize,
) -> String {
    let mut recent: Vec<&str> = messages
        .rev()
        .filter(|(role, _)| matches!(*role, "user" | "assistant"))
        .take(n)
        .map(|(_, content)| content)
        .collect();
    recent.reverse();
    recent.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    #[test]
    fn tokens_are_estimated_for_latin_and_cjk() {
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("我喜欢茶"), 4);
    }

    #[test]
    fn relative_times_read_naturally() {
        let now = Utc::now();
        assert_eq!(relative_time(now, now), "just now");
        assert_eq!(
            relative_time(now - Duration::minutes(1), now),
            "1 minute ago"
        );
        assert_eq!(relative_time(now - Duration::days(3), now), "3 days ago");
        assert_eq!(relative_time(now - Duration::days(400), now), "1 year ago");
    }

    #[test]
    fn the_block_respects_the_budget_in_order() {
        let now = Utc::now();
        let lines = [
            BlockLine {
                kind: LineKind::Memory(MemoryKind::Preference),
                content: "Loves green tea".into(),
                updated_at: now - Duration::days(2),
                importance: 0.85,
            },
            BlockLine {
                kind: LineKind::Memory(MemoryKind::Fact),
                content: "long ".repeat(200).into(),
                updated_at: now,
                importance: 0.7,
            },
            BlockLine {
                kind: LineKind::Memory(MemoryKind::Rule),
                content: "Never call before 9am".into(),
                updated_at: now,
                importance: 0.9,
            },
        ];
        let (block, included, used) = format_block(&lines, 60, now);
        // The long line does not fit; the shorter one after it still does,
        // below the one ranked first.
        assert_eq!(included, vec![0, 2]);
        assert!(
            block.contains("- [preference] Loves green tea (2 days ago, importance 0.85)\n- [rule] Never call before 9am"),
            "{block}"
        );
        assert!(!block.contains("long long"), "{block}");
        assert!(used <= 60);
        let (empty, none, _) = format_block(&lines, 5, now);
        assert!(empty.is_empty() && none.is_empty());
    }

    #[test]
    fn memories_and_episodes_share_one_ranked_budget_in_two_sections() {
        let now = Utc::now();
        let said = Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap();
        let lines = [
            BlockLine {
                kind: LineKind::Episode(Role::User),
                content: "I went to the support group yesterday.".into(),
                updated_at: said,
                importance: 0.5,
            },
            BlockLine {
                kind: LineKind::Memory(MemoryKind::Preference),
                content: "Loves green tea".into(),
                updated_at: now,
                importance: 0.85,
            },
            BlockLine {
                kind: LineKind::Episode(Role::Assistant),
                content: "long ".repeat(200).into(),
                updated_at: said,
                importance: 0.5,
            },
        ];
        let (block, included, used) = format_block(&lines, 80, now);
        assert_eq!(included, vec![0, 1], "{block}");
        let memories_at = block.find("Relevant memories").unwrap();
        let episodes_at = block.find("From past conversations").unwrap();
        assert!(memories_at < episodes_at, "memories first: {block}");
        assert!(
            block.contains("- [2023-05-08] user: I went to the support group yesterday.\n"),
            "{block}"
        );
        assert!(used <= 80, "{used}");
        // Episodes only: no memories header.
        let (only, n, _) = format_block(&lines[..1], 80, now);
        assert_eq!(n, vec![0]);
        assert!(only.starts_with("From past conversations"), "{only}");
    }

    #[test]
    fn the_query_uses_the_last_n_conversation_messages() {
        let messages = [
            ("system", "be nice"),
            ("user", "a"),
            ("assistant", "b"),
            ("tool", "x"),
            ("user", "c"),
            ("user", "d"),
        ];
        let query = build_query(messages.iter().map(|(r, c)| (*r, *c)), 3);
        assert_eq!(query, "b\nc\nd");
    }
}
