//! Projects: registering repositories, their settings and branches.

pub(crate) mod registry;
