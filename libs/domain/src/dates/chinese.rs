//! The Chinese rules and the Chinese cues of a question that asks when.
//!
//! Chinese is read one character per token, so a phrase can start or end
//! inside another word: 以前|天气 ("before, the weather") holds 前天, 如今|
//! 年轻人 holds 今年, 登上|月球 holds 上月. Instead of a segmenter, two short
//! tables name the characters that, touching a phrase, make it part of
//! another word ([`standalone`]).

use chrono::{Datelike, NaiveDate, Weekday};

use super::calendar::{
    month_index_of, most_recent_date, most_recent_month, recent_weekend, shift_days, units_from,
    weekday_in_week_of, Period, Unit,
};
use super::scan::{Cursor, Kind};

/// Phrases that name one day, with its offset from the reference day.
const FIXED_DAYS: &[(&str, i64)] = &[
    ("今天", 0),
    ("今日", 0),
    ("今晚", 0),
    ("今早", 0),
    ("昨天", -1),
    ("昨日", -1),
    ("昨晚", -1),
    ("前天", -2),
    ("大前天", -3),
    ("明天", 1),
    ("明日", 1),
    ("明晚", 1),
    ("后天", 2),
    ("大后天", 3),
];

const RELATIVE_MONTHS: &[(&str, i64)] = &[
    ("上个月", -1),
    ("上月", -1),
    ("上上个月", -2),
    ("这个月", 0),
    ("这月", 0),
    ("本月", 0),
    ("下个月", 1),
    ("下月", 1),
    ("下下个月", 2),
];

const RELATIVE_YEARS: &[(&str, i32)] = &[
    ("今年", 0),
    ("去年", -1),
    ("前年", -2),
    ("大前年", -3),
    ("明年", 1),
    ("后年", 2),
];

const WEEK_WORDS: &[(&str, ())] = &[("周", ()), ("星期", ()), ("礼拜", ())];

const WEEKDAYS: &[(&str, Weekday)] = &[
    ("一", Weekday::Mon),
    ("二", Weekday::Tue),
    ("三", Weekday::Wed),
    ("四", Weekday::Thu),
    ("五", Weekday::Fri),
    ("六", Weekday::Sat),
    ("日", Weekday::Sun),
    ("天", Weekday::Sun),
];

/// After these, the weekday digit of 上周一 is a count instead: 上周一次
/// ("once last week"), 上周三天 ("three days last week"), 上周天气.
const AFTER_A_COUNT: &str = "次个起下些共直定样般点天年月周位人本件气";

const AGO_UNITS: &[(&str, Unit)] = &[
    ("天", Unit::Day),
    ("日", Unit::Day),
    ("周", Unit::Week),
    ("星期", Unit::Week),
    ("个星期", Unit::Week),
    ("礼拜", Unit::Week),
    ("个礼拜", Unit::Week),
    ("个月", Unit::Month),
    ("年", Unit::Year),
];

/// A phrase starting with the first character is part of another word
/// when one of the second touches it from before: 以前, 然后, 说明, 马上,
/// 一下.
const ENDS_ANOTHER_WORD: &[(&str, &str)] = &[
    ("前", "以之从提目面向眼跟当事"),
    ("后", "之以然最先落随背今此"),
    ("明", "说聪光文透证表声发清英简分"),
    ("上", "马早晚身路网楼天登爬跟赶加之"),
    ("下", "一以底地天楼留剩放私手眼当坐写记停"),
];

/// A phrase ending with the first character is part of another word when
/// one of the second follows it: 年轻, 月球, 月亮, 周期, 周围.
const STARTS_ANOTHER_WORD: &[(&str, &str)] = &[
    ("年", "轻纪龄级代"),
    ("月", "球亮光饼"),
    ("周", "期报围边年岁全转"),
];

/// 今天, 昨晚, 大前天…
pub(super) fn fixed_day(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let offset = cursor.lookup(FIXED_DAYS)?;
    standalone(cursor, start).then_some(())?;
    Period::day(shift_days(reference, offset)?)
}

/// 上周, 这个星期, 下礼拜, 上上周, with a weekday (上周五 is the Friday of
/// last week) or 末 for the weekend.
pub(super) fn week(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let step = week_step(cursor)?;
    cursor.phrase("个");
    cursor.lookup(WEEK_WORDS)?;
    let weekday = cursor.attempt(|cursor| {
        let weekday = cursor.lookup(WEEKDAYS)?;
        (!cursor.han_next(AFTER_A_COUNT)).then_some(weekday)
    });
    let anchor = shift_days(reference, step.checked_mul(7)?)?;
    let period = match weekday {
        Some(weekday) => Period::day(weekday_in_week_of(anchor, weekday)?),
        None if cursor.phrase("末") => Period::weekend_of(anchor),
        None => Period::week_of(anchor),
    };
    standalone(cursor, start).then_some(())?;
    period
}

/// How many weeks from the reference week: 上上 is -2, 这 and 本 are 0.
fn week_step(cursor: &mut Cursor<'_>) -> Option<i64> {
    if cursor.phrase("这") || cursor.phrase("本") {
        return Some(0);
    }
    let mut step = 0;
    while cursor.phrase("上") {
        step -= 1;
    }
    if step == 0 {
        while cursor.phrase("下") {
            step += 1;
        }
    }
    (step != 0).then_some(step)
}

/// A bare 周末: the weekend under way, else the last one.
pub(super) fn weekend(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    cursor.phrase("周末").then_some(())?;
    recent_weekend(reference)
}

/// 上个月, 本月, 下个月…
pub(super) fn month(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let offset = cursor.lookup(RELATIVE_MONTHS)?;
    standalone(cursor, start).then_some(())?;
    units_from(reference, Unit::Month, offset)
}

/// 3天前, 两个星期之前, 十五年以前; 几 counts as 3, like `a few`.
pub(super) fn ago(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let count = cursor
        .number(3)
        .or_else(|| han_number(cursor, NumberUse::Count))?;
    let unit = cursor.lookup(AGO_UNITS)?;
    cursor.lookup(&[("前", ()), ("之前", ()), ("以前", ())])?;
    units_from(reference, unit, -i64::from(count))
}

/// 2023年5月7日, 5月7号, 2023年5月, 2023年, 五月, and the relative years
/// alone or with a month: 去年, 去年5月.
pub(super) fn calendar_date(cursor: &mut Cursor<'_>, reference: NaiveDate) -> Option<Period> {
    let start = cursor.position();
    let year = cursor
        .attempt(|cursor| {
            let year = i32::try_from(cursor.number(4).filter(|year| *year >= 1000)?).ok()?;
            cursor.phrase("年").then_some(year)
        })
        .or_else(|| {
            let offset = cursor.lookup(RELATIVE_YEARS)?;
            reference.year().checked_add(offset)
        });
    let month = cursor.attempt(|cursor| {
        let month = date_number(cursor).filter(|month| (1..=12).contains(month))?;
        cursor.phrase("月").then_some(month)
    });
    let day = month.and_then(|_| {
        cursor.attempt(|cursor| {
            let day = date_number(cursor).filter(|day| (1..=31).contains(day))?;
            cursor.lookup(&[("日", ()), ("号", ())]).map(|()| day)
        })
    });
    standalone(cursor, start).then_some(())?;
    match (year, month, day) {
        (Some(year), Some(month), Some(day)) => {
            Period::day(NaiveDate::from_ymd_opt(year, month, day)?)
        }
        (Some(year), Some(month), None) => Period::month(month_index_of(year, month)),
        (Some(year), None, _) => Period::year(year),
        (None, Some(month), Some(day)) => most_recent_date(reference, month, day),
        (None, Some(month), None) => most_recent_month(reference, month),
        (None, None, _) => None,
    }
}

/// Whether the phrase read from `start` to the cursor is a word of its own
/// (see [`ENDS_ANOTHER_WORD`] and [`STARTS_ANOTHER_WORD`]).
fn standalone(cursor: &Cursor<'_>, start: usize) -> bool {
    let first = cursor.text_at(start);
    let last = cursor.last_text();
    let starts_inside = ENDS_ANOTHER_WORD
        .iter()
        .any(|(char, before)| first == Some(char) && cursor.han_before(start, before));
    let runs_on = STARTS_ANOTHER_WORD
        .iter()
        .any(|(char, after)| last == Some(char) && cursor.han_next(after));
    !starts_inside && !runs_on
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberUse {
    /// 两 and 几 (taken as 3) count things but do not number a month or day.
    Count,
    Date,
}

/// A month or day number: Arabic (at most two digits) or Chinese.
fn date_number(cursor: &mut Cursor<'_>) -> Option<u32> {
    cursor
        .number(2)
        .or_else(|| han_number(cursor, NumberUse::Date))
}

/// A number from 0 to 99 in Chinese numerals: 五, 十, 十五, 二十, 二十一.
/// Never read from inside a longer numeral: 十三月 is no month, and its
/// 三月 is not March.
fn han_number(cursor: &mut Cursor<'_>, number_use: NumberUse) -> Option<u32> {
    let digits = match number_use {
        NumberUse::Count => "〇零一二两三四五六七八九几",
        NumberUse::Date => "〇零一二三四五六七八九",
    };
    let numeral = |text: &str| text == "十" || digits.contains(text);
    let start = cursor.position();
    if cursor.han_before(start, "〇零一二两三四五六七八九十几") {
        return None;
    }
    cursor.attempt(|cursor| {
        let mut values = Vec::new();
        while let Some(token) =
            cursor.take_if(|token| token.kind == Kind::Han && numeral(token.text))
        {
            values.push(han_digit(token.text));
        }
        match values.as_slice() {
            [Some(unit)] => Some(*unit),
            [None] => Some(10),
            [None, Some(unit)] => Some(10 + unit),
            [Some(tens), None] => Some(tens * 10),
            [Some(tens), None, Some(unit)] => Some(tens * 10 + unit),
            _ => None,
        }
    })
}

/// The value of a Chinese digit; `None` for 十.
fn han_digit(text: &str) -> Option<u32> {
    let value = match text {
        "〇" | "零" => 0,
        "一" => 1,
        "二" | "两" => 2,
        "三" | "几" => 3,
        "四" => 4,
        "五" => 5,
        "六" => 6,
        "七" => 7,
        "八" => 8,
        "九" => 9,
        _ => return None,
    };
    Some(value)
}

const WHEN_PHRASES: &[&str] = &[
    "什么时候",
    "啥时候",
    "什么时间",
    "何时",
    "哪天",
    "哪一天",
    "哪日",
    "哪年",
    "哪一年",
    "哪月",
    "哪个月",
    "哪一个月",
    "哪周",
    "哪一周",
    "哪个星期",
    "几月",
    "几号",
    "星期几",
    "周几",
    "礼拜几",
    "几点",
    "多久以前",
    "多久之前",
    "多久前",
    "多长时间以前",
    "多长时间之前",
    "多少年前",
    "多少天前",
];

/// Whether a Chinese cue of a question about when starts at the cursor.
pub(super) fn asks_when(cursor: &mut Cursor<'_>) -> bool {
    WHEN_PHRASES.iter().any(|phrase| cursor.phrase(phrase))
}
