//! Browser sign-in: one-time login links (`/login?token=…`, 10 minutes, in memory) become an
//! HttpOnly session cookie whose hash is kept in the catalog, so a browser stays signed in
//! across host restarts. Also `/api/session` (am I signed in?) and `/api/login-link` (mint one).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use nucleic_host::Host;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::AppState;
use crate::auth::authenticate;

/// The browser session cookie's name.
pub const SESSION_COOKIE: &str = "nucleic_session";
/// How long a login link works.
pub const LOGIN_LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a browser stays signed in.
pub const SESSION_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Unused login links kept at once (the oldest go first).
const MAX_LOGIN_LINKS: usize = 256;
/// A session checked against the catalog this recently is not checked again.
const SESSION_CACHE_TTL: Duration = Duration::from_secs(60);

const INVALID_LINK: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Nucleic: sign-in failed</title>
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"></head>
<body style=\"font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem\">
<h1>Not signed in</h1>
<p>This sign-in link is invalid, expired or already used. Run <code>nucleic open</code> for a new one.</p>
</body></html>
";

/// Outstanding login links and recently verified sessions.
#[derive(Debug)]
pub struct SignIn {
    /// How long a new login link works.
    ttl: Duration,
    /// SHA-256 (hex) of each unused login token → when it stops working.
    links: Mutex<HashMap<String, Instant>>,
    /// SHA-256 (hex) of session secrets → when the catalog last confirmed them.
    verified: Mutex<HashMap<String, Instant>>,
}

/// 256 random bits, hex.
fn secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

impl Default for SignIn {
    fn default() -> SignIn {
        SignIn::with_ttl(LOGIN_LINK_TTL)
    }
}

impl SignIn {
    /// Login links that work for `ttl`.
    pub fn with_ttl(ttl: Duration) -> SignIn {
        SignIn { ttl, links: Mutex::default(), verified: Mutex::default() }
    }

    /// A fresh one-time login token (valid for the link lifetime, [`LOGIN_LINK_TTL`] by default).
    pub fn mint(&self) -> Result<String, getrandom::Error> {
        let token = secret()?;
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
    fn redeem(&self, token: &str) -> bool {
        let mut links = self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        links.remove(&hash(token)).is_some_and(|expires| expires > Instant::now())
    }

    /// Whether `secret` is a signed-in browser's session (checked in the catalog at most once a
    /// minute per session).
    pub async fn session_valid(&self, host: &Host, secret: &str) -> bool {
        let key = hash(secret);
        let fresh = {
            let verified = self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            verified.get(&key).is_some_and(|at| at.elapsed() < SESSION_CACHE_TTL)
        };
        if fresh {
            return true;
        }
        let ok = host.browser_signed_in(&key, SESSION_MAX_AGE).await.unwrap_or(false);
        let mut verified = self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if ok {
            verified.retain(|_, at| at.elapsed() < SESSION_CACHE_TTL);
            verified.insert(key, Instant::now());
        } else {
            verified.remove(&key);
        }
        ok
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

/// `GET /login?token=…`: a valid unused token becomes a session cookie and a redirect to `/`.
pub async fn login(State(state): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    let token = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .unwrap_or_default();
    if token.is_empty() || !state.signin.redeem(token) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CACHE_CONTROL, "no-store"), (header::REFERRER_POLICY, "no-referrer")],
            Html(INVALID_LINK),
        )
            .into_response();
    }
    let Ok(session) = secret() else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session\n")
            .into_response();
    };
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.chars().take(120).collect::<String>())
        .unwrap_or_default();
    let name = if agent.is_empty() { "browser".to_owned() } else { format!("browser ({agent})") };
    if let Err(e) = state.host.add_browser(&hash(&session), &name).await {
        return (StatusCode::INTERNAL_SERVER_ERROR, format!("cannot record the sign-in: {e}\n"))
            .into_response();
    }
    let cookie = format!(
        "{SESSION_COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_MAX_AGE.as_secs()
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/".to_owned()),
            (header::CACHE_CONTROL, "no-store".to_owned()),
            (header::REFERRER_POLICY, "no-referrer".to_owned()),
        ],
    )
        .into_response()
}

/// `GET /api/session`: 200 `{signedIn: true}` when the request is authenticated, else 401.
pub async fn session(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let signed_in = authenticate(&state, &headers).await.is_ok();
    let status = if signed_in { StatusCode::OK } else { StatusCode::UNAUTHORIZED };
    (status, [(header::CACHE_CONTROL, "no-store")], Json(json!({ "signedIn": signed_in })))
        .into_response()
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
