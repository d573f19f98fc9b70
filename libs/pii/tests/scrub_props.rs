//! Property tests: scrubbing never panics, detections are well-formed, and
//! generated e-mails and card numbers never survive into the output.

use mnemo_pii::{Action, Detector, PiiKind, Policy, Scrubber};
use proptest::prelude::*;

fn scrubber(action: Action) -> Scrubber {
    Scrubber::new(
        Policy {
            default: action,
            kinds: Default::default(),
        },
        [42; 32],
    )
}

fn any_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        Just(Action::Redact),
        Just(Action::Mask),
        Just(Action::Pseudonymize)
    ]
}

/// Text made mostly of the characters recognizers care about, so the
/// validators (not just the regexes) get exercised.
fn pii_ish_text() -> impl Strategy<Value = String> {
    "[0-9 .()+\\-xX@a-fA-F:_/,密码是：，中文\\n]{0,80}"
}

/// Filler that cannot itself form PII or a password label.
fn filler() -> impl Strategy<Value = String> {
    "[a-zA-Z 中文，。！]{0,20}"
}

/// A Visa-like 16-digit number with a correct Luhn check digit.
fn luhn_card() -> impl Strategy<Value = String> {
    proptest::collection::vec(0u8..10, 14).prop_map(|body| {
        let mut digits = vec![4u8];
        digits.extend(body);
        // The check digit sits at position 0 from the right, so the payload
        // digits at even positions from the right (0, 2, …) are doubled.
        let sum: u32 = digits
            .iter()
            .rev()
            .enumerate()
            .map(|(i, &d)| {
                let d = u32::from(d);
                if i % 2 == 0 {
                    let x = d * 2;
                    if x > 9 {
                        x - 9
                    } else {
                        x
                    }
                } else {
                    d
                }
            })
            .sum();
        digits.push(((10 - sum % 10) % 10) as u8);
        digits.iter().map(|d| char::from(b'0' + d)).collect()
    })
}

fn group(card: &str, sep: &str) -> String {
    card.as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(sep)
}

proptest! {
    #[test]
    fn scrub_never_panics_and_detections_are_well_formed(
        text in prop_oneof![any::<String>(), pii_ish_text()],
        action in any_action(),
    ) {
        let detections = Detector::shared().detect(&text);
        let mut last_end = 0;
        for d in &detections {
            prop_assert!(d.start < d.end && d.end <= text.len());
            prop_assert!(d.start >= last_end, "sorted and non-overlapping");
            prop_assert!(text.is_char_boundary(d.start) && text.is_char_boundary(d.end));
            last_end = d.end;
        }
        let out = scrubber(action).scrub(&text);
        prop_assert_eq!(out.findings.total() as usize, detections.len());
        if detections.is_empty() {
            prop_assert_eq!(out.text, text);
        }
    }

    #[test]
    fn generated_emails_never_survive(
        local in "[a-z][a-z0-9]{2,10}(\\.[a-z0-9]{1,5})?",
        domain in "[a-z]{3,10}",
        tld in prop_oneof![Just("com"), Just("org"), Just("io"), Just("de"), Just("cn")],
        before in filler(),
        after in filler(),
        action in any_action(),
    ) {
        let email = format!("{local}@{domain}.{tld}");
        let text = format!("{before} {email} {after}");
        let out = scrubber(action).scrub(&text);
        prop_assert!(!out.text.contains(&email), "{}", out.text);
        prop_assert_eq!(out.findings.count(PiiKind::Email), 1);
    }

    #[test]
    fn generated_cards_never_survive(
        card in luhn_card(),
        sep in prop_oneof![Just(""), Just(" "), Just("-")],
        before in filler(),
        after in filler(),
        action in any_action(),
    ) {
        let written = if sep.is_empty() { card.clone() } else { group(&card, sep) };
        let text = format!("{before} {written} {after}");
        let out = scrubber(action).scrub(&text);
        prop_assert!(!out.text.contains(&written), "{}", out.text);
        prop_assert!(!out.text.contains(&card), "{}", out.text);
        prop_assert_eq!(out.findings.count(PiiKind::CreditCard), 1);
    }
}
