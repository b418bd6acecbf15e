//! Running the GitHub CLI (`gh pr create`) like every child of the host: argv, a scrubbed
//! environment, a deadline, output captured — and a clear message for each way it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::error::HostError;

/// How long `gh pr create` may take (three API calls on a good day).
pub(crate) const GH_DEADLINE: Duration = Duration::from_secs(120);

/// Overrides the `gh` program (a path), for tests and unusual installs.
pub(crate) const GH_PROGRAM_VARIABLE: &str = "NUCLEIC_GH";

/// The host's variables gh gets, and no other: where it finds its login (its config dir, or
/// a token), which host it talks to, and the CA bundle it trusts.
const GH_ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "GH_CONFIG_DIR",
    "GH_HOST",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Variables whose values are secrets: never part of a message.
const SECRETS: &[&str] =
    &["GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"];

/// One pull request to open.
#[derive(Debug, Clone)]
pub(crate) struct NewPullRequest {
    /// `[HOST/]OWNER/REPO`.
    pub repo: String,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
}

/// What gh reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenedPullRequest {
    pub url: String,
    pub number: u64,
}

/// The `gh` to run (`NUCLEIC_GH`, else the first on `PATH`), checked before anything is pushed.
pub(crate) fn locate() -> Result<PathBuf, HostError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = match std::env::var_os(GH_PROGRAM_VARIABLE) {
        Some(named) => Some(PathBuf::from(named)).filter(|p| p.is_absolute() && executable(p)),
        None => std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|d| d.join("gh")).find(|p| executable(p))
        }),
    };
    found.ok_or_else(|| {
        let named = std::env::var(GH_PROGRAM_VARIABLE)
            .map(|n| format!("{n} (from {GH_PROGRAM_VARIABLE}) is not an executable"))
            .unwrap_or_else(|_| "no gh on PATH".to_owned());
        HostError::Invalid(format!(
            "gh (the GitHub CLI) is not installed: {named} (install the `gh` package); nothing was pushed"
        ))
    })
}

/// Runs `program` (`gh`) `pr create` in `cwd` (an empty directory: never the agent's
/// worktree, whose git config gh would read).
pub(crate) async fn create(
    program: &Path,
    pr: &NewPullRequest,
    cwd: &Path,
    deadline: Duration,
) -> Result<OpenedPullRequest, HostError> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(["pr", "create", "--repo", &pr.repo, "--head", &pr.head, "--base", &pr.base])
        .args(["--title", &pr.title, "--body-file", "-"]);
    if pr.draft {
        command.arg("--draft");
    }
    command.env_clear();
    for key in GH_ENVIRONMENT {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("GH_SPINNER_DISABLED", "1")
        .env("NO_COLOR", "1")
        .env("GH_PAGER", "cat")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| HostError::Invalid(format!("cannot run {}: {e}", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        // gh reads the body to its end before anything else; a write error surfaces below.
        let _ = stdin.write_all(pr.body.as_bytes()).await;
    }
    let group = child.id();
    let output = tokio::time::timeout(deadline, child.wait_with_output()).await.map_err(|_| {
        // gh and whatever it started (its own process group).
        if let Some(pgid) = group.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        HostError::Invalid(format!(
            "gh pr create did not finish within {deadline:?} and was killed"
        ))
    })?;
    let output = output.map_err(|e| HostError::Invalid(format!("gh pr create failed: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = redact(String::from_utf8_lossy(&output.stderr).trim());
    if output.status.success() {
        return opened(&stdout).ok_or_else(|| {
            HostError::Invalid(format!("gh pr create printed no pull request URL: {stdout}"))
        });
    }
    Err(HostError::Invalid(failure(pr, output.status.code(), &stderr)))
}

/// The pull request's URL and number from gh's output (its last URL line).
pub(crate) fn opened(stdout: &str) -> Option<OpenedPullRequest> {
    let url = stdout.lines().rev().map(str::trim).find(|l| l.starts_with("https://"))?;
    let (_, tail) = url.rsplit_once("/pull/")?;
    let number = tail.trim_end_matches('/').parse().ok()?;
    Some(OpenedPullRequest { url: url.to_owned(), number })
}

/// A message a person can act on, for each way gh fails.
fn failure(pr: &NewPullRequest, code: Option<i32>, stderr: &str) -> String {
    let host = pr.repo.split('/').count().eq(&3).then(|| pr.repo.split('/').next()).flatten();
    let host = host.unwrap_or("github.com");
    let lower = stderr.to_lowercase();
    if lower.contains("already exists") {
        let url = stderr.split_whitespace().find(|w| w.starts_with("https://")).unwrap_or("");
        return format!(
            "a pull request from {} into {} already exists in {} {url}",
            pr.head, pr.base, pr.repo
        )
        .trim_end()
        .to_owned();
    }
    if lower.contains("http 401")
        || lower.contains("bad credentials")
        || lower.contains("gh auth login")
        || lower.contains("authentication")
    {
        return format!(
            "gh is not logged in to {host} (or its token was refused): run `gh auth login \
             --hostname {host}` as the user running Nucleic, or give the host GH_TOKEN / \
             GH_ENTERPRISE_TOKEN ({})",
            last_line(stderr)
        );
    }
    if lower.contains("could not resolve to a repository") || lower.contains("http 404") {
        return format!("gh cannot find the repository {}: {}", pr.repo, last_line(stderr));
    }
    let code = code.map_or_else(|| "a signal".to_owned(), |c| c.to_string());
    format!("gh pr create failed (exit {code}): {}", last_line(stderr))
}

fn last_line(text: &str) -> &str {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim()
}

/// `text` with the value of every token variable the host has replaced.
fn redact(text: &str) -> String {
    let mut text = text.to_owned();
    for key in SECRETS {
        if let Ok(value) = std::env::var(key)
            && value.len() >= 4
        {
            text = text.replace(&value, "[token]");
        }
    }
    text
}

/// `[HOST/]OWNER/REPO` of a GitHub remote URL (`https://host/o/r(.git)`, `git@host:o/r.git`,
/// `ssh://git@host[:port]/o/r.git`); `None` for anything else (a local path).
pub(crate) fn repo_of_url(url: &str) -> Option<String> {
    let rest = if let Some(rest) = url.strip_prefix("https://") {
        rest.to_owned()
    } else if let Some(rest) = url.strip_prefix("ssh://") {
        let (host, path) = rest.split_once('/')?;
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        let host = host.split(':').next()?;
        format!("{host}/{path}")
    } else if !url.contains("://") && !url.starts_with('/') {
        let (host, path) = url.split_once(':')?;
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        format!("{host}/{path}")
    } else {
        return None;
    };
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let repo = rest.to_owned();
    valid_repo(&repo).then_some(repo)
}

/// `OWNER/REPO` or `HOST/OWNER/REPO` of plain names (a host may carry a port).
pub(crate) fn valid_repo(repo: &str) -> bool {
    let parts: Vec<&str> = repo.split('/').collect();
    let name = |p: &str, extra: &[char]| {
        !p.is_empty()
            && !p.starts_with(['-', '.'])
            && p.len() <= 100
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c) || extra.contains(&c))
    };
    match parts.as_slice() {
        [owner, repo] => name(owner, &[]) && name(repo, &[]),
        [host, owner, repo] => name(host, &[':']) && name(owner, &[]) && name(repo, &[]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_a_remote_url_names() {
        let cases = [
            ("https://github.com/o/r.git", Some("github.com/o/r")),
            ("https://ghe.example.com/org/repo", Some("ghe.example.com/org/repo")),
            ("git@github.com:o/r.git", Some("github.com/o/r")),
            ("ssh://git@github.com:22/o/r.git", Some("github.com/o/r")),
            ("/srv/git/r.git", None),
            ("file:///srv/git/r.git", None),
            ("https://github.com/o/r/extra", None),
        ];
        for (url, repo) in cases {
            assert_eq!(repo_of_url(url).as_deref(), repo, "{url}");
        }
        assert!(valid_repo("127.0.0.1:8443/o/r") && !valid_repo("-o/r") && !valid_repo("o/r/x/y"));
    }

    #[test]
    fn the_url_and_number_from_gh_output() {
        let out = "\nCreating pull request for x into main in o/r\n\nhttps://h/o/r/pull/12\n";
        assert_eq!(
            opened(out),
            Some(OpenedPullRequest { url: "https://h/o/r/pull/12".into(), number: 12 })
        );
        assert_eq!(opened("nothing here"), None);
    }

    /// A stand-in `gh`: a shell script in a fresh directory.
    fn fake_gh(script: &str) -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let gh = dir.path().join("gh");
        std::fs::write(&gh, format!("#!/bin/sh\n{script}\n")).unwrap_or_else(|e| panic!("{e}"));
        let executable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&gh, executable).unwrap_or_else(|e| panic!("{e}"));
        (dir, gh)
    }

    fn request() -> NewPullRequest {
        NewPullRequest {
            repo: "h.example/o/r".into(),
            head: "nucleic/x".into(),
            base: "main".into(),
            title: "A title".into(),
            body: "the body\n".into(),
            draft: true,
        }
    }

    #[tokio::test]
    async fn gh_gets_argv_the_body_on_stdin_and_only_its_own_environment() {
        let (dir, gh) = fake_gh(
            "printf '%s\\n' \"$@\" > args; cat > body; env > env\necho https://h.example/o/r/pull/9",
        );
        let opened = create(&gh, &request(), dir.path(), Duration::from_secs(30)).await;
        let opened = opened.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(opened.number, 9);
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
        let args: Vec<String> = read("args").lines().map(str::to_owned).collect();
        assert_eq!(
            args,
            [
                "pr",
                "create",
                "--repo",
                "h.example/o/r",
                "--head",
                "nucleic/x",
                "--base",
                "main",
                "--title",
                "A title",
                "--body-file",
                "-",
                "--draft"
            ]
        );
        assert_eq!(read("body"), "the body\n");
        let env = read("env");
        assert!(env.contains("GH_PROMPT_DISABLED=1") && env.contains("PATH="), "{env}");
        // The test runner's own variables (cargo sets CARGO_*) do not reach gh.
        assert!(!env.contains("CARGO_"), "{env}");
    }

    #[tokio::test]
    async fn a_gh_that_hangs_is_killed_at_its_deadline() {
        let (dir, gh) = fake_gh("sleep 30 & echo $! > child; wait");
        let started = std::time::Instant::now();
        let error = create(&gh, &request(), dir.path(), Duration::from_millis(300)).await;
        let text = error.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("did not finish within 300ms and was killed"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        // What it started went with it.
        let child = std::fs::read_to_string(dir.path().join("child")).unwrap_or_default();
        let proc = format!("/proc/{}", child.trim());
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !std::path::Path::new(&proc).exists()
                || std::fs::read_to_string(format!("{proc}/stat")).is_ok_and(|s| s.contains(") Z "))
        });
        assert!(!child.trim().is_empty() && gone, "gh's child {child} outlived it");
    }

    #[test]
    fn failures_say_what_to_do() {
        let pr = NewPullRequest {
            repo: "h.example/o/r".into(),
            head: "nucleic/x".into(),
            base: "main".into(),
            title: "t".into(),
            body: String::new(),
            draft: false,
        };
        let exists = "a pull request for branch \"nucleic/x\" into branch \"main\" already exists:\nhttps://h.example/o/r/pull/3";
        let text = failure(&pr, Some(1), exists);
        assert!(text.contains("already exists") && text.ends_with("/pull/3"), "{text}");
        let text =
            failure(&pr, Some(1), "HTTP 401: Bad credentials (https://h.example/api/graphql)");
        assert!(text.contains("not logged in to h.example"), "{text}");
        assert!(failure(&pr, Some(2), "boom").contains("exit 2): boom"));
    }
}
