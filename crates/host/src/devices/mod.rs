//! Devices: the token, paired devices, MCP grants, Web Push.

pub(crate) mod credentials;
pub(crate) mod devices_access;
pub(crate) mod mcp_grants;
pub(crate) mod push;
