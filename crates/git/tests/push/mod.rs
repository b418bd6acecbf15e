//! Pushing a session branch: the one transport exception, to the project's configured remote.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nucleic_git::{GitError, Remote};

use crate::support::{Fixture, fixture, run_git, spec, write};

/// A bare remote next to the fixture's repository, configured as `origin`.
fn with_remote(f: &Fixture) -> PathBuf {
    let bare = f.root.parent().unwrap().join("remote.git");
    run_git(f.root.parent().unwrap(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    run_git(&f.root, &["remote", "add", "origin", bare.to_str().unwrap()]);
    bare
}

fn executable(path: &Path, text: &str) {
    write(path, text);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_session_branch_is_pushed_to_the_configured_remote_only() {
    let f = fixture();
    let bare = with_remote(&f);
    let wt = f.repo.create_worktree(&spec("pushed")).unwrap();
    write(&wt.path.join("a.txt"), "changed\n");
    f.repo.commit_all(&wt, "change a").unwrap();
    // The agent can write the repository's hooks: a pre-push hook there never runs.
    let log = f.root.parent().unwrap().join("trap.log");
    let trap = format!("#!/bin/sh\necho ran >> {}\n", log.display());
    executable(&f.root.join(".git/hooks/pre-push"), &trap);
    let remote = f.repo.project_remote("main").unwrap();
    assert_eq!(remote, Remote { name: "origin".into(), url: bare.to_string_lossy().into() });
    let pushed = f.repo.push_branch(&wt, &remote).unwrap();
    assert_eq!(pushed.branch, wt.branch);
    assert_eq!(pushed.summary, "[new branch]");
    let on_remote = run_git(&bare, &["rev-parse", &format!("refs/heads/{}", wt.branch)]);
    assert_eq!(on_remote.trim(), pushed.tip);
    // Only that branch went: not main.
    let heads = run_git(&bare, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(heads.trim(), format!("refs/heads/{}", wt.branch));
    assert!(!log.exists(), "the repository's pre-push hook ran");
    // Pushing again is a no-op that still succeeds.
    assert_eq!(f.repo.push_branch(&wt, &remote).unwrap().summary, "[up to date]");
}

#[test]
fn a_push_the_remote_rejects_says_what_the_remote_said() {
    let f = fixture();
    let bare = with_remote(&f);
    executable(
        &bare.join("hooks/pre-receive"),
        "#!/bin/sh\necho 'policy: branches need a ticket number' >&2\nexit 1\n",
    );
    let wt = f.repo.create_worktree(&spec("rejected")).unwrap();
    let remote = f.repo.project_remote("main").unwrap();
    let error = f.repo.push_branch(&wt, &remote).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, GitError::PushRejected { .. }), "{text}");
    assert!(text.contains("pre-receive hook declined"), "{text}");
    assert!(text.contains("policy: branches need a ticket number"), "{text}");
}

#[test]
fn no_remote_a_rewritten_url_or_an_unsafe_protocol_is_refused() {
    let f = fixture();
    let wt = f.repo.create_worktree(&spec("nowhere")).unwrap();
    let error = f.repo.project_remote("main").unwrap_err();
    assert!(matches!(&error, GitError::NoRemote { name } if name == "origin"), "{error}");

    // The base branch's own remote wins over origin.
    run_git(&f.root, &["remote", "add", "upstream", "https://example.invalid/o/r.git"]);
    run_git(&f.root, &["config", "branch.main.remote", "upstream"]);
    assert_eq!(f.repo.project_remote("main").unwrap().name, "upstream");

    // A rule in the (agent-writable) config that sends the push elsewhere.
    let bare = with_remote(&f);
    let elsewhere = f.root.parent().unwrap().join("elsewhere.git");
    run_git(f.root.parent().unwrap(), &["init", "-q", "--bare", elsewhere.to_str().unwrap()]);
    let key = format!("url.{}.pushInsteadOf", elsewhere.display());
    run_git(&f.root, &["config", &key, bare.to_str().unwrap()]);
    let origin = Remote { name: "origin".into(), url: bare.to_string_lossy().into() };
    let error = f.repo.push_branch(&wt, &origin).unwrap_err();
    assert!(matches!(error, GitError::RemoteRefused { .. }), "{error}");
    assert!(error.to_string().contains("pushinsteadof"), "{error}");
    let moved = run_git(&elsewhere, &["for-each-ref"]);
    assert_eq!(moved.trim(), "", "the push went to the rewritten URL");

    for url in ["http://example.invalid/r.git", "ext::sh -c touch% /tmp/x", "relative/r.git"] {
        let remote = Remote { name: "origin".into(), url: url.into() };
        let error = f.repo.push_branch(&wt, &remote).unwrap_err();
        assert!(matches!(error, GitError::RemoteRefused { .. }), "{url}: {error}");
    }
}
