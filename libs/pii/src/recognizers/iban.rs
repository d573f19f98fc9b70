//! IBANs: country code, 2 check digits, BBAN; compact or printed in groups
//! of 4; the country's registered length and ISO 7064 mod 97-10 == 1.
//! Case-insensitive, since people (and lowercasing pipelines) write
//! `gb82west…`; the length table and the checksum keep that safe.

use regex::Regex;

use super::{clean_left, clean_right, compile, next_boundary};
use crate::{Detection, PiiKind};

// Compact (11–30 BBAN characters) or grouped by single spaces in fours with a
// shorter last group. Both are bounded, so a rejected candidate can be
// retried one character later without quadratic cost.
const CANDIDATE: &str = concat!(
    r"[A-Za-z]{2}[0-9]{2}",
    r"(?:[A-Za-z0-9]{11,30}|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,4})?)",
);

/// Registered IBAN lengths (SWIFT IBAN registry).
#[rustfmt::skip]
const LENGTHS: &[(&str, usize)] = &[
    ("AD", 24), ("AE", 23), ("AL", 28), ("AT", 20), ("AZ", 28), ("BA", 20), ("BE", 16),
    ("BG", 22), ("BH", 22), ("BI", 27), ("BR", 29), ("BY", 28), ("CH", 21), ("CR", 22),
    ("CY", 28), ("CZ", 24), ("DE", 22), ("DJ", 27), ("DK", 18), ("DO", 28), ("EE", 20),
    ("EG", 29), ("ES", 24), ("FI", 18), ("FK", 18), ("FO", 18), ("FR", 27), ("GB", 22),
    ("GE", 22), ("GI", 23), ("GL", 18), ("GR", 27), ("GT", 28), ("HN", 28), ("HR", 21),
    ("HU", 28), ("IE", 22), ("IL", 23), ("IQ", 23), ("IS", 26), ("IT", 27), ("JO", 30),
    ("KW", 30), ("KZ", 20), ("LB", 28), ("LC", 32), ("LI", 21), ("LT", 20), ("LU", 20),
    ("LV", 21), ("LY", 25), ("MC", 27), ("MD", 24), ("ME", 22), ("MK", 19), ("MN", 20),
    ("MR", 27), ("MT", 31), ("MU", 30), ("NI", 28), ("NL", 18), ("NO", 15), ("OM", 23),
    ("PK", 24), ("PL", 28), ("PS", 29), ("PT", 25), ("QA", 29), ("RO", 24), ("RS", 22),
    ("RU", 33), ("SA", 24), ("SC", 31), ("SD", 18), ("SE", 24), ("SI", 19), ("SK", 24),
    ("SM", 27), ("SO", 23), ("ST", 25), ("SV", 28), ("TL", 23), ("TN", 24), ("TR", 26),
    ("UA", 29), ("VA", 22), ("VG", 24), ("XK", 20), ("YE", 30),
];

pub(crate) struct IbanRecognizer {
    re: Regex,
}

impl IbanRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            re: compile(CANDIDATE),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        let mut pos = 0;
        while let Some(m) = self.re.find_at(text, pos) {
            match accept(text, m.start(), m.as_str()) {
                Some(end) => {
                    out.push(Detection {
                        kind: PiiKind::Iban,
                        start: m.start(),
                        end,
                    });
                    pos = end;
                }
                None => pos = next_boundary(text, m.start()),
            }
        }
    }
}

/// The end of the longest valid IBAN at the start of `cand`. Grouped
/// candidates may have swallowed a following 4-letter word (`… 00 this`), so
/// trailing groups are dropped until the rest validates.
fn accept(text: &str, start: usize, cand: &str) -> Option<usize> {
    if !clean_left(text, start) {
        return None;
    }
    let groups: Vec<&str> = cand.split(' ').collect();
    for n in (1..=groups.len()).rev() {
        let taken = &groups[..n];
        let len = taken.iter().map(|g| g.len()).sum::<usize>() + n - 1;
        let end = start + len;
        // Only the last printed group may be short.
        let shaped = n == 1 || taken[..n - 1].iter().all(|g| g.len() == 4);
        if shaped && clean_right(text, end) && is_iban(&taken.concat()) {
            return Some(end);
        }
    }
    None
}

/// Whether the compact `s` is a valid IBAN.
pub(crate) fn is_iban(s: &str) -> bool {
    let s = s.to_ascii_uppercase();
    let b = s.as_bytes();
    if b.len() < 15 || !b.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    let Some(&(_, want)) = LENGTHS.iter().find(|(cc, _)| cc.as_bytes() == &b[..2]) else {
        return false;
    };
    if b.len() != want || !b[2].is_ascii_digit() || !b[3].is_ascii_digit() {
        return false;
    }
    // Move the first four characters to the end, read letters as 10..35,
    // and reduce mod 97 as we go.
    let rem = b[4..].iter().chain(&b[..4]).fold(0u32, |acc, &c| {
        if c.is_ascii_digit() {
            (acc * 10 + u32::from(c - b'0')) % 97
        } else {
            (acc * 100 + u32::from(c - b'A') + 10) % 97
        }
    });
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::tests::found;
    use crate::PiiKind::Iban;

    #[test]
    fn checksum() {
        assert!(is_iban("GB82WEST12345698765432"));
        assert!(is_iban("DE89370400440532013000"));
        assert!(!is_iban("GB83WEST12345698765432"));
        assert!(!is_iban("ZZ82WEST12345698765432"));
        assert!(!is_iban("GB82WEST1234569876543"));
    }

    #[test]
    fn finds_compact_grouped_and_lowercase() {
        for (text, want) in [
            (
                "My IBAN is GB59IFUE40226315499137",
                "GB59IFUE40226315499137",
            ),
            (
                "my iban is gb42nawi04454264788619",
                "gb42nawi04454264788619",
            ),
            (
                "IBAN: DE89 3704 0044 0532 0130 00.",
                "DE89 3704 0044 0532 0130 00",
            ),
            (
                "DE89 3704 0044 0532 0130 00 this week",
                "DE89 3704 0044 0532 0130 00",
            ),
            ("NO9386011117947 ok", "NO9386011117947"),
            (
                "账号FR1420041010050500013M02606。",
                "FR1420041010050500013M02606",
            ),
        ] {
            assert_eq!(found(text), [(Iban, want.into())], "{text}");
        }
    }

    #[test]
    fn rejects_wrong_check_digits_and_lengths() {
        for text in [
            "GB83WEST12345698765432",
            "DE88 3704 0044 0532 0130 00",
            "GB82WEST123456987654321",
            "XGB82WEST12345698765432",
            "AB12CDEF1234567890",
        ] {
            assert!(found(text).iter().all(|(k, _)| *k != Iban), "{text}");
        }
    }
}
