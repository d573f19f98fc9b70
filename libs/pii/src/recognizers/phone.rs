//! Phone numbers. A bare digit run is far more often an order number, an
//! amount or a timestamp than a phone, so a candidate of 7–15 digits is only
//! flagged when it has phone structure:
//! - a leading `+` (country code),
//! - a parenthesised area/trunk code, `(415) 555-0132`, `+41 (0)96 …`,
//! - separators between phone-like groups, `415.555.0132`, `0490 75 40 81`,
//!   minus shapes that belong to something else (dates, decimals, IPs and
//!   versions, thousands separators, SSNs, year ranges, amounts),
//! - the Chinese mobile pattern `1[3-9]` + 9 digits standing alone,
//! - or a phone label just before it (`Fax: 9498777106`, `电话13812345678`):
//!   the label supplies the structure the digits lack.

use regex::Regex;

use super::card::unglued_start;
use super::{compile, numeric_left, numeric_right, prev_char, window_after, window_before};
use crate::{Detection, PiiKind};

// Digits in groups joined by one of ` .-`, or by parentheses; then an
// optional extension. Checked piecewise by `validate` below.
const CANDIDATE: &str = concat!(
    r"\+?\(?[0-9]+(?:(?:[ .\-]|[ .\-]?\(|\)[ .\-]?)[0-9]+)*",
    r"(?:[ ]?(?i:x|ext\.?|extn\.?|extension)[ ]?[0-9]{1,6})?",
);

// A phone label ending at most 16 non-digit characters before the number.
// English labels must start a word, so `hotel 1234567` is not labelled.
const LABEL: &str = concat!(
    r"(?i)(?:(?:^|[^a-z])(?:phone|tel|telephone|mobile|cell|fax|call|whatsapp",
    r"|desk|office|direct|landline|hotline)|电话|手机|联系方式)[^0-9\n]{0,16}$",
);

/// How far back the label search looks, in bytes.
const LABEL_WINDOW: usize = 48;

// A street designator within two words after the number: `17151 2450 Crown
// St` is a building number and a house or postal number, not a phone. Words
// that are also common in prose (`place`, `court`, `way`, `via`) are left
// out: `467 3395 to place an order` is a phone.
const STREET_AFTER: &str = concat!(
    r"(?i)^[ ,]*(?:[\p{L}'.\-]+[ ]+){0,2}",
    r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|ct|pl|suite|ste",
    r"|apt|apartment|crescent|terrace|highway|hwy|parkway|pkwy|rue|strasse|straße|calle)\b",
);

/// How far ahead the street designator search looks, in bytes.
const STREET_WINDOW: usize = 48;

pub(crate) struct PhoneRecognizer {
    candidate: Regex,
    label: Regex,
    street_after: Regex,
}

impl PhoneRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            candidate: compile(CANDIDATE),
            label: compile(LABEL),
            street_after: compile(STREET_AFTER),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.candidate.find_iter(text) {
            let end = m.end();
            let Some(mut start) = unglued_start(text, m.start(), m.as_str()) else {
                continue;
            };
            let mut cand = &text[start..end];
            // `(415-555-0132)`: the closing paren is not part of the match,
            // so the opening one is unbalanced: drop it.
            if cand.starts_with('(') && !cand.contains(')') {
                start += 1;
                cand = &cand[1..];
            }
            if numeric_left(text, start)
                && numeric_right(text, end)
                && self.validate(text, start, end, cand)
            {
                out.push(Detection {
                    kind: PiiKind::Phone,
                    start,
                    end,
                });
            }
        }
    }

    fn validate(&self, text: &str, start: usize, end: usize, cand: &str) -> bool {
        // The extension (`x123`, `ext. 123`) starts at the first letter.
        let main = match cand.find(|c: char| c.is_ascii_alphabetic()) {
            Some(i) => cand[..i].trim_end(),
            None => cand,
        };
        let Some(shape) = Shape::parse(main) else {
            return false;
        };
        let digits: usize = shape.groups.iter().map(|g| g.len()).sum();
        if !(7..=15).contains(&digits) {
            return false;
        }
        if shape.groups.len() == 1 {
            let run = shape.groups[0];
            return (shape.plus && digits >= 8) || is_cn_mobile(run) || self.labelled(text, start);
        }
        if shape.plus || shape.parens {
            return true;
        }
        shape.separated_like_a_phone()
            && !near_currency(text, start, end)
            && !(shape.groups.len() == 2 && self.street_follows(text, end))
    }

    fn labelled(&self, text: &str, start: usize) -> bool {
        self.label
            .is_match(window_before(text, start, LABEL_WINDOW))
    }

    fn street_follows(&self, text: &str, end: usize) -> bool {
        self.street_after
            .is_match(window_after(text, end, STREET_WINDOW))
    }
}

/// `1[3-9]` + 9 digits: the mainland China mobile numbering plan.
fn is_cn_mobile(run: &str) -> bool {
    let b = run.as_bytes();
    b.len() == 11 && b[0] == b'1' && (b'3'..=b'9').contains(&b[1])
}

/// A candidate split into digit groups and what joins them.
struct Shape<'a> {
    plus: bool,
    parens: bool,
    groups: Vec<&'a str>,
    /// Separator characters between groups (parens excluded).
    seps: Vec<char>,
}

impl<'a> Shape<'a> {
    /// `None` when the parentheses are unbalanced, nested, or wrap a group
    /// that cannot be an area or trunk code (more than 5 digits).
    fn parse(main: &'a str) -> Option<Self> {
        let plus = main.starts_with('+');
        let body = main.trim_start_matches('+');
        let mut groups = Vec::new();
        let mut seps = Vec::new();
        let mut parens = false;
        let mut open = false;
        let mut group_start: Option<usize> = None;
        let mut paren_group_len = 0;
        for (i, c) in body.char_indices() {
            if c.is_ascii_digit() {
                group_start.get_or_insert(i);
                if open {
                    paren_group_len += 1;
                }
                continue;
            }
            if let Some(s) = group_start.take() {
                groups.push(&body[s..i]);
            }
            match c {
                '(' if !open => {
                    open = true;
                    parens = true;
                    paren_group_len = 0;
                }
                ')' if open => {
                    open = false;
                    if !(1..=5).contains(&paren_group_len) {
                        return None;
                    }
                }
                ' ' | '.' | '-' => seps.push(c),
                _ => return None,
            }
        }
        if let Some(s) = group_start {
            groups.push(&body[s..]);
        }
        if open || groups.is_empty() {
            return None;
        }
        Some(Shape {
            plus,
            parens,
            groups,
            seps,
        })
    }

    /// Separator-only numbers (no `+`, no parens): accept phone-like groups,
    /// refuse the shapes of other numbers.
    fn separated_like_a_phone(&self) -> bool {
        let g = &self.groups;
        let lens: Vec<usize> = g.iter().map(|x| x.len()).collect();
        // Only the first group may be a single digit (a trunk or country
        // prefix, `1 415 555 0132`); `3 4 5 6 7 8 9` is a list.
        if lens[1..].contains(&1) || lens.iter().any(|&l| l > 8) {
            return false;
        }
        // Two groups are the weakest phone shape: ask for a subscriber part
        // of at least 4 digits (`467 3395`, `99 668472`); `9816 214` or
        // `75534-030` are a number and a house number, or a postal code.
        if g.len() == 2 && lens[1] < 4 {
            return false;
        }
        let dotted = self.seps.contains(&'.');
        // `3.14159265` is a decimal; `1.2.3.4`-like is an IP or a version.
        if dotted && (g.len() < 3 || (g.len() == 4 && lens.iter().all(|&l| l <= 3))) {
            return false;
        }
        // Thousands separators: `12.345.678` always; with spaces only the
        // unambiguous `1 234 567` (Spanish phones are written `699 956 915`).
        // A round `… 000` tail is an amount too (`10 500 000 000`).
        let thousands = lens[0] <= 3 && lens[1..].iter().all(|&l| l == 3);
        if thousands && (dotted || lens[0] == 1 || g[g.len() - 1] == "000") {
            return false;
        }
        // 3-2-4 is the SSN shape, whether or not it is a valid SSN.
        if lens == [3, 2, 4] {
            return false;
        }
        // A date anywhere at the edges: `ISO 8601 2004-05-06` joins a number
        // and a date with a space.
        let n = g.len();
        let date_at_edge = n >= 3 && (is_date(&g[..3]) || is_date(&g[n - 3..]));
        !date_at_edge && !g.iter().all(|x| is_year(x))
    }
}

fn is_year(group: &str) -> bool {
    group.len() == 4 && matches!(group.parse::<u32>(), Ok(1900..=2099))
}

/// `2024-01-15`, `15.01.2024`, `01 15 2024`.
fn is_date(groups: &[&str]) -> bool {
    let [a, b, c] = groups else {
        return false;
    };
    let n = |s: &str| s.parse::<u32>().unwrap_or(0);
    let day_month = |d: &str, m: &str| {
        d.len() <= 2 && m.len() <= 2 && (1..=31).contains(&n(d)) && (1..=12).contains(&n(m))
    };
    (is_year(a) && day_month(c, b)) || (is_year(c) && (day_month(a, b) || day_month(b, a)))
}

/// `$ 1 234 567`, `1 234 567 EUR`, `12 345 678元`: an amount, not a phone.
fn near_currency(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].trim_end_matches(' ');
    if prev_char(before, before.len()).is_some_and(|c| "$€£¥₹".contains(c)) {
        return true;
    }
    let after = text[end..].trim_start_matches(' ');
    let head: String = after
        .chars()
        .take(7)
        .collect::<String>()
        .to_ascii_lowercase();
    [
        "usd", "eur", "gbp", "cny", "rmb", "jpy", "chf", "cad", "aud", "hkd", "inr", "rub", "krw",
        "sek", "nok", "dkk", "pln", "brl", "mxn", "dollar", "euro", "yuan", "%", "元", "块",
    ]
    .iter()
    .any(|unit| head.starts_with(unit))
}

#[cfg(test)]
mod tests {
    use crate::detect::tests::found;
    use crate::PiiKind::Phone;

    fn phones(text: &str) -> Vec<String> {
        found(text)
            .into_iter()
            .filter(|(k, _)| *k == Phone)
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn international_and_national_formats() {
        for (text, want) in [
            ("call +1 415-555-0132 now", "+1 415-555-0132"),
            ("+44 20 7946 0958", "+44 20 7946 0958"),
            ("office (415) 555-0132.", "(415) 555-0132"),
            ("415.555.0132", "415.555.0132"),
            ("001-415-555-0132", "001-415-555-0132"),
            ("Fax: 345-899-3560x4587", "345-899-3560x4587"),
            ("desk 415-555-0132 ext. 12", "415-555-0132 ext. 12"),
            ("Desk: +41 (0)96 471 07 95 Fax", "+41 (0)96 471 07 95"),
            ("Mobile: 03.93.92.16.85", "03.93.92.16.85"),
            ("(898)666-3621x0135", "(898)666-3621x0135"),
            ("Phone: 0490 75 40 81", "0490 75 40 81"),
            ("Phone: 467 3395", "467 3395"),
            ("messages to 699 956 915", "699 956 915"),
            ("(call 415-555-0132)", "415-555-0132"),
            ("room7 415 555 0132", "415 555 0132"),
            ("+14155550132", "+14155550132"),
        ] {
            assert_eq!(phones(text), [want], "{text}");
        }
    }

    #[test]
    fn chinese_mobile() {
        assert_eq!(phones("手机13812345678，谢谢"), ["13812345678"]);
        assert_eq!(phones("+86 138 1234 5678"), ["+86 138 1234 5678"]);
        assert_eq!(phones("+86-138-1234-5678"), ["+86-138-1234-5678"]);
        // Not the mobile plan: second digit 2.
        assert!(phones("12812345678").is_empty());
    }

    #[test]
    fn labelled_bare_runs() {
        assert_eq!(phones("Fax: 9498777106"), ["9498777106"]);
        assert_eq!(phones("Desk: 5403926876 Fax"), ["5403926876"]);
        assert_eq!(phones("call me at 4155550132"), ["4155550132"]);
        assert_eq!(phones("联系电话：4155550132"), ["4155550132"]);
        // `tel` inside `hotel` is no label.
        assert!(phones("hotel booking 4155550132").is_empty());
    }

    #[test]
    fn random_digit_runs_dates_and_numbers_are_not_phones() {
        for text in [
            "order 1234567 shipped",
            "order #4155550132",
            "in 2019 we paid 1234567",
            "ref 20240115093000",
            "on 2024-01-15 at noon",
            "on 15.01.2024 at noon",
            "from 1990-2020",
            "1999 2000 2001 2002",
            "pi is 3.14159265",
            "version 10.20.30.40",
            "v1.2.3.4567890",
            "population 12.345.678",
            "total 1 234 567",
            "costs $ 415 555 013",
            "costs 415 555 013 EUR",
            "isbn 978-3-16-148410-0",
            "666-12-3456",
            "1 2 3 4 5 6 7 8",
            "12345",
            "+12345",
            "1234567,89",
            "abc415-555-0132",
            "send it to 99449 18 McPherson Road",
            "ZIP: 75534-030",
            "The restaurant is at 17151 2450 Crown St",
            "here: 370 3911 fourth avenue suite 5",
            "see ISO 8601 2004-05-06",
            "GDP rose to 10 500 000 000",
            "balance: 45 678 901 RUB",
            "Invoice INV-2024-000123 due",
        ] {
            assert!(phones(text).is_empty(), "{text}: {:?}", phones(text));
        }
    }
}
