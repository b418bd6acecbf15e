//! Agents: launching a backend's CLI, its confinement, keepers, what `welcome` offers.

pub(crate) mod backends;
pub mod confinement;
pub(crate) mod keeper_dirs;
pub(crate) mod keepers;
pub(crate) mod launch;
pub mod missing_read_only;
pub mod settings_folders;
