//! Sign-in links: one-time tokens (`/login?token=…`, 10 minutes, in memory) that a browser
//! trades for a device registration (`devices.rs`), and `/api/login-link` to mint one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::AppState;

/// How long a login link works.
pub const LOGIN_LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// Unused login links kept at once (the oldest go first).
const MAX_LOGIN_LINKS: usize = 256;
/// Outstanding login links.
#[derive(Debug)]
pub struct SignIn {
    /// How long a new login link works.
    ttl: Duration,
    /// SHA-256 (hex) of each unused login token → when it stops working.
    links: Mutex<HashMap<String, Instant>>,
}

/// 256 random bits, hex.
fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

impl Default for SignIn {
    fn default() -> SignIn {
        SignIn::with_ttl(LOGIN_LINK_TTL)
    }
}

impl SignIn {
    /// Login links that work for `ttl`.
    pub fn with_ttl(ttl: Duration) -> SignIn {
        SignIn { ttl, links: Mutex::default() }
    }

    /// A fresh one-time login token (valid for the link lifetime, [`LOGIN_LINK_TTL`] by default).
    pub fn mint(&self) -> Result<String, getrandom::Error> {
        let token = random_token()?;
        let now = Instant::now();
        let mut links = self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        links.retain(|_, expires| *expires > now);
        while links.len() >= MAX_LOGIN_LINKS {
            let oldest = links.iter().min_by_key(|(_, e)| **e).map(|(k, _)| k.clone());
            match oldest {
                Some(k) => links.remove(&k),
                None => break,
            };
        }
        links.insert(hash(&token), now + self.ttl);
        Ok(token)
    }

    /// Uses up a login token: true once, when it exists and has not expired.
    pub(crate) fn redeem(&self, token: &str) -> bool {
        let mut links = self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        links.remove(&hash(token)).is_some_and(|expires| expires > Instant::now())
    }
}

impl AppState {
    /// The same server with login links that work for `ttl` instead of [`LOGIN_LINK_TTL`]
    /// (tests of expiry).
    #[must_use]
    pub fn with_login_link_ttl(mut self, ttl: Duration) -> AppState {
        self.signin = std::sync::Arc::new(SignIn::with_ttl(ttl));
        self
    }

    /// A one-time sign-in URL for a browser (`http://127.0.0.1:PORT/login?token=…`).
    pub fn login_link(&self) -> Result<String, getrandom::Error> {
        Ok(format!("{}/login?token={}", self.base_url(), self.signin.mint()?))
    }
}

/// `POST /api/login-link` (authenticated): `{url}`, a fresh one-time sign-in URL.
pub async fn login_link(State(state): State<AppState>) -> Response {
    match state.login_link() {
        Ok(url) => (StatusCode::OK, Json(json!({ "url": url }))).into_response(),
        Err(e) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("no randomness: {e}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_256_bits_and_used_once() {
        let signin = SignIn::default();
        let a = signin.mint().unwrap();
        let b = signin.mint().unwrap();
        assert_eq!((a.len(), b.len()), (64, 64));
        assert_ne!(a, b);
        assert!(signin.redeem(&a));
        assert!(!signin.redeem(&a), "a second use fails");
        assert!(!signin.redeem("0".repeat(64).as_str()));
        assert!(signin.redeem(&b));
    }

    #[test]
    fn expired_tokens_fail_and_the_oldest_go_first() {
        let signin = SignIn::default();
        let token = signin.mint().unwrap();
        signin.links.lock().unwrap().insert(hash(&token), Instant::now());
        assert!(!signin.redeem(&token));
        let first = signin.mint().unwrap();
        for _ in 0..MAX_LOGIN_LINKS {
            signin.mint().unwrap();
        }
        assert_eq!(signin.links.lock().unwrap().len(), MAX_LOGIN_LINKS);
        assert!(!signin.redeem(&first), "pushed out by newer links");
    }
}
