//! `[limits]`, `[telemetry]`, `[bus]` and `[runtime]`: what the process
//! itself runs with.

use mnemo_telemetry::LogFormat;
use serde::Deserialize;

use crate::env::Env;
use crate::{invalid, ConfigError};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    max_body_bytes: Option<usize>,
    max_messages_per_request: Option<usize>,
    max_content_chars: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_messages_per_request: usize,
    pub max_content_chars: usize,
}

impl RawLimits {
    pub(crate) fn resolve(self) -> Result<Limits, ConfigError> {
        let limits = Limits {
            max_body_bytes: self.max_body_bytes.unwrap_or(1024 * 1024),
            max_messages_per_request: self.max_messages_per_request.unwrap_or(100),
            max_content_chars: self.max_content_chars.unwrap_or(32 * 1024),
        };
        if limits.max_body_bytes == 0
            || limits.max_messages_per_request == 0
            || limits.max_content_chars == 0
        {
            return Err(invalid("limits", "every limit must be greater than zero"));
        }
        Ok(limits)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTelemetry {
    /// A string, not a [`LogFormat`]: the file's value and
    /// `MNEMO_LOG_FORMAT` go through the same check.
    log_format: Option<String>,
    log_filter: Option<String>,
    otlp_endpoint: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    pub log_filter: String,
    pub otlp_endpoint: Option<String>,
}

impl RawTelemetry {
    pub(crate) fn with_env(mut self, env: &Env) -> Self {
        self.log_format = env.get("MNEMO_LOG_FORMAT").or(self.log_format);
        self.log_filter = env.get("MNEMO_LOG").or(self.log_filter);
        self.otlp_endpoint = env
            .get("MNEMO_OTLP_ENDPOINT")
            .or_else(|| env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .or(self.otlp_endpoint);
        self
    }

    pub(crate) fn resolve(self) -> Result<TelemetrySettings, ConfigError> {
        let log_format = match self.log_format.as_deref() {
            None => LogFormat::default(),
            Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(_) => {
                return Err(invalid(
                    "telemetry.log_format (MNEMO_LOG_FORMAT)",
                    "text or json",
                ))
            }
        };
        Ok(TelemetrySettings {
            log_format,
            log_filter: self.log_filter.unwrap_or_else(|| "info".to_owned()),
            otlp_endpoint: self.otlp_endpoint,
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBus {
    partitions: Option<u32>,
}

impl RawBus {
    /// The in-process bus's partition count.
    pub(crate) fn resolve(self) -> Result<u32, ConfigError> {
        let partitions = self.partitions.unwrap_or(1);
        if partitions == 0 {
            return Err(invalid("bus.partitions", "must be at least 1"));
        }
        Ok(partitions)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntime {
    background_nice: Option<i32>,
}

impl RawRuntime {
    pub(crate) fn with_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        if let Some(nice) = env.parse(
            "MNEMO_BACKGROUND_NICE",
            "runtime.background_nice (MNEMO_BACKGROUND_NICE)",
            "a whole number from 0 to 19",
        )? {
            self.background_nice = Some(nice);
        }
        Ok(self)
    }

    /// How much lower than the request threads the background work runs
    /// (a nice increment); default 10.
    pub(crate) fn resolve(self) -> Result<u8, ConfigError> {
        let nice = self.background_nice.unwrap_or(10);
        u8::try_from(nice)
            .ok()
            .filter(|nice| *nice <= 19)
            .ok_or_else(|| {
                invalid(
                    "runtime.background_nice (MNEMO_BACKGROUND_NICE)",
                    "a whole number from 0 to 19",
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use mnemo_telemetry::LogFormat;

    use crate::testing::{load_env, load_toml};

    #[test]
    fn a_zero_limit_is_refused_naming_its_section() {
        let error = load_toml("[limits]\nmax_body_bytes = 0\n").unwrap_err();
        assert!(error.to_string().contains("limits"), "{error}");
    }

    #[test]
    fn a_bad_log_format_is_refused_from_the_file_and_the_environment() {
        let error = load_toml("[telemetry]\nlog_format = \"xml\"\n").unwrap_err();
        assert!(
            error.to_string().contains("telemetry.log_format"),
            "{error}"
        );
        let error = load_env(&[("MNEMO_LOG_FORMAT", "xml")]).unwrap_err();
        assert!(error.to_string().contains("MNEMO_LOG_FORMAT"), "{error}");
        let json = load_toml("[telemetry]\nlog_format = \"json\"\n").unwrap();
        assert_eq!(json.telemetry.log_format, LogFormat::Json);
    }

    #[test]
    fn the_background_nice_defaults_to_ten_and_stays_within_what_nice_allows() {
        assert_eq!(load_toml("").unwrap().background_nice, 10);
        let file = load_toml("[runtime]\nbackground_nice = 0\n").unwrap();
        assert_eq!(file.background_nice, 0);
        assert_eq!(
            load_env(&[("MNEMO_BACKGROUND_NICE", "19")])
                .unwrap()
                .background_nice,
            19
        );
        for bad in ["20", "-1", "low"] {
            let error = load_env(&[("MNEMO_BACKGROUND_NICE", bad)]).unwrap_err();
            assert!(
                error.to_string().contains("MNEMO_BACKGROUND_NICE"),
                "{bad}: {error}"
            );
        }
        let error = load_toml("[runtime]\nbackground_nice = -5\n").unwrap_err();
        assert!(
            error.to_string().contains("runtime.background_nice"),
            "{error}"
        );
    }

    #[test]
    fn zero_bus_partitions_are_refused_naming_the_key() {
        let error = load_toml("[bus]\npartitions = 0\n").unwrap_err();
        assert!(error.to_string().contains("bus.partitions"), "{error}");
    }
}
