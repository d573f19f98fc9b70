//! The English rules (letters compared without case) and the English cues
//! of a question that asks when.

use chrono::{NaiveDate, Weekday};

use super::calendar::{
    month_index_of, month_named, most_recent_date, most_recent_month, most_recent_weekday,
    recent_weekend, season, shift_days, units_from, weekday_in_week_of, Period, Relation, Unit,
};
use super::scan::{Cursor, Kind};

/// Phrases that name one day, with its offset from the reference day.
const FIXED_DAYS: &[(&str, i64)] = &[
    ("today", 0),
    ("tonight", 0),
    ("this morning", 0),
    ("this afternoon", 0),
    ("this evening", 0),
    ("yesterday", -1),
    ("last night", -1),
    ("day before yesterday", -2),
    ("the day before yesterday", -2),
    ("tomorrow", 1),
    ("day after tomorrow", 2),
    ("the day after tomorrow", 2),
];

const RELATIONS: &[(&str, Relation)] = &[
    ("last", Relation::Previous),
    ("this", Relation::Current),
    ("next", Relation::Following),
];

const PERIODS: &[(&str, Unit)] = &[
    ("week", Unit::Week),
    ("month", Unit::Month),
    ("year", Unit::Year),
];

const WEEKDAYS: &[(&str, Weekday)] = &[
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dec", 12),
];

/// Seasons by their first month (see [`season`]).
const SEASONS: &[(&str, u32)] = &[
    ("spring", 3),
    ("summer", 6),
    ("fall", 9),
    ("autumn", 9),
    ("winter", 12),
];

/// Counts in words; `a few` is taken as 3, the smallest number it can mean
/// besides `a couple`.
const COUNTS: &[(&str, u32)] = &[
    ("a", 1),
    ("an", 1),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("a couple", 2),
    ("a couple of", 2),
    ("couple of", 2),
    ("a few", 3),
];

const COUNT_UNITS: &[(&str, Unit)] = &[
    ("day", Unit::Day),
    ("days", Unit::Day),
    ("week", Unit::Week),
    ("weeks", Unit::Week),
    ("month", Unit::Month),
    ("months", Unit::Month),
    ("year", Unit::Year),
    ("years", Unit::Year),
];

const ORDINAL_SUFFIXES: &[(&str, ())] = &[("st", ()), ("nd", ()), ("rd", ()), ("th", ())];

/// `today`, `yesterday`, `the day after tomorrow`…
pub(super) fn fixed_day(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let offset = cursor.lookup(FIXED_DAYS)?;
    if tells_a_story(cursor, start) {
        return None;
    }
    Period::day(shift_days(reference, offset)?)
}

/// `last`/`this`/`next` with `week`, `weekend`, `month`, `year`, a weekday,
/// a month name or a season.
pub(super) fn deictic(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let relation = cursor.lookup(RELATIONS)?;
    if tells_a_story(cursor, start) {
        return None;
    }
    let step = relation.step();
    if let Some(unit) = cursor.lookup(PERIODS) {
        return units_from(reference, unit, step);
    }
    if cursor.phrase("weekend") {
        return Period::weekend_of(shift_days(reference, 7 * step)?);
    }
    if let Some(weekday) = cursor.lookup(WEEKDAYS) {
        let date = match relation {
            Relation::Previous => most_recent_weekday(reference, weekday, false)?,
            _ => weekday_in_week_of(shift_days(reference, 7 * step)?, weekday)?,
        };
        return Period::day(date);
    }
    let month_start = cursor.position();
    if let Some(month) = month_name(cursor) {
        // `this may help` is common; `this May`, the date, is capitalised.
        if relation == Relation::Current && is_lowercase_may(cursor, month_start) {
            return None;
        }
        return month_named(relation, month, reference);
    }
    season(relation, cursor.lookup(SEASONS)?, reference)
}

/// `earlier this week`/`month`/`year`: the period up to the reference day.
pub(super) fn earlier_this(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    if !cursor.phrase("earlier this") {
        return None;
    }
    let unit = cursor.lookup(PERIODS)?;
    Some(units_from(reference, unit, 0)?.until(reference))
}

/// `on Monday`: the most recent Monday, the reference day included.
pub(super) fn on_weekday(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    if !cursor.phrase("on") {
        return None;
    }
    let weekday = cursor.lookup(WEEKDAYS)?;
    Period::day(most_recent_weekday(reference, weekday, true)?)
}

/// `over the weekend`: the weekend under way, else the last one.
pub(super) fn over_the_weekend(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    if !cursor.phrase("over the weekend") {
        return None;
    }
    recent_weekend(reference)
}

/// `3 days ago`, `a couple of months ago`, `in two weeks`.
pub(super) fn count_relative(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let ahead = cursor.phrase("in");
    let count = i64::from(count(cursor)?);
    let unit = cursor.lookup(COUNT_UNITS)?;
    let count = if ahead {
        count
    } else if cursor.phrase("ago") {
        -count
    } else {
        return None;
    };
    units_from(reference, unit, count)
}

/// Explicit dates: `May 7, 2023`, `7th of May`, `2023-05-07`, `May 2023`,
/// and after `in`/`during`, a month or a year alone (`in March`, `in 2022`).
/// `May` the modal verb stays a verb: without a day number or a year after
/// it, the month needs `in`/`during` before it (or `last`/`this`/`next`,
/// read by [`deictic`]).
pub(super) fn calendar_date(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let preposition = cursor.lookup(&[("in", true), ("during", true), ("on", false)]);
    let alone_allowed = preposition == Some(true);
    cursor
        .attempt(iso_date)
        .or_else(|| cursor.attempt(|cursor| month_first(cursor, reference, alone_allowed)))
        .or_else(|| cursor.attempt(|cursor| day_first(cursor, reference, preposition.is_some())))
        .or_else(|| Period::year(alone_allowed.then(|| year(cursor))??))
}

/// `2023-05-07`, `2023/05/07`, `2023-05`: year first, so never ambiguous.
fn iso_date(cursor: &mut Cursor<'_>) -> Option<Period> {
    let year = year(cursor)?;
    let first_separator = separator(cursor)?;
    let month = touching_number(cursor).filter(|month| (1..=12).contains(month))?;
    let day = cursor.attempt(|cursor| {
        (separator(cursor)? == first_separator).then_some(())?;
        touching_number(cursor)
    });
    match day {
        Some(day) => Period::day(NaiveDate::from_ymd_opt(year, month, day)?),
        None => Period::month(month_index_of(year, month)),
    }
}

fn separator<'a>(cursor: &mut Cursor<'a>) -> Option<&'a str> {
    if !cursor.touching() {
        return None;
    }
    Some(
        cursor
            .take_if(|token| token.text == "-" || token.text == "/")?
            .text,
    )
}

fn touching_number(cursor: &mut Cursor<'_>) -> Option<u32> {
    if !cursor.touching() {
        return None;
    }
    cursor.number(2)
}

/// `May 7`, `May 7th, 2023`, `May 2023`, and `[early|mid|late] March`
/// alone when `alone_allowed`.
fn month_first(
    cursor: &mut Cursor<'_>,
    reference: NaiveDate,
    alone_allowed: bool,
) -> Option<Period> {
    let qualified = alone_allowed
        && cursor
            .lookup(&[("early", ()), ("mid", ()), ("mid -", ()), ("late", ())])
            .is_some();
    let month = month_name(cursor)?;
    if !qualified {
        if let Some(day) = cursor.attempt(day_of_month) {
            return dated(reference, month, day, comma_year(cursor));
        }
    }
    match comma_year(cursor) {
        Some(year) => Period::month(month_index_of(year, month)),
        None if alone_allowed => most_recent_month(reference, month),
        None => None,
    }
}

/// `7 May 2023`, `7th of May`. Without a year, `May` needs the ordinal
/// suffix, `of` or a preposition (`on 7 May`): `those 3 may leave` is not a
/// date.
fn day_first(cursor: &mut Cursor<'_>, reference: NaiveDate, introduced: bool) -> Option<Period> {
    let day = cursor.number(2).filter(|day| (1..=31).contains(day))?;
    let ordinal = cursor.attempt(ordinal_suffix).is_some();
    let of = cursor.phrase("of");
    let month_start = cursor.position();
    let month = month_name(cursor)?;
    let year = comma_year(cursor);
    let modal_may = is_may(cursor, month_start);
    if year.is_none() && modal_may && !ordinal && !of && !introduced {
        return None;
    }
    dated(reference, month, day, year)
}

fn dated(reference: NaiveDate, month: u32, day: u32, year: Option<i32>) -> Option<Period> {
    match year {
        Some(year) => Period::day(NaiveDate::from_ymd_opt(year, month, day)?),
        None => most_recent_date(reference, month, day),
    }
}

/// A day number after a month name: `7`, `7th`.
fn day_of_month(cursor: &mut Cursor<'_>) -> Option<u32> {
    let day = cursor.number(2).filter(|day| (1..=31).contains(day))?;
    cursor.attempt(ordinal_suffix);
    Some(day)
}

fn ordinal_suffix(cursor: &mut Cursor<'_>) -> Option<()> {
    if !cursor.touching() {
        return None;
    }
    cursor.lookup(ORDINAL_SUFFIXES)
}

/// A year after an optional comma: `, 2023`.
fn comma_year(cursor: &mut Cursor<'_>) -> Option<i32> {
    cursor.attempt(|cursor| {
        cursor.phrase(",");
        year(cursor)
    })
}

/// A four-digit year.
fn year(cursor: &mut Cursor<'_>) -> Option<i32> {
    let year = cursor.number(4).filter(|year| *year >= 1000)?;
    i32::try_from(year).ok()
}

/// A month name, with the full stop of an abbreviation before a day number
/// (`Jan. 5`).
fn month_name(cursor: &mut Cursor<'_>) -> Option<u32> {
    let month = cursor.lookup(MONTHS)?;
    cursor.attempt(|cursor| {
        (cursor.touching() && cursor.phrase(".") && cursor.next_kind() == Some(Kind::Number))
            .then_some(())
    });
    Some(month)
}

fn is_may(cursor: &Cursor<'_>, position: usize) -> bool {
    cursor
        .text_at(position)
        .is_some_and(|text| text.eq_ignore_ascii_case("may"))
}

fn is_lowercase_may(cursor: &Cursor<'_>, position: usize) -> bool {
    is_may(cursor, position)
        && cursor
            .text_at(position)
            .is_some_and(|text| text.starts_with('m'))
}

fn count(cursor: &mut Cursor<'_>) -> Option<u32> {
    cursor.number(3).or_else(|| cursor.lookup(COUNTS))
}

/// `the last week of May`, `the next year`: `last` and `next` after `the`
/// place something in a story, not relative to the message.
fn tells_a_story(cursor: &Cursor<'_>, start: usize) -> bool {
    let word = cursor.text_at(start).unwrap_or_default();
    (word.eq_ignore_ascii_case("last") || word.eq_ignore_ascii_case("next"))
        && cursor.word_before(start, "the")
}

/// Words after `when` that make it a question (`when did…`, `when's…`)
/// rather than a clause (`when you're tired`).
const WHEN_AUXILIARIES: &[&str] = &[
    "did", "do", "does", "was", "were", "is", "are", "will", "would", "has", "have", "had", "can",
    "could", "should", "'s", "’s", "exactly",
];

const WHEN_PHRASES: &[&str] = &[
    "what date",
    "which date",
    "what day",
    "which day",
    "what week",
    "which week",
    "what month",
    "which month",
    "what year",
    "which year",
    "what time",
    "since when",
    "how long ago",
    "how long has it been",
    "how long had it been",
    "how many days ago",
    "how many weeks ago",
    "how many months ago",
    "how many years ago",
];

/// Whether an English cue of a question about when starts at the cursor.
pub(super) fn asks_when(cursor: &mut Cursor<'_>) -> bool {
    if cursor.phrase("when") {
        return cursor.at_end()
            || cursor.phrase("?")
            || WHEN_AUXILIARIES.iter().any(|word| cursor.phrase(word));
    }
    WHEN_PHRASES.iter().any(|phrase| cursor.phrase(phrase))
}
