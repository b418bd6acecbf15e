//! Finishing a session's work: integrate, discard, keep, continue (in the same agent or another), pull requests.

pub(crate) mod finish;
pub(crate) mod gh;
pub(crate) mod handover;
pub(crate) mod pull_request;
