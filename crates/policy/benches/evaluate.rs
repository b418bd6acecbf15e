//! Policy evaluation cost per tool call, in microseconds (`cargo bench -p nucleic-policy`).
//! No criterion: a warm-up, then the median of several timed rounds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use nucleic_policy::{
    Behaviour, Context, FsResolver, MapResolver, Mode, PathResolver, Policy, Scope,
};
use serde_json::{Value, json};

fn policy() -> Policy {
    let mut p = Policy::new();
    let allow = [
        "Bash(git status)",
        "Bash(git diff:*)",
        "Bash(git log:*)",
        "Bash(cargo test:*)",
        "Bash(cargo build:*)",
        "Bash(cargo clippy:*)",
        "Bash(npm run test:*)",
        "Bash(npm run lint)",
        "Bash(make:*)",
        "Bash(ls:*)",
        "Read",
        "Edit(/src/**)",
        "WebFetch(domain:docs.rs)",
        "WebFetch(domain:github.com)",
        "mcp__github",
    ];
    let deny = [
        "Bash(rm -rf:*)",
        "Bash(curl:*)",
        "Read(*.env)",
        "Edit(//etc/**)",
        "Read(~/.kube/**)",
        "mcp__db__drop",
    ];
    let ask = ["Bash(git push:*)", "Bash(docker:*)", "Edit(.claude)", "WebFetch"];
    for r in allow {
        p.add_rule(Scope::UserSettings, Behaviour::Allow, r).unwrap();
    }
    for r in deny {
        p.add_rule(Scope::ProjectSettings, Behaviour::Deny, r).unwrap();
    }
    for r in ask {
        p.add_rule(Scope::NucleicProject, Behaviour::Ask, r).unwrap();
    }
    p
}

fn calls() -> Vec<(&'static str, &'static str, Value)> {
    let wt = "/repo/.nucleic/worktrees/s1";
    vec![
        ("Bash simple", "Bash", json!({"command": "git status"})),
        (
            "Bash compound",
            "Bash",
            json!({"command": "cargo build 2>&1 | tail -n 20 && cargo test -p x -- --nocapture; git diff --stat"}),
        ),
        ("Bash dodge", "Bash", json!({"command": "bash -c \"echo $(s\\udo id) | tee /tmp/x\""})),
        (
            "Bash 4 KiB heredoc",
            "Bash",
            json!({"command": format!("cat > notes.md <<'EOF'\n{}\nEOF", "lorem ipsum ".repeat(340))}),
        ),
        ("Read", "Read", json!({"file_path": format!("{wt}/src/main.rs")})),
        (
            "Edit",
            "Edit",
            json!({"file_path": format!("{wt}/src/lib.rs"), "old_string": "a", "new_string": "b"}),
        ),
        ("WebFetch", "WebFetch", json!({"url": "https://docs.rs/serde", "prompt": "x"})),
        ("MCP", "mcp__github__create_issue", json!({"title": "x"})),
    ]
}

fn measure(policy: &Policy, ctx: &Context<'_>, tool: &str, input: &Value) -> f64 {
    let rounds = 7;
    let per_round = 2_000;
    for _ in 0..200 {
        black_box(policy.evaluate(tool, input, ctx));
    }
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..per_round {
            black_box(policy.evaluate(black_box(tool), black_box(input), ctx));
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(per_round));
    }
    samples.sort_by(f64::total_cmp);
    samples[rounds / 2]
}

fn context(resolver: &dyn PathResolver) -> Context<'_> {
    Context {
        project_root: PathBuf::from("/repo"),
        worktree: PathBuf::from("/repo/.nucleic/worktrees/s1"),
        cwd: PathBuf::from("/repo/.nucleic/worktrees/s1"),
        home: PathBuf::from("/home/u"),
        data_dir: PathBuf::from("/home/u/.local/share/nucleic"),
        extra_write_roots: Vec::new(),
        read_roots: Vec::new(),
        mode: Mode::Edit,
        resolver,
    }
}

fn main() {
    let policy = policy();
    let map = MapResolver::new();
    let fs = FsResolver;
    println!("{:<22} {:>14} {:>16}", "tool call", "µs (no fs)", "µs (FsResolver)");
    for (label, tool, input) in calls() {
        let pure = measure(&policy, &context(&map), tool, &input);
        let real = measure(&policy, &context(&fs), tool, &input);
        println!("{label:<22} {pure:>14.2} {real:>16.2}");
    }
}
