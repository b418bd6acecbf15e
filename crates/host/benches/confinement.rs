//! What the confinement costs an agent's start: `/bin/true` started directly against the same
//! under the whole sandbox a Claude Code session gets (bubblewrap with every mount the host
//! plans, its network namespace, and the `__confine` bridge before the program), rounds
//! interleaved in one process. `cargo bench -p nucleic-host --bench confinement`
//! (CONFINEMENT_BENCH_ROUNDS, default 40). Target: + ≤ 20 ms.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a bench: a failure ends it, saying what

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nucleic_host::confinement::{AgentPlace, plan};
use nucleic_host::{AgentIsolation, AgentPaths, HostConfig, Limits};
use nucleic_protocol::Backend;

fn main() {
    let rounds: usize =
        std::env::var("CONFINEMENT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let Ok(bwrap) = nucleic_host::bubblewrap().clone() else {
        println!(
            "confinement bench: bubblewrap does not work here: {:?}",
            nucleic_host::bubblewrap()
        );
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let (root, worktree) = repo_with_worktree(dir.path());
    let person = dir.path().join("person");
    std::fs::create_dir_all(person.join(".claude")).unwrap();
    let nucleic = PathBuf::from(env!("CARGO_BIN_EXE_nucleic-entry-points"));
    let config = HostConfig {
        home: dir.path().join("data"),
        agents: AgentPaths {
            claude: None,
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: nucleic.clone(),
            sim_prefix: Vec::new(),
            nucleic,
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(10),
        agent_env: vec![
            ("HOME".into(), person.into_os_string()),
            ("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:4123".into()),
        ],
        agent_isolation: AgentIsolation::Required,
        keepers: None,
        policy: false,
    };
    let place = AgentPlace {
        backend: Backend::ClaudeCode,
        cwd: &worktree,
        session_id: Some("bench-session"),
        read_only: false,
        program: Path::new("/bin/true"),
        sandbox: &nucleic_protocol::ProjectSandbox::default(),
    };
    let iso = plan(&config, bwrap, &place);
    std::fs::create_dir_all(nucleic_host::confinement::egress_dir(&config, "bench-session"))
        .unwrap();
    let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let args = iso.args(Path::new("/bin/true"), &[], &worktree, ids);
    let confined = || {
        let started = Instant::now();
        let status = Command::new(&iso.bwrap).args(&args).current_dir(&worktree).status().unwrap();
        assert!(status.success(), "the confined start failed: {status}");
        started.elapsed()
    };
    let direct = || {
        let started = Instant::now();
        let status = Command::new("/bin/true").current_dir(&worktree).status().unwrap();
        assert!(status.success());
        started.elapsed()
    };
    let (_, _) = (confined(), direct());
    let mut pairs = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        pairs.push((direct(), confined()));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut direct_ms: Vec<f64> = pairs.iter().map(|p| ms(p.0)).collect();
    let mut confined_ms: Vec<f64> = pairs.iter().map(|p| ms(p.1)).collect();
    let mut added: Vec<f64> = pairs.iter().map(|p| ms(p.1) - ms(p.0)).collect();
    for v in [&mut direct_ms, &mut confined_ms, &mut added] {
        v.sort_by(f64::total_cmp);
    }
    let q = |v: &[f64], f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    println!(
        "confinement bench: {rounds} pairs, {} mounts planned for a worktree of {}",
        iso.mounts.len(),
        root.display()
    );
    println!("direct /bin/true: median {:.2} ms", q(&direct_ms, 0.5));
    println!("confined (bwrap + __confine + /bin/true): median {:.2} ms", q(&confined_ms, 0.5));
    println!(
        "added per start: median {:.2} ms (quartiles {:.2}–{:.2}, max {:.2}); target ≤ 20 ms",
        q(&added, 0.5),
        q(&added, 0.25),
        q(&added, 0.75),
        q(&added, 1.0)
    );
}

fn repo_with_worktree(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git").args(args).current_dir(&root).status().unwrap().success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "i"]);
    let worktree = root.join(".nucleic/worktrees/bench");
    git(&["worktree", "add", "-q", "-b", "nucleic/bench", worktree.to_str().unwrap()]);
    (root, worktree)
}
