//! Field rules shared by the write use cases: content, unit values, tags.

use crate::error::InputError;

/// The domain's, so that the search filters' tag limits are the same.
pub(crate) use mnemo_domain::memory::{MAX_TAGS, MAX_TAG_CHARS};
pub(crate) const MAX_REASON_CHARS: usize = 1000;

pub(crate) fn check_content(
    field: &'static str,
    text: &str,
    max_chars: usize,
) -> Result<(), InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty { field });
    }
    if text.chars().count() > max_chars {
        return Err(InputError::TooLong {
            field,
            max: max_chars,
        });
    }
    Ok(())
}

pub(crate) fn check_unit(field: &'static str, value: Option<f32>) -> Result<(), InputError> {
    match value {
        Some(v) if !(0.0..=1.0).contains(&v) || v.is_nan() => Err(InputError::OutOfRange { field }),
        _ => Ok(()),
    }
}

/// Tags are plain labels, not content: they are stored unencrypted, so one
/// that holds PII is refused rather than silently rewritten.
pub(crate) fn check_tags(tags: &[String]) -> Result<Vec<String>, InputError> {
    if tags.len() > MAX_TAGS {
        return Err(InputError::TooManyTags);
    }
    let mut clean = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim().to_lowercase();
        let valid = !tag.is_empty()
            && tag.chars().count() <= MAX_TAG_CHARS
            && tag
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | ' '));
        if !valid {
            return Err(InputError::InvalidTag);
        }
        if !mnemo_pii::Detector::shared().detect(&tag).is_empty() {
            return Err(InputError::TagContainsPii);
        }
        if !clean.contains(&tag) {
            clean.push(tag);
        }
    }
    Ok(clean)
}
