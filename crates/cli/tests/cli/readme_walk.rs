//! The README's "With your own agents" path, walked offline: every command of its steps that can
//! run without the network, in the README's order, read out of README.md itself, with the pinned
//! real `claude` (and `codex`, not signed in) on PATH and the mock model server standing in for
//! the person's account. Each printed step is checked against what the README says it prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_testkit::agents::{claude_offline_env, real_claude, real_codex};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Reply, Script};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::daemon::{DaemonGuard, git};
use crate::real_policy::bash;
use crate::support::nucleic;
use crate::web_signin::register_device;

/// The README's text between `start` and the next `## ` heading.
fn section<'a>(readme: &'a str, start: &str) -> &'a str {
    let from = readme.find(start).unwrap_or_else(|| panic!("README has no {start:?}"));
    let rest = &readme[from + start.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The fenced code blocks of `text`, in order, without their fences and indentation.
fn code_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut open: Option<Vec<String>> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            match open.take() {
                Some(block) => blocks.push(block),
                None => open = Some(Vec::new()),
            }
        } else if let Some(block) = open.as_mut() {
            block.push(trimmed.to_owned());
        }
    }
    blocks
}

/// `line` with every absolute path replaced by `<path>` (trailing punctuation kept), so the
/// README's `/usr/local/bin/claude` and the test's pinned install compare equal.
fn without_paths(line: &str) -> String {
    line.split(' ')
        .map(|word| match word.strip_prefix('/') {
            Some(_) => {
                let tail = word.len() - word.trim_end_matches([':', ',', ';', ')']).len();
                format!("<path>{}", &word[word.len() - tail..])
            }
            None => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks each line of the README's example output (`…` elides) against `printed`: a printed
/// line with the same first word holds every fragment of it, paths aside.
fn assert_prints_like(example: &[String], printed: &str) {
    let printed: Vec<String> = printed.lines().map(|l| without_paths(l.trim())).collect();
    for line in example.iter().filter(|l| l.as_str() != "…") {
        let line = without_paths(line);
        let label = line.split_whitespace().next().unwrap_or_default();
        let fragments: Vec<&str> = line
            .split("(…)")
            .flat_map(|part| part.split('…'))
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        let matched = printed
            .iter()
            .filter(|p| p.split_whitespace().next() == Some(label))
            .any(|p| fragments.iter().all(|f| p.contains(f)));
        assert!(matched, "the README says {line:?}; printed:\n{}", printed.join("\n"));
    }
}

/// `nucleic <args>` as the person types it, in `env`; (exit code, stdout, stderr) within 60 s.
async fn typed<S: AsRef<str>>(args: &[S], env: &[(String, String)]) -> (i32, String, String) {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(nucleic())
            .args(&args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("`nucleic {}` did not end within 60 s", args.join(" ")))
    .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The words of a README command line, with `~/src/app`, `<id>` and `<session>` filled in
/// (double-quoted words kept whole), the leading `nucleic` and any `# comment` dropped.
fn words(line: &str, fill: &[(&str, &str)]) -> Vec<String> {
    let code = line.split(" # ").next().unwrap_or(line).trim();
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
        rest = &rest[start..];
        let (word, next) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"').unwrap_or(quoted.len());
                (&quoted[..end], quoted.get(end + 1..).unwrap_or(""))
            }
            None => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        let filled = fill.iter().find(|(k, _)| *k == word).map_or(word, |(_, v)| v);
        out.push(filled.to_owned());
        rest = next;
    }
    assert_eq!(out.first().map(String::as_str), Some("nucleic"), "{line}");
    out.remove(0);
    out
}

/// A GET of `url` (http on loopback) with bash-free raw TCP; the status line.
async fn status_of(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("not http: {url}"));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply))
        .await
        .expect("the sign-in link did not answer within 10 s")
        .unwrap();
    String::from_utf8_lossy(&reply).lines().next().unwrap_or_default().to_owned()
}

/// A `bin` folder with the pinned `claude` and `codex` under the names the README installs.
fn agents_on_path(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(real_claude(), bin.join("claude")).unwrap();
    std::os::unix::fs::symlink(real_codex(), bin.join("codex")).unwrap();
    bin
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_own_agents_path_works_as_written() {
    if isolated!("the_readme_own_agents_path_works_as_written") {
        return;
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let steps = section(&readme, "## With your own agents");
    let blocks = code_blocks(steps);
    assert_eq!(blocks.len(), 2, "the doctor example and the commands: {blocks:?}");
    // Step 1 is what scripts/install-check.sh does on every CI run (no npm, the cockpit served).
    assert!(steps.contains("`cargo install --locked --path crates/cli`"), "{steps}");
    let install_check = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/install-check.sh"
    ))
    .unwrap();
    assert!(install_check.contains("cargo install --quiet --debug --locked --path crates/cli"));

    // Step 2: the agent CLIs as the person has them — claude signed in (its key set; the mock is
    // its account), codex installed but not signed in.
    let dir = tempfile::tempdir().unwrap();
    let bin = agents_on_path(dir.path());
    let home = dir.path().join("nucleic-home");
    let _daemon = DaemonGuard(home.clone());
    let fix = "printf 'retry the login once\\n' > login-fix.txt";
    let script = Script::new(vec![
        Reply::ToolUses { text: Some("I'll fix it.".into()), calls: vec![bash(fix)] },
        Reply::Text("Fixed the flaky login test.".into()),
    ]);
    let mock = MockAnthropic::start(script).await.unwrap();
    let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    env.push(("PATH".into(), path));
    env.push(("NUCLEIC_HOME".into(), home.to_string_lossy().into_owned()));
    env.retain(|(k, _)| k != "XDG_RUNTIME_DIR"); // no user manager, as on this machine

    // Step 3: `nucleic doctor` prints what the README shows.
    assert!(steps.contains("`nucleic doctor`"));
    let (_, doctor, err) = typed(&["doctor"], &env).await;
    assert_prints_like(&blocks[0], &doctor);
    assert!(!doctor.contains("verdict: not ready"), "{doctor}\n{err}");

    // Step 4: without a systemd user manager, `service install` says so and points at `serve`;
    // `nucleic serve` keeps the daemon running, and the commands below use it.
    assert!(steps.contains("`nucleic service install`") && steps.contains("`nucleic serve`"));
    let (code, out, err) = typed(&["service", "install"], &env).await;
    let said = format!("{out}{err}");
    assert!(said.contains("no systemd user manager"), "{code}: {said}");
    assert!(said.contains("nucleic serve"), "{said}");
    let mut serve = tokio::process::Command::new(nucleic())
        .arg("serve")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !home.join("daemon.json").exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "`nucleic serve` wrote no daemon.json in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Step 5: the commands of the README's block, in order.
    let repo = dir.path().join("app");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("login.test.js"), "test('login', () => {})\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let repo_path = repo.to_string_lossy().into_owned();
    let commands = &blocks[1];
    assert_eq!(commands.len(), 3, "{commands:?}");
    let (code, out, err) = typed(&words(&commands[0], &[("~/src/app", &repo_path)]), &env).await;
    assert_eq!(code, 0, "{}: {err}", commands[0]);
    let project = out.trim().to_owned();
    assert!(!project.is_empty() && !project.contains(char::is_whitespace), "an id: {out:?}");
    let (code, out, err) = typed(&words(&commands[1], &[("<id>", &project)]), &env).await;
    assert_eq!(code, 0, "{}: {err}", commands[1]);
    let session = out.split_whitespace().next().unwrap_or_default().to_owned();
    let (code, out, err) = typed(&words(&commands[2], &[]), &env).await;
    assert_eq!(code, 0, "{}: {err}", commands[2]);
    let link = out.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_default();
    assert!(link.starts_with("http://127.0.0.1:"), "a one-time sign-in link: {out}");
    let status = status_of(link).await;
    assert!(status.contains(" 200 "), "the link opens the cockpit: {status}");
    // The page trades the link's token for a device, once.
    let (code, body) = register_device(link, "walk").await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = register_device(link, "again").await;
    assert!(body.contains("already used"), "a one-time link works once: {code} {body}");

    // "From the terminal: `nucleic session attach <session>`": on a terminal it asks, `y` allows.
    assert!(steps.contains("`nucleic session attach <session>`"));
    let attach = format!("{} session attach {session} --until-idle", nucleic().display());
    let mut child = tokio::process::Command::new("script")
        .args(["-qefc", &attach, "/dev/null"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"y\n").await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("attach did not reach idle within 120 s")
        .unwrap();
    drop(stdin);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}{}", String::from_utf8_lossy(&out.stderr));
    assert!(shown.contains("> Fix the flaky login test"), "{shown}");
    assert!(shown.contains("login-fix.txt"), "the approval named the command: {shown}");
    assert!(shown.contains("Fixed the flaky login test."), "{shown}");

    // Step 7: the diff holds the agent's change; nothing reached the branch.
    assert!(steps.contains("`nucleic session diff <session>`"));
    let (code, diff, err) = typed(&["session", "diff", &session], &env).await;
    assert_eq!(code, 0, "{err}");
    assert!(diff.contains("login-fix.txt"), "{diff}");
    assert!(git(&repo, &["ls-tree", "--name-only", "main"]).trim() == "login.test.js");
    let _ = serve.start_kill();
}
