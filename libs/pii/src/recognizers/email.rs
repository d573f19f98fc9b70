//! E-mail addresses: dot-atom local part, dotted domain of LDH labels, and an
//! alphabetic TLD. Quoted local parts and IP-literal domains are left out:
//! they are rare in chat and would mostly add false positives.

use regex::Regex;

use super::{clean_left, compile, next_char};
use crate::{Detection, PiiKind};

// The local part is dot-separated atoms, so leading, trailing and doubled
// dots never match. `'` is left out of the atom on purpose: in prose it is
// far more often a quote around the address than part of it.
const PATTERN: &str = concat!(
    r"[A-Za-z0-9_%+\-]+(?:\.[A-Za-z0-9_%+\-]+)*",
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}",
);

pub(crate) struct EmailRecognizer {
    re: Regex,
}

impl EmailRecognizer {
    pub(crate) fn new() -> Self {
        Self {
            re: compile(PATTERN),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<Detection>) {
        for m in self.re.find_iter(text) {
            // A TLD running on into digits, `-` or `_` (`a@b.co2`) means the
            // domain was cut short; skip rather than redact half a token.
            let glued_right = next_char(text, m.end())
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if clean_left(text, m.start()) && !glued_right {
                out.push(Detection {
                    kind: PiiKind::Email,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::detect::tests::found;
    use crate::PiiKind::Email;

    #[test]
    fn finds_addresses() {
        assert_eq!(
            found("mail john.doe+tag@mail.example.co.uk now"),
            [(Email, "john.doe+tag@mail.example.co.uk".into())]
        );
        assert_eq!(
            found("You said your email is UshurmaDratchev@rhyta.com. Is that correct?"),
            [(Email, "UshurmaDratchev@rhyta.com".into())]
        );
        // Glued to Chinese on both sides.
        assert_eq!(
            found("请联系zhang_san@example.cn谢谢"),
            [(Email, "zhang_san@example.cn".into())]
        );
        assert_eq!(
            found("<a@b.io>, 'c@d.org'"),
            [(Email, "a@b.io".into()), (Email, "c@d.org".into())]
        );
    }

    #[test]
    fn rejects_non_addresses() {
        for text in [
            "user@localhost",
            "a@b.c",
            "@example.com",
            "john@",
            "john@-example.com",
            "john@example.c0m",
            "john@example.com2",
            "price: 5@10.00",
            "see foo@bar",
        ] {
            assert!(found(text).is_empty(), "{text}");
        }
    }
}
