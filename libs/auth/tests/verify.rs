//! End-to-end checks of `Verifier` and `Minter` with real signatures, made
//! with the test-only keys in `fixtures/` (see the README there).

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mnemo_auth::{
    AuthError, JwtAlgorithm, MintRequest, Minter, PublicKey, Scope, Verifier, VerifierConfig,
};
use mnemo_domain::{SubjectId, TenantId};
use serde_json::{json, Value};

const HS_SECRET: &[u8] = b"test-only-hs256-secret-of-32-b!!";
const RSA_PRIVATE: &str = include_str!("fixtures/rsa_private.pem");
const RSA_PUBLIC: &str = include_str!("fixtures/rsa_public.pem");
const RSA2_PRIVATE: &str = include_str!("fixtures/rsa2_private.pem");
const RSA2_PUBLIC: &str = include_str!("fixtures/rsa2_public.pem");
const EC_PRIVATE: &str = include_str!("fixtures/ec_private.pem");
const EC_PUBLIC: &str = include_str!("fixtures/ec_public.pem");
const ED_PRIVATE: &str = include_str!("fixtures/ed25519_private.pem");
const ED_PUBLIC: &str = include_str!("fixtures/ed25519_public.pem");

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "mnemo";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A valid claim set; tests change one thing at a time.
fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "agent:support-bot",
        "tenant": "acme",
        "scope": "memories:read memories:write",
        "iat": now(),
        "exp": now() + 600,
        "jti": "token-1",
    })
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    base[key] = value;
    base
}

fn without(mut base: Value, key: &str) -> Value {
    base.as_object_mut().unwrap().remove(key);
    base
}

fn encoding_key(alg: Algorithm) -> EncodingKey {
    match alg {
        Algorithm::HS256 => EncodingKey::from_secret(HS_SECRET),
        Algorithm::RS256 => EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap(),
        Algorithm::ES256 => EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap(),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(ED_PRIVATE.as_bytes()).unwrap(),
        other => panic!("no test key for {other:?}"),
    }
}

fn sign(alg: Algorithm, claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, &encoding_key(alg)).unwrap()
}

fn sign_with_kid(key: &EncodingKey, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn b64(json: &str) -> String {
    URL_SAFE_NO_PAD.encode(json)
}

/// Builds a token from raw header/payload JSON, HS256-signed with the test
/// secret, to reach checks that well-behaved encoders never trigger.
fn hand_signed_hs256(header: &str, payload: &str) -> String {
    let message = format!("{}.{}", b64(header), b64(payload));
    let signature = jsonwebtoken::crypto::sign(
        message.as_bytes(),
        &EncodingKey::from_secret(HS_SECRET),
        Algorithm::HS256,
    )
    .unwrap();
    format!("{message}.{signature}")
}

fn public_key(algorithm: JwtAlgorithm, pem: &str, kid: Option<&str>) -> PublicKey {
    PublicKey {
        algorithm,
        pem: pem.to_owned(),
        kid: kid.map(str::to_owned),
    }
}

fn full_config() -> VerifierConfig {
    VerifierConfig {
        hs256_secret: Some(HS_SECRET.to_vec().into()),
        public_keys: vec![
            public_key(JwtAlgorithm::RS256, RSA_PUBLIC, None),
            public_key(JwtAlgorithm::ES256, EC_PUBLIC, None),
            public_key(JwtAlgorithm::EdDSA, ED_PUBLIC, None),
        ],
        allowed_algorithms: JwtAlgorithm::ALL.to_vec(),
        issuer: Some(ISSUER.into()),
        audience: Some(AUDIENCE.into()),
        ..VerifierConfig::default()
    }
}

fn verifier() -> Verifier {
    Verifier::new(full_config()).unwrap()
}

fn verify(claims: &Value) -> Result<mnemo_auth::Principal, AuthError> {
    verifier().verify(&sign(Algorithm::HS256, claims))
}

const ALL_ALGS: [Algorithm; 4] = [
    Algorithm::HS256,
    Algorithm::RS256,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

// ---------------------------------------------------------------- happy path

#[test]
fn valid_tokens_of_every_algorithm_produce_the_principal() {
    let verifier = verifier();
    let claims = with(claims(), "subject", json!("user-42"));
    for alg in ALL_ALGS {
        let principal = verifier
            .verify(&sign(alg, &claims))
            .unwrap_or_else(|e| panic!("{alg:?}: {e}"));
        assert_eq!(principal.tenant, TenantId::parse("acme").unwrap());
        assert_eq!(principal.actor, "agent:support-bot");
        assert_eq!(
            principal.scopes,
            BTreeSet::from([Scope::MemoriesRead, Scope::MemoriesWrite])
        );
        assert_eq!(
            principal.subject,
            Some(SubjectId::parse("user-42").unwrap())
        );
        assert_eq!(principal.token_id.as_deref(), Some("token-1"));
    }
}

#[test]
fn optional_claims_may_be_absent() {
    let claims = without(without(without(claims(), "jti"), "iat"), "scope");
    let principal = verify(&claims).unwrap();
    assert!(principal.scopes.is_empty());
    assert_eq!(principal.subject, None);
    assert_eq!(principal.token_id, None);
    assert!(!principal.is_subject_bound());
}

// ---------------------------------------------------------------------- time

#[test]
fn expired_token_is_refused() {
    let claims = with(claims(), "exp", json!(now() - 3600));
    for alg in ALL_ALGS {
        assert_eq!(
            verifier().verify(&sign(alg, &claims)),
            Err(AuthError::TokenExpired),
            "{alg:?}"
        );
    }
}

#[test]
fn expired_within_leeway_is_accepted() {
    let token = sign(Algorithm::HS256, &with(claims(), "exp", json!(now() - 10)));
    // Default leeway is 30 s.
    assert!(verifier().verify(&token).is_ok());
    let strict = Verifier::new(VerifierConfig {
        leeway_seconds: 0,
        ..full_config()
    })
    .unwrap();
    assert_eq!(strict.verify(&token), Err(AuthError::TokenExpired));
}

#[test]
fn nbf_in_the_future_is_refused() {
    assert_eq!(
        verify(&with(claims(), "nbf", json!(now() + 3600))),
        Err(AuthError::TokenNotYetValid)
    );
    // Within the leeway, and in the past, it is fine.
    assert!(verify(&with(claims(), "nbf", json!(now() + 10))).is_ok());
    assert!(verify(&with(claims(), "nbf", json!(now() - 10))).is_ok());
}

#[test]
fn nbf_in_the_past_or_as_a_fraction_is_accepted() {
    assert!(verify(&with(claims(), "nbf", json!(now() - 3600))).is_ok());
    assert!(verify(&with(claims(), "nbf", json!(0))).is_ok());
    assert!(verify(&with(claims(), "nbf", json!(now() as f64 - 0.5))).is_ok());
    // A fraction in the future is still in the future.
    assert_eq!(
        verify(&with(claims(), "nbf", json!(now() as f64 + 3600.5))),
        Err(AuthError::TokenNotYetValid)
    );
    // `null` is no `nbf` at all, as for every optional claim.
    assert!(verify(&with(claims(), "nbf", Value::Null)).is_ok());
}

/// A wrongly typed claim is refused as `invalid_claims` (401), the message
/// naming the claim and not its value. `jsonwebtoken` on its own skips a
/// registered claim it cannot parse: a non-numeric `nbf` used to switch
/// the not-before check off.
#[test]
fn every_claim_of_the_wrong_type_is_refused() {
    let numbers = || {
        vec![
            json!("soon"),
            json!("1900000000"),
            json!(true),
            json!({"at": 1}),
            json!([1]),
            json!(-1),
            json!(1e300),
        ]
    };
    let strings = || vec![json!(42), json!(true), json!({"v": "x"}), json!(["acme"])];
    let mut cases: Vec<(&str, Vec<Value>)> = vec![
        ("exp", numbers()),
        ("nbf", numbers()),
        ("iat", numbers()),
        ("tenant", strings()),
        ("sub", strings()),
        ("subject", strings()),
        ("iss", strings()),
        ("jti", strings()),
    ];
    let lists = || vec![json!(42), json!(true), json!({"v": "x"}), json!(["ok", 7])];
    cases.push(("scope", lists()));
    cases.push(("aud", lists()));
    // Checked whether or not an issuer and an audience are configured, and
    // before them: a mistyped `iss` is not merely the wrong issuer.
    let lenient = Verifier::new(VerifierConfig {
        issuer: None,
        audience: None,
        ..full_config()
    })
    .unwrap();
    for verifier in [verifier(), lenient] {
        for (claim, values) in &cases {
            for value in values {
                let token = sign(Algorithm::HS256, &with(claims(), claim, value.clone()));
                let err = verifier.verify(&token).unwrap_err();
                assert!(
                    matches!(&err, AuthError::InvalidClaims(m) if m.contains(&format!("`{claim}`"))),
                    "{claim} = {value}: {err:?}"
                );
                assert_eq!(err.code(), "invalid_claims");
                assert!(!err.is_forbidden());
                let message = err.to_string();
                assert!(!message.contains("soon"), "{message}");
                assert!(!message.contains("1900000000"), "{message}");
            }
        }
    }
}

#[test]
fn claims_are_judged_only_once_the_signature_verifies() {
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &with(claims(), "nbf", json!("soon")),
        &EncodingKey::from_secret(b"another-secret-of-at-least-32-bytes"),
    )
    .unwrap();
    assert_eq!(verifier().verify(&token), Err(AuthError::InvalidSignature));
}

#[test]
fn missing_exp_is_refused() {
    let err = verify(&without(claims(), "exp")).unwrap_err();
    assert!(
        matches!(&err, AuthError::InvalidClaims(m) if m.contains("`exp`")),
        "{err}"
    );
    let err = verify(&with(claims(), "exp", json!("tomorrow"))).unwrap_err();
    assert!(matches!(err, AuthError::InvalidClaims(_)), "{err}");
    // Also when the signer is an asymmetric one.
    let err = verifier()
        .verify(&sign(Algorithm::ES256, &without(claims(), "exp")))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_claims");
}

// --------------------------------------------------------- issuer / audience

#[test]
fn wrong_audience_is_refused() {
    assert_eq!(
        verify(&with(claims(), "aud", json!("billing"))),
        Err(AuthError::WrongAudience)
    );
    assert_eq!(
        verify(&with(claims(), "aud", json!(["billing", "search"]))),
        Err(AuthError::WrongAudience)
    );
    assert_eq!(
        verify(&without(claims(), "aud")),
        Err(AuthError::WrongAudience)
    );
    assert!(verify(&with(claims(), "aud", json!(["billing", AUDIENCE]))).is_ok());
}

#[test]
fn audience_is_not_checked_when_not_configured() {
    let verifier = Verifier::new(VerifierConfig {
        audience: None,
        ..full_config()
    })
    .unwrap();
    for aud in [json!("anything"), json!(["a", "b"])] {
        let token = sign(Algorithm::HS256, &with(claims(), "aud", aud));
        assert!(verifier.verify(&token).is_ok());
    }
}

#[test]
fn wrong_issuer_is_refused() {
    assert_eq!(
        verify(&with(claims(), "iss", json!("https://evil.test"))),
        Err(AuthError::WrongIssuer)
    );
    assert_eq!(
        verify(&without(claims(), "iss")),
        Err(AuthError::WrongIssuer)
    );
    let lenient = Verifier::new(VerifierConfig {
        issuer: None,
        ..full_config()
    })
    .unwrap();
    let token = sign(
        Algorithm::HS256,
        &with(claims(), "iss", json!("https://evil.test")),
    );
    assert!(lenient.verify(&token).is_ok());
}

// ------------------------------------------------------- algorithm handling

#[test]
fn alg_none_is_refused() {
    let payload = b64(&claims().to_string());
    for alg in ["none", "None", "NONE", "nOnE"] {
        let header = b64(&format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#));
        // Unsigned, as RFC 7519 §6.1 writes it: an empty signature part.
        let token = format!("{header}.{payload}.");
        assert_eq!(
            verifier().verify(&token),
            Err(AuthError::AlgorithmNotAllowed),
            "{alg}"
        );
        // And with some signature bytes left in place.
        let real = sign(Algorithm::HS256, &claims());
        let signature = real.rsplit('.').next().unwrap();
        let token = format!("{header}.{payload}.{signature}");
        assert_eq!(
            verifier().verify(&token),
            Err(AuthError::AlgorithmNotAllowed)
        );
    }
}

#[test]
fn hs256_token_signed_with_the_rsa_public_key_is_refused() {
    // The classic algorithm-confusion attack: the attacker knows the public
    // key and uses its PEM text as an HMAC secret.
    let key = EncodingKey::from_secret(RSA_PUBLIC.as_bytes());
    let forged = sign_with_kid(&key, Algorithm::HS256, None, &claims());

    // HS256 is allowed, but checked only against the HS256 secret.
    let both = Verifier::new(VerifierConfig {
        hs256_secret: Some(HS_SECRET.to_vec().into()),
        public_keys: vec![public_key(JwtAlgorithm::RS256, RSA_PUBLIC, None)],
        allowed_algorithms: vec![JwtAlgorithm::HS256, JwtAlgorithm::RS256],
        ..full_config()
    })
    .unwrap();
    assert_eq!(both.verify(&forged), Err(AuthError::InvalidSignature));

    // RS256 only: refused before any signature check.
    let rs_only = Verifier::new(VerifierConfig {
        hs256_secret: None,
        public_keys: vec![public_key(JwtAlgorithm::RS256, RSA_PUBLIC, None)],
        allowed_algorithms: vec![JwtAlgorithm::RS256],
        ..full_config()
    })
    .unwrap();
    assert_eq!(rs_only.verify(&forged), Err(AuthError::AlgorithmNotAllowed));

    // HS256 allowed but no secret configured: still never the public key.
    let no_secret = Verifier::new(VerifierConfig {
        hs256_secret: None,
        public_keys: vec![public_key(JwtAlgorithm::RS256, RSA_PUBLIC, None)],
        allowed_algorithms: vec![JwtAlgorithm::HS256, JwtAlgorithm::RS256],
        ..full_config()
    })
    .unwrap();
    assert_eq!(no_secret.verify(&forged), Err(AuthError::UnknownKey));

    // The genuine RS256 token still passes the RS256-only verifier.
    assert!(rs_only.verify(&sign(Algorithm::RS256, &claims())).is_ok());
}

#[test]
fn algorithm_outside_the_allow_list_is_refused() {
    let hs_only = Verifier::new(VerifierConfig {
        public_keys: vec![],
        allowed_algorithms: vec![JwtAlgorithm::HS256],
        ..full_config()
    })
    .unwrap();
    for alg in [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
        assert_eq!(
            hs_only.verify(&sign(alg, &claims())),
            Err(AuthError::AlgorithmNotAllowed),
            "{alg:?}"
        );
    }
    assert!(hs_only.verify(&sign(Algorithm::HS256, &claims())).is_ok());

    // Algorithms mnemo does not implement at all.
    let hs384 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS384),
        &claims(),
        &EncodingKey::from_secret(HS_SECRET),
    )
    .unwrap();
    assert_eq!(
        verifier().verify(&hs384),
        Err(AuthError::AlgorithmNotAllowed)
    );

    // An empty allow-list refuses everything.
    let closed = Verifier::new(VerifierConfig {
        hs256_secret: None,
        public_keys: vec![],
        allowed_algorithms: vec![],
        ..full_config()
    })
    .unwrap();
    assert_eq!(
        closed.verify(&sign(Algorithm::HS256, &claims())),
        Err(AuthError::AlgorithmNotAllowed)
    );
}

#[test]
fn tampered_payload_is_refused() {
    let forged_payload = b64(&with(claims(), "tenant", json!("victim")).to_string());
    for alg in ALL_ALGS {
        let token = sign(alg, &claims());
        let parts: Vec<&str> = token.split('.').collect();
        let tampered = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
        assert_eq!(
            verifier().verify(&tampered),
            Err(AuthError::InvalidSignature),
            "{alg:?}"
        );
    }
}

#[test]
fn token_signed_by_another_key_is_refused() {
    let other_rsa = EncodingKey::from_rsa_pem(RSA2_PRIVATE.as_bytes()).unwrap();
    let token = sign_with_kid(&other_rsa, Algorithm::RS256, None, &claims());
    assert_eq!(verifier().verify(&token), Err(AuthError::InvalidSignature));
    let other_secret = EncodingKey::from_secret(b"another-32-byte-secret-for-tests");
    let token = sign_with_kid(&other_secret, Algorithm::HS256, None, &claims());
    assert_eq!(verifier().verify(&token), Err(AuthError::InvalidSignature));
}

#[test]
fn allowed_algorithm_without_a_key_is_an_unknown_key() {
    let rs_only_keys = Verifier::new(VerifierConfig {
        hs256_secret: None,
        public_keys: vec![public_key(JwtAlgorithm::RS256, RSA_PUBLIC, None)],
        ..full_config()
    })
    .unwrap();
    assert_eq!(
        rs_only_keys.verify(&sign(Algorithm::ES256, &claims())),
        Err(AuthError::UnknownKey)
    );
    assert_eq!(
        rs_only_keys.verify(&sign(Algorithm::HS256, &claims())),
        Err(AuthError::UnknownKey)
    );
}

// -------------------------------------------------------------- kid selection

fn two_rsa_keys(kid1: Option<&str>, kid2: Option<&str>) -> Verifier {
    Verifier::new(VerifierConfig {
        public_keys: vec![
            public_key(JwtAlgorithm::RS256, RSA_PUBLIC, kid1),
            public_key(JwtAlgorithm::RS256, RSA2_PUBLIC, kid2),
        ],
        ..full_config()
    })
    .unwrap()
}

#[test]
fn kid_picks_the_key_among_several() {
    let verifier = two_rsa_keys(Some("k1"), Some("k2"));
    let key2 = EncodingKey::from_rsa_pem(RSA2_PRIVATE.as_bytes()).unwrap();

    assert!(verifier
        .verify(&sign_with_kid(
            &key2,
            Algorithm::RS256,
            Some("k2"),
            &claims()
        ))
        .is_ok());
    // The kid is what selects: key 2's token labelled k1 is checked against
    // key 1 only, and fails, although key 2 would have matched.
    assert_eq!(
        verifier.verify(&sign_with_kid(
            &key2,
            Algorithm::RS256,
            Some("k1"),
            &claims()
        )),
        Err(AuthError::InvalidSignature)
    );
    // An unknown kid matches nothing when every key has a kid.
    assert_eq!(
        verifier.verify(&sign_with_kid(
            &key2,
            Algorithm::RS256,
            Some("k3"),
            &claims()
        )),
        Err(AuthError::UnknownKey)
    );
    // Without a kid, each key of the algorithm is tried.
    assert!(verifier
        .verify(&sign_with_kid(&key2, Algorithm::RS256, None, &claims()))
        .is_ok());
    assert!(verifier.verify(&sign(Algorithm::RS256, &claims())).is_ok());
}

#[test]
fn kid_falls_back_to_keys_without_a_kid() {
    let verifier = two_rsa_keys(Some("k1"), None);
    let key2 = EncodingKey::from_rsa_pem(RSA2_PRIVATE.as_bytes()).unwrap();
    assert!(verifier
        .verify(&sign_with_kid(
            &key2,
            Algorithm::RS256,
            Some("rotated"),
            &claims()
        ))
        .is_ok());
}

#[test]
fn hs256_ignores_kid() {
    let key = EncodingKey::from_secret(HS_SECRET);
    assert!(verifier()
        .verify(&sign_with_kid(
            &key,
            Algorithm::HS256,
            Some("whatever"),
            &claims()
        ))
        .is_ok());
}

// ------------------------------------------------------------------ claims

#[test]
fn missing_tenant_is_refused() {
    let err = verify(&without(claims(), "tenant")).unwrap_err();
    assert!(
        matches!(&err, AuthError::InvalidClaims(m) if m.contains("`tenant`")),
        "{err}"
    );
    assert!(!err.is_forbidden());
}

#[test]
fn invalid_tenant_is_refused_without_echoing_it() {
    for tenant in ["alice@example.com", "acme corp", "", "-acme", "a/b"] {
        let err = verify(&with(claims(), "tenant", json!(tenant))).unwrap_err();
        assert!(
            matches!(err, AuthError::InvalidClaims(_)),
            "{tenant}: {err}"
        );
        let message = err.to_string();
        assert!(message.contains("`tenant`"), "{message}");
        if !tenant.is_empty() {
            assert!(!message.contains(tenant), "{message}");
        }
        assert!(!message.contains("alice"), "{message}");
    }
}

#[test]
fn sub_is_required_and_bounded() {
    assert!(matches!(
        verify(&without(claims(), "sub")),
        Err(AuthError::InvalidClaims(m)) if m.contains("`sub`")
    ));
    assert!(matches!(
        verify(&with(claims(), "sub", json!("x".repeat(257)))),
        Err(AuthError::InvalidClaims(_))
    ));
    assert!(matches!(
        verify(&with(claims(), "sub", json!("bot\r\nX-Injected: 1"))),
        Err(AuthError::InvalidClaims(m)) if !m.contains("Injected")
    ));
    assert_eq!(
        verify(&with(claims(), "sub", json!("x".repeat(256))))
            .unwrap()
            .actor
            .len(),
        256
    );
}

#[test]
fn scopes_as_string_and_as_array() {
    let expected = BTreeSet::from([Scope::AuditRead, Scope::GdprExport]);
    let as_string = verify(&with(claims(), "scope", json!("audit:read  gdpr:export"))).unwrap();
    assert_eq!(as_string.scopes, expected);
    let as_array = verify(&with(
        claims(),
        "scope",
        json!(["audit:read", "gdpr:export"]),
    ))
    .unwrap();
    assert_eq!(as_array.scopes, expected);
    let all = Scope::ALL.map(Scope::as_str).join(" ");
    let every = verify(&with(claims(), "scope", json!(all))).unwrap();
    assert_eq!(every.scopes, BTreeSet::from(Scope::ALL));
    assert!(matches!(
        verify(&with(claims(), "scope", json!(42))),
        Err(AuthError::InvalidClaims(_))
    ));
}

#[test]
fn unknown_scopes_are_ignored() {
    let p = verify(&with(
        claims(),
        "scope",
        json!("openid memories:read admin:all MEMORIES:WRITE"),
    ))
    .unwrap();
    assert_eq!(p.scopes, BTreeSet::from([Scope::MemoriesRead]));
    let p = verify(&with(claims(), "scope", json!(["profile", "gdpr:erase"]))).unwrap();
    assert_eq!(p.scopes, BTreeSet::from([Scope::GdprErase]));
}

#[test]
fn require_scope_and_subject_on_a_verified_principal() {
    let alice = SubjectId::parse("alice-1").unwrap();
    let bob = SubjectId::parse("bob-2").unwrap();

    let p = verify(&with(claims(), "subject", json!("alice-1"))).unwrap();
    assert!(p.require_scope(Scope::MemoriesRead).is_ok());
    let err = p.require_scope(Scope::GdprErase).unwrap_err();
    assert_eq!(
        err,
        AuthError::InsufficientScope {
            required: Scope::GdprErase
        }
    );
    assert!(err.is_forbidden());
    assert_eq!(err.code(), "insufficient_scope");

    assert!(p.is_subject_bound());
    assert!(p.require_subject(&alice).is_ok());
    let err = p.require_subject(&bob).unwrap_err();
    assert_eq!(err, AuthError::SubjectForbidden);
    assert!(err.is_forbidden());

    let unbound = verify(&claims()).unwrap();
    assert!(unbound.require_subject(&bob).is_ok());

    assert!(matches!(
        verify(&with(claims(), "subject", json!("bob@example.com"))),
        Err(AuthError::InvalidClaims(m)) if m.contains("`subject`") && !m.contains("bob")
    ));
}

#[test]
fn malformed_tokens() {
    let verifier = verifier();
    assert_eq!(verifier.verify(""), Err(AuthError::MissingToken));
    for token in ["garbage", "a.b", "a.b.c.d", "e30.e30.e30", "!!.??.**"] {
        assert_eq!(
            verifier.verify(token),
            Err(AuthError::MalformedToken),
            "{token}"
        );
    }
    // Correctly signed, but the payload is not a JSON object.
    let not_json = hand_signed_hs256(r#"{"alg":"HS256","typ":"JWT"}"#, "not json");
    assert_eq!(verifier.verify(&not_json), Err(AuthError::MalformedToken));
    // Correctly signed, but `tenant` appears twice: which one wins would
    // depend on the parser, so neither does.
    let payload = format!(
        r#"{{"iss":"{ISSUER}","aud":"{AUDIENCE}","sub":"a","tenant":"acme","tenant":"victim","exp":{}}}"#,
        now() + 600
    );
    let duplicated = hand_signed_hs256(r#"{"alg":"HS256","typ":"JWT"}"#, &payload);
    assert_eq!(verifier.verify(&duplicated), Err(AuthError::MalformedToken));
    // A critical header extension we do not implement.
    let payload = claims().to_string();
    let crit = hand_signed_hs256(r#"{"alg":"HS256","crit":["exp"],"exp":1}"#, &payload);
    assert_eq!(verifier.verify(&crit), Err(AuthError::MalformedToken));
    // The same construction without `crit` is accepted, so the above fails
    // for the reason it claims.
    let plain = hand_signed_hs256(r#"{"alg":"HS256"}"#, &payload);
    assert!(verifier.verify(&plain).is_ok());
}

// -------------------------------------------------------------------- minter

#[test]
fn minter_round_trips_through_the_verifier() {
    let secret = mnemo_auth::generate_secret();
    let minter = Minter::hs256(&secret, ISSUER, AUDIENCE);
    let verifier = Verifier::new(VerifierConfig {
        hs256_secret: Some(secret.to_vec().into()),
        public_keys: vec![],
        allowed_algorithms: vec![JwtAlgorithm::HS256],
        ..full_config()
    })
    .unwrap();
    let request = MintRequest {
        tenant: TenantId::parse("acme").unwrap(),
        actor: "mnemo-cli".into(),
        scopes: vec![Scope::MemoriesWrite, Scope::GdprErase, Scope::MemoriesWrite],
        subject: Some(SubjectId::parse("user-7").unwrap()),
        ttl: Duration::from_secs(300),
    };
    let token = minter.mint(&request).unwrap();
    let principal = verifier.verify(&token).unwrap();
    assert_eq!(principal.tenant, request.tenant);
    assert_eq!(principal.actor, "mnemo-cli");
    assert_eq!(
        principal.scopes,
        BTreeSet::from([Scope::MemoriesWrite, Scope::GdprErase])
    );
    assert_eq!(principal.subject, request.subject);
    let jti = principal.token_id.expect("minted tokens carry a jti");
    assert!(jti.len() >= 16);

    // Two tokens, two ids.
    let again = verifier.verify(&minter.mint(&request).unwrap()).unwrap();
    assert_ne!(again.token_id.as_deref(), Some(jti.as_str()));

    // Unbound, scopeless token.
    let bare = MintRequest {
        scopes: vec![],
        subject: None,
        ..request.clone()
    };
    let principal = verifier.verify(&minter.mint(&bare).unwrap()).unwrap();
    assert!(principal.scopes.is_empty());
    assert!(!principal.is_subject_bound());

    // Another secret, another audience: refused.
    let stranger = Minter::hs256(&mnemo_auth::generate_secret(), ISSUER, AUDIENCE);
    assert_eq!(
        verifier.verify(&stranger.mint(&request).unwrap()),
        Err(AuthError::InvalidSignature)
    );
    let elsewhere = Minter::hs256(&secret, ISSUER, "billing");
    assert_eq!(
        verifier.verify(&elsewhere.mint(&request).unwrap()),
        Err(AuthError::WrongAudience)
    );
}

#[test]
fn minted_token_expires() {
    let minter = Minter::hs256(HS_SECRET, ISSUER, AUDIENCE);
    let token = minter
        .mint(&MintRequest {
            tenant: TenantId::parse("acme").unwrap(),
            actor: "cli".into(),
            scopes: vec![Scope::MemoriesRead],
            subject: None,
            ttl: Duration::from_secs(1),
        })
        .unwrap();
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(
        claims["exp"].as_u64().unwrap(),
        claims["iat"].as_u64().unwrap() + 1
    );
    assert_eq!(claims["scope"], "memories:read");
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["aud"], AUDIENCE);
    assert!(claims.get("subject").is_none());
}

// -------------------------------------------------------------- configuration

fn config_error(config: VerifierConfig) -> String {
    match Verifier::new(config) {
        Err(AuthError::Config(message)) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn bad_configuration_is_refused_at_start_up() {
    // Not a PEM at all.
    let m = config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::RS256, "not a pem", Some("k1"))],
        ..full_config()
    });
    assert!(m.contains("public key #0 (kid `k1`)"), "{m}");
    // A valid PEM of the wrong family.
    config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::RS256, EC_PUBLIC, None)],
        ..full_config()
    });
    config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::EdDSA, RSA_PUBLIC, None)],
        ..full_config()
    });
    // A private key where a public one belongs; the PEM is not echoed.
    let m = config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::RS256, RSA_PRIVATE, None)],
        ..full_config()
    });
    assert!(!m.contains("MII"), "{m}");
    // A key whose algorithm is not allowed.
    config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::ES256, EC_PUBLIC, None)],
        allowed_algorithms: vec![JwtAlgorithm::HS256, JwtAlgorithm::RS256],
        ..full_config()
    });
    // HS256 is not a public-key algorithm.
    config_error(VerifierConfig {
        public_keys: vec![public_key(JwtAlgorithm::HS256, RSA_PUBLIC, None)],
        ..full_config()
    });
    // A secret without HS256 allowed, or too short.
    config_error(VerifierConfig {
        allowed_algorithms: vec![
            JwtAlgorithm::RS256,
            JwtAlgorithm::ES256,
            JwtAlgorithm::EdDSA,
        ],
        ..full_config()
    });
    config_error(VerifierConfig {
        hs256_secret: Some(b"too-short".to_vec().into()),
        ..full_config()
    });
    // Two keys of one algorithm under one kid.
    config_error(VerifierConfig {
        public_keys: vec![
            public_key(JwtAlgorithm::RS256, RSA_PUBLIC, Some("k")),
            public_key(JwtAlgorithm::RS256, RSA2_PUBLIC, Some("k")),
        ],
        ..full_config()
    });
    // Leeway and empty iss/aud.
    config_error(VerifierConfig {
        leeway_seconds: 301,
        ..full_config()
    });
    config_error(VerifierConfig {
        issuer: Some(" ".into()),
        ..full_config()
    });
    config_error(VerifierConfig {
        audience: Some(String::new()),
        ..full_config()
    });
    // The full configuration itself is fine, and the default leeway is 30 s.
    assert!(Verifier::new(full_config()).is_ok());
    assert_eq!(VerifierConfig::default().leeway_seconds, 30);
}

#[test]
fn error_codes_reach_the_caller() {
    let cases: [(Value, &str); 5] = [
        (with(claims(), "exp", json!(now() - 3600)), "token_expired"),
        (
            with(claims(), "nbf", json!(now() + 3600)),
            "token_not_yet_valid",
        ),
        (with(claims(), "aud", json!("x")), "wrong_audience"),
        (with(claims(), "iss", json!("x")), "wrong_issuer"),
        (without(claims(), "tenant"), "invalid_claims"),
    ];
    for (claims, code) in cases {
        let err = verify(&claims).unwrap_err();
        assert_eq!(err.code(), code);
        assert!(!err.is_forbidden());
    }
}
