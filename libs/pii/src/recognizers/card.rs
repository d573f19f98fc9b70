//! Payment card numbers: 13–19 digits (12 for Maestro, which issues
//! 12-digit cards), compact or grouped by spaces or dashes, Luhn-valid, with
//! the prefix and length of a known card network.

use regex::Regex;

use super::{compile, numeric_left, numeric_right};
use crate::{Detection, PiiKind};

// Every run of digit groups joined by single spaces or dashes; the card is
// then searched for as a prefix of its groups (`4242 4242 4242 4242 2027`
// still finds the card before the expiry year).
const CANDIDATE: &str = r"[0-9]+(?:[ \-][0-9]+)*";

/// A card has at most 5 groups; looking further only costs time.
const MAX_GROUPS: usize = 6;

pub(crate) struct CardRecognizer {
    re: Regex,
}

impl CardRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            re: compile(CANDIDATE),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.re.find_iter(text) {
            let Some(start) = unglued_start(text, m.start(), m.as_str()) else {
                continue;
            };
            // (offset, group) pairs relative to `start`.
            let cand = &text[start..m.end()];
            let mut groups: Vec<(usize, &str)> = Vec::new();
            let mut offset = 0;
            for group in cand.split([' ', '-']).take(MAX_GROUPS) {
                groups.push((offset, group));
                offset += group.len() + 1;
            }
            for n in (1..=groups.len()).rev() {
                let (last_at, last) = groups[n - 1];
                let end = start + last_at + last.len();
                let span = &text[start..end];
                if numeric_right(text, end) && is_card(span) {
                    out.push(Detection {
                        kind: PiiKind::CreditCard,
                        start,
                        end,
                    });
                    break;
                }
            }
        }
    }
}

/// Where a digit-group candidate really starts: at its start, or, when its
/// first group is glued to a word (`ref2 4242 …`), at the group after the
/// first space. Shared with the phone recognizer.
pub(crate) fn unglued_start(text: &str, start: usize, cand: &str) -> Option<usize> {
    if numeric_left(text, start) {
        return Some(start);
    }
    let first_group = cand.find(|c: char| !c.is_ascii_digit())?;
    cand[first_group..]
        .strip_prefix(' ')
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '('))
        .map(|_| start + first_group + 1)
}

/// Whether `span` (digits, optionally grouped) is a plausible card number.
pub(crate) fn is_card(span: &str) -> bool {
    let groups: Vec<&str> = span.split([' ', '-']).collect();
    if groups.len() > 1 {
        // One separator kind, and the groupings cards are printed with:
        // 4-4-4-4(-3), 4-6-5 (Amex), 4-6-4 (Diners), 4-4-4 (Maestro 12).
        let mut seps = span.chars().filter(|c| !c.is_ascii_digit());
        let first = seps.next();
        if seps.any(|c| Some(c) != first) {
            return false;
        }
        let (head, rest) = (groups[0], &groups[1..]);
        let (middle, last) = rest.split_at(rest.len() - 1);
        if head.len() != 4
            || !middle.iter().all(|g| g.len() == 4 || g.len() == 6)
            || !(3..=6).contains(&last[0].len())
        {
            return false;
        }
    }
    let digits: Vec<u8> = span
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    (12..=19).contains(&digits.len()) && issuer_plausible(&digits) && luhn_valid(&digits)
}

pub(crate) fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 {
                    doubled - 9
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Prefix (IIN range) and length of the major networks. Deliberately a
/// little generous within each network, strict about anything else: a Luhn
/// check alone passes one random number in ten.
fn issuer_plausible(d: &[u8]) -> bool {
    let len = d.len();
    let prefix = |n: usize| d[..n].iter().fold(0u32, |acc, &x| acc * 10 + u32::from(x));
    let (p1, p2, p3, p4) = (prefix(1), prefix(2), prefix(3), prefix(4));
    match p1 {
        // Visa.
        4 => matches!(len, 13 | 16 | 19),
        // Mastercard 2-series, Mir; JCB's legacy 15-digit 2131.
        2 => {
            ((2221..=2720).contains(&p4) && len == 16)
                || ((2200..=2204).contains(&p4) && (16..=19).contains(&len))
                || (p4 == 2131 && len == 15)
        }
        // JCB's legacy 15-digit 1800.
        1 => p4 == 1800 && len == 15,
        3 => match p2 {
            34 | 37 => len == 15,                     // Amex
            35 => (16..=19).contains(&len),           // JCB
            36 | 38 | 39 => (14..=19).contains(&len), // Diners
            30 => ((300..=305).contains(&p3) || p4 == 3095) && (14..=19).contains(&len),
            _ => false,
        },
        5 => match p2 {
            51..=55 => len == 16,                     // Mastercard
            50 | 56..=59 => (12..=19).contains(&len), // Maestro
            _ => false,
        },
        // Discover (6011, 644–649, 65), UnionPay (62), RuPay (60) and
        // Maestro (56–69, 12–19 digits): together every 6x prefix, with
        // Maestro's length range as the widest.
        6 => (12..=19).contains(&len),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::tests::found;
    use crate::PiiKind::CreditCard;

    fn cards(text: &str) -> Vec<String> {
        found(text)
            .into_iter()
            .filter(|(k, _)| *k == CreditCard)
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn luhn() {
        assert!(luhn_valid(&[
            4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2
        ]));
        assert!(!luhn_valid(&[
            4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4, 3
        ]));
    }

    #[test]
    fn finds_cards_compact_and_grouped() {
        for (text, want) in [
            ("card 4242424242424242.", "4242424242424242"),
            ("card 4242 4242 4242 4242 exp 12/27", "4242 4242 4242 4242"),
            ("card 4242-4242-4242-4242", "4242-4242-4242-4242"),
            ("amex 3782 822463 10005", "3782 822463 10005"),
            ("amex 378282246310005", "378282246310005"),
            ("mc 5555555555554444", "5555555555554444"),
            ("mc2 2223003122003222", "2223003122003222"),
            ("discover 6011111111111117", "6011111111111117"),
            ("diners 30569309025904", "30569309025904"),
            ("jcb 3530111333300000", "3530111333300000"),
            ("visa13 4222222222222", "4222222222222"),
            ("maestro 501864667909", "501864667909"),
            ("卡号4242424242424242请查收", "4242424242424242"),
            ("4242 4242 4242 4242 2027", "4242 4242 4242 4242"),
            ("ref2 4242 4242 4242 4242", "4242 4242 4242 4242"),
        ] {
            assert_eq!(cards(text), [want], "{text}");
        }
    }

    #[test]
    fn rejects_luhn_invalid_and_implausible() {
        for text in [
            "card 4242424242424241",    // Luhn fails
            "card 4242 4242 4242 4243", // Luhn fails, grouped
            "card 5555555555554445",    // Luhn fails
            "id 9242424242424242",      // no network starts with 9
            "visa 424242424242426",     // Visa has no 15-digit cards
            "ref 0000000000000000",     // prefix 0
            "4242 4242 4242-4242",      // mixed separators
            "42 4242 4242 4242 42",     // not a card grouping
            "x4242424242424242",        // glued to a word
            "1.4242424242424242",       // tail of a decimal
            "order 123456789012",       // 12 digits, not Maestro
        ] {
            assert!(cards(text).is_empty(), "{text}: {:?}", cards(text));
        }
    }
}
