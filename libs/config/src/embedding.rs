//! `[embedding]`: which embedder, resolved into mnemo-embed's own
//! [`EmbedSettings`], so the binary hands it to `mnemo_embed::build` as is.

use std::path::PathBuf;

use mnemo_embed::{EmbedSettings, EmbedderKind};
use secrecy::SecretString;
use serde::Deserialize;

use crate::env::Env;
use crate::{invalid, ConfigError};

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
        self.cache_dir = env
            .get("MNEMO_MODEL_CACHE")
            .map(PathBuf::from)
            .or(self.cache_dir);
        self.dimension = env
            .parse(
                "MNEMO_EMBED_DIMENSION",
                DIMENSION,
                "must be a positive integer",
            )?
            .or(self.dimension);
        Ok(self)
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
        // The defaults read the process environment as mnemo-embed always
        // has: the cache dir (`XDG_CACHE_HOME`, `HOME`) and the hub
        // (`MNEMO_HF_ENDPOINT`).
        let defaults = EmbedSettings::default();
        Ok(EmbedSettings {
            kind,
            model_dir: self.model_dir,
            model: self.model,
            base_url: self.base_url,
            api_key: self.api_key.map(SecretString::from),
            cache_dir: self.cache_dir.unwrap_or(defaults.cache_dir),
            dimension: self.dimension,
            hub_endpoint: defaults.hub_endpoint,
        })
    }
}

#[cfg(test)]
mod tests {
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
}
