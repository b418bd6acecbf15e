//! Devices: the token, paired devices, MCP grants, chat bridges' users, Web Push.

pub(crate) mod chat_people;
pub(crate) mod chat_registry;
pub(crate) mod credentials;
pub(crate) mod devices_access;
pub(crate) mod mcp_grants;
pub(crate) mod push;
