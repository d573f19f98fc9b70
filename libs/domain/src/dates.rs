//! Dates in a message, resolved against the message's own date.
//!
//! Episodic memory keeps every posted message as a dated episode. Said on
//! 2023-05-08, "yesterday" means 2023-05-07 for good, so a relative phrase
//! is resolved once, against the message's date, and indexed with the
//! episode ([`resolve`], [`ResolvedDate::describe`]); a question that asks
//! *when* ([`asks_when`]) is then answered from those dates. English and
//! Chinese are read. Pure: no clock; the reference date is always given.
//!
//! Key decision: a small table of phrase rules over tokens, no grammar and
//! no regex engine. Each rule reads forward from one token and returns a
//! period; the scan keeps the longest match at each token and continues
//! after it, so `the day before yesterday` is one date, not two.
//!
//! Conventions (weeks run Monday to Sunday, as in ISO 8601 and Chinese):
//! - `last Friday`: the most recent Friday strictly before the reference
//!   day. `this Friday`: the Friday of the reference's week, past or
//!   future. `next Friday`: the Friday of the following week. 上周五, 这周五,
//!   下周五 are the Fridays of the previous, current and following week.
//! - Past-leaning, because messages mostly tell what happened: `on Friday`
//!   is the most recent Friday, the reference day included; `over the
//!   weekend` and a bare 周末 are the weekend under way, else the last one;
//!   a date without a year (`May 7`, 5月7日) or a month alone (`in March`,
//!   三月) is the most recent one not after the reference.
//! - `last`/`this`/`next March`: strictly before the reference month / in
//!   the reference year / strictly after the reference month.
//! - Seasons are meteorological, northern hemisphere: spring March–May,
//!   summer June–August, fall September–November, winter December–February.
//!   `last summer` is the most recent one that ended before the reference
//!   month, `next summer` the first to start after it, `this summer` the
//!   one under way, else the nearer of those two.
//! - Counts: `a`/`an` 1, `a couple (of)` 2, `a few` and 几 3. `N weeks ago`
//!   is the week around the day 7·N days back; `N months ago` is the
//!   calendar month N back (`3 months ago` on 2023-05-31 is February 2023).
//! - `earlier this week`/`month`/`year`: from the period's first day to the
//!   reference day.
//! - Not resolved: vague words (`recently`, `the other day`), times of
//!   day, and numeric dates other than year-first (5/7/2023 is May or July
//!   depending on who writes it).

mod calendar;
mod chinese;
mod english;
mod scan;

use std::ops::Range;

use chrono::{Datelike, NaiveDate};

use calendar::Period;
use scan::{Cursor, Kind, Token, Tokens};

/// How precise a resolved date is: what the phrase named, not how long the
/// range is (`earlier this month` is a month-level date cut at the
/// reference day).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granularity {
    Day,
    /// Saturday and Sunday; a weekend is not a week, and a question about
    /// "the weekend" should find it as such.
    Weekend,
    /// Monday to Sunday.
    Week,
    Month,
    /// Three months (see the conventions above).
    Season,
    Year,
}

/// A date phrase found in a text and what it means against the reference
/// date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedDate {
    pub start: NaiveDate,
    /// Inclusive.
    pub end: NaiveDate,
    pub granularity: Granularity,
    /// Byte range of the phrase in the text, on char boundaries.
    pub span: Range<usize>,
}

impl ResolvedDate {
    /// A short canonical text to index with the episode, so a search for
    /// "May 2023" or "2023-05-07" finds what was said as "last month" or
    /// 昨天: `2023-05-07`, `weekend of 2023-05-06`, `week of 2023-05-01`,
    /// `May 2023`, `summer 2022`, `winter 2022-2023`, `2023`.
    pub fn describe(&self) -> String {
        let start = self.start;
        match self.granularity {
            Granularity::Day => start.to_string(),
            Granularity::Weekend => format!("weekend of {start}"),
            Granularity::Week => format!("week of {start}"),
            Granularity::Month => start.format("%B %Y").to_string(),
            Granularity::Season => {
                let name = match start.month() {
                    3..=5 => "spring",
                    6..=8 => "summer",
                    9..=11 => "fall",
                    _ => "winter",
                };
                if self.end.year() == start.year() {
                    format!("{name} {}", start.year())
                } else {
                    format!("{name} {}-{}", start.year(), self.end.year())
                }
            }
            Granularity::Year => start.year().to_string(),
        }
    }
}

/// A rule reads a phrase forward from the cursor and says what it means.
type Rule = fn(&mut Cursor<'_>, NaiveDate) -> Option<Period>;

/// Tried at every token; the longest match wins, the first listed on a
/// tie (English before Chinese).
const ENGLISH_RULES: &[Rule] = &[
    english::fixed_day,
    english::deictic,
    english::earlier_this,
    english::on_weekday,
    english::over_the_weekend,
    english::count_relative,
    english::calendar_date,
];

/// Tried only in a text with a Han character: every phrase they read has
/// one (年, 月, 天, 周, 前…), and in the texts without one, most of what is
/// said, they only cost the scan (a third of it, in the load test's
/// profile).
const CHINESE_RULES: &[Rule] = &[
    chinese::fixed_day,
    chinese::week,
    chinese::weekend,
    chinese::month,
    chinese::ago,
    chinese::calendar_date,
];

/// Every date phrase of `text` (relative or absolute, English or Chinese),
/// resolved against `reference`, the date the text was written, in text
/// order and without overlap. Vague phrases (`recently`) are not dates.
pub fn resolve(text: &str, reference: NaiveDate) -> Vec<ResolvedDate> {
    let tokens: Vec<Token<'_>> = Tokens::new(text).collect();
    let chinese: &[Rule] = if tokens.iter().any(|token| token.kind == Kind::Han) {
        CHINESE_RULES
    } else {
        &[]
    };
    let mut found = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let Some((end, period)) = longest_match(&tokens, at, reference, chinese) else {
            at += 1;
            continue;
        };
        found.push(ResolvedDate {
            start: period.start,
            end: period.end,
            granularity: period.granularity,
            span: tokens[at].span.start..tokens[end - 1].span.end,
        });
        at = end;
    }
    found
}

/// The longest phrase starting at token `at`, with the index just past it.
fn longest_match(
    tokens: &[Token<'_>],
    at: usize,
    reference: NaiveDate,
    chinese: &[Rule],
) -> Option<(usize, Period)> {
    let mut best: Option<(usize, Period)> = None;
    for rule in ENGLISH_RULES.iter().chain(chinese) {
        let mut cursor = Cursor::new(tokens, at);
        let Some(period) = rule(&mut cursor, reference) else {
            continue;
        };
        let end = cursor.position();
        if end > at && best.is_none_or(|(best_end, _)| end > best_end) {
            best = Some((end, period));
        }
    }
    best
}

/// Whether `question` asks when something happened (`when did…`, `what
/// date`, `how long ago`, 什么时候, 哪天, 哪一年, 几号…), so the answer
/// should carry the episodes' dates. `when` counts only as a question word
/// (`when did`, `when's`, a final `when?`), not as a clause (`what do you
/// do when you're tired`).
pub fn asks_when(question: &str) -> bool {
    let tokens: Vec<Token<'_>> = Tokens::new(question).collect();
    (0..tokens.len()).any(|at| {
        english::asks_when(&mut Cursor::new(&tokens, at))
            || chinese::asks_when(&mut Cursor::new(&tokens, at))
    })
}

#[cfg(test)]
mod tests;
