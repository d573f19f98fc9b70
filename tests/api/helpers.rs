use std::collections::HashMap;
use std::time::Duration;

use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_config::Overrides;
use mnemo_domain::{SubjectId, TenantId};
use reqwest::{Client, Method, Response};
use serde_json::{json, Value};

pub struct TestApp {
    pub address: String,
    pub client: Client,
    pub dir: tempfile::TempDir,
    pub index: std::sync::Arc<dyn mnemo_vector_index::VectorIndex>,
    pub consolidator: std::sync::Arc<mnemo_consolidator::Consolidator>,
    /// The server's sealed log: tests append what the consolidator would.
    pub log: mnemo_event_store::sealed::SealedLog,
    secret: Vec<u8>,
    server: actix_web::dev::ServerHandle,
    running: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// The app with the lexical embedder: for tests of the API itself.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(&[]).await
}

/// The app with the real all-MiniLM-L6-v2 model and a config file: for tests
/// of the memory pipeline.
pub async fn spawn_app_with_model(config: &str) -> TestApp {
    let model = mnemo_embed::test_model_dir().await;
    let config_dir = tempfile::tempdir().unwrap();
    let file = config_dir.path().join("mnemo.toml");
    std::fs::write(&file, config).unwrap();
    let app = spawn_app_with(&[
        ("MNEMO_EMBEDDER", "local"),
        ("MNEMO_EMBED_MODEL_DIR", model.to_str().unwrap()),
        ("MNEMO_CONFIG", file.to_str().unwrap()),
    ])
    .await;
    // The config file is read at start; it need not outlive the call.
    drop(config_dir);
    app
}

/// Starts the app with extra environment settings (e.g. limits via a config file).
pub async fn spawn_app_with(env: &[(&str, &str)]) -> TestApp {
    spawn_app_in(tempfile::tempdir().unwrap(), env).await
}

/// The settings the test app runs with on `dir`: lexical embedder unless
/// `env` says otherwise.
pub fn settings_for(dir: &std::path::Path, env: &[(&str, &str)]) -> mnemo_config::Settings {
    let mut env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.entry("MNEMO_EMBEDDER".into())
        .or_insert_with(|| "lexical".into());
    mnemo_config::load_from(
        &Overrides {
            data_dir: Some(dir.to_owned()),
            listen: Some("127.0.0.1:0".into()),
            config_file: None,
        },
        &env,
    )
    .unwrap()
}

/// Starts the app on an existing data dir (a restart when `dir` held one).
pub async fn spawn_app_in(dir: tempfile::TempDir, env: &[(&str, &str)]) -> TestApp {
    let settings = settings_for(dir.path(), env);
    let secret_file = settings.dev_secret_file();
    let app = mnemo_app::Application::build(settings).await.unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let index = app
        .vector_index()
        .expect("the embedded app runs every role");
    let consolidator = app.consolidator().expect("the embedded app consolidates");
    let log = app.log();
    let server = app.server_handle();
    let running = tokio::spawn(app.run());
    let (secret, _) = mnemo_app::secrets::load_or_create_dev_secret(&secret_file).unwrap();
    TestApp {
        address,
        client: Client::builder()
            .timeout(Duration::from_secs(30))
            // Below the server's 5 s keep-alive: a connection idle past it
            // (a test waiting on a child process) could be reused just as
            // the server closes it, and the request fail unanswered.
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
        dir,
        index,
        consolidator,
        log,
        secret,
        server,
        running,
    }
}

impl TestApp {
    /// Stops the server gracefully (as SIGTERM would) and hands back its
    /// data dir, with nothing of the app left open.
    pub async fn stop(self) -> tempfile::TempDir {
        let TestApp {
            dir,
            index,
            consolidator,
            log,
            server,
            running,
            ..
        } = self;
        server.stop(true).await;
        running.await.unwrap().unwrap();
        drop(index);
        drop(consolidator);
        drop(log);
        dir
    }
}

impl TestApp {
    pub fn token(&self, tenant: &str, scopes: &[Scope], subject: Option<&str>) -> String {
        self.token_as(tenant, &format!("{tenant}-admin"), scopes, subject)
    }

    pub fn token_as(
        &self,
        tenant: &str,
        actor: &str,
        scopes: &[Scope],
        subject: Option<&str>,
    ) -> String {
        Minter::hs256(&self.secret, "mnemo", "mnemo")
            .mint(&MintRequest {
                tenant: TenantId::parse(tenant).unwrap(),
                actor: actor.to_owned(),
                scopes: scopes.to_vec(),
                subject: subject.map(|s| SubjectId::parse(s).unwrap()),
                ttl: Duration::from_secs(600),
            })
            .unwrap()
    }

    /// A token with every scope.
    pub fn admin(&self, tenant: &str) -> String {
        self.token(tenant, &Scope::ALL, None)
    }

    pub fn secret(&self) -> &[u8] {
        &self.secret
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Response {
        let mut request = self
            .client
            .request(method, format!("{}{}", self.address, path))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap()
    }

    pub async fn post_messages(&self, token: &str, subject: &str, messages: Value) -> Response {
        self.call(
            Method::POST,
            &format!("/v1/subjects/{subject}/messages"),
            token,
            Some(json!({ "messages": messages })),
        )
        .await
    }

    pub async fn create_memory(&self, token: &str, subject: &str, body: Value) -> Response {
        self.call(
            Method::POST,
            &format!("/v1/subjects/{subject}/memories"),
            token,
            Some(body),
        )
        .await
    }

    /// Creates a memory and returns its id.
    pub async fn memory(&self, token: &str, subject: &str, content: &str) -> String {
        let response = self
            .create_memory(token, subject, json!({"content": content, "kind": "fact"}))
            .await;
        assert_eq!(response.status(), 201);
        response.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.call(Method::GET, path, token, None).await
    }

    pub async fn get_json(&self, path: &str, token: &str) -> Value {
        let response = self.get(path, token).await;
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.unwrap()
    }

    /// GET of an endpoint every process serves without a token (`/readyz`,
    /// `/metrics`, `/openapi.json`): 200, and its body.
    pub async fn public(&self, path: &str) -> Response {
        let response = self
            .client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response
    }

    pub async fn public_json(&self, path: &str) -> Value {
        self.public(path).await.json().await.unwrap()
    }

    /// Every event of the tenant, through the audit API.
    pub async fn all_events(&self, tenant: &str) -> Vec<Value> {
        let token = self.admin(tenant);
        let body = self.get_json("/v1/audit?limit=500", &token).await;
        body["events"].as_array().unwrap().clone()
    }

    /// Polls a subject's memory list until `predicate` holds (lists follow the
    /// log through the relay and the projection).
    pub async fn wait_for_list(
        &self,
        token: &str,
        subject: &str,
        predicate: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let body = self
                .get_json(&format!("/v1/subjects/{subject}/memories"), token)
                .await;
            let memories = body["memories"].as_array().unwrap().clone();
            if predicate(&memories) {
                return memories;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "list never matched: {memories:?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Requests erasure and waits for the receipt.
    pub async fn erase(&self, token: &str, subject: &str) -> Value {
        let response = self
            .call(
                Method::DELETE,
                &format!("/v1/subjects/{subject}"),
                token,
                None,
            )
            .await;
        assert_eq!(response.status(), 202);
        let accepted: Value = response.json().await.unwrap();
        let id = accepted["erasure_id"].as_str().unwrap().to_owned();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let status = self.get_json(&format!("/v1/erasures/{id}"), token).await;
            if status["status"] == "completed" {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "erasure never completed"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl TestApp {
    /// Polls until `predicate` holds on the JSON of `GET path`.
    pub async fn wait_for(
        &self,
        path: &str,
        token: &str,
        what: &str,
        predicate: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let body = self.get_json(path, token).await;
            if predicate(&body) {
                return body;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what} never happened: {body}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn post_json(&self, path: &str, token: &str, body: Value) -> Value {
        let response = self.call(Method::POST, path, token, Some(body)).await;
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "POST {path}: {status} {body}");
        body
    }
}

/// Asserts the JSON error body and its code.
pub async fn assert_error(response: Response, status: u16, code: &str) {
    assert_eq!(response.status(), status, "expected {status} {code}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}
