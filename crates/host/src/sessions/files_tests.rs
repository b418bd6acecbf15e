#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::time::Duration;

use base64::Engine;

use super::*;

/// A worktree-like tree: files, a nested dir, a `.git` file and dir, plus a secret outside.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("wt");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join("vendor/.git")).unwrap();
    std::fs::write(root.join(".git"), "gitdir: /elsewhere\n").unwrap();
    std::fs::write(root.join("vendor/.git/config"), "x").unwrap();
    std::fs::write(root.join("README.md"), "# hi\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("src/deep/a.txt"), "a").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    (dir, root)
}

fn paths(listing: &Listing) -> Vec<&str> {
    listing.entries.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn lists_one_level_or_the_whole_tree_without_dot_git() {
    let (_dir, root) = tree();
    let top = list(&root, "", false, 100).unwrap();
    assert_eq!(paths(&top), ["README.md", "src", "vendor"]);
    assert_eq!(
        top.entries[0],
        FileEntry { path: "README.md".into(), kind: FileKind::File, size: 5 }
    );
    assert_eq!((top.entries[1].kind, top.entries[1].size), (FileKind::Dir, 0));
    assert!(!top.truncated);
    let all = list(&root, ".", true, 100).unwrap();
    assert_eq!(
        paths(&all),
        ["README.md", "src", "vendor", "src/deep", "src/main.rs", "src/deep/a.txt"]
    );
    let sub = list(&root, "./src/", false, 100).unwrap();
    assert_eq!((sub.path.as_str(), paths(&sub)), ("src", vec!["src/deep", "src/main.rs"]));
}

#[test]
fn a_listing_over_the_cap_is_truncated() {
    let (_dir, root) = tree();
    let capped = list(&root, "", true, 4).unwrap();
    assert_eq!(capped.entries.len(), 4);
    assert!(capped.truncated);
    // Exactly at the cap is not truncated.
    let exact = list(&root, "", true, 6).unwrap();
    assert_eq!((exact.entries.len(), exact.truncated), (6, false));
}

#[test]
fn paths_that_leave_the_worktree_or_enter_dot_git_are_refused() {
    let (dir, root) = tree();
    symlink(dir.path().join("secret.txt"), root.join("escape.txt")).unwrap();
    symlink("../secret.txt", root.join("climb.txt")).unwrap();
    symlink("../../secret.txt", root.join("src/climb.txt")).unwrap();
    symlink(dir.path(), root.join("up")).unwrap();
    symlink("..", root.join("parent")).unwrap();
    symlink("vendor/.git", root.join("hidden")).unwrap();
    symlink("src/main.rs", root.join("main-link.rs")).unwrap();
    symlink("../README.md", root.join("src/readme-link")).unwrap();
    symlink("deep", root.join("src/deep-link")).unwrap();
    // Absolute symlinks are refused even when they point inside (as RESOLVE_BENEATH does).
    symlink(root.join("src/main.rs"), root.join("absolute-inside.rs")).unwrap();
    // Magic links: /proc/self/root is the host's whole filesystem.
    symlink("/proc/self/root", root.join("proc-root")).unwrap();
    let climbs = "../".repeat(root.components().count() + 2);
    symlink(format!("{climbs}proc/self/root/etc"), root.join("proc-climb")).unwrap();
    symlink("loop-b", root.join("loop-a")).unwrap();
    symlink("loop-a", root.join("loop-b")).unwrap();
    for bad in [
        "../secret.txt",
        "src/../../secret.txt",
        "/etc/passwd",
        "escape.txt",
        "climb.txt",
        "src/climb.txt",
        "up/secret.txt",
        "parent/secret.txt",
        ".git",
        "vendor/.git/config",
        "hidden/config",
        "absolute-inside.rs",
        "proc-root/etc/hostname",
        "proc-climb/hostname",
        "loop-a",
        "a\0b",
    ] {
        let err = read(&root, bad, 1024).unwrap_err();
        assert!(matches!(err, HostError::Invalid(_)), "{bad}: {err}");
        assert_eq!(err.code(), nucleic_protocol::ProtocolErrorCode::InvalidRequest);
    }
    for bad in ["..", "/", "up", "parent", "vendor/.git", "hidden", "proc-root", "proc-climb"] {
        assert!(matches!(list(&root, bad, false, 10), Err(HostError::Invalid(_))), "{bad}");
    }
    // A symlink that stays inside is listed as a symlink and may be read.
    let top = list(&root, "", true, 100).unwrap();
    let link = top.entries.iter().find(|e| e.path == "main-link.rs").unwrap();
    assert_eq!((link.kind, link.size), (FileKind::Symlink, 0));
    assert!(!paths(&top).iter().any(|p| p.starts_with("up/") || p.starts_with("hidden/")));
    assert_eq!(read(&root, "main-link.rs", 1024).unwrap().content, "fn main() {}\n");
    assert_eq!(read(&root, "src/readme-link", 1024).unwrap().content, "# hi\n");
    assert_eq!(read(&root, "src/deep-link/a.txt", 1024).unwrap().content, "a");
    let through = list(&root, "src/deep-link", false, 10).unwrap();
    assert_eq!(paths(&through), ["src/deep-link/a.txt"]);
    assert!(matches!(read(&root, "missing.txt", 10), Err(HostError::NotFound(_))));
    assert!(matches!(read(&root, "src", 10), Err(HostError::Invalid(_))));
    assert!(matches!(list(&root, "README.md", false, 10), Err(HostError::Invalid(_))));
}

#[test]
fn a_fifo_or_a_missing_root_is_refused_without_hanging() {
    let (dir, root) = tree();
    assert!(
        std::process::Command::new("mkfifo").arg(root.join("pipe")).status().unwrap().success()
    );
    let err = read(&root, "pipe", 10).unwrap_err();
    assert!(err.to_string().contains("is not a file"), "{err}");
    let listed = list(&root, "", false, 100).unwrap();
    assert!(listed.entries.iter().any(|e| e.path == "pipe" && e.kind == FileKind::File));
    let gone = dir.path().join("gone");
    assert!(matches!(read(&gone, "a", 10), Err(HostError::Invalid(_))));
}

#[test]
fn text_is_utf8_and_everything_else_base64_with_a_guessed_mime() {
    let (_dir, root) = tree();
    let text = read(&root, "src/main.rs", 1024).unwrap();
    assert_eq!(
        text,
        FileContent {
            path: "src/main.rs".into(),
            size: 13,
            mime: "text/plain".into(),
            encoding: FileEncoding::Utf8,
            content: "fn main() {}\n".into(),
            truncated: false,
        }
    );
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d];
    std::fs::write(root.join("shot.PNG"), png).unwrap();
    let image = read(&root, "shot.PNG", 1024).unwrap();
    assert_eq!((image.mime.as_str(), image.encoding), ("image/png", FileEncoding::Base64));
    let decoded = base64::engine::general_purpose::STANDARD.decode(&image.content).unwrap();
    assert_eq!(decoded, png);
    // Even a JPEG whose bytes happen to be ASCII is sent as base64.
    std::fs::write(root.join("a.jpg"), "abc").unwrap();
    let jpg = read(&root, "a.jpg", 1024).unwrap();
    assert_eq!(
        (jpg.mime.as_str(), jpg.encoding, jpg.content.as_str()),
        ("image/jpeg", FileEncoding::Base64, "YWJj")
    );
    std::fs::write(root.join("logo.svg"), "<svg/>").unwrap();
    let svg = read(&root, "logo.svg", 1024).unwrap();
    assert_eq!((svg.mime.as_str(), svg.encoding), ("image/svg+xml", FileEncoding::Utf8));
    std::fs::write(root.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    let blob = read(&root, "blob.bin", 1024).unwrap();
    assert_eq!(
        (blob.mime.as_str(), blob.encoding),
        ("application/octet-stream", FileEncoding::Base64)
    );
    // NUL bytes make valid UTF-8 binary.
    std::fs::write(root.join("nul.dat"), b"a\0b").unwrap();
    assert_eq!(read(&root, "nul.dat", 1024).unwrap().encoding, FileEncoding::Base64);
}

#[test]
fn large_files_are_cut_at_the_cap_on_a_character_boundary() {
    let (_dir, root) = tree();
    // "é" is two bytes: a cap of 5 bytes cuts the third "é" in half.
    std::fs::write(root.join("accents.txt"), "ééé").unwrap();
    let cut = read(&root, "accents.txt", 5).unwrap();
    assert_eq!((cut.content.as_str(), cut.size, cut.truncated), ("éé", 6, true));
    assert_eq!(cut.encoding, FileEncoding::Utf8);
    let whole = read(&root, "accents.txt", 6).unwrap();
    assert_eq!((whole.content.as_str(), whole.truncated), ("ééé", false));
    let big = "x".repeat(10_000);
    std::fs::write(root.join("big.log"), &big).unwrap();
    let capped = read(&root, "big.log", 1000).unwrap();
    assert_eq!((capped.content.len(), capped.size, capped.truncated), (1000, 10_000, true));
    // A binary file is cut too.
    std::fs::write(root.join("big.png"), vec![7u8; 3000]).unwrap();
    let image = read(&root, "big.png", 300).unwrap();
    let decoded = base64::engine::general_purpose::STANDARD.decode(&image.content).unwrap();
    assert_eq!((decoded.len(), image.size, image.truncated), (300, 3000, true));
}

/// Swaps `wt/x` between a directory holding `secret.txt` ("inside") and a symlink to a
/// directory outside holding `secret.txt` ("OUTSIDE"), while reads and listings of `x` loop.
/// Returns (reads and listings that succeeded, those that saw outside the worktree).
fn swap_race(target_outside: Option<&Path>, name: &str, for_how_long: Duration) -> (u64, u64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (dir, root) = tree();
    let outside = match target_outside {
        Some(p) => p.to_path_buf(),
        None => {
            let o = dir.path().join("outside");
            std::fs::create_dir_all(&o).unwrap();
            std::fs::write(o.join(name), "OUTSIDE").unwrap();
            std::fs::write(o.join("only-outside.txt"), "").unwrap();
            o
        }
    };
    let outside_text = std::fs::read_to_string(outside.join(name)).unwrap();
    let real = root.join("real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join(name), "inside").unwrap();
    let link = root.join("link");
    symlink(&outside, &link).unwrap();
    let x = root.join("x");
    std::fs::rename(&real, &x).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, root) = (stop.clone(), root.clone());
        std::thread::spawn(move || {
            // x is the directory and `link` the symlink; swap them back and forth (rename is
            // atomic, so `x` always exists).
            let (x, link, tmp) = (root.join("x"), root.join("link"), root.join("tmp"));
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&x, &tmp).unwrap();
                std::fs::rename(&link, &x).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
            }
        })
    };
    let path = format!("x/{name}");
    let (mut ok, mut escaped) = (0, 0);
    let start = std::time::Instant::now();
    while start.elapsed() < for_how_long {
        if let Ok(file) = read(&root, &path, 1 << 16) {
            ok += 1;
            if file.content == outside_text {
                escaped += 1;
            }
        }
        if let Ok(listing) = list(&root, "x", false, 100) {
            ok += 1;
            if listing.entries.iter().any(|e| e.path != path) {
                escaped += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    (ok, escaped)
}

#[test]
fn swapping_a_directory_for_a_symlink_never_reads_outside_the_worktree() {
    let (ok, escaped) = swap_race(None, "secret.txt", Duration::from_secs(3));
    let (etc_ok, etc_escaped) =
        swap_race(Some(Path::new("/etc")), "hostname", Duration::from_secs(2));
    assert_eq!(
        (escaped, etc_escaped),
        (0, 0),
        "reads and listings outside the worktree: {escaped} of {ok} (a directory outside), \
         {etc_escaped} of {etc_ok} (/etc)"
    );
    println!(
        "views during the swap race: {ok} (a directory outside), {etc_ok} (/etc), none outside"
    );
    assert!(ok > 100 && etc_ok > 100, "the race ran ({ok}, {etc_ok} views inside)");
}
