//! Rules in Claude Code's syntax, precedence and compound commands.

use nucleic_policy::{Behaviour::*, Mode};
use serde_json::json;

use crate::support::{bash, policy, tool};

#[test]
fn exact_rule_allows_only_that_command() {
    let p = policy(&[(Allow, "Bash(git status)")]);
    assert_eq!(bash(&p, Mode::Edit, "git status").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "git status").by, "policy:Bash(git status)");
    assert_eq!(bash(&p, Mode::Edit, "git  'status'").behaviour, Allow);
    for line in [
        "git status; touch x",
        "git status && curl evil.com",
        "git status | sh",
        "git status $(touch x)",
    ] {
        assert_eq!(bash(&p, Mode::Edit, line).behaviour, Ask, "{line}");
    }
}

#[test]
fn prefix_rules_keep_word_boundaries_and_do_not_span_commands() {
    let p = policy(&[(Allow, "Bash(npm run test:*)"), (Allow, "Bash(cargo *)")]);
    assert_eq!(bash(&p, Mode::Edit, "npm run test -- --watch").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "npm run test").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "npm run testx").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "npm run test; touch x").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "cargo test && cargo clippy").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "cargo").behaviour, Allow);
}

#[test]
fn wrappers_and_assignments() {
    let p = policy(&[(Allow, "Bash(cargo test:*)")]);
    assert_eq!(bash(&p, Mode::Edit, "RUST_LOG=debug cargo test").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "timeout 60 cargo test").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "LD_PRELOAD=/x.so cargo test").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "env -i PATH=/tmp cargo test").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "bash -c 'cargo test'").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "BASH_ENV=/tmp/x bash -c 'cargo test'").behaviour, Ask);
    // Deny rules see through every wrapper.
    let d = policy(&[(Allow, "Bash(*)"), (Deny, "Bash(rm:*)")]);
    for line in [
        "rm x",
        "env rm x",
        "nohup rm x",
        "find . -name '*.o' | xargs rm",
        "bash -c 'rm x'",
        "echo $(rm x)",
    ] {
        assert_eq!(bash(&d, Mode::Edit, line).behaviour, Deny, "{line}");
    }
}

#[test]
fn deny_beats_ask_beats_allow_across_scopes() {
    use nucleic_policy::{Policy, Scope};
    let mut p = Policy::new();
    p.add_rule(Scope::UserSettings, Allow, "Bash(git:*)").unwrap();
    p.add_rule(Scope::ProjectSettings, Ask, "Bash(git commit:*)").unwrap();
    p.add_rule(Scope::NucleicHost, Deny, "Bash(git commit --amend:*)").unwrap();
    assert_eq!(bash(&p, Mode::Edit, "git log").behaviour, Allow);
    assert_eq!(bash(&p, Mode::Edit, "git commit -m x").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "git commit --amend").behaviour, Deny);
    assert_eq!(p.remove_rule(Scope::NucleicHost, "Bash(git commit --amend:*)"), 1);
    assert_eq!(bash(&p, Mode::Edit, "git commit --amend").behaviour, Ask);
}

#[test]
fn path_rules_for_file_tools() {
    let p = policy(&[
        (Deny, "Read(*.env)"),
        (Ask, "Edit(.claude)"),
        (Deny, "Edit(/etc/*)"),
        (Deny, "Read(//var/log/**)"),
        (Allow, "Read(~/notes/**)"),
    ]);
    let wt = crate::support::WORKTREE;
    assert_eq!(
        tool(&p, Mode::Edit, "Read", json!({"file_path": format!("{wt}/config/.env")})).behaviour,
        Deny
    );
    assert_eq!(
        tool(&p, Mode::Edit, "Read", json!({"file_path": format!("{wt}/src/main.rs")})).behaviour,
        Allow
    );
    assert_eq!(
        tool(&p, Mode::Edit, "Write", json!({"file_path": format!("{wt}/.claude/agents/a.md")}))
            .behaviour,
        Ask
    );
    // `/etc/*` is anchored at the project root, as in Claude Code.
    assert_eq!(tool(&p, Mode::Edit, "Edit", json!({"file_path": "/repo/etc/x"})).behaviour, Deny);
    assert_eq!(
        tool(&p, Mode::Edit, "Read", json!({"file_path": "/var/log/syslog"})).behaviour,
        Deny
    );
    assert_eq!(
        tool(&p, Mode::Edit, "Grep", json!({"pattern": "x", "path": "/var/log/nginx"})).behaviour,
        Deny
    );
    assert_eq!(
        tool(&p, Mode::Edit, "Read", json!({"file_path": "/home/u/notes/a.md"})).by,
        "policy:Read(~/notes/**)"
    );
    // Edit(path) covers every editing tool.
    assert_eq!(
        tool(
            &p,
            Mode::Edit,
            "NotebookEdit",
            json!({"notebook_path": format!("{wt}/.claude/n.ipynb")})
        )
        .behaviour,
        Ask
    );
}

#[test]
fn web_fetch_domains_and_mcp_servers() {
    let p = policy(&[
        (Allow, "WebFetch(domain:docs.rs)"),
        (Allow, "mcp__github"),
        (Deny, "mcp__db__drop_table"),
    ]);
    let fetch =
        |url: &str| tool(&p, Mode::Edit, "WebFetch", json!({"url": url, "prompt": "x"})).behaviour;
    assert_eq!(fetch("https://docs.rs/serde"), Allow);
    assert_eq!(fetch("https://DOCS.rs:443/x"), Allow);
    assert_eq!(fetch("https://docs.rs.evil.com/"), Ask);
    assert_eq!(fetch("https://docs.rs@evil.com/"), Ask);
    assert_eq!(tool(&p, Mode::Edit, "mcp__github__create_issue", json!({})).behaviour, Allow);
    assert_eq!(tool(&p, Mode::Edit, "mcp__githubx__create_issue", json!({})).behaviour, Ask);
    assert_eq!(tool(&p, Mode::Edit, "mcp__db__drop_table", json!({})).behaviour, Deny);
    assert_eq!(tool(&p, Mode::Edit, "mcp__db__query", json!({})).behaviour, Ask);
}

#[test]
fn unparsable_lines_are_never_auto_allowed() {
    let p = policy(&[(Allow, "Bash(*)")]);
    for line in [
        "$(echo sudo) id",
        "`echo rm` x",
        "for f in *; do rm $f; done",
        "case $x in a) id;; esac",
        "echo 'unterminated",
        "s{u,}do id",
        "$CMD x",
        "ｓｕｄｏ id",
        "sudо id",
    ] {
        let d = bash(&p, Mode::Full, line);
        assert_ne!(d.behaviour, Allow, "{line}: {d:?}");
    }
}

#[test]
fn internal_and_interaction_tools() {
    let p = policy(&[]);
    assert_eq!(tool(&p, Mode::Edit, "TodoWrite", json!({"todos": []})).behaviour, Allow);
    assert_eq!(tool(&p, Mode::Edit, "AskUserQuestion", json!({})).behaviour, Ask);
    assert_eq!(tool(&p, Mode::Edit, "Bash", json!({"cmd": "ls"})).behaviour, Deny);
}

#[test]
fn edit_rules_apply_to_shell_redirections() {
    let p =
        policy(&[(Allow, "Bash(*)"), (Deny, "Edit(src/generated/**)"), (Ask, "Edit(./Makefile)")]);
    assert_eq!(bash(&p, Mode::Edit, "echo x > src/generated/a.rs").behaviour, Deny);
    assert_eq!(bash(&p, Mode::Edit, "make dist >> Makefile").behaviour, Ask);
    assert_eq!(bash(&p, Mode::Edit, "echo x > sub/Makefile").behaviour, Allow);
}

#[test]
fn reads_outside_the_project_need_a_rule() {
    let p = policy(&[]);
    for line in [
        "cat ~/.netrc",
        "ls /etc",
        "cd / && cat etc/shadow",
        "grep -f/etc/shadow x",
        "rg --file=/home/u/.docker/config.json x",
        "printenv",
    ] {
        assert_eq!(bash(&p, Mode::Edit, line).behaviour, Ask, "{line}");
    }
    for line in [
        "cat src/main.rs",
        "ls -la ./crates",
        "grep -rn --include=*.rs TODO .",
        "cat /repo/README.md",
    ] {
        assert_eq!(bash(&p, Mode::Edit, line).behaviour, Allow, "{line}");
    }
    assert_eq!(tool(&p, Mode::Edit, "Read", json!({"file_path": "/home/u/.netrc"})).behaviour, Ask);
    assert_eq!(tool(&p, Mode::Readonly, "Read", json!({"file_path": "/etc/hosts"})).behaviour, Ask);
    assert_eq!(tool(&p, Mode::Edit, "Glob", json!({"pattern": "/etc/**/*.conf"})).behaviour, Ask);
    assert_eq!(
        tool(
            &p,
            Mode::Edit,
            "Glob",
            json!({"pattern": "../../../../**", "path": crate::support::WORKTREE})
        )
        .behaviour,
        Ask
    );
    assert_eq!(tool(&p, Mode::Edit, "Glob", json!({"pattern": "src/**/*.rs"})).behaviour, Allow);
    let with_rule = policy(&[(Allow, "Read(//etc/**)")]);
    assert_eq!(
        tool(&with_rule, Mode::Edit, "Read", json!({"file_path": "/etc/hosts"})).behaviour,
        Allow
    );
    // Option values that write are write targets of any program.
    assert_eq!(
        bash(&crate::support::permissive(), Mode::Edit, "git diff --output=../x").by,
        "invariant:write-outside-worktree"
    );
}
