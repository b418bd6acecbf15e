//! Devices prove themselves with a key pair of their own instead of a port-blind cookie: a
//! browser registers its public key with a one-time login link (`POST /api/devices`), then
//! signs a single-use challenge (`POST /api/challenge`) in every `hello`. The private key never
//! leaves the browser (WebCrypto, non-extractable, in IndexedDB — origin-scoped, so no other
//! local port can use it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use nucleic_host::DeviceRow;
use nucleic_protocol::{DeviceProof, hello_proof_message};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde_json::json;

use crate::AppState;

/// How long a challenge can be used.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(60);
/// Unused challenges kept at once (the oldest go first).
const MAX_CHALLENGES: usize = 1024;
/// Longest device name kept.
const MAX_NAME_CHARS: usize = 80;

/// Outstanding single-use challenges.
#[derive(Debug, Default)]
pub struct Challenges {
    open: Mutex<HashMap<String, Instant>>,
}

impl Challenges {
    /// A fresh challenge (128 random bits, hex).
    pub fn issue(&self) -> Result<String, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        let nonce: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.retain(|_, expires| *expires > now);
        while open.len() >= MAX_CHALLENGES {
            let oldest = open.iter().min_by_key(|(_, e)| **e).map(|(k, _)| k.clone());
            match oldest {
                Some(k) => open.remove(&k),
                None => break,
            };
        }
        open.insert(nonce.clone(), now + CHALLENGE_TTL);
        Ok(nonce)
    }

    /// Uses up a challenge: true once, when it was issued here and has not expired.
    fn redeem(&self, nonce: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.remove(nonce).is_some_and(|expires| expires > Instant::now())
    }
}

/// Why a device proof was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    #[error(
        "the challenge is unknown, expired or already used (ask POST /api/challenge for a new one)"
    )]
    Challenge,
    #[error("no such device, or it was revoked: sign in again")]
    UnknownDevice,
    #[error("the signature is not the device's over this challenge")]
    BadSignature,
    #[error("cannot check the device: {0}")]
    Host(#[from] nucleic_host::HostError),
}

/// Checks a `hello` proof: the challenge is ours and unused, the device is known and not
/// revoked, and the signature is its key's over this challenge and id.
pub async fn verify(state: &AppState, proof: &DeviceProof) -> Result<DeviceRow, ProofError> {
    // Used up first, whatever follows: a proof is never tried twice against one challenge.
    if !state.challenges.redeem(&proof.nonce) {
        return Err(ProofError::Challenge);
    }
    let device =
        state.host.active_device(&proof.device_id).await?.ok_or(ProofError::UnknownDevice)?;
    let key = device
        .public_key
        .as_deref()
        .and_then(|der| VerifyingKey::from_public_key_der(der).ok())
        .ok_or(ProofError::UnknownDevice)?;
    let signature = URL_SAFE_NO_PAD
        .decode(proof.signature.trim_end_matches('='))
        .ok()
        .and_then(|bytes| Signature::from_slice(&bytes).ok())
        .ok_or(ProofError::BadSignature)?;
    let message = hello_proof_message(&proof.nonce, &proof.device_id);
    key.verify(message.as_bytes(), &signature).map_err(|_| ProofError::BadSignature)?;
    Ok(device)
}

fn refuse(status: StatusCode, why: impl Into<String>) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], Json(json!({ "error": why.into() })))
        .into_response()
}

/// `POST /api/challenge`: `{nonce, expiresInMs}`, for the next `hello`.
pub async fn challenge(State(state): State<AppState>) -> Response {
    match state.challenges.issue() {
        Ok(nonce) => (
            StatusCode::OK,
            [(header::CACHE_CONTROL, "no-store")],
            Json(json!({ "nonce": nonce, "expiresInMs": CHALLENGE_TTL.as_millis() as u64 })),
        )
            .into_response(),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, format!("no randomness: {e}")),
    }
}

/// The body of `POST /api/devices`.
#[derive(Debug, serde::Deserialize)]
pub struct Registration {
    /// The one-time token of a sign-in link.
    token: String,
    /// The device's ECDSA P-256 public key, SubjectPublicKeyInfo DER, base64.
    #[serde(rename = "publicKey")]
    public_key: String,
    /// What the person calls this device (default: from the browser's User-Agent).
    #[serde(default)]
    name: Option<String>,
}

/// `POST /api/devices`: a one-time login token and a public key become a device;
/// `{deviceID, name}`.
pub async fn register(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Registration>,
) -> Response {
    let Some(der) = STANDARD
        .decode(body.public_key.trim())
        .ok()
        .filter(|der| VerifyingKey::from_public_key_der(der).is_ok())
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "publicKey must be an ECDSA P-256 key (SPKI DER, base64)",
        );
    };
    if !state.signin.redeem(&body.token) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "this sign-in link is invalid, expired or already used: run `nucleic open` for a new one",
        );
    }
    let name = body
        .name
        .map(|n| {
            n.trim().chars().filter(|c| !c.is_control()).take(MAX_NAME_CHARS).collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| {
            device_name(headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()))
        });
    match state.host.register_device(&name, der).await {
        Ok(device) => (
            StatusCode::OK,
            [(header::CACHE_CONTROL, "no-store")],
            Json(json!({ "deviceID": device.id, "name": device.name })),
        )
            .into_response(),
        Err(e) => {
            refuse(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot record the device: {e}"))
        }
    }
}

/// "Chrome on Linux" from a User-Agent; "browser" when it says nothing useful.
pub fn device_name(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or_default();
    let browser = [
        ("Edg/", "Edge"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .iter()
    .find(|(needle, _)| ua.contains(needle))
    .map_or("Browser", |(_, name)| name);
    let platform = [
        ("iPhone", "iPhone"),
        ("iPad", "iPad"),
        ("Android", "Android"),
        ("Mac OS X", "macOS"),
        ("Windows", "Windows"),
        ("Linux", "Linux"),
    ]
    .iter()
    .find(|(needle, _)| ua.contains(needle))
    .map(|(_, name)| *name);
    match platform {
        Some(platform) => format!("{browser} on {platform}"),
        None => browser.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_single_use_and_expire() {
        let c = Challenges::default();
        let a = c.issue().unwrap();
        assert_eq!(a.len(), 32);
        assert!(c.redeem(&a));
        assert!(!c.redeem(&a), "used once");
        assert!(!c.redeem("not-issued"));
        let b = c.issue().unwrap();
        c.open.lock().unwrap().insert(b.clone(), Instant::now());
        assert!(!c.redeem(&b), "expired");
        let first = c.issue().unwrap();
        for _ in 0..MAX_CHALLENGES {
            c.issue().unwrap();
        }
        assert_eq!(c.open.lock().unwrap().len(), MAX_CHALLENGES);
        assert!(!c.redeem(&first), "pushed out by newer ones");
    }

    #[test]
    fn device_names_come_from_the_user_agent() {
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";
        assert_eq!(device_name(Some(chrome)), "Chrome on Linux");
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
        assert_eq!(device_name(Some(iphone)), "Safari on iPhone");
        assert_eq!(device_name(None), "Browser");
    }
}
