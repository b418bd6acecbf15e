//! Why a discovery could not be made at all (a single unreadable session file is only skipped).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("the checkout {path} cannot be resolved: {why}")]
    Checkout { path: PathBuf, why: String },
    #[error("the session file {path} cannot be read: {why}")]
    Unreadable { path: PathBuf, why: String },
}
