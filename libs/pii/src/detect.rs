//! The detector: runs every recognizer and resolves overlapping spans.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::recognizers::{
    card::CardRecognizer, cn_id::CnIdRecognizer, email::EmailRecognizer, iban::IbanRecognizer,
    ip::IpRecognizer, phone::PhoneRecognizer, secret::SecretRecognizer, ssn::SsnRecognizer,
};
use crate::PiiKind;

/// A detected value: its kind and byte offsets into the text. Offsets are on
/// char boundaries; detections from [`Detector::detect`] are sorted and do not
/// overlap. Carries no copy of the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Detection {
    pub kind: PiiKind,
    pub start: usize,
    pub end: usize,
}

/// All recognizers, with their regexes compiled once.
pub struct Detector {
    secret: SecretRecognizer,
    email: EmailRecognizer,
    iban: IbanRecognizer,
    card: CardRecognizer,
    cn_id: CnIdRecognizer,
    ssn: SsnRecognizer,
    ip: IpRecognizer,
    phone: PhoneRecognizer,
}

static SHARED: LazyLock<Detector> = LazyLock::new(Detector::new);

impl Default for Detector {
    fn default() -> Self {
        Self::new()
    }
}

impl Detector {
    pub fn new() -> Self {
        Self {
            secret: SecretRecognizer::new(),
            email: EmailRecognizer::new(),
            iban: IbanRecognizer::new(),
            card: CardRecognizer::new(),
            cn_id: CnIdRecognizer::new(),
            ssn: SsnRecognizer::new(),
            ip: IpRecognizer::new(),
            phone: PhoneRecognizer::new(),
        }
    }

    /// The process-wide detector; compiling the regexes once is the point.
    pub fn shared() -> &'static Detector {
        &SHARED
    }

    pub fn detect(&self, text: &str) -> Vec<Detection> {
        let mut candidates = Vec::new();
        self.secret.find(text, &mut candidates);
        self.email.find(text, &mut candidates);
        self.iban.find(text, &mut candidates);
        self.card.find(text, &mut candidates);
        self.cn_id.find(text, &mut candidates);
        self.ssn.find(text, &mut candidates);
        self.ip.find(text, &mut candidates);
        self.phone.find(text, &mut candidates);
        resolve(candidates)
    }
}

/// Overlap tiers, most trusted first. Secrets lead because leaking one is the
/// worst outcome and their formats are the most specific; then the kinds
/// with a checksum or a rigid syntax (a Chinese ID outranks a card because
/// an 18-digit run passing MOD 11-2, a real birth date and a province code is
/// rarer by chance than one passing Luhn); then SSN and IP, whose validators
/// are weaker; phones, the loosest, last.
fn tier(kind: PiiKind) -> u8 {
    match kind {
        PiiKind::Secret => 0,
        PiiKind::CnResidentId => 1,
        PiiKind::Iban | PiiKind::CreditCard | PiiKind::Email => 2,
        PiiKind::UsSsn | PiiKind::IpAddress => 3,
        PiiKind::Phone => 4,
    }
}

/// Keeps a non-overlapping subset: by tier, then longer span, then earlier
/// start, then kind order, so the result never depends on recognizer order.
fn resolve(mut candidates: Vec<Detection>) -> Vec<Detection> {
    candidates.sort_by(|a, b| {
        tier(a.kind)
            .cmp(&tier(b.kind))
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.start.cmp(&b.start))
            .then(a.kind.cmp(&b.kind))
    });
    // start -> end of the spans kept so far; they are disjoint, so only the
    // kept span starting last before `d.end` can overlap `d`.
    let mut kept: BTreeMap<usize, Detection> = BTreeMap::new();
    for d in candidates {
        debug_assert!(d.start < d.end, "recognizers never emit empty spans");
        let overlaps = kept
            .range(..d.end)
            .next_back()
            .is_some_and(|(_, k)| k.end > d.start);
        if !overlaps {
            kept.insert(d.start, d);
        }
    }
    kept.into_values().collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Kinds and values found in `text`, for readable assertions in tests.
    pub(crate) fn found(text: &str) -> Vec<(PiiKind, String)> {
        Detector::shared()
            .detect(text)
            .into_iter()
            .map(|d| (d.kind, text[d.start..d.end].to_owned()))
            .collect()
    }

    #[test]
    fn resolve_prefers_tier_then_length_then_start() {
        let d = |kind, start, end| Detection { kind, start, end };
        let got = resolve(vec![
            d(PiiKind::Phone, 0, 20),
            d(PiiKind::CreditCard, 5, 10),
            d(PiiKind::IpAddress, 30, 35),
            d(PiiKind::IpAddress, 30, 40),
            d(PiiKind::Secret, 38, 45),
            d(PiiKind::Email, 50, 60),
            d(PiiKind::Iban, 55, 60),
        ]);
        assert_eq!(
            got,
            [
                d(PiiKind::CreditCard, 5, 10),
                d(PiiKind::IpAddress, 30, 35),
                d(PiiKind::Secret, 38, 45),
                d(PiiKind::Email, 50, 60),
            ]
        );
    }

    #[test]
    fn overlaps_between_recognizers() {
        // A labelled password that looks like a phone: the secret wins.
        assert_eq!(
            found("password: 13812345678"),
            [(PiiKind::Secret, "13812345678".into())]
        );
        // A QQ-mail style address: the e-mail, not the phone inside it.
        assert_eq!(
            found("邮箱13812345678@qq.com"),
            [(PiiKind::Email, "13812345678@qq.com".into())]
        );
        // A grouped card is also phone-shaped; the card wins.
        assert_eq!(
            found("4111 1111 1111 1111"),
            [(PiiKind::CreditCard, "4111 1111 1111 1111".into())]
        );
    }

    #[test]
    fn mixed_text_offsets_are_char_boundaries() {
        let text = "张三的邮箱是zhang@example.com，手机+86 138 1234 5678，IP 10.0.0.1。";
        let found = Detector::shared().detect(text);
        let kinds: Vec<PiiKind> = found.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, [PiiKind::Email, PiiKind::Phone, PiiKind::IpAddress]);
        for d in &found {
            assert!(text.is_char_boundary(d.start) && text.is_char_boundary(d.end));
        }
        assert_eq!(&text[found[0].start..found[0].end], "zhang@example.com");
        assert_eq!(found[0].start, "张三的邮箱是".len());
        assert_eq!(&text[found[1].start..found[1].end], "+86 138 1234 5678");
        assert_eq!(&text[found[2].start..found[2].end], "10.0.0.1");
    }

    #[test]
    fn long_adversarial_inputs_stay_linear() {
        // Each input is ~200 KB; a quadratic path would take minutes here
        // (debug build), a linear one well under a second.
        let inputs = [
            "1".repeat(200_000),
            "1 ".repeat(100_000),
            "12-".repeat(70_000),
            "password=".repeat(22_000),
            "password: x ".repeat(16_000),
            "GB82".repeat(50_000),
            "fe80:".repeat(40_000),
            "1.2.".repeat(50_000),
            "a@".repeat(100_000),
            "密码是".repeat(22_000),
        ];
        let started = std::time::Instant::now();
        for text in &inputs {
            let _ = Detector::shared().detect(text);
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn plain_text_has_no_detections() {
        for text in [
            "",
            "Meet me at 10:30 on 2024-05-01; the budget is $1,250,000 (up 12.5%).",
            "Release 1.2.3.4.5 fixed bug #123456 in build 20240115.",
            "我们在2023年卖出了1234567件商品，增长了15%。",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
