//! `nucleic demo`: a host on a throwaway repository with three simulated sessions (one streaming,
//! one waiting for approval, one finished with a diff), served on loopback with a sign-in link.
//! No API key and no agent CLI needed; everything it created is removed when it stops.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use nucleic_host::Host;
use nucleic_protocol::{Backend, NewSession, ProjectSummary, SessionStatus, SessionSummary};
use nucleic_server::AppState;
use serde_json::json;

use crate::home_lock::{self, HomeLock};
use crate::serve::{Served, force_stop_after, host_config, stop_daemon, write_daemon_file};
use crate::signals::StopSignals;

/// Options of `nucleic demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Keep the host's data, and the demo repository (`DIR/demo-repo/wordcount`), here instead
    /// of temporary directories: kept afterwards, and found again by the next demo on DIR.
    #[arg(long)]
    home: Option<PathBuf>,
    /// Only create the project, no sessions (for creating sessions from the web app).
    #[arg(long)]
    no_sessions: bool,
    /// Print one JSON line {url, home, repo, projectID, sessions, port} instead of prose.
    #[arg(long)]
    json: bool,
    /// The `claude` executable for Claude Code sessions (default: found on PATH or in the
    /// pinned install cache).
    #[arg(long, env = "NUCLEIC_CLAUDE_BIN")]
    claude: Option<PathBuf>,
    /// Extra environment for every agent process, KEY=VALUE (repeatable), on top of this
    /// process's own environment, which agents inherit.
    #[arg(long = "agent-env", value_name = "KEY=VALUE")]
    agent_env: Vec<String>,
    /// Seconds a sign-in link works (default 600; for tests of expired links).
    #[arg(long, hide = true)]
    login_link_ttl: Option<u64>,
}

/// The demo sessions: role, title, prompt, permission mode, the status to wait for.
const SESSIONS: &[(&str, &str, &str, Option<&str>, SessionStatus)] = &[
    (
        "streaming",
        "Walk through the code base",
        "Read the word counter and explain how it works as you go (stream 7200)",
        None,
        SessionStatus::Running,
    ),
    (
        "approval",
        "Start a changelog",
        "Please create CHANGELOG.md containing # Changelog

## 0.2.0

- Count words read from standard input.",
        None,
        SessionStatus::AwaitingApproval,
    ),
    (
        "finished",
        "Fix the line count",
        "edit wordcount/core.py: return text.count(NEWLINE) -> return len(text.splitlines()) \
         then write tests/test_lines.py containing from wordcount.core import NEWLINE, count_lines


def test_a_last_line_without_a_newline_counts():
    assert count_lines(\"one\") == 1
    assert count_lines(\"one\" + NEWLINE + \"two\") == 2",
        Some("acceptEdits"),
        SessionStatus::AwaitingInput,
    ),
];

/// The demo repository's files (one commit on `main`).
const FILES: &[(&str, &str)] = &[
    (
        "README.md",
        "# wordcount\n\nA tiny `wc` in Python: counts words, lines and characters.\n\n```sh\npython -m wordcount README.md\npython -m pytest\n```\n",
    ),
    (".gitignore", "__pycache__/\n*.pyc\n.pytest_cache/\n"),
    (
        "wordcount/__init__.py",
        "\"\"\"Count words, lines and characters.\"\"\"\n\nfrom wordcount.core import count_chars, count_lines, count_words\n\n__all__ = [\"count_chars\", \"count_lines\", \"count_words\"]\n",
    ),
    (
        "wordcount/core.py",
        "\"\"\"Counting words, lines and characters of a text.\"\"\"\n\nNEWLINE = \"\\n\"\n\n\ndef count_words(text: str) -> int:\n    \"\"\"Number of whitespace-separated words.\"\"\"\n    return len(text.split())\n\n\ndef count_lines(text: str) -> int:\n    \"\"\"Number of lines.\"\"\"\n    return text.count(NEWLINE)\n\n\ndef count_chars(text: str) -> int:\n    \"\"\"Number of characters (not bytes).\"\"\"\n    return len(text)\n",
    ),
    (
        "wordcount/__main__.py",
        "\"\"\"`python -m wordcount FILE...`: lines, words and characters of each file.\"\"\"\n\nimport sys\n\nfrom wordcount.core import count_chars, count_lines, count_words\n\n\ndef main(paths: list[str]) -> int:\n    for path in paths:\n        with open(path, encoding=\"utf-8\") as f:\n            text = f.read()\n        print(f\"{count_lines(text):>7} {count_words(text):>7} {count_chars(text):>7} {path}\")\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main(sys.argv[1:]))\n",
    ),
    (
        "tests/test_core.py",
        "from wordcount.core import count_chars, count_words\n\n\ndef test_words_are_split_on_any_whitespace():\n    assert count_words(\"one  two\\tthree\") == 3\n\n\ndef test_characters_are_not_bytes():\n    assert count_chars(\"h\u{e9}llo\") == 5\n",
    ),
];

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Nucleic Demo", "-c", "user.email=demo@nucleic.invalid"])
        .args(["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .context("cannot run git (is it installed?)")?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Writes the demo project into `root` and commits it on `main`.
pub fn make_repo(root: &Path) -> anyhow::Result<()> {
    for (path, text) in FILES {
        let file = root.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, text)?;
    }
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["add", "."])?;
    git(root, &["commit", "-q", "-m", "wordcount: words, lines and characters"])?;
    Ok(())
}

fn parse_env(pairs: &[String]) -> anyhow::Result<Vec<(OsString, OsString)>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.into(), v.into())),
            _ => bail!("--agent-env takes KEY=VALUE, not {pair:?}"),
        })
        .collect()
}

/// Waits until the session reaches `status` (or has moved past it).
async fn wait_for(host: &Host, id: &str, status: SessionStatus) -> anyhow::Result<SessionSummary> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let summary = host.session_summary(id).await?;
        if summary.status == status {
            return Ok(summary);
        }
        if matches!(summary.status, SessionStatus::Error | SessionStatus::Finished) {
            bail!("demo session {:?} ended as {:?}", summary.title, summary.status);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("demo session {:?} is {:?}, not {status:?}", summary.title, summary.status);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn temp_dir(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("cannot create a temporary directory")
}

/// Runs the demo until Ctrl-C or SIGTERM.
pub async fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let mut signals = StopSignals::install().context("cannot catch SIGINT / SIGTERM")?;
    let temp_home = match &args.home {
        Some(_) => None,
        None => Some(temp_dir("nucleic-demo-home-")?),
    };
    let home = match (&args.home, &temp_home) {
        (Some(home), _) => home.clone(),
        (None, Some(temp)) => temp.path().to_owned(),
        (None, None) => bail!("no home directory"),
    };
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&home)
        .with_context(|| format!("cannot create {}", home.display()))?;
    // One host per home: a demo on a home another host runs on refuses here.
    let lock = HomeLock::acquire(&home, home_lock::UNNAMED_HOLDER_WAIT)?;
    // With --home the repository lives (and stays) in it, so a demo can be stopped and started
    // again on the same home and find its project and sessions; otherwise it is temporary.
    let repo_dir = match &args.home {
        Some(_) => None,
        None => Some(temp_dir("nucleic-demo-repo-")?),
    };
    let repo = match &repo_dir {
        Some(temp) => temp.path().join("wordcount"),
        None => home.join("demo-repo").join("wordcount"),
    };
    if !repo.join(".git").exists() {
        std::fs::create_dir_all(&repo)?;
        make_repo(&repo)?;
    }

    let mut config = host_config(&home)?;
    if let Some(claude) = &args.claude {
        config.agents.claude = Some(claude.clone());
    }
    config.agent_env = parse_env(&args.agent_env)?;
    config.limits.min_free_bytes = 64 << 20;
    let host = Host::open(config).await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    let addr = listener.local_addr()?;
    let mut state = AppState::new(Arc::clone(&host), addr);
    if let Some(secs) = args.login_link_ttl {
        state = state.with_login_link_ttl(Duration::from_secs(secs));
    }
    let served = Served::start(listener, state.clone());
    write_daemon_file(&home, addr, None)?;

    let outcome = async {
        let project = demo_project(&host, &repo).await?;
        let mut sessions = Vec::new();
        if !args.no_sessions {
            for (role, title, prompt, mode, status) in SESSIONS {
                let created = host
                    .new_session(
                        NewSession {
                            project_id: project.project_id.clone(),
                            base_ref: None,
                            backend: Some(Backend::Simulated),
                            model: None,
                            permission_mode: mode.map(str::to_owned),
                            title: Some((*title).to_owned()),
                            mode: None,
                            prompt: (*prompt).to_owned(),
                        },
                        "demo",
                    )
                    .await?;
                let summary = wait_for(&host, &created.session_id, *status).await?;
                sessions.push((*role, summary));
            }
        }
        anyhow::Ok((project, sessions))
    }
    .await;
    let result = match outcome {
        Ok((project, sessions)) => {
            let announced =
                state.login_link().context("cannot mint a sign-in link").and_then(|url| {
                    announce(&args, &url, &home, &repo, &project.project_id, &sessions, addr.port())
                });
            match announced {
                Ok(()) => {
                    let signal = signals.next().await;
                    eprintln!(
                        "nucleic: demo: {} received: stopping (a second signal stops at once)",
                        signal.name()
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };

    // Shut down within the bound: agents (they write into the repository) and the server, then
    // what the demo created.
    force_stop_after(signals, &home, Arc::clone(&host));
    let complete = stop_daemon(&host, served, &home).await;
    drop(state);
    drop(host);
    drop(lock);
    if let Some(temp) = repo_dir {
        temp.close().context("cannot remove the demo repository")?;
    }
    if let Some(temp) = temp_home {
        temp.close().context("cannot remove the demo's data directory")?;
    }
    match result {
        Ok(_) if !complete => Ok(ExitCode::FAILURE),
        other => other,
    }
}

/// The demo repository's project: the one already registered for it (a demo started again on
/// the same home), else a new one.
async fn demo_project(host: &Host, repo: &Path) -> anyhow::Result<ProjectSummary> {
    let root = repo.canonicalize()?;
    let known = host.list_projects().await?;
    if let Some(project) = known.into_iter().find(|p| Path::new(&p.root) == root) {
        return Ok(project);
    }
    let root = root.to_string_lossy().into_owned();
    Ok(host
        .add_project(&root, Some("wordcount".into()), |s| s.default_backend = Backend::Simulated)
        .await?)
}

fn announce(
    args: &DemoArgs,
    url: &str,
    home: &Path,
    repo: &Path,
    project_id: &str,
    sessions: &[(&str, SessionSummary)],
    port: u16,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        let sessions: Vec<_> = sessions
            .iter()
            .map(|(role, s)| {
                json!({"role": role, "sessionID": s.session_id, "title": s.title, "status": s.status})
            })
            .collect();
        let line = json!({
            "url": url,
            "home": home,
            "repo": repo,
            "projectID": project_id,
            "sessions": sessions,
            "port": port,
        });
        writeln!(out, "{line}")?;
    } else {
        writeln!(out, "Nucleic demo: http://127.0.0.1:{port}")?;
        writeln!(out, "Open this link to sign in (it works once, for 10 minutes):\n\n  {url}\n")?;
        for (role, s) in sessions {
            writeln!(out, "  {role:<10} {}  ({})", s.title, s.session_id)?;
        }
        writeln!(out, "\nRepository: {}", repo.display())?;
        writeln!(out, "Data:       {}", home.display())?;
        writeln!(
            out,
            "The CLI works against it too: NUCLEIC_HOME={} nucleic session list",
            home.display()
        )?;
        writeln!(out, "Ctrl-C stops the demo and removes what it created.")?;
    }
    out.flush()?;
    Ok(())
}
