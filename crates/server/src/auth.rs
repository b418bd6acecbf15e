//! Who may talk to the host: the token (file 0600 in `$NUCLEIC_HOME`), and only through the
//! loopback names it is bound to (`Host`), from its own pages (`Origin`). DNS rebinding and
//! cross-site requests are refused before any handler runs.

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
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn presented_token(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ")
    {
        return Some(t.trim().to_owned());
    }
    let cookies = headers.get(header::COOKIE).and_then(|v| v.to_str().ok())?;
    cookies.split(';').find_map(|c| c.trim().strip_prefix("nucleic_token=").map(str::to_owned))
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, format!("{why}\n")).into_response()
}

/// The auth layer.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
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
    match presented_token(headers) {
        Some(t) if same(&t, &state.token) => next.run(request).await,
        Some(_) => refuse(StatusCode::UNAUTHORIZED, "refused: wrong token"),
        None => refuse(StatusCode::UNAUTHORIZED, "refused: no token (Authorization: Bearer …)"),
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
