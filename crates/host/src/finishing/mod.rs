//! Finishing a session's work: integrate, discard, keep, continue, pull requests.

pub(crate) mod finish;
pub(crate) mod gh;
pub(crate) mod pull_request;
