//! Helpers of the host's tests: the executable the host starts for its hidden entry points
//! (`nucleic-entry-points`), a host on a temporary home, git, approvals.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nucleic_host::{Host, HostConfig};

pub use crate::host_setup::approve_until_turn_done;
pub use nucleic_testkit::git_repo::{git, new_session, repo};

/// The executable the host starts as `nucleic __sim-agent`, `__keeper`, `__confine`.
pub fn nucleic() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nucleic-entry-points"))
}

pub async fn host(dir: &Path) -> Arc<Host> {
    Host::open(config(dir)).await.unwrap()
}

/// The test host's configuration, with its home in `dir`.
pub fn config(dir: &Path) -> HostConfig {
    crate::host_setup::config_with(dir, nucleic())
}
