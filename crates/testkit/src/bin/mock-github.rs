//! A standalone mock of the GitHub API `gh pr create` calls, for the cockpit's browser suite.
//! Makes its self-signed certificate in `--dir DIR`, binds `127.0.0.1:0` over TLS and prints one
//! JSON line `{"host", "repo", "caFile", "token"}`; then one JSON line per pull request it
//! creates (`{"created": {number, url, title, head, base, draft}}`), until killed.
//!
//! Point `gh` at it with `GH_HOST=<host>`, `GH_ENTERPRISE_TOKEN=<token>`,
//! `SSL_CERT_FILE=<caFile>` and `--repo <repo>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nucleic_testkit::mock_github::{GitHubScript, MockGitHub};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = match args.as_slice() {
        [flag, dir] if flag == "--dir" => PathBuf::from(dir),
        _ => {
            eprintln!(
                "usage: mock-github --dir DIR   (prints {{\"host\": …}}, serves until killed)"
            );
            return ExitCode::from(2);
        }
    };
    let mock = match MockGitHub::start(&dir, GitHubScript::default()).await {
        Ok(mock) => mock,
        Err(e) => {
            eprintln!("mock-github: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{}",
        serde_json::json!({
            "host": mock.host(),
            "repo": mock.repo(),
            "caFile": mock.ca_file(),
            "token": mock.token(),
        })
    );
    let report = async {
        let mut shown = 0;
        loop {
            for pr in mock.created().iter().skip(shown) {
                let created = serde_json::json!({ "created": {
                    "number": pr.number, "url": pr.url, "title": pr.title,
                    "head": pr.head, "base": pr.base, "draft": pr.draft,
                }});
                println!("{created}");
                shown += 1;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::select! {
        stopped = nucleic_testkit::standalone::until_stopped() => {
            if let Err(e) = stopped {
                eprintln!("mock-github: cannot watch for SIGINT/SIGTERM: {e}");
                return ExitCode::FAILURE;
            }
        }
        () = report => {}
    }
    ExitCode::SUCCESS
}
