//! `[database]`, `[kafka]` and `[qdrant]`: the shared stores of a
//! scale-out deployment, each chosen by its URL (none: the embedded store).

use secrecy::SecretString;
use serde::Deserialize;

use mnemo_vector_index::QdrantSettings;

use crate::env::Env;
use crate::{invalid, ConfigError};

const KAFKA_PARTITIONS: &str = "kafka.partitions (MNEMO_KAFKA_PARTITIONS)";

fn check_postgres_url(key: &str, url: &str) -> Result<(), ConfigError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(())
    } else {
        // Never echo the value: it may hold a password.
        Err(invalid(key, "a postgres:// URL"))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDatabase {
    url: Option<String>,
    system_url: Option<String>,
    owner_url: Option<String>,
    max_connections: Option<u32>,
}

/// PostgreSQL instead of the data dir's SQLite file (see `docs/postgres.md`).
/// URLs are secrets: they may carry passwords.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// The services' login (`mnemo_app`): tenant-scoped access only.
    pub url: SecretString,
    /// The relay's and the cross-tenant passes' login (`mnemo_system`).
    /// None: the app URL with the user replaced by `mnemo_system`.
    pub system_url: Option<SecretString>,
    /// The owner's login, for `mnemo migrate` only.
    pub owner_url: Option<SecretString>,
    pub max_connections: u32,
}

impl RawDatabase {
    pub(crate) fn with_env(mut self, env: &Env) -> Self {
        self.url = env.get("MNEMO_DATABASE_URL").or(self.url);
        self.system_url = env.get("MNEMO_DATABASE_SYSTEM_URL").or(self.system_url);
        self.owner_url = env.get("MNEMO_DATABASE_OWNER_URL").or(self.owner_url);
        self
    }

    pub(crate) fn resolve(self) -> Result<Option<DatabaseSettings>, ConfigError> {
        let Some(url) = self.url else {
            return Ok(None);
        };
        check_postgres_url("database.url (MNEMO_DATABASE_URL)", &url)?;
        for (key, value) in [
            (
                "database.system_url (MNEMO_DATABASE_SYSTEM_URL)",
                &self.system_url,
            ),
            (
                "database.owner_url (MNEMO_DATABASE_OWNER_URL)",
                &self.owner_url,
            ),
        ] {
            if let Some(url) = value {
                check_postgres_url(key, url)?;
            }
        }
        let max_connections = self.max_connections.unwrap_or(10);
        if max_connections < 2 {
            return Err(invalid("database.max_connections", "at least 2"));
        }
        Ok(Some(DatabaseSettings {
            url: SecretString::from(url),
            system_url: self.system_url.map(SecretString::from),
            owner_url: self.owner_url.map(SecretString::from),
            max_connections,
        }))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKafka {
    brokers: Option<String>,
    partitions: Option<i32>,
}

/// Kafka instead of the in-process bus (see `docs/kafka.md`).
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    /// Partitions of the topics mnemo creates when they are missing.
    pub partitions: i32,
}

impl RawKafka {
    pub(crate) fn with_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        self.brokers = env.get("MNEMO_KAFKA_BROKERS").or(self.brokers);
        self.partitions = env
            .parse(
                "MNEMO_KAFKA_PARTITIONS",
                KAFKA_PARTITIONS,
                "a positive integer",
            )?
            .or(self.partitions);
        Ok(self)
    }

    pub(crate) fn resolve(self) -> Result<Option<KafkaSettings>, ConfigError> {
        let Some(brokers) = self.brokers.filter(|b| !b.trim().is_empty()) else {
            return Ok(None);
        };
        let partitions = self.partitions.unwrap_or(6);
        if partitions <= 0 {
            return Err(invalid(KAFKA_PARTITIONS, "a positive integer"));
        }
        Ok(Some(KafkaSettings {
            brokers: brokers.trim().to_owned(),
            partitions,
        }))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQdrant {
    url: Option<String>,
    api_key: Option<String>,
    collection_prefix: Option<String>,
}

impl RawQdrant {
    pub(crate) fn with_env(mut self, env: &Env) -> Self {
        self.url = env.get("MNEMO_QDRANT_URL").or(self.url);
        self.api_key = env.get("MNEMO_QDRANT_API_KEY").or(self.api_key);
        self.collection_prefix = env
            .get("MNEMO_QDRANT_COLLECTION_PREFIX")
            .or(self.collection_prefix);
        self
    }

    /// mnemo-vector-index's own settings, request deadlines at its defaults.
    pub(crate) fn resolve(self) -> Result<Option<QdrantSettings>, ConfigError> {
        let Some(url) = self.url else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(invalid(
                "qdrant.url (MNEMO_QDRANT_URL)",
                "an http:// or https:// URL of Qdrant's gRPC port (6334)",
            ));
        }
        let mut settings = QdrantSettings::new(url);
        settings.api_key = self.api_key.map(SecretString::from);
        settings.collection_prefix = self
            .collection_prefix
            .unwrap_or_else(|| "mnemo-".to_owned());
        Ok(Some(settings))
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use crate::testing::{load_env, load_toml};

    #[test]
    fn a_bad_database_value_is_refused_naming_the_key() {
        let error =
            load_toml("[database]\nurl = \"postgres://mnemo_app@db/mnemo\"\nmax_connections = 1\n")
                .unwrap_err();
        assert!(
            error.to_string().contains("database.max_connections"),
            "{error}"
        );
        let error = load_toml(
            "[database]\nurl = \"postgres://mnemo_app@db/mnemo\"\nowner_url = \"mysql://pw@db\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("database.owner_url") && !error.contains("pw"),
            "{error}"
        );
    }

    #[test]
    fn bad_kafka_partitions_are_refused_naming_the_key() {
        let error = load_toml("[kafka]\nbrokers = \"k:9092\"\npartitions = -1\n").unwrap_err();
        assert!(error.to_string().contains("kafka.partitions"), "{error}");
        let error = load_env(&[
            ("MNEMO_KAFKA_BROKERS", "k:9092"),
            ("MNEMO_KAFKA_PARTITIONS", "many"),
        ])
        .unwrap_err();
        assert!(
            error.to_string().contains("MNEMO_KAFKA_PARTITIONS"),
            "{error}"
        );
    }

    #[test]
    fn the_qdrant_section_resolves_into_the_vector_index_settings() {
        let error = load_toml("[qdrant]\nurl = \"qdrant:6334\"\n").unwrap_err();
        assert!(error.to_string().contains("qdrant.url"), "{error}");
        let qdrant = load_env(&[
            ("MNEMO_QDRANT_URL", "http://qdrant:6334"),
            ("MNEMO_QDRANT_API_KEY", "qk"),
        ])
        .unwrap()
        .qdrant
        .unwrap();
        assert_eq!(qdrant.url, "http://qdrant:6334");
        assert_eq!(qdrant.collection_prefix, "mnemo-");
        assert_eq!(qdrant.api_key.unwrap().expose_secret(), "qk");
    }
}
