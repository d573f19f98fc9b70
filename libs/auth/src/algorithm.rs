use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::AuthError;

/// The signing algorithms mnemo accepts. Deliberately few: each one added is
/// more surface for confusion between key types.
// The variant names are the JWA names (RFC 7518), kept verbatim on purpose.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JwtAlgorithm {
    HS256,
    RS256,
    ES256,
    EdDSA,
}

impl JwtAlgorithm {
    pub const ALL: [JwtAlgorithm; 4] = [
        JwtAlgorithm::HS256,
        JwtAlgorithm::RS256,
        JwtAlgorithm::ES256,
        JwtAlgorithm::EdDSA,
    ];

    /// The JWA name, as written in a token header's `alg`.
    pub fn as_str(self) -> &'static str {
        match self {
            JwtAlgorithm::HS256 => "HS256",
            JwtAlgorithm::RS256 => "RS256",
            JwtAlgorithm::ES256 => "ES256",
            JwtAlgorithm::EdDSA => "EdDSA",
        }
    }

    /// Exact match on a token header's `alg`. Unlike [`FromStr`], which reads
    /// operator-written configuration, this is case-sensitive: JWA names are,
    /// and a header saying `hs256` was not produced by a conforming signer.
    pub(crate) fn from_header(alg: &str) -> Option<JwtAlgorithm> {
        JwtAlgorithm::ALL.into_iter().find(|a| a.as_str() == alg)
    }

    pub(crate) fn to_jsonwebtoken(self) -> jsonwebtoken::Algorithm {
        match self {
            JwtAlgorithm::HS256 => jsonwebtoken::Algorithm::HS256,
            JwtAlgorithm::RS256 => jsonwebtoken::Algorithm::RS256,
            JwtAlgorithm::ES256 => jsonwebtoken::Algorithm::ES256,
            JwtAlgorithm::EdDSA => jsonwebtoken::Algorithm::EdDSA,
        }
    }
}

impl fmt::Display for JwtAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Case-insensitive, for configuration files and environment variables
/// (`MNEMO_..._ALGORITHMS=hs256,rs256`).
impl FromStr for JwtAlgorithm {
    type Err = AuthError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JwtAlgorithm::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                AuthError::Config(
                    "unknown JWT algorithm; expected one of HS256, RS256, ES256, EdDSA".into(),
                )
            })
    }
}

impl Serialize for JwtAlgorithm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for JwtAlgorithm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_serialize() {
        for alg in JwtAlgorithm::ALL {
            assert_eq!(alg.as_str().parse::<JwtAlgorithm>().unwrap(), alg);
            assert_eq!(
                alg.as_str()
                    .to_ascii_lowercase()
                    .parse::<JwtAlgorithm>()
                    .unwrap(),
                alg
            );
            let json = serde_json::to_string(&alg).unwrap();
            assert_eq!(json, format!("\"{}\"", alg.as_str()));
            assert_eq!(serde_json::from_str::<JwtAlgorithm>(&json).unwrap(), alg);
        }
        assert!("none".parse::<JwtAlgorithm>().is_err());
        assert!("HS512".parse::<JwtAlgorithm>().is_err());
        assert!(serde_json::from_str::<JwtAlgorithm>("\"PS256\"").is_err());
    }

    #[test]
    fn header_names_are_case_sensitive() {
        assert_eq!(
            JwtAlgorithm::from_header("EdDSA"),
            Some(JwtAlgorithm::EdDSA)
        );
        assert_eq!(JwtAlgorithm::from_header("hs256"), None);
        assert_eq!(JwtAlgorithm::from_header("none"), None);
        assert_eq!(JwtAlgorithm::from_header("None"), None);
    }
}
