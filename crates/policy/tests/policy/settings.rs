//! Rules read from the files Claude Code reads, and Nucleic's own.

use std::fs;

use nucleic_policy::{Behaviour::*, LoadWarning, Mode, Policy, Scope, Sources};

use crate::support::bash;

#[test]
fn every_scope_is_read_and_a_malformed_file_only_loses_itself() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("repo");
    let home = dir.path().join("home");
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::create_dir_all(home.join(".claude")).unwrap();
    fs::write(home.join(".claude/settings.json"), r#"{"permissions":{"allow":["Bash(*)"]}}"#)
        .unwrap();
    fs::write(
        project.join(".claude/settings.json"),
        r#"{"permissions":{"deny":["Bash(curl:*)","Teleport"]}}"#,
    )
    .unwrap();
    fs::write(project.join(".claude/settings.local.json"), r#"{"permissions":{"allow":["Bash(ls"#)
        .unwrap();
    let host_rules = dir.path().join("rules.json");
    fs::write(&host_rules, r#"{"mode":"readonly","permissions":{"ask":["Bash(git push:*)"]}}"#)
        .unwrap();
    let managed = dir.path().join("managed-settings.json");
    fs::write(&managed, r#"{"permissions":{"deny":["Bash(terraform apply:*)"]}}"#).unwrap();
    let sources = Sources {
        nucleic_host: Some(host_rules),
        claude_managed: Some(managed),
        ..Sources::claude(project, home)
    };
    let (policy, warnings) = Policy::load(&sources);

    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let malformed = warnings.iter().find(|w| matches!(w, LoadWarning::Malformed { .. })).unwrap();
    assert!(malformed.to_string().contains("settings.local.json"), "{malformed}");
    assert!(
        warnings
            .iter()
            .any(|w| matches!(w, LoadWarning::UnknownTool { rule, .. } if rule == "Teleport"))
    );
    assert_eq!(policy.default_mode, Some(Mode::Readonly));
    assert!(policy.rules().iter().any(|r| r.scope == Scope::UserSettings));

    assert_eq!(bash(&policy, Mode::Edit, "make").behaviour, Allow);
    assert_eq!(bash(&policy, Mode::Edit, "curl https://x").behaviour, Deny);
    assert_eq!(bash(&policy, Mode::Full, "git push origin main").behaviour, Ask);
    assert_eq!(bash(&policy, Mode::Edit, "sudo true").by, "invariant:sudo");
    assert_eq!(bash(&policy, Mode::Full, "terraform apply -auto-approve").behaviour, Deny);
}

#[test]
fn missing_files_are_no_rules_and_unreadable_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let sources = Sources {
        project_root: dir.path().join("none"),
        user_home: dir.path().join("none"),
        nucleic_project: Some(dir.path().to_path_buf()), // a directory: unreadable as a file
        nucleic_host: None,
        claude_managed: None,
    };
    let (policy, warnings) = Policy::load(&sources);
    assert!(policy.rules().is_empty());
    assert!(
        matches!(&warnings[..], [LoadWarning::Unreadable { path, .. }] if path == dir.path()),
        "{warnings:?}"
    );
}
