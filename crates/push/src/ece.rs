//! Message encryption for Web Push (RFC 8291 over RFC 8188 `aes128gcm`): one record, keyed by
//! an ephemeral ECDH agreement with the browser's subscription key and its auth secret.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

use crate::PushError;

/// The record size written in the header (one record: payloads are tiny).
pub const RECORD_SIZE: u32 = 4096;
/// Salt, record size, key id length, and the 65-byte uncompressed key id.
const HEADER_BYTES: usize = 16 + 4 + 1 + 65;
/// The longest plaintext one record holds (record size minus delimiter and tag).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 17;

/// A subscription's keys as the browser gives them (`PushSubscription.getKey`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key, 65 bytes uncompressed.
    pub p256dh: Vec<u8>,
    /// The 16-byte authentication secret.
    pub auth: Vec<u8>,
}

/// The keys a browser makes for a subscription, private half included: what the mock push
/// service in tests decrypts with (a real push service never has them).
#[derive(Clone)]
pub struct BrowserKeys {
    secret: SecretKey,
    /// The public half, as the browser hands it to the host.
    pub keys: SubscriptionKeys,
}

impl std::fmt::Debug for BrowserKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserKeys").field("keys", &self.keys).finish_non_exhaustive()
    }
}

impl BrowserKeys {
    /// A fresh key pair and auth secret.
    pub fn generate() -> Result<BrowserKeys, PushError> {
        let secret = crate::vapid::random_secret()?;
        let mut auth = vec![0u8; 16];
        getrandom::fill(&mut auth).map_err(|e| PushError::Random(e.to_string()))?;
        let p256dh = secret.public_key().to_encoded_point(false).as_bytes().to_vec();
        Ok(BrowserKeys { secret, keys: SubscriptionKeys { p256dh, auth } })
    }

    /// Decrypts a push message body made for these keys.
    pub fn decrypt(&self, body: &[u8]) -> Result<Vec<u8>, PushError> {
        decrypt(body, &self.secret, &self.keys.auth)
    }
}

/// Encrypts `plaintext` for a subscription: `salt ‖ rs ‖ idlen ‖ keyid ‖ ciphertext`.
pub fn encrypt(plaintext: &[u8], keys: &SubscriptionKeys) -> Result<Vec<u8>, PushError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PushError::Random(e.to_string()))?;
    let sender = crate::vapid::random_secret()?;
    encrypt_with(plaintext, keys, &sender, salt)
}

/// [`encrypt`] with a given sender key and salt (the RFC's test vector fixes both).
pub fn encrypt_with(
    plaintext: &[u8],
    keys: &SubscriptionKeys,
    sender: &SecretKey,
    salt: [u8; 16],
) -> Result<Vec<u8>, PushError> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(PushError::TooLarge(plaintext.len()));
    }
    let browser = PublicKey::from_sec1_bytes(&keys.p256dh).map_err(|_| PushError::BadKey)?;
    let sender_public = sender.public_key().to_encoded_point(false);
    let (cek, nonce) =
        content_keys(sender, &browser, &keys.auth, &keys.p256dh, sender_public.as_bytes(), &salt)?;
    let mut record = Vec::with_capacity(plaintext.len() + 1);
    record.extend_from_slice(plaintext);
    // 0x02: the last (and only) record.
    record.push(2);
    let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| PushError::BadKey)?;
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), record.as_slice())
        .map_err(|_| PushError::Crypto("encryption failed"))?;
    let mut body = Vec::with_capacity(HEADER_BYTES + sealed.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(sender_public.as_bytes());
    body.extend_from_slice(&sealed);
    Ok(body)
}

/// Decrypts a body made by [`encrypt`] with the browser's private key (what a push service
/// cannot do; the mock push service in tests does it with keys the test created).
pub fn decrypt(body: &[u8], browser: &SecretKey, auth: &[u8]) -> Result<Vec<u8>, PushError> {
    if body.len() < HEADER_BYTES + 17 {
        return Err(PushError::Crypto("the body is shorter than a header and one record"));
    }
    let salt: [u8; 16] = body[..16].try_into().map_err(|_| PushError::Crypto("salt"))?;
    if body[20] != 65 {
        return Err(PushError::Crypto("the key id is not a 65-byte P-256 key"));
    }
    let sender_bytes = &body[21..86];
    let sender = PublicKey::from_sec1_bytes(sender_bytes).map_err(|_| PushError::BadKey)?;
    let browser_public = browser.public_key().to_encoded_point(false);
    let (cek, nonce) = content_keys_receiver(
        browser,
        &sender,
        auth,
        browser_public.as_bytes(),
        sender_bytes,
        &salt,
    )?;
    let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| PushError::BadKey)?;
    let mut record = cipher
        .decrypt(Nonce::from_slice(&nonce), &body[HEADER_BYTES..])
        .map_err(|_| PushError::Crypto("the record does not authenticate"))?;
    // Strip padding (zeros) back to the delimiter, which must say "last record".
    while record.last() == Some(&0) {
        record.pop();
    }
    match record.pop() {
        Some(2) => Ok(record),
        _ => Err(PushError::Crypto("the record lacks the last-record delimiter")),
    }
}

/// The content key and nonce on the sending side.
fn content_keys(
    sender: &SecretKey,
    browser: &PublicKey,
    auth: &[u8],
    browser_bytes: &[u8],
    sender_bytes: &[u8],
    salt: &[u8; 16],
) -> Result<([u8; 16], [u8; 12]), PushError> {
    let shared = p256::ecdh::diffie_hellman(sender.to_nonzero_scalar(), browser.as_affine());
    derive(shared.raw_secret_bytes(), auth, browser_bytes, sender_bytes, salt)
}

/// The same keys on the receiving side (the agreement is symmetric).
fn content_keys_receiver(
    browser: &SecretKey,
    sender: &PublicKey,
    auth: &[u8],
    browser_bytes: &[u8],
    sender_bytes: &[u8],
    salt: &[u8; 16],
) -> Result<([u8; 16], [u8; 12]), PushError> {
    let shared = p256::ecdh::diffie_hellman(browser.to_nonzero_scalar(), sender.as_affine());
    derive(shared.raw_secret_bytes(), auth, browser_bytes, sender_bytes, salt)
}

/// RFC 8291 section 3.4, then RFC 8188 section 2.2 for the content key and nonce.
fn derive(
    ecdh_secret: &[u8],
    auth: &[u8],
    browser_bytes: &[u8],
    sender_bytes: &[u8],
    salt: &[u8; 16],
) -> Result<([u8; 16], [u8; 12]), PushError> {
    let expand = |prk: &Hkdf<Sha256>, info: &[u8], out: &mut [u8]| {
        prk.expand(info, out).map_err(|_| PushError::Crypto("HKDF output length"))
    };
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(browser_bytes);
    key_info.extend_from_slice(sender_bytes);
    let mut ikm = [0u8; 32];
    expand(&Hkdf::<Sha256>::new(Some(auth), ecdh_secret), &key_info, &mut ikm)?;
    let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let (mut cek, mut nonce) = ([0u8; 16], [0u8; 12]);
    expand(&prk, b"Content-Encoding: aes128gcm\0", &mut cek)?;
    expand(&prk, b"Content-Encoding: nonce\0", &mut nonce)?;
    Ok((cek, nonce))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::b64;

    /// RFC 8291, Appendix A.
    #[test]
    fn the_rfc_8291_example_encrypts_to_the_same_bytes() {
        let plaintext =
            b64::decode("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24").unwrap();
        assert_eq!(plaintext, b"When I grow up, I want to be a watermelon");
        let sender = SecretKey::from_slice(
            &b64::decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw").unwrap(),
        )
        .unwrap();
        let browser = SecretKey::from_slice(
            &b64::decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94").unwrap(),
        )
        .unwrap();
        let keys = SubscriptionKeys {
            p256dh: b64::decode("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4").unwrap(),
            auth: b64::decode("BTBZMqHH6r4Tts7J_aSIgg").unwrap(),
        };
        assert_eq!(browser.public_key().to_encoded_point(false).as_bytes(), keys.p256dh);
        let salt: [u8; 16] = b64::decode("DGv6ra1nlYgDCS1FRnbzlw").unwrap().try_into().unwrap();
        let body = encrypt_with(&plaintext, &keys, &sender, salt).unwrap();
        assert_eq!(
            b64::encode(&body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
        assert_eq!(decrypt(&body, &browser, &keys.auth).unwrap(), plaintext);
    }

    #[test]
    fn a_wrong_auth_secret_or_a_flipped_byte_does_not_decrypt() {
        let browser = crate::vapid::random_secret().unwrap();
        let keys = SubscriptionKeys {
            p256dh: browser.public_key().to_encoded_point(false).as_bytes().to_vec(),
            auth: vec![7; 16],
        };
        let mut body = encrypt(b"{\"s\":\"x\"}", &keys).unwrap();
        assert_eq!(decrypt(&body, &browser, &keys.auth).unwrap(), b"{\"s\":\"x\"}");
        assert!(decrypt(&body, &browser, &[8; 16]).is_err());
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(decrypt(&body, &browser, &keys.auth).is_err());
        assert!(matches!(
            encrypt(&vec![b'a'; MAX_PLAINTEXT + 1], &keys),
            Err(PushError::TooLarge(_))
        ));
        let bad = SubscriptionKeys { p256dh: vec![4; 65], auth: vec![0; 16] };
        assert!(matches!(encrypt(b"x", &bad), Err(PushError::BadKey)));
    }
}
