//! Who may talk to the host: the token (file 0600 in `$NUCLEIC_HOME`) or a signed-in browser's
//! session cookie, and only through the loopback names it is bound to (`Host`), from its own
//! pages (`Origin`). DNS rebinding and cross-site requests are refused before any handler runs.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;

/// The token file's name inside `$NUCLEIC_HOME`.
pub const TOKEN_FILE: &str = "token";

/// Reads the token, creating a random one (0600) on first use.
pub fn load_or_create_token(home: &Path) -> std::io::Result<String> {
    let path = home.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(t.trim().to_owned());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(home)?;
    let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(token.as_bytes())?;
    Ok(token)
}

/// Constant-time comparison.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name`, if the request carries it.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(name)?.strip_prefix('='))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    v.strip_prefix("Bearer ").map(str::trim)
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, format!("{why}\n")).into_response()
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unauthenticated {
    WrongToken,
    NoCredentials,
}

/// Who may act: the bearer token (the CLI), the `nucleic_token` cookie, or a signed-in
/// browser's `nucleic_session` cookie. A wrong bearer token is refused outright.
pub(crate) async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(), Unauthenticated> {
    if let Some(token) = bearer(headers) {
        return if same(token, &state.token) { Ok(()) } else { Err(Unauthenticated::WrongToken) };
    }
    let token = cookie(headers, "nucleic_token");
    if token.is_some_and(|t| same(t, &state.token)) {
        return Ok(());
    }
    let session = cookie(headers, crate::signin::SESSION_COOKIE);
    if let Some(secret) = session
        && state.signin.session_valid(&state.host, secret).await
    {
        return Ok(());
    }
    if token.is_some() || session.is_some() {
        Err(Unauthenticated::WrongToken)
    } else {
        Err(Unauthenticated::NoCredentials)
    }
}

/// Every request: only through the loopback names the server is bound to (`Host`, against DNS
/// rebinding), and only from its own pages (`Origin`, when a browser sends one).
pub async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| state.allowed_hosts.iter().any(|a| a == h));
    if !host_ok {
        return refuse(StatusCode::FORBIDDEN, "refused: unexpected Host header");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| state.allowed_hosts.iter().any(|a| a == o));
        if !ok {
            return refuse(StatusCode::FORBIDDEN, "refused: cross-origin request");
        }
    }
    next.run(request).await
}

/// The API and the WebSocket: authenticated requests only.
pub async fn require_auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match authenticate(&state, request.headers()).await {
        Ok(()) => next.run(request).await,
        Err(Unauthenticated::WrongToken) => {
            refuse(StatusCode::UNAUTHORIZED, "refused: wrong token or expired sign-in")
        }
        Err(Unauthenticated::NoCredentials) => refuse(
            StatusCode::UNAUTHORIZED,
            "refused: no token (Authorization: Bearer …) and not signed in (run `nucleic open`)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create_token(dir.path()).unwrap();
        let b = load_or_create_token(dir.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        let mode =
            std::fs::metadata(dir.path().join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
