//! The web app, embedded in the binary (`build.rs` stages `web/dist`, or a placeholder page):
//! files by path with their content type, `index.html` for app routes (single-page app),
//! gzip when the browser takes it, long caching for hashed `/assets/`; the service worker
//! (`/sw.js`) is always revalidated (a new build takes over on the next open) and scoped to `/`.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$OUT_DIR/web"]
struct Assets;

const INDEX: &str = "index.html";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const NO_CACHE: &str = "no-cache";
/// The service worker script: at the root so its scope is the whole app.
const SERVICE_WORKER: &str = "sw.js";

/// Whether the embedded app is the real one (not the "not built" placeholder page).
pub fn app_is_built() -> bool {
    env!("NUCLEIC_WEB_BUILT") == "1"
}

/// The fallback route: any path no API route took.
pub async fn serve(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n").into_response();
    }
    let path = uri.path().trim_start_matches('/');
    if ["api", "ws"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/"))) {
        return (StatusCode::NOT_FOUND, "no such API route\n").into_response();
    }
    let name = if path.is_empty() { INDEX } else { path };
    match file(name, &headers) {
        Some(response) => response,
        // App routes (`/sessions/…`) have no dot; a missing file does.
        None if !name.contains('.') => file(INDEX, &headers).unwrap_or_else(not_found),
        None => not_found(),
    }
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

/// Whether the request's `Accept-Encoding` takes gzip (and does not refuse it with `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=").is_some_and(|q| q.parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

fn file(name: &str, headers: &HeaderMap) -> Option<Response> {
    let plain = Assets::get(name)?;
    let etag = format!("\"{}\"", hex(&plain.metadata.sha256_hash()));
    let mime = if name.ends_with(".webmanifest") {
        "application/manifest+json".to_owned()
    } else {
        plain.metadata.mimetype().to_owned()
    };
    let cache = if name.starts_with("assets/") { IMMUTABLE } else { NO_CACHE };
    let gzipped = if accepts_gzip(headers) { Assets::get(&format!("{name}.gz")) } else { None };
    let mut builder = Response::builder()
        .header(header::CONTENT_TYPE, mime)
        .header(header::CACHE_CONTROL, cache)
        .header(header::ETAG, &etag)
        .header(header::VARY, "Accept-Encoding")
        .header(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if name == SERVICE_WORKER {
        builder = builder.header("service-worker-allowed", "/");
    }
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if unchanged {
        return builder.status(StatusCode::NOT_MODIFIED).body(Body::empty()).ok();
    }
    let data = match gzipped {
        Some(gz) => {
            builder = builder.header(header::CONTENT_ENCODING, "gzip");
            gz.data
        }
        None => plain.data,
    };
    builder.body(Body::from(data.into_owned())).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
