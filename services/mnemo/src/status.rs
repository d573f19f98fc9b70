//! `mnemo status`: what `/readyz` says of a running process, for an
//! operator at a terminal: ready or degraded (and why), the embedder, the
//! relay's lag, each consumer group's lag, the consolidation backlog and
//! the pace ingest admits messages at while the consolidator trails, and
//! the free space of the data dir's disk.
//! Exits 0 when ready, 1 when degraded, 2 when the process does not answer.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

/// The status lines of a `/readyz` body.
pub fn render(body: &Value) -> String {
    let mut out = String::new();
    let status = body["status"].as_str().unwrap_or("unknown");
    out.push_str(&format!("status          {status}\n"));
    for reason in body["degraded"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  degraded:     {}\n",
            reason.as_str().unwrap_or("?")
        ));
    }
    if let Some(embedder) = body.get("embedder") {
        let fallback = match embedder["fallback"].as_bool() {
            Some(true) => " (fallback)",
            _ => "",
        };
        out.push_str(&format!(
            "embedder        {} {}{fallback}\n",
            embedder["kind"].as_str().unwrap_or("?"),
            embedder["model"].as_str().unwrap_or("?"),
        ));
    }
    out.push_str(&format!("relay lag       {}\n", body["relay_lag"]));
    if let Some(groups) = body["consumer_lag"].as_object() {
        for (group, lag) in groups {
            let lag = match lag {
                Value::Null => "unknown".to_owned(),
                lag => lag.to_string(),
            };
            let oldest = match body["consumer_oldest_seconds"][group].as_f64() {
                Some(seconds) => format!(", oldest waited {seconds:.0} s"),
                None => String::new(),
            };
            out.push_str(&format!("consumer lag    {group:<32} {lag}{oldest}\n"));
        }
    }
    if let Some(consolidation) = body["backlog"]["consolidation"].as_object() {
        let oldest = match consolidation.get("oldest_seconds").and_then(Value::as_f64) {
            Some(seconds) => format!(", oldest waited {seconds:.0} s"),
            None => String::new(),
        };
        out.push_str(&format!(
            "consolidation   {} messages in {} conversations{oldest}\n",
            consolidation["messages"], consolidation["conversations"],
        ));
        out.push_str(&format!(
            "unconsolidated  {}\n",
            body["backlog"]["unconsolidated"]
        ));
    }
    if let Some(free) = body["disk_free_bytes"].as_u64() {
        out.push_str(&format!(
            "disk free       {:.1} GiB under the data dir\n",
            free as f64 / f64::from(1u32 << 30)
        ));
    }
    if let Some(rate) = body["ingest_pace"].as_f64() {
        out.push_str(&format!(
            "ingest paced    {rate:.0} messages/s (the consolidator trails)\n"
        ));
    }
    out
}

/// Prints the status of the process at `url`; the exit code as above.
pub async fn run(url: &str) -> anyhow::Result<u8> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let readyz = format!("{}/readyz", url.trim_end_matches('/'));
    let response = match client.get(&readyz).send().await {
        Ok(response) => response,
        Err(error) => {
            eprintln!("{readyz} does not answer: {error}");
            return Ok(2);
        }
    };
    let code = response.status();
    let body: Value = response
        .json()
        .await
        .with_context(|| format!("{readyz} did not answer JSON"))?;
    if !code.is_success() {
        eprintln!("not ready ({code}): {}", body["error"]["message"]);
        return Ok(2);
    }
    print!("{}", render(&body));
    Ok(match body["status"].as_str() {
        Some("ready") => 0,
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render;

    #[test]
    fn a_degraded_body_prints_its_reasons_and_every_figure() {
        let text = render(&json!({
            "status": "degraded",
            "degraded": ["unconsolidated messages 6 > 3"],
            "embedder": {"kind": "local", "model": "all-MiniLM-L6-v2", "fallback": false},
            "relay_lag": 2,
            "consumer_lag": {"consolidator": 4, "retriever.memory-projection": null},
            "consumer_oldest_seconds": {"consolidator": 3.2, "retriever.memory-projection": null},
            "backlog": {"consolidation": {"messages": 6, "conversations": 1, "oldest_seconds": 12.4},
                        "unconsolidated": 10},
            "ingest_pace": 850.0,
            "disk_free_bytes": 3u64 << 29
        }));
        assert_eq!(
            text,
            "status          degraded\n\
             \x20 degraded:     unconsolidated messages 6 > 3\n\
             embedder        local all-MiniLM-L6-v2\n\
             relay lag       2\n\
             consumer lag    consolidator                     4, oldest waited 3 s\n\
             consumer lag    retriever.memory-projection      unknown\n\
             consolidation   6 messages in 1 conversations, oldest waited 12 s\n\
             unconsolidated  10\n\
             disk free       1.5 GiB under the data dir\n\
             ingest paced    850 messages/s (the consolidator trails)\n"
        );
    }

    #[test]
    fn an_unpaced_process_prints_no_pace() {
        let text = render(&json!({"status": "ready", "relay_lag": 0, "ingest_pace": null}));
        assert_eq!(text, "status          ready\nrelay lag       0\n");
    }
}
