//! Device identities on the wire: the proof a signed-in device gives in `hello`, and devices as
//! clients list them.

use serde::{Deserialize, Serialize};

/// Domain separation for hello proofs: a signature made for anything else never verifies here.
pub const HELLO_PROOF_CONTEXT: &str = "nucleic-hello-proof/1";

/// What a device signs to prove itself in `hello`: the context, the host's single-use challenge
/// and the device id, one per line. The key is the device's ECDSA P-256 key (SHA-256, signature
/// as the 64-byte `r‖s`, base64url without padding, which is what WebCrypto produces).
pub fn hello_proof_message(nonce: &str, device_id: &str) -> String {
    format!("{HELLO_PROOF_CONTEXT}\n{nonce}\n{device_id}")
}

/// A device's proof of possession of its key, sent in `hello` by clients that hold no token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DeviceProof {
    #[serde(rename = "deviceID")]
    pub device_id: String,
    /// A challenge from `POST /api/challenge`: single use, valid for a minute.
    pub nonce: String,
    /// base64url (no padding) of the P1363 signature over [`hello_proof_message`].
    pub signature: String,
}

/// A device as the `devices` reply lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DeviceSummary {
    #[serde(rename = "deviceID")]
    pub device_id: String,
    pub name: String,
    /// Unix milliseconds.
    #[serde(rename = "pairedAt")]
    pub paired_at: i64,
    #[serde(rename = "lastSeenAt", default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<i64>,
    #[serde(rename = "revokedAt", default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
    /// This is the device asking.
    #[serde(default)]
    pub current: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proof_message_binds_context_nonce_and_device() {
        assert_eq!(hello_proof_message("n1", "d1"), "nucleic-hello-proof/1\nn1\nd1");
        assert_ne!(hello_proof_message("n1", "d1"), hello_proof_message("n1", "d2"));
    }
}
