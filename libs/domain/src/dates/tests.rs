use super::*;
use proptest::prelude::*;

use Granularity::{Day, Month, Season, Week, Weekend, Year};

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

/// A Wednesday; its week runs 2023-05-08 to 2023-05-14.
const WEDNESDAY: &str = "2023-05-10";

/// (message, reference, `start..end` or the one day, granularity): each
/// message holds one date phrase.
#[rustfmt::skip]
const CASES: &[(&str, &str, &str, Granularity)] = &[
    // English: days
    ("I went hiking today.", WEDNESDAY, "2023-05-10", Day),
    ("Today's special was great", WEDNESDAY, "2023-05-10", Day),
    ("Let's meet tonight", WEDNESDAY, "2023-05-10", Day),
    ("I ran this morning", WEDNESDAY, "2023-05-10", Day),
    ("Yesterday was rough", WEDNESDAY, "2023-05-09", Day),
    ("I slept badly last night", WEDNESDAY, "2023-05-09", Day),
    ("yesterday I moved", "2023-03-01", "2023-02-28", Day),
    ("yesterday I moved", "2024-03-01", "2024-02-29", Day),
    ("YESTERDAY was new year's eve", "2023-01-01", "2022-12-31", Day),
    ("the day before yesterday we met", WEDNESDAY, "2023-05-08", Day),
    ("see you tomorrow", "2023-12-31", "2024-01-01", Day),
    ("the day after tomorrow is fine", WEDNESDAY, "2023-05-12", Day),
    // English: weekdays
    ("I painted last Saturday", WEDNESDAY, "2023-05-06", Day),
    ("last Wednesday was busy", WEDNESDAY, "2023-05-03", Day),
    ("this Friday works", WEDNESDAY, "2023-05-12", Day),
    ("this Monday was odd", WEDNESDAY, "2023-05-08", Day),
    ("next Friday then", WEDNESDAY, "2023-05-19", Day),
    ("next Monday then", WEDNESDAY, "2023-05-15", Day),
    ("On Monday I saw her", WEDNESDAY, "2023-05-08", Day),
    ("on Wednesday I cooked", WEDNESDAY, "2023-05-10", Day),
    ("on thursday we talked", WEDNESDAY, "2023-05-04", Day),
    // English: weeks, weekends, months, years
    ("last week was long", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("this week is long", WEDNESDAY, "2023-05-08..2023-05-14", Week),
    ("next week is long", WEDNESDAY, "2023-05-15..2023-05-21", Week),
    ("last weekend we camped", WEDNESDAY, "2023-05-06..2023-05-07", Weekend),
    ("last weekend we camped", "2023-05-14", "2023-05-06..2023-05-07", Weekend),
    ("this weekend we camp", WEDNESDAY, "2023-05-13..2023-05-14", Weekend),
    ("next weekend we camp", WEDNESDAY, "2023-05-20..2023-05-21", Weekend),
    ("over the weekend I read", WEDNESDAY, "2023-05-06..2023-05-07", Weekend),
    ("over the weekend I read", "2023-05-14", "2023-05-13..2023-05-14", Weekend),
    ("last month I quit", "2023-01-15", "2022-12-01..2022-12-31", Month),
    ("this month is busy", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("next month we move", "2023-12-05", "2024-01-01..2024-01-31", Month),
    ("last year I graduated", WEDNESDAY, "2022-01-01..2022-12-31", Year),
    ("next year I retire", WEDNESDAY, "2024-01-01..2024-12-31", Year),
    ("earlier this week I called", WEDNESDAY, "2023-05-08..2023-05-10", Week),
    ("earlier this month I called", WEDNESDAY, "2023-05-01..2023-05-10", Month),
    ("earlier this year I called", WEDNESDAY, "2023-01-01..2023-05-10", Year),
    // English: counts
    ("3 days ago I fell", "2023-03-02", "2023-02-27", Day),
    ("three days ago I fell", WEDNESDAY, "2023-05-07", Day),
    ("two weeks ago I fell", WEDNESDAY, "2023-04-24..2023-04-30", Week),
    ("a week ago I fell", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("2 weeks ago I fell", "2024-01-03", "2023-12-18..2023-12-24", Week),
    ("3 months ago I fell", "2023-05-31", "2023-02-01..2023-02-28", Month),
    ("a couple of months ago", WEDNESDAY, "2023-03-01..2023-03-31", Month),
    ("a few years ago I lived there", WEDNESDAY, "2020-01-01..2020-12-31", Year),
    ("twelve years ago", WEDNESDAY, "2011-01-01..2011-12-31", Year),
    ("in 2 days I leave", WEDNESDAY, "2023-05-12", Day),
    ("in a week I leave", WEDNESDAY, "2023-05-15..2023-05-21", Week),
    ("in three weeks I leave", WEDNESDAY, "2023-05-29..2023-06-04", Week),
    // English: explicit dates
    ("We married on May 7, 2023.", WEDNESDAY, "2023-05-07", Day),
    ("on 7 May 2023 we married", WEDNESDAY, "2023-05-07", Day),
    ("married 2023-05-07 in Rome", WEDNESDAY, "2023-05-07", Day),
    ("It opened in May 2023", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("We moved in 2022.", WEDNESDAY, "2022-01-01..2022-12-31", Year),
    ("In March I ran a race", WEDNESDAY, "2023-03-01..2023-03-31", Month),
    ("in June I ran a race", WEDNESDAY, "2022-06-01..2022-06-30", Month),
    ("In May I went to Paris", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("in early March I ran", WEDNESDAY, "2023-03-01..2023-03-31", Month),
    ("the 7th of May was sunny", "2023-05-06", "2022-05-07", Day),
    ("Jan. 5th was cold", WEDNESDAY, "2023-01-05", Day),
    ("Feb 29 is my birthday", WEDNESDAY, "2020-02-29", Day),
    ("last May we met", WEDNESDAY, "2022-05-01..2022-05-31", Month),
    ("This May we met", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("next March we meet", WEDNESDAY, "2024-03-01..2024-03-31", Month),
    // English: seasons
    ("last summer we sailed", WEDNESDAY, "2022-06-01..2022-08-31", Season),
    ("last summer we sailed", "2023-09-15", "2023-06-01..2023-08-31", Season),
    ("last winter was mild", WEDNESDAY, "2022-12-01..2023-02-28", Season),
    ("last winter was mild", "2024-01-15", "2022-12-01..2023-02-28", Season),
    ("last fall we sailed", WEDNESDAY, "2022-09-01..2022-11-30", Season),
    ("last spring we sailed", WEDNESDAY, "2022-03-01..2022-05-31", Season),
    ("this summer we sailed", "2023-10-02", "2023-06-01..2023-08-31", Season),
    ("next winter we ski", WEDNESDAY, "2023-12-01..2024-02-29", Season),
    // Chinese: days
    ("我今天去了公园", WEDNESDAY, "2023-05-10", Day),
    ("今晚吃什么", WEDNESDAY, "2023-05-10", Day),
    ("昨天下雨了", WEDNESDAY, "2023-05-09", Day),
    ("昨天下雨了", "2023-03-01", "2023-02-28", Day),
    ("昨晚没睡好", WEDNESDAY, "2023-05-09", Day),
    ("前天见过他", WEDNESDAY, "2023-05-08", Day),
    ("大前天见过他", WEDNESDAY, "2023-05-07", Day),
    ("明天见", WEDNESDAY, "2023-05-11", Day),
    ("后天见", WEDNESDAY, "2023-05-12", Day),
    ("今天天气很好", WEDNESDAY, "2023-05-10", Day),
    // Chinese: weeks
    ("上周很忙", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上星期很忙", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上个星期很忙", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上礼拜很忙", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上周六去爬山了", WEDNESDAY, "2023-05-06", Day),
    ("上周日去爬山了", WEDNESDAY, "2023-05-07", Day),
    ("上星期天去爬山了", WEDNESDAY, "2023-05-07", Day),
    ("上周天气很冷", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上周一次都没去", WEDNESDAY, "2023-05-01..2023-05-07", Week),
    ("上上周很忙", WEDNESDAY, "2023-04-24..2023-04-30", Week),
    ("这周五有空", WEDNESDAY, "2023-05-12", Day),
    ("本周很忙", WEDNESDAY, "2023-05-08..2023-05-14", Week),
    ("这个星期很忙", WEDNESDAY, "2023-05-08..2023-05-14", Week),
    ("下周一开会", WEDNESDAY, "2023-05-15", Day),
    ("下周开会", WEDNESDAY, "2023-05-15..2023-05-21", Week),
    ("下个星期三开会", WEDNESDAY, "2023-05-17", Day),
    ("周末去爬山了", WEDNESDAY, "2023-05-06..2023-05-07", Weekend),
    ("周末去爬山了", "2023-05-13", "2023-05-13..2023-05-14", Weekend),
    ("上周末去爬山了", WEDNESDAY, "2023-05-06..2023-05-07", Weekend),
    ("这周末去爬山", WEDNESDAY, "2023-05-13..2023-05-14", Weekend),
    // Chinese: months and years
    ("上个月搬家了", "2024-03-31", "2024-02-01..2024-02-29", Month),
    ("上个月搬家了", "2023-01-15", "2022-12-01..2022-12-31", Month),
    ("这个月很忙", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("本月很忙", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("下个月搬家", "2023-12-05", "2024-01-01..2024-01-31", Month),
    ("去年毕业", WEDNESDAY, "2022-01-01..2022-12-31", Year),
    ("今年毕业", WEDNESDAY, "2023-01-01..2023-12-31", Year),
    ("明年毕业", WEDNESDAY, "2024-01-01..2024-12-31", Year),
    ("前年毕业", WEDNESDAY, "2021-01-01..2021-12-31", Year),
    ("去年5月去了日本", WEDNESDAY, "2022-05-01..2022-05-31", Month),
    // Chinese: counts
    ("3天前摔了一跤", WEDNESDAY, "2023-05-07", Day),
    ("三天前摔了一跤", WEDNESDAY, "2023-05-07", Day),
    ("十五天前", WEDNESDAY, "2023-04-25", Day),
    ("二十一天以前", WEDNESDAY, "2023-04-19", Day),
    ("99天前", WEDNESDAY, "2023-01-31", Day),
    ("两周前", WEDNESDAY, "2023-04-24..2023-04-30", Week),
    ("一个月前", WEDNESDAY, "2023-04-01..2023-04-30", Month),
    ("3个月前", "2023-05-31", "2023-02-01..2023-02-28", Month),
    ("五年前", WEDNESDAY, "2018-01-01..2018-12-31", Year),
    ("几年前去过", WEDNESDAY, "2020-01-01..2020-12-31", Year),
    // Chinese: explicit dates
    ("2023年5月7日结婚", WEDNESDAY, "2023-05-07", Day),
    ("5月7日结婚", "2023-05-06", "2022-05-07", Day),
    ("5月7号结婚", WEDNESDAY, "2023-05-07", Day),
    ("五月七日结婚", WEDNESDAY, "2023-05-07", Day),
    ("2023年5月结婚", WEDNESDAY, "2023-05-01..2023-05-31", Month),
    ("2022年结婚", WEDNESDAY, "2022-01-01..2022-12-31", Year),
    ("三月去了日本", WEDNESDAY, "2023-03-01..2023-03-31", Month),
    ("十二月去了日本", WEDNESDAY, "2022-12-01..2022-12-31", Month),
    ("2月29日生日", "2024-03-01", "2024-02-29", Day),
];

#[test]
fn resolves_every_phrase_of_the_table() {
    let mut failures = Vec::new();
    for &(text, reference, range, granularity) in CASES {
        let (start, end) = range.split_once("..").unwrap_or((range, range));
        let expected = (date(start), date(end), granularity);
        let found: Vec<_> = resolve(text, date(reference))
            .into_iter()
            .map(|found| (found.start, found.end, found.granularity))
            .collect();
        if found != [expected] {
            failures.push(format!(
                "{text:?} on {reference}: {found:?}, expected {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn finds_nothing_where_there_is_no_date() {
    let texts = [
        "I'm sure",
        "May I come in?",
        "You may go now.",
        "this may take a while",
        "those 3 may leave",
        "March on, soldiers!",
        "recently I've been busy",
        "the last time we met",
        "the last week of the course was hard",
        "next time, bring cake",
        "one day I'll travel",
        "we go every Sunday",
        "on Sundays we rest",
        "in 3 minutes",
        "at 5 pm",
        "todays and tomorrows",
        "a few of them",
        "Feb 30, 2023",
        "以前天气很好",
        "如今年轻人都忙",
        "登上月球",
        "这个月亮真圆",
        "看一下周报",
        "这周期很长",
        "一个月没见",
        "十三月",
        "三天没睡",
    ];
    for text in texts {
        assert_eq!(resolve(text, date(WEDNESDAY)), [], "{text:?}");
    }
}

#[test]
fn finds_every_phrase_in_text_order_with_its_span() {
    let text = "We met last Saturday, then again on Monday; 我昨天和上周五都去了。";
    let spans: Vec<_> = resolve(text, date(WEDNESDAY))
        .into_iter()
        .map(|found| &text[found.span])
        .collect();
    assert_eq!(spans, ["last Saturday", "on Monday", "昨天", "上周五"]);
}

#[test]
fn describes_each_granularity() {
    let reference = date(WEDNESDAY);
    let describe = |text: &str| resolve(text, reference)[0].describe();
    assert_eq!(describe("yesterday"), "2023-05-09");
    assert_eq!(describe("last weekend"), "weekend of 2023-05-06");
    assert_eq!(describe("last week"), "week of 2023-05-01");
    assert_eq!(describe("上个月"), "April 2023");
    assert_eq!(describe("last summer"), "summer 2022");
    assert_eq!(describe("last winter"), "winter 2022-2023");
    assert_eq!(describe("去年"), "2022");
}

#[test]
fn recognises_questions_that_ask_when() {
    let asking = [
        "When did Caroline go to the support group?",
        "When was the concert?",
        "when is her birthday",
        "When's the party?",
        "And when?",
        "What date did they move?",
        "Which year did he graduate?",
        "How long ago did you start painting?",
        "In what month did she travel?",
        "Since when have you known?",
        "How many years ago did that happen?",
        "What time did the meeting start?",
        "你什么时候搬的家？",
        "那是哪一年的事？",
        "你哪天有空？",
        "今天几号？",
        "生日是几月几号？",
        "这是多久以前的事？",
        "会议在星期几？",
        "啥时候回来？",
    ];
    let not_asking = [
        "What did you eat?",
        "Where is the party?",
        "Who did you meet yesterday?",
        "How long did the trip take?",
        "Why did you leave?",
        "What do you do when you're tired?",
        "I remember when we met.",
        "Tell me about your trip last week.",
        "你喜欢什么？",
        "他去哪里了？",
        "为什么？",
        "你多久去一次健身房？",
        "多少钱？",
    ];
    for question in asking {
        assert!(asks_when(question), "{question:?}");
    }
    for question in not_asking {
        assert!(!asks_when(question), "{question:?}");
    }
}

/// Pieces that make the scanner work: date words, digits, separators,
/// multi-byte characters.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "yesterday",
            "last",
            "this",
            "next",
            "on",
            "in",
            "ago",
            "May",
            "7th",
            "of",
            "2023",
            "-",
            "/",
            ",",
            ".",
            "weeks",
            "a few",
            "the",
            "earlier",
            "weekend",
            "上",
            "周",
            "末",
            "个",
            "月",
            "年",
            "日",
            "号",
            "前",
            "天",
            "十",
            "几",
            "两",
            "去年",
            "昨天",
            "以",
            "é",
            "🙂",
            " ",
            "\u{0}",
        ])
        .prop_map(String::from),
        "[0-9]{1,5}",
        any::<char>().prop_map(String::from),
    ]
}

fn reference_date() -> impl Strategy<Value = NaiveDate> {
    prop_oneof![
        Just(NaiveDate::MIN),
        Just(NaiveDate::MAX),
        (-400_000i32..400_000).prop_filter_map("a day in chrono's range", |days| {
            NaiveDate::from_num_days_from_ce_opt(738_000 + days)
        }),
    ]
}

proptest! {
    #[test]
    fn never_panics_and_spans_are_char_boundaries_in_order(
        text in prop_oneof![
            any::<String>(),
            prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.join("")),
            prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.join(" ")),
        ],
        reference in reference_date(),
    ) {
        let found = resolve(&text, reference);
        let mut previous_end = 0;
        for date in &found {
            prop_assert!(date.span.start < date.span.end);
            prop_assert!(date.span.start >= previous_end);
            prop_assert!(date.span.end <= text.len());
            prop_assert!(text.is_char_boundary(date.span.start));
            prop_assert!(text.is_char_boundary(date.span.end));
            prop_assert!(date.start <= date.end);
            previous_end = date.span.end;
            let _ = date.describe();
        }
        let _ = asks_when(&text);
    }
}

proptest! {
    /// What lets `resolve` skip the Chinese rules in a text without a Han
    /// character: they read nothing there, at any token.
    #[test]
    fn the_chinese_rules_read_nothing_in_a_text_without_han(
        text in prop_oneof![
            prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.join("")),
            prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.join(" ")),
            any::<String>(),
        ]
        .prop_map(|text| text.chars().filter(|c| !scan::is_han(*c)).collect::<String>()),
        reference in reference_date(),
    ) {
        let tokens: Vec<Token<'_>> = Tokens::new(&text).collect();
        for at in 0..tokens.len() {
            for rule in CHINESE_RULES {
                let mut cursor = Cursor::new(&tokens, at);
                prop_assert!(rule(&mut cursor, reference).is_none(), "{text:?} at token {at}");
            }
        }
    }
}

#[test]
fn a_chinese_phrase_beside_english_is_still_found() {
    let text = "On Monday we met, 三天前 was rainy";
    let found = resolve(text, date("2024-05-10"));
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(&text[found[0].span.clone()], "On Monday");
    assert_eq!(&text[found[1].span.clone()], "三天前");
}
