//! Chinese resident identity card numbers (GB 11643-1999): 6-digit region
//! code, 8-digit birth date, 3-digit sequence, and an ISO 7064 MOD 11-2
//! check character (`0`–`9` or `X`). A valid province prefix, a real
//! calendar date not in the future and the checksum together leave about one
//! random 18-digit run in a few hundred.

use std::time::{SystemTime, UNIX_EPOCH};

use regex::Regex;

use super::{clean_left, clean_right, compile};
use crate::{Detection, PiiKind};

const CANDIDATE: &str = r"[0-9]{17}[0-9Xx]";

const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const CHECK: &[u8; 11] = b"10X98765432";

pub(crate) struct CnIdRecognizer {
    re: Regex,
    /// Latest plausible birth year, fixed when the detector is built.
    max_year: u32,
}

impl CnIdRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            re: compile(CANDIDATE),
            max_year: current_year(),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.re.find_iter(text) {
            if clean_left(text, m.start())
                && clean_right(text, m.end())
                && is_cn_id(m.as_str().as_bytes(), self.max_year)
            {
                out.push(Detection {
                    kind: PiiKind::CnResidentId,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
}

fn current_year() -> u32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Average Gregorian year; a day off around New Year does not matter here.
    1970 + (secs / 31_556_952) as u32
}

/// `id` is 17 ASCII digits and a digit or `X`/`x`.
fn is_cn_id(id: &[u8], max_year: u32) -> bool {
    let num = |r: std::ops::Range<usize>| {
        id[r]
            .iter()
            .fold(0u32, |acc, &c| acc * 10 + u32::from(c - b'0'))
    };
    let province = num(0..2);
    let province_ok = matches!(
        province,
        11..=15 | 21..=23 | 31..=37 | 41..=46 | 50..=54 | 61..=65 | 71 | 81..=83 | 91
    );
    let (year, month, day) = (num(6..10), num(10..12), num(12..14));
    let date_ok = (1900..=max_year).contains(&year)
        && (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day);
    let sum: u32 = id[..17]
        .iter()
        .zip(WEIGHTS)
        .map(|(&c, w)| u32::from(c - b'0') * w)
        .sum();
    let check_ok = CHECK[(sum % 11) as usize] == id[17].to_ascii_uppercase();
    province_ok && date_ok && check_ok
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::tests::found;
    use crate::PiiKind::CnResidentId;

    /// Builds an ID with a correct check character from its first 17 digits.
    fn with_check(first17: &str) -> String {
        let sum: u32 = first17
            .bytes()
            .zip(WEIGHTS)
            .map(|(c, w)| u32::from(c - b'0') * w)
            .sum();
        format!("{first17}{}", CHECK[(sum % 11) as usize] as char)
    }

    #[test]
    fn finds_valid_ids() {
        let id = "11010519491231002X"; // the GB 11643 worked example
        assert!(is_cn_id(id.as_bytes(), 2100));
        assert_eq!(
            found(&format!("身份证号{id}，请核对")),
            [(CnResidentId, id.into())]
        );
        let lower = id.to_ascii_lowercase();
        assert_eq!(found(&format!("id: {lower}")), [(CnResidentId, lower)]);
        let leap = with_check("44030420000229123");
        assert_eq!(found(&leap), [(CnResidentId, leap.clone())]);
    }

    #[test]
    fn rejects_bad_checksum_dates_and_regions() {
        let bad_check = "110105194912310021";
        let bad_date = with_check("11010519490231002"); // 31 Feb
        let not_leap = with_check("44030419000229123"); // 1900 was not leap
        let future = with_check("11010530001231002");
        let bad_region = with_check("99010519491231002");
        for id in [bad_check.to_owned(), bad_date, not_leap, future, bad_region] {
            assert!(found(&id).iter().all(|(k, _)| *k != CnResidentId), "{id}");
        }
        // Embedded in a longer run.
        assert!(found("111010519491231002X").is_empty());
    }
}
