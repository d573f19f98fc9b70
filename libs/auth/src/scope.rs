use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a token allows. The wire names follow the `resource:action` style
/// of OAuth scopes and are part of the public API: never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    MemoriesWrite,
    MemoriesRead,
    MemoriesReview,
    AuditRead,
    GdprExport,
    GdprErase,
}

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::MemoriesWrite,
        Scope::MemoriesRead,
        Scope::MemoriesReview,
        Scope::AuditRead,
        Scope::GdprExport,
        Scope::GdprErase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::MemoriesWrite => "memories:write",
            Scope::MemoriesRead => "memories:read",
            Scope::MemoriesReview => "memories:review",
            Scope::AuditRead => "audit:read",
            Scope::GdprExport => "gdpr:export",
            Scope::GdprErase => "gdpr:erase",
        }
    }

    /// Exact, case-sensitive match on the wire name; `None` for anything
    /// else, which the verifier ignores rather than refuses.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Scope::parse(&raw).ok_or_else(|| serde::de::Error::custom("unknown scope"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "memories:write",
                "memories:read",
                "memories:review",
                "audit:read",
                "gdpr:export",
                "gdpr:erase"
            ]
        );
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
            let json = serde_json::to_string(&scope).unwrap();
            assert_eq!(serde_json::from_str::<Scope>(&json).unwrap(), scope);
        }
    }

    #[test]
    fn parse_is_exact() {
        assert_eq!(Scope::parse("Memories:Read"), None);
        assert_eq!(Scope::parse(" memories:read"), None);
        assert_eq!(Scope::parse("memories"), None);
        assert_eq!(Scope::parse(""), None);
        assert!(serde_json::from_str::<Scope>("\"admin\"").is_err());
    }
}
