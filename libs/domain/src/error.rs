//! How a failure is classed, without saying how a transport shows it: the
//! use cases and ports return their own error enums, each classed here, and
//! only the HTTP layer turns a class into a status.

/// What kind of failure an error is, from the caller's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The request is not what the operation takes: an id or parameter that
    /// does not parse, or options that contradict each other.
    Malformed,
    /// Well-formed, but a value breaks a rule (too long, out of range, ...).
    Invalid,
    /// The caller's credentials are missing or do not verify.
    Unauthenticated,
    /// The caller is known but not allowed.
    Forbidden,
    /// No such resource, or one the caller may not know exists.
    NotFound,
    /// The resource's current state refuses the change.
    Conflict,
    /// The resource existed and was removed for good on request (an erased
    /// subject's memories and reviews): reading or changing it will never
    /// work again, unlike a conflict.
    Gone,
    /// A backing store or service is down; retrying later may work.
    Unavailable,
    /// A bug or a broken invariant on our side.
    Internal,
}

/// An error that knows its class and a stable, machine-readable code.
/// Its `Display` is the message a client may see for a 4xx class; for
/// `Unavailable` and `Internal` clients get a generic message instead.
pub trait Classified: std::error::Error {
    fn class(&self) -> ErrorClass;
    /// Part of the API: never change a code once released.
    fn code(&self) -> &'static str;
}
