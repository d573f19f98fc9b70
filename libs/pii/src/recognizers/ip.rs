//! IP addresses. IPv4: four dotted octets ≤ 255 (no leading zeros, as
//! `std` parses them), not part of a longer dotted number such as the
//! version `1.2.3.4.5`. IPv6: a colon-hex candidate validated by
//! `std::net::Ipv6Addr`, compressed forms and an embedded IPv4 tail included.

use std::net::{Ipv4Addr, Ipv6Addr};

use regex::Regex;

use super::{compile, is_word, next_boundary, next_char, prev_char, window_before};
use crate::{Detection, PiiKind};

const V4: &str = r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}";
// 2 to 7 colons with optional hex groups, then a last group or an IPv4 tail
// (tried first, so `::ffff:192.0.2.1` is not cut at `192`).
const V6: &str = concat!(
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}",
    r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{1,4})?",
);

// `version 1.2.3.4`, `section 4.2.1.3`: a dotted quad that is numbering.
const NUMBERING_WORD: &str = concat!(
    r"(?i)(?:^|[^a-z])(?:v|ver|version|release|build|chapter|chap|section|sec|clause",
    r"|step|figure|fig|table|item|§|版本|章节|第)[ .:]*$",
);

pub(crate) struct IpRecognizer {
    v4: Regex,
    v6: Regex,
    numbering_word: Regex,
}

impl IpRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            v4: compile(V4),
            v6: compile(V6),
            numbering_word: compile(NUMBERING_WORD),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.v4.find_iter(text) {
            if v4_bounded(text, m.start(), m.end())
                && !self
                    .numbering_word
                    .is_match(window_before(text, m.start(), 24))
                && m.as_str().parse::<Ipv4Addr>().is_ok()
            {
                out.push(ip(m.start(), m.end()));
            }
        }
        // The candidate is bounded in length, so after a rejection the search
        // can resume one character later (`note:fe80::1` is then still
        // refused by the left boundary, `x 10:30:00` by the parser).
        let mut pos = 0;
        while let Some(m) = self.v6.find_at(text, pos) {
            match v6_end(text, m.start(), m.as_str()) {
                Some(end) => {
                    out.push(ip(m.start(), end));
                    pos = end;
                }
                None => pos = next_boundary(text, m.start()),
            }
        }
    }
}

fn ip(start: usize, end: usize) -> Detection {
    Detection {
        kind: PiiKind::IpAddress,
        start,
        end,
    }
}

/// Not glued to a word, and not a slice of a longer dotted number.
fn v4_bounded(text: &str, start: usize, end: usize) -> bool {
    let left = prev_char(text, start).is_none_or(|c| !is_word(c) && c != '.');
    let mut after = text[end..].chars();
    let right = match (after.next(), after.next()) {
        (Some(c), _) if is_word(c) => false,
        (Some('.'), Some(d)) => !d.is_ascii_digit(),
        _ => true,
    };
    left && right
}

/// End of the valid IPv6 address at the start of `cand`, if any. A trailing
/// single `:` is sentence punctuation (`at fe80::1: it failed`).
fn v6_end(text: &str, start: usize, cand: &str) -> Option<usize> {
    if prev_char(text, start).is_some_and(|c| is_word(c) || c == ':' || c == '.') {
        return None;
    }
    let cand = match cand.strip_suffix(':') {
        Some(head) if !head.ends_with(':') => head,
        _ => cand,
    };
    let end = start + cand.len();
    let right = match next_char(text, end) {
        Some(c) if is_word(c) => false,
        Some(':') => !text[end + 1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit() || c == ':'),
        Some('.') => !text[end + 1..].starts_with(|c: char| c.is_ascii_digit()),
        _ => true,
    };
    if !right || cand.parse::<Ipv6Addr>().is_err() {
        return None;
    }
    // `::` alone, or a letters-only `ab::cd`, is far more likely code or
    // prose than an address.
    let groups = cand.split(':').filter(|g| !g.is_empty()).count();
    let has_digit = cand.bytes().any(|b| b.is_ascii_digit());
    (has_digit || groups >= 3).then_some(end)
}

#[cfg(test)]
mod tests {
    use crate::detect::tests::found;
    use crate::PiiKind::IpAddress;

    #[test]
    fn finds_ipv4_and_ipv6() {
        for (text, want) in [
            ("address 41.173.96.26 blocked", "41.173.96.26"),
            ("from 192.168.1.1.", "192.168.1.1"),
            ("host=10.0.0.255:8080", "10.0.0.255"),
            ("link fe80::1 up", "fe80::1"),
            (
                "at 2001:db8::8a2e:370:7334, then",
                "2001:db8::8a2e:370:7334",
            ),
            (
                "addr 6e40:4041:c617:e898:c11:40d2:c669:2eb4 blocked",
                "6e40:4041:c617:e898:c11:40d2:c669:2eb4",
            ),
            ("loopback ::1", "::1"),
            ("mapped ::ffff:192.0.2.128 ok", "::ffff:192.0.2.128"),
            ("at fe80::1: it failed", "fe80::1"),
            ("服务器192.168.0.1已下线", "192.168.0.1"),
        ] {
            assert_eq!(found(text), [(IpAddress, want.into())], "{text}");
        }
    }

    #[test]
    fn rejects_non_addresses() {
        for text in [
            "999.1.1.1",
            "256.1.1.1",
            "1.2.3.4.5",
            "version 1.2.3.4.5 released",
            "v1.2.3.4",
            "01.02.03.04",
            "12:30:45",
            "std::io::Result",
            "Vec::new()",
            "a :: b",
            "1:2:3:4:5:6:7:8:9",
            "fe80::1g",
            "version 1.2.3.4",
            "see section 4.2.1.3 below",
            "版本 1.2.3.4",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
