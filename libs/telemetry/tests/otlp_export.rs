//! `init` against a mock OTLP/HTTP collector. Its own test binary because `init`
//! installs the process-global subscriber, which can happen only once per process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use mnemo_telemetry::{init, LogFormat, TelemetryConfig, TelemetryError};

/// One request as the mock collector saw it.
struct Received {
    request_line: String,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// A minimal HTTP/1.1 receiver on a plain thread (not a tokio task): the guard's flush
/// blocks the calling thread, which must not be the one serving the collector.
fn spawn_collector() -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut content_length = 0usize;
            let mut content_type = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    match name.trim().to_ascii_lowercase().as_str() {
                        "content-length" => content_length = value.trim().parse().unwrap_or(0),
                        "content-type" => content_type = Some(value.trim().to_owned()),
                        _ => {}
                    }
                }
            }
            let mut body = vec![0; content_length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            // Recorded before answering: once the exporter has its response, and so once
            // the guard's drop has returned, the request is already in the channel.
            let _ = tx.send(Received {
                request_line: request_line.trim().to_owned(),
                content_type,
                body,
            });
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
            );
        }
    });
    (format!("http://{addr}"), rx)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

// Inside a (single-threaded) tokio runtime, as in every mnemo service: the blocking
// reqwest client and the guard's blocking flush must not panic or deadlock there.
#[tokio::test(flavor = "current_thread")]
async fn init_exports_spans_over_otlp_http_when_the_guard_drops() {
    let (endpoint, received) = spawn_collector();
    let guard = init(&TelemetryConfig {
        service_name: "mnemo-telemetry-test".to_owned(),
        log_format: LogFormat::Json,
        log_filter: "info".to_owned(),
        otlp_endpoint: Some(endpoint),
    })
    .expect("init");

    // Error level so that even a restrictive RUST_LOG in the environment keeps it.
    let traceparent = tracing::error_span!("otlp_export_test_span").in_scope(|| {
        tracing::error!("inside the exported span");
        mnemo_telemetry::current_traceparent()
    });
    let traceparent = traceparent.expect("the global OpenTelemetry layer is active");

    // The batch processor waits 5 s before a scheduled export, so nothing may have
    // arrived yet: what follows is the guard's flush.
    assert!(received.try_recv().is_err(), "exported before the flush");
    drop(guard);

    // `try_recv`, not a timed wait: the batch processor's own 5 s timer would also
    // deliver eventually, so only an immediate hit proves that the drop flushed.
    let request = received
        .try_recv()
        .expect("dropping the guard did not flush the span to the collector");
    assert_eq!(request.request_line, "POST /v1/traces HTTP/1.1");
    assert_eq!(
        request.content_type.as_deref(),
        Some("application/x-protobuf")
    );
    assert!(contains(&request.body, b"otlp_export_test_span"));
    assert!(contains(&request.body, b"mnemo-telemetry-test"));
    // The exported span carries the trace id that was handed out as traceparent.
    let trace_id_hex = &traceparent[3..35];
    let trace_id: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace_id_hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert!(contains(&request.body, &trace_id));

    // The global subscriber is taken now: a second init must say so, not panic.
    let again = init(&TelemetryConfig::default());
    assert!(matches!(again, Err(TelemetryError::AlreadyInitialized(_))));
}
