//! US Social Security numbers written `AAA-GG-SSSS`, or with spaces or dots
//! when both separators are the same (a mixed `123-45 6789` is more likely
//! two numbers). Bare 9-digit runs are not flagged: without separators they
//! are indistinguishable from any other 9-digit number. Area 000, 666 and
//! 900–999, group 00 and serial 0000 are never issued.

use regex::Regex;

use super::{compile, numeric_left, numeric_right};
use crate::{Detection, PiiKind};

const CANDIDATE: &str = r"[0-9]{3}[- .][0-9]{2}[- .][0-9]{4}";

pub(crate) struct SsnRecognizer {
    re: Regex,
}

impl SsnRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            re: compile(CANDIDATE),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.re.find_iter(text) {
            if numeric_left(text, m.start()) && numeric_right(text, m.end()) && is_ssn(m.as_str()) {
                out.push(Detection {
                    kind: PiiKind::UsSsn,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
}

/// `s` is exactly the candidate shape `AAA?GG?SSSS`.
fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    if b[3] != b[6] {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (area, group, serial) = (num(0..3), num(4..6), num(7..11));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

#[cfg(test)]
mod tests {
    use crate::detect::tests::found;
    use crate::PiiKind::UsSsn;

    #[test]
    fn finds_valid_ssns() {
        for (text, want) in [
            ("His social security number is 853-37-1694", "853-37-1694"),
            ("ssn 123-45-6789.", "123-45-6789"),
            ("ssn 123 45 6789", "123 45 6789"),
            ("ssn 123.45.6789", "123.45.6789"),
            ("社会安全号123-45-6789", "123-45-6789"),
        ] {
            assert_eq!(found(text), [(UsSsn, want.into())], "{text}");
        }
    }

    #[test]
    fn rejects_unissued_numbers() {
        // Not flagged as anything: the SSN shape also keeps them from being
        // taken for phone numbers.
        for text in [
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "987-65-4321",
            "123-00-4567",
            "123-45-0000",
            "666 12 3456",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn rejects_other_shapes() {
        for text in [
            "123-45 6789",
            "1123-45-6789",
            "123-45-67890",
            "a123-45-6789",
            "123456789",
        ] {
            assert!(found(text).iter().all(|(k, _)| *k != UsSsn), "{text}");
        }
    }
}
