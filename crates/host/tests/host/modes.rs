//! Modes and rules through the host's intents (what the cockpit and `nucleic` send): the
//! project's default mode survives a host restart, bad modes are refused clearly, and the rules
//! that apply are listed by scope with Nucleic's added and removed through `host::rules`.

use std::os::unix::fs::PermissionsExt;

use nucleic_host::{Host, HostError};
use nucleic_protocol::{
    Intent, IntentResult, RuleBehaviour, RuleList, RuleScope, RuleSource, RulesTarget,
};
use serde_json::Value;

use crate::support::{config, new_session, repo};

fn target(project: &str) -> RulesTarget {
    RulesTarget { session_id: None, project_id: Some(project.to_owned()) }
}

async fn listed(host: &Host, target: RulesTarget) -> RuleList {
    let result = host.intent(Intent::ListRules(target), "t").await.unwrap();
    let Some(IntentResult::Rules(rules)) = result else { panic!("{result:?}") };
    rules
}

#[tokio::test(flavor = "multi_thread")]
async fn the_projects_default_mode_survives_a_restart_and_bad_modes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let mut cfg = config(dir.path());
    cfg.policy = true;
    let host = Host::open(cfg.clone()).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id.clone();
    assert_eq!(listed(&host, target(&pid)).await.project_mode.as_deref(), Some("edit"));
    let set = Intent::SetProjectMode { project_id: pid.clone(), mode: Some("readonly".into()) };
    let answer = host.intent(set, "t").await.unwrap().unwrap().payload();
    assert_eq!(answer["mode"], "readonly");
    host.shutdown(std::time::Duration::from_secs(1), std::time::Duration::from_secs(5)).await;

    let host = Host::open(cfg.clone()).await.unwrap();
    assert_eq!(listed(&host, target(&pid)).await.project_mode.as_deref(), Some("readonly"));
    assert_eq!(host.project_mode(&pid).unwrap().as_str(), "readonly");
    // The rule file keeps it as `mode`, private to the host's user.
    let file = dir.path().join("home/projects").join(&pid).join("rules.json");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(kept["mode"], "readonly");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

    // A bad mode is refused, naming the three, and changes nothing.
    let bad = Intent::SetProjectMode { project_id: pid.clone(), mode: Some("yolo".into()) };
    let e = host.intent(bad, "t").await.unwrap_err();
    assert!(
        matches!(&e, HostError::Invalid(m) if m.contains("\"yolo\"") && m.contains("readonly, edit or full")),
        "{e}"
    );
    assert_eq!(host.project_mode(&pid).unwrap().as_str(), "readonly");
    // Back to the host's default.
    host.intent(Intent::SetProjectMode { project_id: pid.clone(), mode: None }, "t").await.unwrap();
    assert_eq!(host.project_mode(&pid).unwrap().as_str(), "edit");
    // An unknown project is not found.
    let e = host.set_project_mode("nope", Some("full")).await.unwrap_err();
    assert!(matches!(e, HostError::NotFound(_)), "{e}");

    // The simulated agent has no policy: asking it for a mode is refused before a worktree
    // exists, and so is switching a running one.
    let mut request = new_session(&pid, "write a.txt containing x");
    request.mode = Some("full".into());
    let e = host.new_session(request, "t").await.unwrap_err().to_string();
    assert!(e.contains("no policy"), "{e}");
    let mut request = new_session(&pid, "write a.txt containing x");
    request.mode = Some("yolo".into());
    assert!(host.new_session(request, "t").await.is_err());
    let id = host.new_session(new_session(&pid, "hi"), "t").await.unwrap().session_id;
    assert_eq!(host.session_summary(&id).await.unwrap().mode, None);
    let switch = Intent::SetMode { session_id: id.clone(), mode: "readonly".into() };
    let e = host.intent(switch, "t").await.unwrap_err().to_string();
    assert!(e.contains("no policy"), "{e}");
    let e = host.set_session_mode(&id, "sideways", "t").await.unwrap_err().to_string();
    assert!(e.contains("\"sideways\""), "{e}");
    host.shutdown(std::time::Duration::from_secs(1), std::time::Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rules_are_listed_by_scope_added_and_removed_through_the_intents() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(
        root.join(".claude/settings.json"),
        r#"{"permissions":{"deny":["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    std::fs::write(root.join(".claude/settings.local.json"), "{\"permissions\": [").unwrap();
    let host = Host::open(config(dir.path())).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let pid = project.project_id.clone();
    let add = |scope, behaviour, rule: &str| Intent::AddRule {
        session_id: None,
        project_id: Some(pid.clone()),
        scope,
        behaviour,
        rule: rule.into(),
    };
    let answer = host.intent(add(RuleScope::Project, RuleBehaviour::Ask, "Bash(git push:*)"), "t");
    assert_eq!(answer.await.unwrap().unwrap().payload()["added"], true);
    host.intent(add(RuleScope::Host, RuleBehaviour::Allow, "Bash(make test)"), "t").await.unwrap();

    let list = listed(&host, target(&pid)).await;
    let shown: Vec<_> =
        list.rules.iter().map(|r| (r.source, r.behaviour, r.rule.as_str(), r.removable)).collect();
    assert!(
        shown.contains(&(RuleSource::NucleicProject, RuleBehaviour::Ask, "Bash(git push:*)", true)),
        "{shown:?}"
    );
    assert!(
        shown.contains(&(RuleSource::NucleicHost, RuleBehaviour::Allow, "Bash(make test)", true)),
        "{shown:?}"
    );
    // Claude Code's project file is shown read-only, with its path.
    let claude = list.rules.iter().find(|r| r.source == RuleSource::ProjectSettings).unwrap();
    assert_eq!((claude.rule.as_str(), claude.removable), ("Bash(rm:*)", false));
    assert!(claude.path.as_deref().unwrap().ends_with(".claude/settings.json"), "{claude:?}");
    // The malformed file is named; the others still list.
    assert!(list.problems.iter().any(|p| p.contains("settings.local.json")), "{:?}", list.problems);
    // The project's file is private to the host's user.
    let file = dir.path().join("home/projects").join(&pid).join("rules.json");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

    // A malformed rule is refused with the parser's message, and nothing is written.
    let before = std::fs::read_to_string(&file).unwrap();
    let e = host.intent(add(RuleScope::Project, RuleBehaviour::Deny, "Bash(ls"), "t").await;
    let e = e.unwrap_err();
    assert!(matches!(&e, HostError::Invalid(m) if m.contains("Bash(ls")), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // Removed: gone from the list; removing it again, or a Claude Code rule, is not found.
    let rm = |scope, rule: &str| Intent::RemoveRule {
        session_id: None,
        project_id: Some(pid.clone()),
        scope,
        rule: rule.into(),
    };
    let answer = host.intent(rm(RuleScope::Project, "Bash(git push:*)"), "t").await.unwrap();
    assert_eq!(answer.unwrap().payload()["removed"], 1);
    let list = listed(&host, target(&pid)).await;
    assert!(list.rules.iter().all(|r| r.rule != "Bash(git push:*)"), "{:?}", list.rules);
    let e = host.intent(rm(RuleScope::Project, "Bash(git push:*)"), "t").await.unwrap_err();
    assert!(matches!(e, HostError::NotFound(_)), "{e}");
    let e = host.intent(rm(RuleScope::Project, "Bash(rm:*)"), "t").await.unwrap_err();
    assert!(matches!(e, HostError::NotFound(_)), "{e}");
    assert!(std::fs::read_to_string(root.join(".claude/settings.json")).unwrap().contains("rm:*"));

    // Session rules need a running session with a policy (the simulated agent has none).
    let id = host.new_session(new_session(&pid, "hi"), "t").await.unwrap().session_id;
    let session_rule = Intent::AddRule {
        session_id: Some(id.clone()),
        project_id: None,
        scope: RuleScope::Session,
        behaviour: RuleBehaviour::Allow,
        rule: "Read".into(),
    };
    let e = host.intent(session_rule, "t").await.unwrap_err().to_string();
    assert!(e.contains("no running agent with a policy"), "{e}");
    // A session's listing has its project's rules too.
    let by_session = RulesTarget { session_id: Some(id), project_id: None };
    let list = listed(&host, by_session).await;
    assert!(list.rules.iter().any(|r| r.rule == "Bash(make test)"), "{:?}", list.rules);
    host.shutdown(std::time::Duration::from_secs(1), std::time::Duration::from_secs(5)).await;
}
