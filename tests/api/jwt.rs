//! The API refuses bad tokens with 401/403 and a JSON error; the auth crate's
//! own tests cover every algorithm and key type.

use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims() -> Value {
    json!({
        "tenant": "acme", "sub": "tester", "scope": "memories:read memories:write",
        "iss": "mnemo", "aud": "mnemo", "iat": now(), "exp": now() + 600,
    })
}

fn sign(app: &TestApp, claims: &Value) -> String {
    encode(
        &Header::default(),
        claims,
        &EncodingKey::from_secret(app.secret()),
    )
    .unwrap()
}

async fn list_with(app: &TestApp, token: &str) -> reqwest::Response {
    app.get("/v1/subjects/u/memories", token).await
}

#[tokio::test]
async fn a_well_formed_token_is_accepted() {
    let app = spawn_app().await;
    let response = list_with(&app, &sign(&app, &claims())).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn bad_tokens_are_refused_with_the_reason() {
    let app = spawn_app().await;
    let mut expired = claims();
    expired["exp"] = json!(now() - 3600);
    let mut not_yet = claims();
    not_yet["nbf"] = json!(now() + 3600);
    let mut wrong_audience = claims();
    wrong_audience["aud"] = json!("someone-else");
    let mut wrong_issuer = claims();
    wrong_issuer["iss"] = json!("evil");
    let mut no_tenant = claims();
    no_tenant.as_object_mut().unwrap().remove("tenant");
    // Once skipped by jsonwebtoken, and with it the not-before check.
    let mut nbf_text = claims();
    nbf_text["nbf"] = json!("soon");
    let mut exp_text = claims();
    exp_text["exp"] = json!((now() + 600).to_string());

    let cases = [
        (sign(&app, &expired), "token_expired"),
        (sign(&app, &not_yet), "token_not_yet_valid"),
        (sign(&app, &wrong_audience), "wrong_audience"),
        (sign(&app, &wrong_issuer), "wrong_issuer"),
        (sign(&app, &no_tenant), "invalid_claims"),
        (sign(&app, &nbf_text), "invalid_claims"),
        (sign(&app, &exp_text), "invalid_claims"),
        (
            encode(
                &Header::default(),
                &claims(),
                &EncodingKey::from_secret(&[7u8; 32]),
            )
            .unwrap(),
            "invalid_signature",
        ),
    ];
    for (token, code) in cases {
        assert_error(list_with(&app, &token).await, 401, code).await;
    }
}

#[tokio::test]
async fn alg_none_is_refused() {
    let app = spawn_app().await;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = engine.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = engine.encode(claims().to_string());
    let token = format!("{header}.{payload}.");
    assert_error(list_with(&app, &token).await, 401, "algorithm_not_allowed").await;
}

#[tokio::test]
async fn an_hs256_token_signed_with_a_public_key_is_refused() {
    // The algorithm-confusion attack: HMAC keyed with a public key's PEM.
    let app = spawn_app().await;
    let pem = include_str!("../../libs/auth/tests/fixtures/rsa_public.pem");
    let token = encode(
        &Header::default(),
        &claims(),
        &EncodingKey::from_secret(pem.as_bytes()),
    )
    .unwrap();
    assert_error(list_with(&app, &token).await, 401, "invalid_signature").await;
}

#[tokio::test]
async fn missing_or_malformed_credentials_and_missing_scope() {
    let app = spawn_app().await;
    let no_header = app
        .client
        .get(format!("{}/v1/subjects/u/memories", app.address))
        .send()
        .await
        .unwrap();
    assert_error(no_header, 401, "missing_token").await;
    assert_error(list_with(&app, "not.a.jwt").await, 401, "malformed_token").await;
    let mut read_only = claims();
    read_only["scope"] = json!("memories:read");
    let response = app
        .create_memory(
            &sign(&app, &read_only),
            "u",
            json!({"content": "x", "kind": "fact"}),
        )
        .await;
    assert_error(response, 403, "insufficient_scope").await;
}
