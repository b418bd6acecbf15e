//! The host's VAPID identity (RFC 8292): one P-256 key generated once and kept 0600 in the
//! home, signing a short-lived ES256 JWT per push service origin.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use p256::SecretKey;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{Value, json};

use crate::{PushError, b64};

/// The key file's name in the host's home.
pub const VAPID_KEY_FILE: &str = "vapid.key";
/// How long a signed JWT is valid (RFC 8292 allows up to 24 hours).
pub const JWT_LIFETIME_SECS: u64 = 12 * 60 * 60;

/// A fresh random P-256 private key.
pub(crate) fn random_secret() -> Result<SecretKey, PushError> {
    // A random 32-byte string is a valid scalar except with negligible probability: retry then.
    for _ in 0..8 {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| PushError::Random(e.to_string()))?;
        if let Ok(key) = SecretKey::from_slice(&bytes) {
            return Ok(key);
        }
    }
    Err(PushError::Random("no valid P-256 scalar in 8 draws".into()))
}

/// The host's application server key.
#[derive(Clone)]
pub struct VapidKey {
    secret: SecretKey,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKey").field("public", &self.public_key()).finish_non_exhaustive()
    }
}

impl VapidKey {
    /// A key from its 32 secret bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<VapidKey, PushError> {
        SecretKey::from_slice(bytes)
            .map(|secret| VapidKey { secret })
            .map_err(|_| PushError::BadKey)
    }

    /// Reads the key at `path`, or creates it there (mode 0600, never readable by others, not
    /// even briefly). A file that is not a key is an error, never silently replaced: the
    /// browsers' subscriptions are bound to it.
    pub fn load_or_create(path: &Path) -> Result<VapidKey, PushError> {
        let io = |e: std::io::Error| PushError::KeyFile(path.display().to_string(), e.to_string());
        match std::fs::read(path) {
            Ok(bytes) => {
                let mode = std::fs::metadata(path).map_err(io)?.permissions().mode();
                if mode & 0o077 != 0 {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                        .map_err(io)?;
                }
                VapidKey::from_bytes(&bytes).map_err(|_| {
                    PushError::KeyFile(path.display().to_string(), "not a 32-byte P-256 key".into())
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = VapidKey { secret: random_secret()? };
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(io)?;
                file.write_all(&key.secret.to_bytes()).map_err(io)?;
                file.sync_all().map_err(io)?;
                Ok(key)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// The public key browsers subscribe with (`applicationServerKey`): 65 bytes
    /// uncompressed, base64url without padding.
    pub fn public_key(&self) -> String {
        b64::encode(self.secret.public_key().to_encoded_point(false).as_bytes())
    }

    /// The `Authorization` header for a push to `endpoint`: `vapid t=<JWT>, k=<public key>`,
    /// the JWT's audience being the endpoint's origin.
    pub fn authorization(
        &self,
        endpoint: &str,
        subject: &str,
        now_secs: u64,
    ) -> Result<String, PushError> {
        let header = b64::encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = json!({
            "aud": origin(endpoint)?,
            "exp": now_secs + JWT_LIFETIME_SECS,
            "sub": subject,
        });
        let signing_input = format!("{header}.{}", b64::encode(claims.to_string().as_bytes()));
        let signature: Signature = SigningKey::from(&self.secret).sign(signing_input.as_bytes());
        Ok(format!(
            "vapid t={signing_input}.{}, k={}",
            b64::encode(&signature.to_bytes()),
            self.public_key()
        ))
    }
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> Result<String, PushError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| PushError::BadEndpoint(url.into()))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if !matches!(scheme, "http" | "https") || authority.is_empty() {
        return Err(PushError::BadEndpoint(url.into()));
    }
    Ok(format!("{scheme}://{authority}"))
}

/// What a push service checks (RFC 8292 section 2 and 3): the header parses, the JWT is
/// ES256-signed by the key `k`, its audience is `expected_aud` and it has not expired nor
/// lasts over 24 hours. Returns the claims' `sub`.
pub fn verify_authorization(
    header: &str,
    expected_aud: &str,
    now_secs: u64,
) -> Result<String, PushError> {
    let bad = |why: &str| PushError::Vapid(why.to_owned());
    let params = header.strip_prefix("vapid ").ok_or_else(|| bad("not the vapid scheme"))?;
    let (mut token, mut key) = (None, None);
    for part in params.split(',').map(str::trim) {
        match part.split_once('=') {
            Some(("t", v)) => token = Some(v),
            Some(("k", v)) => key = Some(v),
            _ => return Err(bad("unknown vapid parameter")),
        }
    }
    let (token, key) = (token.ok_or_else(|| bad("no t="))?, key.ok_or_else(|| bad("no k="))?);
    let key =
        VerifyingKey::from_sec1_bytes(&b64::decode(key).map_err(|_| bad("k is not base64url"))?)
            .map_err(|_| bad("k is not a P-256 key"))?;
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the JWT does not have three parts"));
    };
    let header: Value = serde_json::from_slice(&b64::decode(h).map_err(|_| bad("JWT header"))?)
        .map_err(|_| bad("JWT header is not JSON"))?;
    if header["alg"] != "ES256" {
        return Err(bad("the JWT is not ES256"));
    }
    let signature = Signature::from_slice(&b64::decode(s).map_err(|_| bad("JWT signature"))?)
        .map_err(|_| bad("the JWT signature is not 64 bytes"))?;
    key.verify(format!("{h}.{c}").as_bytes(), &signature)
        .map_err(|_| bad("the JWT signature does not verify with k"))?;
    let claims: Value = serde_json::from_slice(&b64::decode(c).map_err(|_| bad("JWT claims"))?)
        .map_err(|_| bad("JWT claims are not JSON"))?;
    if claims["aud"] != expected_aud {
        return Err(bad("the JWT audience is not this push service"));
    }
    let exp = claims["exp"].as_u64().ok_or_else(|| bad("no exp"))?;
    if exp <= now_secs || exp > now_secs + 24 * 60 * 60 {
        return Err(bad("the JWT expired or lasts over 24 hours"));
    }
    claims["sub"].as_str().map(str::to_owned).ok_or_else(|| bad("no sub"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(VAPID_KEY_FILE);
        let made = VapidKey::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = VapidKey::load_or_create(&path).unwrap();
        assert_eq!(made.public_key(), again.public_key());
        assert_eq!(b64::decode(&made.public_key()).unwrap().len(), 65);
        std::fs::write(&path, b"garbage").unwrap();
        assert!(matches!(VapidKey::load_or_create(&path), Err(PushError::KeyFile(..))));
    }

    #[test]
    fn a_signed_jwt_verifies_only_for_its_audience_and_time() {
        let key = VapidKey { secret: random_secret().unwrap() };
        let now = 1_800_000_000;
        let header =
            key.authorization("https://push.example:8443/send/abc?x", "mailto:a@b", now).unwrap();
        assert_eq!(
            verify_authorization(&header, "https://push.example:8443", now).unwrap(),
            "mailto:a@b"
        );
        assert!(verify_authorization(&header, "https://other.example", now).is_err());
        assert!(
            verify_authorization(&header, "https://push.example:8443", now + JWT_LIFETIME_SECS)
                .is_err()
        );
        // Another key's k: the signature does not verify.
        let other = VapidKey { secret: random_secret().unwrap() };
        let forged = header.replace(&key.public_key(), &other.public_key());
        assert!(verify_authorization(&forged, "https://push.example:8443", now).is_err());
        assert!(origin("ftp://x/y").is_err());
        assert!(origin("http:///y").is_err());
    }
}
