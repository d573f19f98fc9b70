//! What a query says about *who* and *when*, read before ranking: a
//! speaker of the conversation it names, and the dates it names.
//!
//! Transcripts label their turns (`Caroline: I went to ...`), and a
//! question about someone ("What did Caroline research?") is mostly
//! answered by what that person said. Left in the query, the name is a
//! poor search term: it is in half the turns (as their label) and in
//! every turn that addresses the person, so it pulls the other speaker's
//! short replies ("Yep, Caroline.") to the top. The retriever therefore
//! searches without the name and prefers the named speaker's turns
//! instead ([`speaker_of`], [`named_speakers`], [`without_names`]).
//!
//! A query that names a date ("on October 13, 2023", "last May") is about
//! what was said then, or what names that day: [`QueryDates`].
//!
//! A question is rarely its own answer: a turn that mostly asks ("What
//! kind of yoga is it?") matches a question by its form: on the LoCoMo
//! dev split, turns more than half questions were 12 % of the episodes
//! ranked in the top 25 that were not evidence, and under 1 % of the
//! evidence. [`question_share`] says how much of a turn asks, so ranking
//! can weigh it down.
//!
//! Key decision: speakers are learnt from the labels of the turns a first
//! pass found, not from a stored list of names, so nothing new is kept
//! about a subject and a conversation without labels costs nothing.

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_domain::dates;
use mnemo_vector_index::{PointType, SearchRequest};

/// Longest speaker label read, in characters.
const MAX_LABEL_CHARS: usize = 40;
/// Most words in a label: "Dr. Ana Costa" is a name, a sentence is not.
const MAX_LABEL_WORDS: usize = 3;

/// The speaker label a turn opens with (`Name: ...`, `小明：...`), when it
/// has one: up to three words, each opening with a capital letter (or a
/// Chinese character), no digits.
pub fn speaker_of(text: &str) -> Option<&str> {
    let (label, _) = text.split_once([':', '：'])?;
    let label = label.trim();
    if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
        return None;
    }
    let words: Vec<&str> = label.split_whitespace().collect();
    let name_like = words.len() <= MAX_LABEL_WORDS
        && words.iter().all(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || is_cjk(c))
                && word
                    .chars()
                    .all(|c| c.is_alphabetic() || matches!(c, '.' | '\'' | '-' | '’'))
        });
    name_like.then_some(label)
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}')
}

/// The speakers (labels) that `query` names: a label counts where it
/// stands as a whole word (or, in Chinese, anywhere).
pub fn named_speakers<'a>(query: &str, speakers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for speaker in speakers {
        if !named.iter().any(|n| n == speaker) && find_word(query, speaker).is_some() {
            named.push(speaker.to_owned());
        }
    }
    named
}

/// Byte range of the first whole-word occurrence of `word` in `text`.
fn find_word(text: &str, word: &str) -> Option<std::ops::Range<usize>> {
    let cjk = word.chars().all(is_cjk);
    let mut from = 0;
    while let Some(offset) = text[from..].find(word) {
        let (start, end) = (from + offset, from + offset + word.len());
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let bounded = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if cjk || (bounded(before) && bounded(after)) {
            return Some(start..end);
        }
        from = end;
    }
    None
}

/// The query with the names taken out (with a possessive `'s`), or `None`
/// when there is no name to take out or nothing would be left to search
/// for.
pub fn without_names(query: &str, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let mut text = query.to_owned();
    for name in names {
        while let Some(range) = find_word(&text, name) {
            let mut end = range.end;
            for possessive in ["'s", "’s", "'", "’"] {
                if text[end..].starts_with(possessive) {
                    end += possessive.len();
                    break;
                }
            }
            text.replace_range(range.start..end, " ");
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.chars().any(char::is_alphanumeric).then_some(text)
}

/// The share of a turn's text (after its speaker label, counted in
/// characters other than whitespace) that is in sentences ending with a
/// question mark: 1.0 for "What kind of yoga is it?", 0.0 for a turn that
/// asks nothing. A turn with nothing to count asks nothing.
pub fn question_share(text: &str) -> f64 {
    let body = match speaker_of(text) {
        Some(_) => text.split_once([':', '：']).map_or(text, |(_, said)| said),
        None => text,
    };
    let is_mark = |c: &char| matches!(c, '.' | '!' | '?' | '。' | '！' | '？');
    let (mut asked, mut all, mut sentence) = (0usize, 0usize, 0usize);
    // Whether the run of marks the current sentence ends with ("?!")
    // holds a question mark.
    let mut asks = false;
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        sentence += 1;
        if is_mark(&c) {
            asks |= matches!(c, '?' | '？');
        } else {
            asks = false;
        }
        // A sentence ends once its run of marks is over and a space
        // follows ("3.5" is one word; Chinese needs no space), or with
        // the text.
        let ends = is_mark(&c)
            && chars
                .peek()
                .is_some_and(|n| !is_mark(n) && (n.is_whitespace() || !c.is_ascii()));
        if ends || chars.peek().is_none() {
            if asks {
                asked += sentence;
            }
            all += sentence;
            sentence = 0;
            asks = false;
        }
    }
    if all == 0 {
        0.0
    } else {
        asked as f64 / all as f64
    }
}

/// The periods a query names, resolved against the day it is asked.
#[derive(Debug, Clone, Default)]
pub struct QueryDates(Vec<(NaiveDate, NaiveDate)>);

impl QueryDates {
    pub fn of(query: &str, today: NaiveDate) -> QueryDates {
        QueryDates(
            dates::resolve(query, today)
                .into_iter()
                .map(|date| (date.start, date.end))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The request restricted to the episodes said within the named
    /// periods (from the first day's start to the last day's end, UTC),
    /// or `None` when the query names none or the request does not search
    /// episodes.
    pub fn within(&self, request: &SearchRequest) -> Option<SearchRequest> {
        let start = self.0.iter().map(|(start, _)| *start).min()?;
        let end = self.0.iter().map(|(_, end)| *end).max()?;
        if !request.filter.types.contains(&PointType::Episode) {
            return None;
        }
        let from = start.and_hms_opt(0, 0, 0)?.and_utc().timestamp();
        let to = end.and_hms_opt(23, 59, 59)?.and_utc().timestamp();
        let mut within = request.clone();
        let filter = &mut within.filter;
        filter.types = vec![PointType::Episode];
        filter.created_from = Some(filter.created_from.map_or(from, |f| f.max(from)));
        filter.created_to = Some(filter.created_to.map_or(to, |t| t.min(to)));
        Some(within)
    }

    /// Whether a turn said at `said_at` with this text is about one of the
    /// periods: said within it, or naming a date within it (resolved
    /// against the day it was said).
    pub fn meets(&self, said_at: DateTime<Utc>, text: &str) -> bool {
        let day = said_at.date_naive();
        let overlaps =
            |start: NaiveDate, end: NaiveDate| self.0.iter().any(|(s, e)| start <= *e && *s <= end);
        overlaps(day, day)
            || dates::resolve(text, day)
                .iter()
                .any(|date| overlaps(date.start, date.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_share_of_a_turn_that_asks() {
        let close = |text: &str, expected: f64| {
            let share = question_share(text);
            assert!((share - expected).abs() < 1e-9, "{text}: {share}");
        };
        // "Wow!" is 4 characters, the question 19.
        close("Maria: Wow! What kind of yoga is it?", 19.0 / 23.0);
        close("Maria: What kind of yoga is it?", 1.0);
        close("John: I finished Dune. Loved it.", 0.0);
        // The label is not counted, a run of marks ends one sentence (a
        // question when it holds a question mark), and the last sentence
        // ends with the text.
        close("Tim: Really?! I read it twice. Have you", 8.0 / 28.0);
        close("小明：你去哪儿了？我去了北京。", 0.5);
        // Without a label the whole text counts.
        close("why not? sure.", 7.0 / 12.0);
        close("Is it 3.5? It is 3.5.", 0.5);
        assert_eq!(question_share(""), 0.0);
        assert_eq!(question_share("Ana:   "), 0.0);
    }

    #[test]
    fn a_speaker_label_is_a_short_capitalised_name_before_a_colon() {
        assert_eq!(
            speaker_of("Caroline: I went to a support group."),
            Some("Caroline")
        );
        assert_eq!(speaker_of("Dr. Ana Costa: hello"), Some("Dr. Ana Costa"));
        assert_eq!(speaker_of("小明：我昨天去了公园"), Some("小明"));
        assert_eq!(speaker_of("I said this: hello"), None, "not capitalised");
        assert_eq!(speaker_of("Note to self remember: milk"), None, "a phrase");
        assert_eq!(speaker_of("Meeting at 10:30"), None, "digits");
        assert_eq!(speaker_of("no label at all"), None);
    }

    #[test]
    fn names_are_found_as_whole_words_and_taken_out_with_a_possessive() {
        let speakers = ["Caroline", "Mel", "Melanie"];
        let query = "What did Melanie think of Caroline's decision?";
        assert_eq!(
            named_speakers(query, speakers),
            vec!["Caroline".to_owned(), "Melanie".to_owned()],
            "Mel is inside Melanie, not a word of the query"
        );
        let names = named_speakers(query, speakers);
        assert_eq!(
            without_names(query, &names).as_deref(),
            Some("What did think of decision?")
        );
        assert_eq!(without_names(query, &[]), None, "no name, no second search");
        assert_eq!(
            without_names("Caroline?", &["Caroline".to_owned()]),
            None,
            "nothing left to search for"
        );
    }

    #[test]
    fn a_turn_meets_a_named_date_when_said_on_it_or_naming_it() {
        let asked = NaiveDate::from_ymd_opt(2024, 1, 10).unwrap();
        let dates = QueryDates::of("What did she paint on October 13, 2023?", asked);
        assert!(!dates.is_empty());
        let on_the_day = Utc.with_ymd_and_hms(2023, 10, 13, 18, 0, 0).unwrap();
        let day_after = Utc.with_ymd_and_hms(2023, 10, 14, 9, 0, 0).unwrap();
        assert!(dates.meets(on_the_day, "I finished a painting."));
        assert!(!dates.meets(day_after, "I finished a painting."));
        assert!(
            dates.meets(day_after, "I finished it yesterday."),
            "names the day"
        );
        let month = QueryDates::of("What happened in May 2023?", asked);
        assert!(month.meets(Utc.with_ymd_and_hms(2023, 5, 20, 0, 0, 0).unwrap(), "x"));
        assert!(!month.meets(Utc.with_ymd_and_hms(2023, 6, 1, 0, 0, 0).unwrap(), "x"));
        assert!(QueryDates::of("What does she drink?", asked).is_empty());
    }

    #[test]
    fn the_search_within_named_days_asks_for_their_episodes_only() {
        let asked = NaiveDate::from_ymd_opt(2024, 1, 10).unwrap();
        let request = |types: Vec<PointType>, created_to: Option<i64>| SearchRequest {
            filter: mnemo_vector_index::SearchFilter {
                types,
                created_to,
                ..Default::default()
            },
            dense: None,
            text: Some("what did she paint".into()),
            mode: mnemo_vector_index::SearchMode::Keyword,
            limit: 40,
            prefetch: 100,
            rrf_k: 10,
            with_vectors: false,
        };
        let both = vec![PointType::Memory, PointType::Episode];
        let dates = QueryDates::of("What did she paint on October 13, 2023?", asked);
        let within = dates.within(&request(both.clone(), None)).unwrap();
        let day = Utc
            .with_ymd_and_hms(2023, 10, 13, 0, 0, 0)
            .unwrap()
            .timestamp();
        assert_eq!(within.filter.types, vec![PointType::Episode]);
        assert_eq!(within.filter.created_from, Some(day));
        assert_eq!(within.filter.created_to, Some(day + 86_399));
        // A bound the caller set stays when it is narrower.
        let narrower = dates.within(&request(both, Some(day + 3_600))).unwrap();
        assert_eq!(narrower.filter.created_to, Some(day + 3_600));
        assert!(dates
            .within(&request(vec![PointType::Memory], None))
            .is_none());
        assert!(QueryDates::of("What does she paint?", asked)
            .within(&request(vec![PointType::Episode], None))
            .is_none());
    }
}
