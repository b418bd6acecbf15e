//! A standalone mock Anthropic Messages API for driving the real `claude` CLI from outside Rust
//! tests (the cockpit's browser suite). Binds `127.0.0.1:0` (or `--port N`), prints one JSON
//! line `{"url": "http://127.0.0.1:PORT"}`, and serves until killed: each prompt gets a `Write`
//! of the file it names (`hello.txt` when none; the text after "containing" as content) in the
//! agent's working directory, then a short closing message; a prompt saying ``run `COMMAND` ``
//! gets a `Bash` call of that command instead.
//!
//! Point the agent at it with `ANTHROPIC_BASE_URL=<url>` and a dummy `ANTHROPIC_API_KEY`
//! (see `nucleic_testkit::agents::claude_offline_env` for the whole offline environment).

use std::process::ExitCode;

use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};

/// The closing message after the file is written.
const DONE: &str = "Done: I wrote the file.";

fn usage() -> ExitCode {
    eprintln!("usage: mock-anthropic [--port N]   (prints {{\"url\": …}}, serves until killed)");
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port = match args.as_slice() {
        [] => 0,
        [flag, n] if flag == "--port" => match n.parse::<u16>() {
            Ok(p) => p,
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let mock = match MockAnthropic::start_on(port, Script::write_named_file_then(DONE)).await {
        Ok(mock) => mock,
        Err(e) => {
            eprintln!("mock-anthropic: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", serde_json::json!({ "url": mock.base_url() }));
    if let Err(e) = nucleic_testkit::standalone::until_stopped().await {
        eprintln!("mock-anthropic: cannot watch for SIGINT/SIGTERM: {e}");
        return ExitCode::FAILURE;
    }
    drop(mock);
    ExitCode::SUCCESS
}
