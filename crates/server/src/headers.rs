//! Browser hardening on every response (the app, the API, errors): a strict Content Security
//! Policy, no framing, no referrer, no MIME sniffing.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The policy: scripts, styles, fonts and connections only from the page's own origin (`'self'`
/// also matches the same-origin `ws:` WebSocket under CSP 3); images also as `data:` URLs (the
/// file viewer and gallery show worktree images that way); nothing may frame the app, no
/// plugins, no `<base>`, forms post only here.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Adds the hardening headers to the response of every route.
pub async fn harden(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers
        .insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
