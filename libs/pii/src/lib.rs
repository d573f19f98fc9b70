//! mnemo-pii owns PII scrubbing of message text at ingest, before anything is
//! stored: it finds e-mail addresses, phone numbers, payment cards, IBANs, US
//! SSNs, Chinese resident IDs, IP addresses and secrets (API keys, tokens,
//! labelled passwords), and replaces each one according to a per-tenant
//! [`Policy`] by a placeholder (`[EMAIL]`), a mask (`j***@example.com`) or a
//! keyed pseudonym (`[EMAIL:<16 hex>]`).
//!
//! Key decisions:
//! - Recognizers are regexes for candidates plus validators in code (Luhn,
//!   mod-97, ISO 7064 MOD 11-2, calendar dates, `std::net` parsers, shape
//!   rules for phones), because a bare regex flags every long digit run.
//!   Regexes are compiled once ([`Detector::shared`]) and use `[0-9]` (not the
//!   Unicode `\d`) and hand-written ASCII boundary checks (not the Unicode
//!   `\b`), so that a number glued to Chinese text is still found while one
//!   glued to ASCII letters or to a longer dotted number is not.
//! - Overlaps are resolved deterministically: secrets first, then the
//!   checksum-validated kinds, then SSN/IP, then phones; within a tier the
//!   longer span wins, then the earlier one.
//! - Findings carry counts per kind, never values: no detected value is ever
//!   logged, returned or printed, except inside the replacement the policy
//!   chose (a mask keeps a few characters on purpose).
//! - Pseudonyms are HMAC-SHA256 under a per-tenant key over a normalized
//!   value, so they are stable within a tenant, unlinkable across tenants, and
//!   the same thing written differently maps to the same token. The key is
//!   zeroized on drop and never printed.

mod detect;
mod recognizers;
mod scrub;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use detect::{Detection, Detector};
pub use scrub::{Scrubbed, Scrubber};

/// The kinds of PII this crate recognizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    Email,
    Phone,
    CreditCard,
    Iban,
    UsSsn,
    CnResidentId,
    IpAddress,
    Secret,
}

impl PiiKind {
    pub const ALL: [PiiKind; 8] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::CreditCard,
        PiiKind::Iban,
        PiiKind::UsSsn,
        PiiKind::CnResidentId,
        PiiKind::IpAddress,
        PiiKind::Secret,
    ];

    /// Stable snake_case code, identical to the serde name.
    pub fn code(self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::Phone => "phone",
            PiiKind::CreditCard => "credit_card",
            PiiKind::Iban => "iban",
            PiiKind::UsSsn => "us_ssn",
            PiiKind::CnResidentId => "cn_resident_id",
            PiiKind::IpAddress => "ip_address",
            PiiKind::Secret => "secret",
        }
    }

    pub fn parse(code: &str) -> Option<PiiKind> {
        PiiKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// What `Action::Redact` writes in place of a value.
    pub fn placeholder(self) -> &'static str {
        match self {
            PiiKind::Email => "[EMAIL]",
            PiiKind::Phone => "[PHONE]",
            PiiKind::CreditCard => "[CREDIT_CARD]",
            PiiKind::Iban => "[IBAN]",
            PiiKind::UsSsn => "[US_SSN]",
            PiiKind::CnResidentId => "[CN_RESIDENT_ID]",
            PiiKind::IpAddress => "[IP_ADDRESS]",
            PiiKind::Secret => "[SECRET]",
        }
    }

    /// Position in [`PiiKind::ALL`], used to index per-kind arrays.
    fn index(self) -> usize {
        self as usize
    }
}

/// What to do with a detected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Replace by the kind's placeholder, e.g. `[EMAIL]`.
    #[default]
    Redact,
    /// Keep a little for humans (e.g. the last 4 digits), hide the rest.
    Mask,
    /// Replace by a keyed token, e.g. `[EMAIL:0123456789abcdef]`.
    Pseudonymize,
}

/// Per-tenant policy: an action per kind, with a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    pub default: Action,
    #[serde(default)]
    pub kinds: BTreeMap<PiiKind, Action>,
}

impl Policy {
    pub fn action_for(&self, kind: PiiKind) -> Action {
        self.kinds.get(&kind).copied().unwrap_or(self.default)
    }
}

/// How many values of each kind were scrubbed. Counts only, never values, so
/// it is safe to log, store and emit as a metric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings([u32; 8]);

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    pub fn count(&self, kind: PiiKind) -> u32 {
        self.0[kind.index()]
    }

    pub fn total(&self) -> u32 {
        self.0.iter().fold(0u32, |acc, &n| acc.saturating_add(n))
    }

    pub fn merge(&mut self, other: &Findings) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine = mine.saturating_add(theirs);
        }
    }

    /// Non-zero counts keyed by kind code, e.g. `{"email": 2}`.
    pub fn to_codes(&self) -> BTreeMap<String, u32> {
        PiiKind::ALL
            .into_iter()
            .filter(|&k| self.count(k) > 0)
            .map(|k| (k.code().to_owned(), self.count(k)))
            .collect()
    }

    pub(crate) fn add(&mut self, kind: PiiKind) {
        let slot = &mut self.0[kind.index()];
        *slot = slot.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_serde_names() {
        for kind in PiiKind::ALL {
            assert_eq!(PiiKind::parse(kind.code()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.code()));
            assert!(kind.placeholder().starts_with('[') && kind.placeholder().ends_with(']'));
        }
        assert_eq!(PiiKind::parse("EMAIL"), None);
        assert_eq!(PiiKind::parse("nope"), None);
        // ALL is in declaration order, which `index` relies on.
        for (i, kind) in PiiKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }

    #[test]
    fn policy_defaults_and_overrides() {
        let policy: Policy =
            serde_json::from_str(r#"{"default":"mask","kinds":{"email":"pseudonymize"}}"#).unwrap();
        assert_eq!(policy.action_for(PiiKind::Email), Action::Pseudonymize);
        assert_eq!(policy.action_for(PiiKind::Phone), Action::Mask);
        let empty: Policy = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Policy::default());
        assert_eq!(empty.action_for(PiiKind::Secret), Action::Redact);
        assert!(serde_json::from_str::<Policy>(r#"{"defualt":"mask"}"#).is_err());
        assert!(serde_json::from_str::<Policy>(r#"{"kinds":{"passport":"mask"}}"#).is_err());
        let back: Policy = serde_json::from_str(&serde_json::to_string(&policy).unwrap()).unwrap();
        assert_eq!(back, policy);
    }

    #[test]
    fn findings_count_merge_and_codes() {
        let mut a = Findings::default();
        assert!(a.is_empty());
        a.add(PiiKind::Email);
        a.add(PiiKind::Email);
        let mut b = Findings::default();
        b.add(PiiKind::Phone);
        a.merge(&b);
        assert!(!a.is_empty());
        assert_eq!(a.count(PiiKind::Email), 2);
        assert_eq!(a.count(PiiKind::Phone), 1);
        assert_eq!(a.count(PiiKind::Iban), 0);
        assert_eq!(a.total(), 3);
        let codes = a.to_codes();
        assert_eq!(codes.len(), 2);
        assert_eq!(codes["email"], 2);
        assert_eq!(codes["phone"], 1);
    }
}
