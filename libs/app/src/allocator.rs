//! The global allocator every mnemo binary declares, and the one setting
//! of it mnemo changes: how long memory freed stays with the process
//! before mimalloc hands it back to the OS (its *purge delay*).
//!
//! mimalloc's default is one second. The pipeline frees and allocates in
//! waves (a batch of rows, sealed payloads and points decoded, handled
//! and dropped), and a pause of a second between two waves was enough
//! for the memory to go back and be faulted in again, zeroed by the
//! kernel: `bench searchable` at 100,000 messages took 240,000 page
//! faults with the default and 160,000 with ten seconds, and its CPU an
//! item fell with them (docs/performance.md, "Memory the allocator keeps
//! for ten seconds"). Ten seconds still gives an idle server its memory
//! back.

use std::ffi::{c_int, c_long, OsStr};

/// See the module's documentation: mimalloc, not glibc's malloc. The
/// server allocates and frees many small buffers across threads (JSON,
/// sealed payloads, rows, points), and glibc's arenas took a fifth of its
/// CPU under load (docs/performance.md, "The pipeline under load").
pub use mimalloc::MiMalloc as Allocator;

/// The purge delay mnemo sets, in milliseconds.
pub const PURGE_DELAY_MS: c_long = 10_000;

/// The environment variable through which mimalloc takes the purge delay
/// from an operator; when it is set, mnemo leaves the delay to it.
pub const PURGE_DELAY_VARIABLE: &str = "MIMALLOC_PURGE_DELAY";

/// `mi_option_purge_delay` in the `mi_option_t` enum of the mimalloc that
/// `libmimalloc-sys` bundles (v3, `include/mimalloc.h`): the Rust binding
/// exports the setter only with its `extended` feature and not this
/// option's name. A test checks that the option at this index has the
/// purge delay's default, which no other option has.
const MI_OPTION_PURGE_DELAY: c_int = 15;

extern "C" {
    // Part of mimalloc's public API, linked in with `libmimalloc-sys`.
    fn mi_option_set(option: c_int, value: c_long);
}

/// Sets the purge delay (see the module's documentation) unless the
/// operator set it: called first thing in every binary's `main`.
pub fn configure() {
    if let Some(delay) = purge_delay(std::env::var_os(PURGE_DELAY_VARIABLE).as_deref()) {
        // SAFETY: mimalloc's options are plain integers it reads on
        // every purge; setting one is allowed at any time, from any thread.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
    }
}

/// The delay to set, given the operator's variable: none when it is set.
fn purge_delay(operator: Option<&OsStr>) -> Option<c_long> {
    match operator {
        Some(_) => None,
        None => Some(PURGE_DELAY_MS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        // As `mi_option_set` above.
        fn mi_option_get(option: c_int) -> c_long;
    }

    /// The value mimalloc uses now for one of its options.
    fn option(index: c_int) -> c_long {
        // SAFETY: reads an option, as `mi_option_get` allows at any time.
        unsafe { mi_option_get(index) }
    }

    #[test]
    fn the_operators_variable_wins_over_mnemos_delay() {
        assert_eq!(purge_delay(None), Some(PURGE_DELAY_MS));
        assert_eq!(purge_delay(Some(OsStr::new("250"))), None);
    }

    // One test for the option's index and for configure: mimalloc's
    // options are global to the process, and this is the only test that
    // changes one.
    #[test]
    fn configure_sets_the_purge_delay_of_the_bundled_mimalloc() {
        if std::env::var_os(PURGE_DELAY_VARIABLE).is_some() {
            // The default below would be the operator's value instead.
            return;
        }
        // mimalloc v3's default purge delay (src/options.c): no option
        // next to it has this default, so a wrong index reads another.
        assert_eq!(option(MI_OPTION_PURGE_DELAY), 1000);
        assert_ne!(option(MI_OPTION_PURGE_DELAY - 1), 1000);
        assert_ne!(option(MI_OPTION_PURGE_DELAY + 1), 1000);
        configure();
        assert_eq!(option(MI_OPTION_PURGE_DELAY), PURGE_DELAY_MS);
    }
}
