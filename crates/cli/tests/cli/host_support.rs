//! The host set up as its own tests do (`crates/host/tests/host/host_setup.rs`), for the CLI's
//! tests that drive a host in-process, with the `nucleic` binary as its executable.

use std::path::Path;
use std::sync::Arc;

use nucleic_host::{Host, HostConfig};

#[path = "../../../host/tests/host/host_setup.rs"]
mod host_setup;

pub use host_setup::approve_until_turn_done;
pub use nucleic_testkit::git_repo::{new_session, repo};

pub async fn host(dir: &Path) -> Arc<Host> {
    Host::open(config(dir)).await.unwrap()
}

/// The test host's configuration, with its home in `dir`.
pub fn config(dir: &Path) -> HostConfig {
    host_setup::config_with(dir, crate::support::nucleic())
}
