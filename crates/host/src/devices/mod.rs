//! Devices: the token, paired devices, Web Push.

pub(crate) mod credentials;
pub(crate) mod devices_access;
pub(crate) mod push;
