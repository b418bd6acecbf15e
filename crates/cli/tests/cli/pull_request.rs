//! Finishing by pull request through the daemon and the CLI: the session's branch pushed to a
//! local bare remote, `gh pr create` (the real CLI) against the mock GitHub API over TLS, in a
//! loopback-only namespace; the gate, and each way it fails, with a clear message.

use std::path::Path;

use nucleic_testkit::isolated;
use nucleic_testkit::mock_github::{ExpectedPullRequest, GitHubScript, MockGitHub};
use serde_json::Value;

use crate::daemon::{DaemonGuard, cli_env, git};
use crate::dev_loop::{demo_repo, events_of, report_number};

/// The environment the daemon (and so `gh`) gets: the mock as an enterprise host.
fn gh_env(mock: &MockGitHub, dir: &Path) -> Vec<(String, String)> {
    let config = dir.join("gh-config");
    std::fs::create_dir_all(&config).unwrap();
    vec![
        ("GH_HOST".into(), mock.host()),
        ("GH_ENTERPRISE_TOKEN".into(), mock.token()),
        ("SSL_CERT_FILE".into(), mock.ca_file().to_string_lossy().into_owned()),
        // Never the machine's own gh login.
        ("GH_CONFIG_DIR".into(), config.to_string_lossy().into_owned()),
    ]
}

async fn cli(home: &Path, env: &[(String, String)], args: &[&str]) -> (i32, String, String) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    cli_env(home, args, &env).await
}

/// A bare repository as the project's `origin`.
fn bare_remote(dir: &Path, root: &Path) -> std::path::PathBuf {
    let bare = dir.join("remote.git");
    git(dir, &["init", "-q", "--bare", bare.to_str().unwrap()]);
    git(root, &["remote", "add", "origin", bare.to_str().unwrap()]);
    bare
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_finished_by_a_pull_request_through_gh_against_the_mock() {
    if isolated!("a_session_is_finished_by_a_pull_request_through_gh_against_the_mock") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = demo_repo(dir.path());
    let mock = MockGitHub::start(dir.path(), GitHubScript::default()).await.unwrap();
    let env = gh_env(&mock, dir.path());
    let repo = mock.repo();

    let (code, project, err) = cli(&home, &env, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let check = ["project", "check", "add", &project, "tests", "--timeout", "60", "--"];
    let (code, _, err) =
        cli(&home, &env, &[&check[..], &["python3", "-B", "test_calc.py"]].concat()).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) =
        cli(&home, &env, &["project", "check", "after-turn", &project, "on"]).await;
    assert_eq!(code, 0, "{err}");
    let prompt =
        "edit calc.py: return a - b -> return a * b then say Fixed the add bug. All tests pass.";
    let new = ["session", "new", "--project", &project, "--agent", "sim"];
    let args = [&new[..], &["--permission-mode", "acceptEdits", prompt]].concat();
    let (code, out, err) = cli(&home, &env, &args).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    report_number(&home, &session, 1).await;

    // No remote yet.
    let pr = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["session".to_owned(), "pr".to_owned(), session.clone()];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |args: Vec<String>| {
        let (home, env) = (home.clone(), env.clone());
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli(&home, &env, &args).await
        }
    };
    let (code, _, err) = run(pr(&["--repo", &repo])).await;
    assert_ne!(code, 0);
    assert!(err.contains("no remote to push to") && err.contains("git remote add origin"), "{err}");
    let bare = bare_remote(dir.path(), &root);

    // A local remote names no GitHub repository.
    let (code, _, err) = run(pr(&[])).await;
    assert_ne!(code, 0);
    assert!(err.contains("names no GitHub repository"), "{err}");
    // Bad input.
    let (code, _, err) = run(pr(&["--repo", "not a repo"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("is not a repository"), "{err}");
    let (code, _, err) = run(pr(&["--repo", &repo, "--base=-x"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("is not a branch name"), "{err}");

    // The gate: the wrong fix's check fails; nothing is pushed, gh never asked.
    let (code, _, err) = run(pr(&["--repo", &repo])).await;
    assert_ne!(code, 0);
    assert!(err.contains("required checks fail (tests FAILED"), "{err}");
    assert_eq!(git(&bare, &["for-each-ref"]).trim(), "");
    assert!(mock.requests().is_empty(), "{:?}", mock.requests());

    // The real fix.
    let fix = "edit calc.py: return a * b -> return a + b then say Fixed it for real: add adds.";
    let (code, _, err) =
        run(vec!["session".into(), "send".into(), session.clone(), fix.into()]).await;
    assert_eq!(code, 0, "{err}");
    let report = report_number(&home, &session, 2).await;
    assert_eq!(report["checks"][0]["outcome"], "passed", "{report}");

    // The remote rejects the push: its hook's words reach the person.
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'protected: pushes need a ticket' >&2\nexit 1\n")
        .unwrap();
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&hook, executable).unwrap();
    let (code, _, err) = run(pr(&["--repo", &repo])).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("rejected the push") && err.contains("protected: pushes need a ticket"),
        "{err}"
    );
    assert!(mock.requests().is_empty());
    std::fs::remove_file(&hook).unwrap();

    // gh is not logged in (its token refused: 401).
    mock.set_script(GitHubScript { token: "another-token".into(), ..GitHubScript::default() });
    let (code, _, err) = run(pr(&["--repo", &repo])).await;
    assert_ne!(code, 0);
    assert!(err.contains("gh is not logged in to 127.0.0.1:"), "{err}");
    assert!(!err.contains(&mock_token()), "the token leaked into a message: {err}");

    // It goes through: the mock sees the expected title, head and base.
    let branch = git(&root, &["for-each-ref", "--format=%(refname:short)", "refs/heads/nucleic/"]);
    let branch = branch.trim().to_owned();
    mock.set_script(GitHubScript {
        expect: Some(ExpectedPullRequest {
            title: "Fix add".into(),
            head: branch.clone(),
            base: "main".into(),
        }),
        ..GitHubScript::default()
    });
    let before = mock.requests().len();
    let (code, out, err) = run(pr(&["--repo", &repo, "--title", "Fix add", "--draft"])).await;
    assert_eq!(code, 0, "{err}");
    let opened: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let url = format!("https://{}/octo/demo/pull/1", mock.host());
    assert_eq!(opened["url"], url.as_str(), "{opened}");
    assert_eq!((opened["number"].as_u64(), opened["state"].as_str()), (Some(1), Some("draft")));
    let created = mock.created();
    assert_eq!(created.len(), 1);
    let pr_made = &created[0];
    assert_eq!(
        (pr_made.title.as_str(), pr_made.head.as_str(), pr_made.base.as_str()),
        ("Fix add", branch.as_str(), "main")
    );
    assert!(pr_made.draft);
    assert!(pr_made.body.contains("> Done. Fixed it for real: add adds."), "{}", pr_made.body);
    assert!(pr_made.body.contains("✅ tests passed: 2 passed, 0 failed"), "{}", pr_made.body);
    assert!(pr_made.body.contains("- `calc.py`"), "{}", pr_made.body);
    // Which endpoints gh called: three GraphQL operations.
    let operations: Vec<String> = mock.requests()[before..]
        .iter()
        .map(|r| format!("{} {} {}", r.method, r.path, r.operation.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        operations,
        [
            "POST /api/graphql RepositoryInfo",
            "POST /api/graphql PullRequestForBranch",
            "POST /api/graphql PullRequestCreate"
        ]
    );
    // The branch is on the remote, at the commit recorded; main was not pushed.
    let pushed = git(&bare, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    assert_eq!(
        pushed.trim(),
        format!("refs/heads/{branch} {}", opened["headSha"].as_str().unwrap())
    );
    assert!(git(&bare, &["show", &format!("{branch}:calc.py")]).contains("return a + b"));
    // Recorded on the session.
    let events = events_of(&home, &session, "pullRequestOpened");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["url"], url.as_str());
    let (code, out, err) = run(vec!["session".into(), "show".into(), session.clone()]).await;
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["pullRequest"]["url"], url.as_str(), "{shown}");
    assert_eq!(shown["pullRequest"]["number"], 1);

    // Again: the PR already exists.
    let (code, _, err) = run(pr(&["--repo", &repo, "--title", "Fix add"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("already exists") && err.contains(&url), "{err}");
}

fn mock_token() -> String {
    GitHubScript::default().token
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_gh_is_a_clear_error() {
    if isolated!("a_missing_gh_is_a_clear_error") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    let bare = bare_remote(dir.path(), &root);
    let env = vec![(
        "NUCLEIC_GH".to_owned(),
        dir.path().join("no-such-gh").to_string_lossy().into_owned(),
    )];
    let (code, project, err) = cli(&home, &env, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let new = ["session", "new", "--project", project.trim(), "--agent", "sim", "say hello"];
    let (code, out, err) = cli(&home, &env, &new).await;
    assert_eq!(code, 0, "{err}");
    let session = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = cli(&home, &env, &["session", "attach", &session, "--until-idle"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli(&home, &env, &["session", "pr", &session, "--repo", "o/r"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("gh (the GitHub CLI) is not installed"), "{err}");
    assert!(err.contains("no-such-gh (from NUCLEIC_GH) is not an executable"), "{err}");
    // Found out before anything was pushed.
    assert_eq!(git(&bare, &["for-each-ref"]).trim(), "");
}
