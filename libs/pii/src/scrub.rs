//! The scrubber: applies a tenant's [`Policy`] to every detection.

use std::fmt;
use std::net::IpAddr;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::{Action, Detector, Findings, PiiKind, Policy};

/// Scrubs text under one tenant's policy and pseudonym key.
///
/// Holds the key in a [`Zeroizing`] buffer (wiped on drop) and implements
/// `Debug` by hand so the key can never reach a log line.
#[derive(Clone)]
pub struct Scrubber {
    policy: Policy,
    key: Zeroizing<[u8; 32]>,
    detector: &'static Detector,
}

/// The scrubbed text and what was found in it (counts only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubbed {
    pub text: String,
    pub findings: Findings,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scrubber")
            .field("policy", &self.policy)
            .field("pseudonym_key", &"<redacted>")
            .finish()
    }
}

impl Scrubber {
    /// `pseudonym_key` is the tenant's HMAC key (the caller derives it per
    /// tenant), so tokens are stable within a tenant and differ across
    /// tenants.
    pub fn new(policy: Policy, pseudonym_key: [u8; 32]) -> Self {
        let mut pseudonym_key = pseudonym_key;
        let key = Zeroizing::new(pseudonym_key);
        // The argument is `Copy`: wipe our copy of it too. (The caller's own
        // copy is the caller's to wipe.)
        zeroize::Zeroize::zeroize(&mut pseudonym_key);
        Self {
            policy,
            key,
            detector: Detector::shared(),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn scrub(&self, text: &str) -> Scrubbed {
        let mut findings = Findings::default();
        let detections = self.detector.detect(text);
        if detections.is_empty() {
            return Scrubbed {
                text: text.to_owned(),
                findings,
            };
        }
        let mut out = String::with_capacity(text.len() + 16 * detections.len());
        let mut last = 0;
        for d in detections {
            out.push_str(&text[last..d.start]);
            let value = &text[d.start..d.end];
            match self.policy.action_for(d.kind) {
                Action::Redact => out.push_str(d.kind.placeholder()),
                Action::Mask => out.push_str(&mask(d.kind, value)),
                Action::Pseudonymize => out.push_str(&self.pseudonym(d.kind, value)),
            }
            findings.add(d.kind);
            last = d.end;
        }
        out.push_str(&text[last..]);
        Scrubbed {
            text: out,
            findings,
        }
    }

    /// `[KIND:<16 hex>]`: the first 8 bytes of
    /// HMAC-SHA256(key, kind code || 0x00 || normalized value). The kind is
    /// in the MAC input so equal strings of different kinds do not collide;
    /// 64 bits keep accidental collisions negligible per tenant.
    fn pseudonym(&self, kind: PiiKind, value: &str) -> String {
        let normalized = Zeroizing::new(normalize(kind, value));
        let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(&self.key[..]) {
            Ok(mac) => mac,
            // HMAC accepts keys of any length; this arm cannot run.
            Err(_) => return kind.placeholder().to_owned(),
        };
        mac.update(kind.code().as_bytes());
        mac.update(&[0]);
        mac.update(normalized.as_bytes());
        let tag = mac.finalize().into_bytes();
        let placeholder = kind.placeholder();
        format!(
            "{}:{}]",
            &placeholder[..placeholder.len() - 1],
            hex::encode(&tag[..8])
        )
    }
}

/// The form two spellings of the same value share: e-mails lowercased;
/// numbers and codes reduced to their letters and digits, uppercased; IPs in
/// canonical `std` form (`FE80:0::1` and `fe80::1` agree). Secrets are
/// compared exactly: their case is significant.
fn normalize(kind: PiiKind, value: &str) -> String {
    match kind {
        PiiKind::Email => value.to_lowercase(),
        PiiKind::Phone
        | PiiKind::CreditCard
        | PiiKind::Iban
        | PiiKind::UsSsn
        | PiiKind::CnResidentId => value
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_uppercase())
            .collect(),
        PiiKind::IpAddress => value
            .parse::<IpAddr>()
            .map_or_else(|_| value.to_lowercase(), |ip| ip.to_string()),
        PiiKind::Secret => value.to_owned(),
    }
}

/// Keeps a little for humans and hides the rest, preserving the layout
/// (separators, `+`, parentheses) so the result still reads as what it was.
fn mask(kind: PiiKind, value: &str) -> String {
    let digit = |c: char| c.is_ascii_digit();
    let alnum = |c: char| c.is_ascii_alphanumeric();
    match kind {
        // `j***@example.com`: the domain is usually an employer or provider,
        // useful to a reader and far less identifying than the mailbox.
        PiiKind::Email => match value.rsplit_once('@') {
            Some((local, domain)) => {
                let mut chars = local.chars();
                match (chars.next(), chars.next()) {
                    (Some(first), Some(_)) => format!("{first}***@{domain}"),
                    _ => format!("***@{domain}"),
                }
            }
            None => kind.placeholder().to_owned(),
        },
        // Last 4 digits of a full number, last 2 of a short local one; the
        // extension is hidden entirely.
        PiiKind::Phone => {
            let split = value
                .find(|c: char| c.is_ascii_alphabetic())
                .unwrap_or(value.len());
            let (main, ext) = value.split_at(split);
            let digits = main.chars().filter(|&c| digit(c)).count();
            let keep = if digits >= 10 { 4 } else { 2 };
            keep_last(main, keep, digit) + &keep_last(ext, 0, digit)
        }
        PiiKind::CreditCard | PiiKind::UsSsn => keep_last(value, 4, digit),
        PiiKind::Iban | PiiKind::CnResidentId => keep_last(value, 4, alnum),
        // Last group only: `***.***.**.26`, `****::1`.
        PiiKind::IpAddress => {
            let cut = value.rfind(['.', ':']).map_or(0, |i| i + 1);
            keep_last(&value[..cut], 0, |c| c.is_ascii_hexdigit()) + &value[cut..]
        }
        // Any visible part of a secret (a key's prefix, a password's last
        // characters) narrows a brute-force search and can identify it, and
        // there is no part a reader needs: mask redacts.
        PiiKind::Secret => kind.placeholder().to_owned(),
    }
}

/// Replaces every `maskable` char by `*` except the last `keep` of them.
fn keep_last(s: &str, keep: usize, maskable: impl Fn(char) -> bool) -> String {
    let hide = s
        .chars()
        .filter(|&c| maskable(c))
        .count()
        .saturating_sub(keep);
    let mut seen = 0;
    s.chars()
        .map(|c| {
            if !maskable(c) {
                return c;
            }
            seen += 1;
            if seen <= hide {
                '*'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: [u8; 32] = [7; 32];
    const KEY_B: [u8; 32] = [9; 32];

    fn with(action: Action, key: [u8; 32]) -> Scrubber {
        Scrubber::new(
            Policy {
                default: action,
                kinds: Default::default(),
            },
            key,
        )
    }

    fn redact(text: &str) -> String {
        with(Action::Redact, KEY_A).scrub(text).text
    }

    fn masked(text: &str) -> String {
        with(Action::Mask, KEY_A).scrub(text).text
    }

    #[test]
    fn redact_writes_placeholders() {
        assert_eq!(
            redact("mail john@example.com or call +1 415-555-0132"),
            "mail [EMAIL] or call [PHONE]"
        );
        assert_eq!(redact("card 4242 4242 4242 4242."), "card [CREDIT_CARD].");
        assert_eq!(redact("IBAN GB82WEST12345698765432"), "IBAN [IBAN]");
        assert_eq!(redact("ssn 123-45-6789"), "ssn [US_SSN]");
        assert_eq!(redact("身份证11010519491231002X"), "身份证[CN_RESIDENT_ID]");
        assert_eq!(redact("from 10.1.2.3"), "from [IP_ADDRESS]");
        assert_eq!(redact("password: hunter2 ok"), "password: [SECRET] ok");
        assert_eq!(redact("密码是abc123，谢谢"), "密码是[SECRET]，谢谢");
    }

    #[test]
    fn mask_keeps_a_little() {
        assert_eq!(masked("john@example.com"), "j***@example.com");
        assert_eq!(masked("j@example.com"), "***@example.com");
        assert_eq!(
            masked("card 4242 4242 4242 4242"),
            "card **** **** **** 4242"
        );
        assert_eq!(masked("card 4242424242424242"), "card ************4242");
        assert_eq!(masked("+1 415-555-0132"), "+* ***-***-0132");
        assert_eq!(masked("Phone: 467 3395"), "Phone: *** **95");
        assert_eq!(masked("Fax: 345-899-3560x4587"), "Fax: ***-***-3560x****");
        assert_eq!(masked("GB82WEST12345698765432"), "******************5432");
        assert_eq!(masked("ssn 123-45-6789"), "ssn ***-**-6789");
        assert_eq!(masked("11010519491231002X"), "**************002X");
        assert_eq!(masked("ip 41.173.96.26"), "ip **.***.**.26");
        assert_eq!(masked("ip fe80::1"), "ip ****::1");
    }

    #[test]
    fn mask_never_reveals_secrets() {
        let text = "key AKIAIOSFODNN7EXAMPLE and password: hunter2";
        assert_eq!(masked(text), "key [SECRET] and password: [SECRET]");
    }

    #[test]
    fn per_kind_actions_override_the_default() {
        let policy = Policy {
            default: Action::Redact,
            kinds: [(PiiKind::Email, Action::Mask)].into_iter().collect(),
        };
        let s = Scrubber::new(policy, KEY_A);
        assert_eq!(
            s.scrub("john@example.com 10.1.2.3").text,
            "j***@example.com [IP_ADDRESS]"
        );
    }

    fn token(s: &Scrubber, text: &str) -> String {
        let out = s.scrub(text);
        assert_eq!(out.findings.total(), 1, "{text}");
        out.text
    }

    #[test]
    fn pseudonyms_are_keyed_hmac_tokens() {
        let a = with(Action::Pseudonymize, KEY_A);
        let got = token(&a, "john@example.com");
        // Independent recomputation of the documented construction.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&KEY_A).unwrap();
        mac.update(b"email\0john@example.com");
        let want = format!("[EMAIL:{}]", hex::encode(&mac.finalize().into_bytes()[..8]));
        assert_eq!(got, want);
        assert_eq!(got.len(), "[EMAIL:]".len() + 16);
    }

    #[test]
    fn pseudonyms_are_stable_within_a_key_and_differ_across_keys() {
        let a = with(Action::Pseudonymize, KEY_A);
        let b = with(Action::Pseudonymize, KEY_B);
        for (x, y) in [
            ("John@Example.COM", "john@example.com"),
            ("4242 4242 4242 4242", "4242-4242-4242-4242"),
            ("+1 415-555-0132", "+1 (415) 555 0132"),
            ("gb82 west 1234 5698 7654 32", "GB82WEST12345698765432"),
            ("11010519491231002x", "11010519491231002X"),
            ("FE80:0::1", "fe80::1"),
        ] {
            assert_eq!(token(&a, x), token(&a, y), "{x} vs {y}");
            assert_ne!(token(&a, x), token(&b, x), "{x}");
        }
        assert_ne!(token(&a, "john@example.com"), token(&a, "jane@example.com"));
        assert!(token(&a, "password: hunter2").starts_with("password: [SECRET:"));
    }

    #[test]
    fn findings_count_per_kind() {
        let out =
            redact_full("a@b.io, c@d.org, 10.0.0.1, card 4242424242424242, password=x1 and more");
        assert_eq!(out.findings.count(PiiKind::Email), 2);
        assert_eq!(out.findings.count(PiiKind::IpAddress), 1);
        assert_eq!(out.findings.count(PiiKind::CreditCard), 1);
        assert_eq!(out.findings.count(PiiKind::Secret), 1);
        assert_eq!(out.findings.count(PiiKind::Phone), 0);
        assert_eq!(out.findings.total(), 5);
        assert_eq!(
            out.findings.to_codes().into_iter().collect::<Vec<_>>(),
            [
                ("credit_card".to_owned(), 1),
                ("email".to_owned(), 2),
                ("ip_address".to_owned(), 1),
                ("secret".to_owned(), 1)
            ]
        );
    }

    fn redact_full(text: &str) -> Scrubbed {
        with(Action::Redact, KEY_A).scrub(text)
    }

    #[test]
    fn mixed_chinese_english_text() {
        let text = "客户张三（email: zhang.san@example.cn）的手机是13812345678，卡号4242424242424242。Thanks!";
        let out = redact_full(text);
        assert_eq!(
            out.text,
            "客户张三（email: [EMAIL]）的手机是[PHONE]，卡号[CREDIT_CARD]。Thanks!"
        );
        assert_eq!(out.findings.total(), 3);
    }

    #[test]
    fn text_without_pii_is_unchanged() {
        let text = "今天天气很好。Version 1.2.3.4.5 ships on 2024-05-01 for $1,250.";
        let out = redact_full(text);
        assert_eq!(out.text, text);
        assert!(out.findings.is_empty());
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let s = with(Action::Redact, [0xAB; 32]);
        let dbg = format!("{s:?}");
        assert!(dbg.contains("<redacted>"));
        assert!(!dbg.contains("171") && !dbg.to_lowercase().contains("ab, "));
    }
}
