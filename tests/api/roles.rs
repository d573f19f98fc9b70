//! A process running one role serves only that role's part of the API (the
//! scale-out proxy routes writes to ingest and reads to the retriever).

use mnemo_app::Roles;
use reqwest::Client;
use serde_json::json;

use crate::helpers::settings_for;

async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn each_role_serves_its_own_routes_and_the_health_endpoints() {
    for (roles, writes, reads) in [
        (Roles::INGEST, true, false),
        (Roles::RETRIEVER, false, true),
        (Roles::CONSOLIDATOR, false, false),
        (Roles::FORGETTER, false, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let settings = settings_for(dir.path(), &[]);
        let secret_file = settings.dev_secret_file();
        let app = mnemo_app::Application::build_roles(settings, roles)
            .await
            .unwrap();
        let base = format!("http://127.0.0.1:{}", app.port());
        let handle = app.server_handle();
        let running = tokio::spawn(app.run());
        let (secret, _) = mnemo_app::secrets::load_or_create_dev_secret(&secret_file).unwrap();
        let token = mnemo_auth::Minter::hs256(&secret, "mnemo", "mnemo")
            .mint(&mnemo_auth::MintRequest {
                tenant: mnemo_domain::TenantId::parse("acme").unwrap(),
                actor: "test".into(),
                scopes: mnemo_auth::Scope::ALL.to_vec(),
                subject: None,
                ttl: std::time::Duration::from_secs(60),
            })
            .unwrap();
        let client = Client::new();
        for path in ["/healthz", "/readyz", "/metrics"] {
            let status = status_of(client.get(format!("{base}{path}"))).await;
            assert_eq!(status, 200, "{roles:?} {path}");
        }
        let post = client
            .post(format!("{base}/v1/subjects/ana/messages"))
            .bearer_auth(&token)
            .json(&json!({"messages": [{"id": "m1", "role": "user", "content": "hello"}]}));
        let status = status_of(post).await;
        assert_eq!(status == 202, writes, "{roles:?}: POST messages → {status}");
        if !writes {
            assert_eq!(status, 404, "{roles:?}");
        }
        // The MCP tools call writes and reads alike: only a process serving
        // both has /mcp.
        let mcp = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        let status = status_of(mcp).await;
        assert_eq!(status, 404, "{roles:?}: POST /mcp → {status}");
        let list = client
            .get(format!("{base}/v1/subjects/ana/memories"))
            .bearer_auth(&token);
        let status = status_of(list).await;
        assert_eq!(status == 200, reads, "{roles:?}: GET memories → {status}");
        handle.stop(true).await;
        running.await.unwrap().unwrap();
    }
}

/// Ingest only appends to the log: it must start (and accept messages)
/// where no embedding model is configured or present, as an ingest
/// container has none. The roles that embed refuse the same settings.
#[tokio::test]
async fn the_ingest_role_starts_without_an_embedding_model() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("no-model-here");
    let env = [
        ("MNEMO_EMBEDDER", "local"),
        ("MNEMO_EMBED_MODEL_DIR", absent.to_str().unwrap()),
    ];
    let data = tempfile::tempdir().unwrap();
    let refused =
        mnemo_app::Application::build_roles(settings_for(data.path(), &env), Roles::RETRIEVER)
            .await;
    assert!(
        refused.is_err(),
        "the retriever needs the model: these settings must not start it"
    );
    drop(refused);

    let data = tempfile::tempdir().unwrap();
    let settings = settings_for(data.path(), &env);
    let secret_file = settings.dev_secret_file();
    let app = mnemo_app::Application::build_roles(settings, Roles::INGEST)
        .await
        .expect("ingest starts without an embedding model");
    assert!(app.vector_index().is_none(), "ingest opens no vector index");
    assert!(
        !data.path().join("vectors").exists(),
        "ingest creates no vector collection"
    );
    let base = format!("http://127.0.0.1:{}", app.port());
    let handle = app.server_handle();
    let running = tokio::spawn(app.run());
    let (secret, _) = mnemo_app::secrets::load_or_create_dev_secret(&secret_file).unwrap();
    let token = mnemo_auth::Minter::hs256(&secret, "mnemo", "mnemo")
        .mint(&mnemo_auth::MintRequest {
            tenant: mnemo_domain::TenantId::parse("acme").unwrap(),
            actor: "test".into(),
            scopes: vec![mnemo_auth::Scope::MemoriesWrite],
            subject: None,
            ttl: std::time::Duration::from_secs(60),
        })
        .unwrap();
    let post = Client::new()
        .post(format!("{base}/v1/subjects/ana/messages"))
        .bearer_auth(&token)
        .json(&json!({"messages": [{"id": "m1", "role": "user", "content": "hello"}]}));
    assert_eq!(status_of(post).await, 202);
    handle.stop(true).await;
    running.await.unwrap().unwrap();
}
