//! The retry policy shared by mnemo's HTTP model clients (this crate's chat
//! client and mnemo-embed's OpenAI-compatible embedder).
//!
//! Transient failures — 429, 408, 5xx, timeouts, dropped connections — are
//! worth another attempt after a pause; any other 4xx is not, because sending
//! the same request again cannot fix it. Pauses grow exponentially with
//! "equal jitter" (half fixed, half random) so that clients hit by the same
//! outage spread out, and never undercut a server's `Retry-After` — which is
//! itself capped, since past a minute the caller is better served by an error
//! than by a hung request.
//!
//! Nothing here sees request or answer bodies except [`upstream_message`],
//! which cuts the server's explanation short so that a server echoing the
//! request cannot put subject text into error messages.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

/// First pause before a retry (before jitter).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(250);
/// Longest pause computed by exponential growth (before jitter).
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A server asking for a longer pause via `Retry-After` is capped here.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How long to wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Nominal pause before the first retry; doubles with every retry.
    pub initial: Duration,
    /// Cap of the nominal pause.
    pub max: Duration,
    /// Cap of a server's `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: DEFAULT_INITIAL_BACKOFF,
            max: DEFAULT_MAX_BACKOFF,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

impl Backoff {
    /// A policy whose first pause is `initial` (the other caps at their
    /// defaults, the growth cap raised to `initial` if it is larger).
    pub fn with_initial(initial: Duration) -> Self {
        Self {
            initial,
            max: DEFAULT_MAX_BACKOFF.max(initial),
            ..Self::default()
        }
    }

    /// The nominal (jitter-free) pause before retry number `retry`
    /// (0 for the first retry): `initial * 2^retry`, capped at `max`.
    pub fn nominal(&self, retry: u32) -> Duration {
        self.initial
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max)
    }

    /// The pause before retry number `retry` (0 for the first retry): the
    /// nominal pause with equal jitter, i.e. uniformly within
    /// `[nominal / 2, nominal]`, but never shorter than what the server asked
    /// for (`retry_after`, capped at `max_retry_after`).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let half = self.nominal(retry) / 2;
        let jittered = half + half.mul_f64(rand::random::<f64>());
        match retry_after {
            Some(asked) => jittered.max(asked.min(self.max_retry_after)),
            None => jittered,
        }
    }

    /// The response's `Retry-After`, capped at `max_retry_after`.
    pub fn retry_after(&self, headers: &HeaderMap) -> Option<Duration> {
        parse_retry_after(headers, self.max_retry_after)
    }
}

/// `Retry-After` in (possibly fractional) seconds — the form rate limiters
/// use — capped at `cap`. HTTP dates and garbage yield `None`, so callers fall
/// back to plain backoff.
pub fn parse_retry_after(headers: &HeaderMap, cap: Duration) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds).min(cap))
}

/// Whether an error status is worth retrying: 429 (rate limited), 408
/// (request timeout) and every 5xx. Other statuses mean the request itself
/// is at fault.
pub fn is_transient_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// What a failed `reqwest` exchange (no HTTP status) means for retrying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportFailure {
    /// The request could not even be built (bad URL, bad header value):
    /// retrying cannot help.
    Config(String),
    /// Timeouts, refused or reset connections, bodies cut short: worth
    /// another attempt. The text names the kind and the error chain (which
    /// never contains the request body).
    Transient(String),
}

/// Classifies a transport-level error.
pub fn classify_transport_error(error: &reqwest::Error) -> TransportFailure {
    if error.is_builder() {
        return TransportFailure::Config(error_chain(error));
    }
    let kind = if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "transport error"
    };
    TransportFailure::Transient(format!("{kind}: {}", error_chain(error)))
}

/// An error and all its sources, joined by `": "`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The server's own explanation, from `{"error": {"message": …}}` or
/// `{"error": "…"}`, else the raw body; cut to 200 characters so that a
/// misbehaving server echoing our request cannot put subject text into our
/// errors.
pub fn upstream_message(body: &[u8]) -> String {
    const MAX_CHARS: usize = 200;
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| {
            e.get("message")
                .and_then(|m| m.as_str())
                .or_else(|| e.as_str())
        })
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let message = message.trim();
    if message.is_empty() {
        return "(empty body)".into();
    }
    let mut cut: String = message.chars().take(MAX_CHARS).collect();
    if cut.len() < message.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_grows_is_capped_and_respects_retry_after() {
        let backoff = Backoff::default();
        for retry in 0..20 {
            let delay = backoff.delay(retry, None);
            let nominal = DEFAULT_INITIAL_BACKOFF
                .saturating_mul(1u32 << retry.min(16))
                .min(DEFAULT_MAX_BACKOFF);
            assert_eq!(backoff.nominal(retry), nominal);
            assert!(
                delay >= nominal / 2 && delay <= nominal,
                "{retry}: {delay:?}"
            );
        }
        assert!(backoff.delay(0, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
        // A Retry-After beyond the cap is held to it.
        let short = Backoff {
            max_retry_after: Duration::from_millis(10),
            ..Backoff::with_initial(Duration::from_millis(1))
        };
        assert!(short.delay(0, Some(Duration::from_secs(3600))) <= Duration::from_millis(10));
    }

    #[test]
    fn with_initial_raises_the_growth_cap_when_needed() {
        assert_eq!(
            Backoff::with_initial(Duration::from_millis(1)).max,
            DEFAULT_MAX_BACKOFF
        );
        let slow = Backoff::with_initial(Duration::from_secs(20));
        assert_eq!(slow.max, Duration::from_secs(20));
        assert_eq!(slow.nominal(3), Duration::from_secs(20));
    }

    #[test]
    fn retry_after_parses_seconds_and_caps_them() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(
            parse_retry_after(&headers, DEFAULT_MAX_RETRY_AFTER),
            Some(Duration::from_secs(2))
        );
        headers.insert(RETRY_AFTER, "0.25".parse().unwrap());
        assert_eq!(
            Backoff::default().retry_after(&headers),
            Some(Duration::from_millis(250))
        );
        headers.insert(RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(
            parse_retry_after(&headers, DEFAULT_MAX_RETRY_AFTER),
            Some(DEFAULT_MAX_RETRY_AFTER)
        );
        headers.insert(RETRY_AFTER, "-1".parse().unwrap());
        assert_eq!(parse_retry_after(&headers, DEFAULT_MAX_RETRY_AFTER), None);
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(parse_retry_after(&headers, DEFAULT_MAX_RETRY_AFTER), None);
        assert_eq!(
            parse_retry_after(&HeaderMap::new(), DEFAULT_MAX_RETRY_AFTER),
            None
        );
    }

    #[test]
    fn transient_statuses() {
        for code in [429u16, 408, 500, 502, 503, 504, 599] {
            assert!(
                is_transient_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
        for code in [400u16, 401, 403, 404, 413, 422] {
            assert!(
                !is_transient_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
    }

    #[test]
    fn upstream_message_prefers_the_error_field_and_is_bounded() {
        assert_eq!(
            upstream_message(br#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(upstream_message(br#"{"error":"nope"}"#), "nope");
        assert_eq!(upstream_message(b""), "(empty body)");
        let long = "x".repeat(1000);
        assert!(upstream_message(long.as_bytes()).chars().count() <= 201);
    }

    #[test]
    fn error_chain_joins_sources() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("outer")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let error = Outer(std::io::Error::other("inner"));
        assert_eq!(error_chain(&error), "outer: inner");
    }
}
