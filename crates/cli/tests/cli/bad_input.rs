//! Bad input at the command line: missing agents, bad paths, bad options.

use crate::support::*;

#[tokio::test]
async fn agent_bin_pointing_at_nothing_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent-bin", "/nonexistent/claude", "hi"], &[]).await;
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot start agent /nonexistent/claude: no such file"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn agent_bin_that_is_not_executable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude");
    std::fs::write(&file, "not a program").unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent-bin", file.to_str().unwrap(), "hi"], &[]).await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("permission denied"), "{}", r.stderr);
}

#[tokio::test]
async fn missing_claude_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PATH".to_owned(), "/nonexistent".to_owned()),
        ("NUCLEIC_AGENT_CACHE".to_owned(), "/nonexistent".to_owned()),
    ];
    let r = run_nucleic(dir.path(), &["run", "--agent", "claude", "hi"], &env).await;
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("claude not found") && r.stderr.contains("--agent sim"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_missing_working_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent", "sim", "--cwd", "/nonexistent/dir", "hi"], &[])
            .await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}

#[tokio::test]
async fn an_unknown_permission_mode_is_refused_before_spawning() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        run_nucleic(dir.path(), &["run", "--agent", "sim", "--permission-mode", "yolo", "hi"], &[])
            .await;
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("unknown permission mode"), "{}", r.stderr);
}

#[tokio::test]
async fn doctor_reports_each_tool() {
    let out = tokio::process::Command::new(nucleic()).arg("doctor").output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for tool in ["git", "claude", "codex", "gemini", "sim", "confinement", "git confinement"] {
        assert!(text.lines().any(|l| l.starts_with(tool)), "no line for {tool}:\n{text}");
    }
    assert!(text.contains("verdict:"));
    // The pinned installs (what scripts/test.sh installs) are recognised as the tested versions.
    for tool in ["claude", "codex", "gemini"] {
        let line = text.lines().find(|l| l.starts_with(tool)).unwrap();
        if line.contains("/nucleic/agents/") {
            assert!(line.contains("ok, tested version"), "{line}");
        }
    }
}

/// `doctor` with the agent CLIs missing, at an untested version, not signed in and signed in:
/// each said on its line, with the next step in the verdict.
#[tokio::test]
async fn doctor_names_missing_untested_and_signed_out_agents_with_the_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let (home, bin, cache) =
        (dir.path().join("home"), dir.path().join("bin"), dir.path().join("cache"));
    for d in [&home, &bin, &cache] {
        std::fs::create_dir_all(d).unwrap();
    }
    let link = |tool: &str| {
        let found = nucleic_agents::process::which(tool.as_ref()).unwrap();
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    };
    link("git");
    let doctor = |path: String, extra: &[(&str, &str)]| {
        let mut command = std::process::Command::new(nucleic());
        command
            .arg("doctor")
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("NUCLEIC_AGENT_CACHE", &cache)
            .envs(extra.iter().copied());
        String::from_utf8_lossy(&command.output().unwrap().stdout).into_owned()
    };
    let line =
        |text: &str, tool: &str| text.lines().find(|l| l.starts_with(tool)).unwrap().to_owned();
    // No bubblewrap: not ready, and the step says what to install.
    let text = doctor(bin.display().to_string(), &[]);
    assert!(text.contains("verdict: not ready — next:"), "{text}");
    assert!(text.contains("1. confinement: apt-get install bubblewrap"), "{text}");
    link("bwrap");
    // Agent CLIs missing.
    let text = doctor(bin.display().to_string(), &[]);
    assert!(line(&text, "claude").contains("missing: scripts/install-agents.sh"), "{text}");
    let gemini = line(&text, "gemini");
    assert!(
        gemini.contains("missing: scripts/install-agents.sh (pins @google/gemini-cli@0.61.0"),
        "{text}"
    );
    assert!(text.contains("verdict: ready for the simulated agent only"), "{text}");
    // Present at an untested version and signed out; then signed in.
    let fake = bin.join("claude");
    std::fs::write(&fake, "#!/bin/sh\necho '9.9.9 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let text = doctor(bin.display().to_string(), &[]);
    let claude = line(&text, "claude");
    assert!(claude.contains("UNTESTED newer version (Nucleic is tested with 2.1.332"), "{claude}");
    assert!(claude.contains("NOT signed in"), "{claude}");
    assert!(text.contains("1. claude: run `claude` once and log in"), "{text}");
    let text = doctor(bin.display().to_string(), &[("ANTHROPIC_API_KEY", "sk-test")]);
    assert!(line(&text, "claude").contains("signed in: ANTHROPIC_API_KEY is set"), "{text}");
    assert!(text.contains("verdict: ready — next"), "{text}");
    // Too old: named, with the update as its next step; a version it cannot read is said so.
    std::fs::write(&fake, "#!/bin/sh\necho '2.0.9 (Claude Code)'\n").unwrap();
    let text = doctor(bin.display().to_string(), &[("ANTHROPIC_API_KEY", "sk-test")]);
    let claude = line(&text, "claude");
    assert!(claude.contains("TOO OLD (Nucleic is tested with 2.1.332)"), "{claude}");
    let step = "1. claude: update it, it is older than the tested 2.1.332 (npm install -g @anthropic-ai/claude-code@2.1.332)";
    assert!(text.contains(step), "{text}");
    std::fs::write(&fake, "#!/bin/sh\necho 'Claude Code (dev build)'\n").unwrap();
    let text = doctor(bin.display().to_string(), &[("ANTHROPIC_API_KEY", "sk-test")]);
    assert!(line(&text, "claude").contains("UNTESTED version (Nucleic is tested with 2.1.332)"));
    // Codex with its home under /tmp: warned, naming why; elsewhere not.
    let codex = bin.join("codex");
    std::fs::write(&codex, "#!/bin/sh\necho 'codex-cli 0.171.0'\n").unwrap();
    std::fs::set_permissions(&codex, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let under_tmp = dir.path().join("codex-home");
    let under_tmp = under_tmp.to_str().unwrap();
    let text = doctor(bin.display().to_string(), &[("CODEX_HOME", under_tmp)]);
    let warning = text.lines().find(|l| l.starts_with("codex") && l.contains("WARNING"));
    let warning = warning.unwrap_or_else(|| panic!("no warning: {text}"));
    assert!(warning.contains(&format!("CODEX_HOME {under_tmp} is under /tmp")), "{warning}");
    assert!(warning.contains("AGENTS.md"), "{warning}");
    let text = doctor(bin.display().to_string(), &[("CODEX_HOME", "/srv/codex-home")]);
    assert!(!text.contains("WARNING: CODEX_HOME"), "{text}");
}

#[test]
fn doctor_into_a_closed_pipe_ends_quietly_like_sigpipe() {
    // `nucleic doctor | head -1`: the reader goes away before doctor has printed everything.
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(nucleic())
        .arg("doctor")
        .env("NUCLEIC_HOME", dir.path().join("home"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader closes at once
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}
