//! Stages the web app for embedding: copies `web/dist` (built by `npm --prefix web run build`;
//! `$NUCLEIC_WEB_DIST` overrides the path) into `$OUT_DIR/web`, with a gzipped twin of each
//! compressible file, or writes a placeholder page saying how to build the app when it is missing.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Files worth compressing (text); images and fonts are compressed already.
const COMPRESSIBLE: &[&str] = &["html", "js", "mjs", "css", "svg", "json", "map", "txt", "wasm"];
/// Below this, gzip saves too little to matter.
const MIN_GZIP_BYTES: u64 = 1024;

const PLACEHOLDER: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Nucleic</title>
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"></head>
<body style=\"font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem\">
<h1>The web app was not built</h1>
<p>This <code>nucleic</code> binary was built without the cockpit. Build it, then rebuild
<code>nucleic</code>:</p>
<pre>npm --prefix web ci &amp;&amp; npm --prefix web run build
cargo build</pre>
<p>The host itself works: the sync protocol is served at <code>/ws</code> and
<code>/api/message</code>.</p>
</body></html>
";

fn main() {
    if let Err(e) = stage() {
        // A failed build script stops the build with this message.
        panic!("staging the web app failed: {e}");
    }
}

fn stage() -> std::io::Result<()> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(other)?);
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(other)?).join("web");
    // NUCLEIC_WEB_DIST points at another build of the app (or at nothing, to test the placeholder).
    println!("cargo:rerun-if-env-changed=NUCLEIC_WEB_DIST");
    let dist = match std::env::var_os("NUCLEIC_WEB_DIST") {
        Some(dir) => PathBuf::from(dir),
        None => manifest.join("../../web/dist"),
    };
    println!("cargo:rerun-if-changed={}", dist.display());
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    std::fs::create_dir_all(&out)?;
    let built = dist.join("index.html").is_file();
    println!("cargo:rustc-env=NUCLEIC_WEB_BUILT={}", if built { "1" } else { "0" });
    if built {
        copy_tree(&dist, &out)
    } else {
        println!(
            "cargo:warning=web/dist is missing: the web app is not embedded (run `npm --prefix web ci && npm --prefix web run build`, then build again)"
        );
        std::fs::write(out.join("index.html"), PLACEHOLDER)
    }
}

fn other(e: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(e)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
            let ext = src.extension().and_then(|e| e.to_str()).unwrap_or_default();
            if COMPRESSIBLE.contains(&ext) && entry.metadata()?.len() >= MIN_GZIP_BYTES {
                gzip(
                    &src,
                    &dst.with_file_name(format!("{}.gz", entry.file_name().to_string_lossy())),
                )?;
            }
        }
    }
    Ok(())
}

fn gzip(src: &Path, dst: &Path) -> std::io::Result<()> {
    let data = std::fs::read(src)?;
    let mut encoder =
        flate2::write::GzEncoder::new(std::fs::File::create(dst)?, flate2::Compression::best());
    encoder.write_all(&data)?;
    encoder.finish()?;
    Ok(())
}
