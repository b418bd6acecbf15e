//! The embedded web app: no token needed but the Host check applies; SPA fallback; content
//! types, caching and gzip. Works with the real app (web/dist built) or the placeholder page.

use crate::support::*;

/// The first `/assets/…` path the index page references, when the real app is embedded.
fn first_asset(index: &str) -> Option<String> {
    let start = index.find("/assets/")?;
    let end = index[start..].find('"')? + start;
    Some(index[start..end].to_owned())
}

#[tokio::test]
async fn the_app_is_served_without_a_token_for_every_app_route() {
    let s = start().await;
    let index = s.get("/", "").await;
    assert_eq!(index.status, 200);
    assert_eq!(index.header("content-type"), Some("text/html"));
    assert_eq!(index.header("cache-control"), Some("no-cache"));
    let page = index.text();
    if nucleic_server::app_is_built() {
        assert!(page.contains("/assets/"), "{page}");
    } else {
        assert!(page.contains("The web app was not built"), "{page}");
        assert!(page.contains("npm --prefix web ci &amp;&amp; npm --prefix web run build"));
    }
    // App routes (no dot) get the same page; missing files and unknown API routes do not.
    for route in ["/sessions/abc", "/projects/p1/sessions/s2", "/dashboard"] {
        let reply = s.get(route, "").await;
        assert_eq!((reply.status, reply.text()), (200, page.clone()), "{route}");
    }
    assert_eq!(s.get("/missing.js", "").await.status, 404);
    assert_eq!(s.get("/assets/missing-1234.js", "").await.status, 404);
    assert_eq!(s.get("/api/nothing", "").await.status, 404);
    assert_eq!(s.get("/ws/x", "").await.status, 404);
    // A revalidation with the ETag costs nothing.
    let etag = index.header("etag").unwrap();
    let again = s.get("/", &format!("If-None-Match: {etag}\r\n")).await;
    assert_eq!((again.status, again.body.len()), (304, 0));
    // DNS rebinding: the page is refused under a name that is not ours.
    let foreign = request(
        s.addr,
        "GET / HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n".to_owned(),
    )
    .await;
    assert_eq!(foreign.status, 403);
    let post = request(
        s.addr,
        format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            s.host_header()
        ),
    )
    .await;
    assert_eq!(post.status, 405);
}

#[tokio::test]
async fn hashed_assets_are_immutable_typed_and_gzipped_when_accepted() {
    let s = start().await;
    let page = s.get("/", "").await.text();
    let Some(asset) = first_asset(&page) else {
        assert!(!nucleic_server::app_is_built(), "the built app references its assets");
        return;
    };
    let plain = s.get(&asset, "").await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("cache-control"), Some("public, max-age=31536000, immutable"));
    let expected_type = if asset.ends_with(".js") { "text/javascript" } else { "text/css" };
    assert_eq!(plain.header("content-type"), Some(expected_type), "{asset}");
    assert_eq!(plain.header("content-encoding"), None);
    let on_disk = std::fs::read(format!("{}/../../web/dist{asset}", env!("CARGO_MANIFEST_DIR")));
    if let Ok(on_disk) = on_disk {
        assert_eq!(plain.body, on_disk, "served as built");
    }
    let gz = s.get(&asset, "Accept-Encoding: br, gzip;q=0.8\r\n").await;
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("vary"), Some("Accept-Encoding"));
    if plain.body.len() >= 1024 {
        assert_eq!(gz.header("content-encoding"), Some("gzip"));
        assert!(gz.body.len() < plain.body.len());
        assert_eq!(&gz.body[..2], &[0x1f, 0x8b], "gzip magic");
    }
    let refused = s.get(&asset, "Accept-Encoding: gzip;q=0\r\n").await;
    assert_eq!((refused.header("content-encoding"), refused.body.len()), (None, plain.body.len()));
}
