//! A terminal on another machine as a paired device: `nucleic remote pair LINK` spends the
//! host's one-time link over its Noise channel (here the daemon's LAN listener, the same channel
//! the relay carries; `relay/test/host-cli.test.ts` goes through the relay), and `--remote HOST`
//! then runs ordinary commands there — a session started, approved and merged. The attacks, by
//! effect: a spent link, a link whose host key was swapped, a device key that is not the paired
//! one, pairing minted from afar, and a revoked device — none gets in, and the host records no
//! device for them.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::daemon::{cli_env, git};

/// `nucleic serve` with a relay nobody answers and a LAN listener on loopback; killed on drop.
pub(crate) struct Served {
    child: std::process::Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn serve(home: &Path) -> Served {
    let dead_relay = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let relay = format!("ws://{}", dead_relay.local_addr().unwrap());
    drop(dead_relay);
    let child = std::process::Command::new(crate::support::nucleic())
        .args(["serve", "--bind", "127.0.0.1:0", "--relay", &relay, "--lan", "127.0.0.1:0"])
        .env("NUCLEIC_HOME", home)
        .env("NUCLEIC_AGENT_KEEPERS", "off")
        .env("NUCLEIC_AGENT_ISOLATION", "off")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !home.join("daemon.json").exists() || !home.join("remote-identity.json").exists() {
        assert!(Instant::now() < deadline, "the daemon did not start within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Served { child }
}

async fn on(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(home, args, &[]).await
}

/// A fresh pairing link of the daemon of `home`, for a device named `name`.
pub(crate) async fn link(home: &Path, name: &str) -> (String, String) {
    let (code, out, err) = on(home, &["pair", "--json", "--name", name]).await;
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    (v["link"].as_str().unwrap().to_owned(), v["hostID"].as_str().unwrap().to_owned())
}

async fn devices(home: &Path) -> String {
    let (code, out, err) = on(home, &["device", "list"]).await;
    assert_eq!(code, 0, "{err}");
    out
}

/// Polls `nucleic … session show` until it has a pending approval; the request id from the
/// host's transcript.
async fn pending_request(device: &Path, remote: &str, host: &Path, session: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, out, err) = on(device, &["--remote", remote, "session", "show", session]).await;
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v["pendingApprovals"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no approval within 20 s: {out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let transcript = host.join("sessions").join(session).join("transcript.jsonl");
    std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["kind"]["type"] == "approvalRequested")
        .map(|e| e["kind"]["requestID"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paired_terminal_drives_a_session_on_the_host_and_loses_access_on_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    let laptop = dir.path().join("laptop");
    let _served = serve(&host).await;
    let root = crate::daemon::empty_repo(dir.path());
    let (code, project, err) = on(&host, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();

    let (link, host_id) = link(&host, "MARKER-laptop").await;
    let (code, out, err) = on(&laptop, &["remote", "pair", &link]).await;
    assert_eq!(code, 0, "{err}");
    let short = &host_id[..12];
    assert!(out.contains(&format!("--remote {short}")), "{out}");
    assert!(devices(&host).await.contains("MARKER-laptop"));
    // The device's key is kept private to its owner.
    let stored = laptop.join("remotes").join(format!("{host_id}.json"));
    let mode = std::fs::metadata(&stored).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    let (_, listed, _) = on(&laptop, &["remote", "list"]).await;
    assert!(listed.contains(short) && listed.contains("MARKER-laptop"), "{listed}");

    // Ordinary commands through the channel: a session started, its approval answered, merged.
    let (code, out, err) = on(
        &laptop,
        &[
            "--remote",
            short,
            "session",
            "new",
            "--project",
            &project,
            "--agent",
            "sim",
            "write remote.txt containing from afar",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let request = pending_request(&laptop, short, &host, &session).await;
    let (code, _, err) =
        on(&laptop, &["--remote", short, "session", "approve", &session, &request]).await;
    assert_eq!(code, 0, "{err}");
    // The host records the device as who answered, not its own token.
    let (code, _, err) = on(&host, &["session", "deny", &session, &request, "late"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("alreadyResolved") && err.contains("MARKER-laptop"), "{err}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, diff, _) = on(&laptop, &["--remote", short, "session", "diff", &session]).await;
        if diff.contains("remote.txt") {
            break;
        }
        assert!(Instant::now() < deadline, "the write never showed in the diff: {diff}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let merge = ["--remote", short, "session", "merge", &session, "-m", "from afar"];
    let (code, _, err) = on(&laptop, &[&merge[..], &["--update-checkout"]].concat()).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(git(&root, &["show", "main:remote.txt"]), "from afar\n");

    // A device cannot mint pairing links from afar (a stolen laptop must not pair more).
    let (code, _, err) = on(&laptop, &["--remote", short, "pair", "--json"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("host's own machine"), "{err}");

    // Revoked on the host: the very next command is refused, and nothing it asked for happens.
    let out = devices(&host).await;
    let device_id = out
        .lines()
        .find(|l| l.contains("MARKER-laptop"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let (code, _, err) = on(&host, &["device", "revoke", &device_id]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) =
        on(&laptop, &["--remote", short, "project", "add", dir.path().to_str().unwrap()]).await;
    assert_eq!(code, 2);
    assert!(err.contains("refused this device"), "{err}");
    let (_, projects, _) = on(&host, &["project", "list"]).await;
    assert_eq!(projects.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{projects}");
}

#[tokio::test(flavor = "multi_thread")]
async fn spent_links_swapped_host_keys_and_unpaired_device_keys_get_no_device_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    let _served = serve(&host).await;
    let (link, host_id) = link(&host, "MARKER-first").await;

    // A link whose host key was swapped (someone posing as the host): the device refuses to
    // finish the handshake, so the secret is not even spent.
    let k = link.split("&k=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let swapped = link.replace(&format!("&k={k}"), &format!("&k={}", "A".repeat(43)));
    let mallory = dir.path().join("mallory");
    let (code, _, err) = on(&mallory, &["remote", "pair", &swapped]).await;
    assert_eq!(code, 2);
    assert!(err.contains("not the one in the pairing link"), "{err}");
    assert!(!mallory.join("remotes").join(format!("{host_id}.json")).exists());

    // The link itself pairs once…
    let first = dir.path().join("first");
    let (code, _, err) = on(&first, &["remote", "pair", &link]).await;
    assert_eq!(code, 0, "{err}");
    // …and a second device holding the same link is refused and recorded nowhere.
    let second = dir.path().join("second");
    let (code, _, err) = on(&second, &["remote", "pair", &link]).await;
    assert_eq!(code, 2);
    assert!(err.contains("refused this device"), "{err}");
    let kept = std::fs::read_dir(second.join("remotes")).map_or(0, |d| d.count());
    assert_eq!(kept, 0, "nothing kept for a refused pairing");
    let out = devices(&host).await;
    assert_eq!(out.lines().filter(|l| l.contains("MARKER-first")).count(), 1, "{out}");
    assert_eq!(out.lines().count(), 1, "only the first device: {out}");

    // A copy of the paired record with another device key (a forged file): refused.
    let stored = first.join("remotes").join(format!("{host_id}.json"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
    let keys = fresh_device_key();
    v["devicePrivate"] = keys.0.into();
    v["devicePublic"] = keys.1.into();
    let forged = dir.path().join("forged");
    std::fs::create_dir_all(forged.join("remotes")).unwrap();
    std::fs::write(forged.join("remotes").join(format!("{host_id}.json")), v.to_string()).unwrap();
    let (code, _, err) = on(&forged, &["--remote", &host_id[..12], "session", "list"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("refused this device"), "{err}");
    // The genuine record still works.
    let (code, _, err) = on(&first, &["--remote", &host_id[..12], "session", "list"]).await;
    assert_eq!(code, 0, "{err}");
}

/// A fresh X25519 key pair (base64url private, public), as a device would make one.
fn fresh_device_key() -> (String, String) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let key = nucleic_channel::StaticKeypair::generate().unwrap();
    (b64.encode(key.private_for_storage()), b64.encode(key.public().as_bytes()))
}
