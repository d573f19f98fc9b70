//! The environment half of the settings: `MNEMO_*` variables win over the
//! file's values.

use std::collections::HashMap;
use std::str::FromStr;

use crate::{invalid, ConfigError};

/// The process environment, or a test's: an empty variable counts as unset.
pub(crate) struct Env<'a> {
    vars: &'a HashMap<String, String>,
}

impl<'a> Env<'a> {
    pub(crate) fn new(vars: &'a HashMap<String, String>) -> Self {
        Env { vars }
    }

    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.vars.get(key).filter(|v| !v.is_empty()).cloned()
    }

    /// Variable `var` as a `T`, when it is set. A value that does not parse
    /// is refused as setting `key` (the file's value, typed by TOML, needs
    /// no such step); ranges are the section's to check.
    pub(crate) fn parse<T: FromStr>(
        &self,
        var: &str,
        key: &str,
        expected: &str,
    ) -> Result<Option<T>, ConfigError> {
        self.get(var)
            .map(|raw| raw.trim().parse().map_err(|_| invalid(key, expected)))
            .transpose()
    }
}
