//! Claude Code's `WebFetch` under the confinement, by effect, with the real pinned CLI against
//! the mock (as root, in its own network and mount namespaces: a TLS web site on an address that
//! is not loopback, names for it in a private `/etc/hosts`). The CLI makes the fetch itself, so
//! the egress proxy would refuse it as the program's own traffic: an allowed call grants its
//! name for a while — the server hears the fetch and the page reaches the model — while a denied
//! call, another name, and a command reaching the granted name after the grant all stay out.

use std::time::Duration;

use nucleic_host::Host;
use nucleic_protocol::{Backend, Decision, EventKind};
use nucleic_testkit::agents::claude_offline_env;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Reply, SIDE_QUERY_ANSWER, Script, ToolCall};
use serde_json::json;

use nucleic_testkit::mock_web::{MockWeb, PAGE};

use crate::egress_ask::{ELSEWHERE, names_at_elsewhere};
use crate::real_policy::{host_config, new_session, shutdown};

fn web_fetch(url: &str) -> ToolCall {
    ToolCall::new("WebFetch", json!({"url": url, "prompt": "what does it say"}))
}

/// Runs one turn of `id` to its end, answering a `WebFetch` of docs.test with an allow and any
/// other with a denial, the host's own egress questions with a denial and other tool calls with
/// an allow; the turn's events.
async fn turn(host: &Host, id: &str) -> Vec<EventKind> {
    let mut events = host.subscribe(id, 1).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(90), events.next())
            .await
            .expect("the turn did not end within 90 s")
            .unwrap()
            .unwrap();
        seen.push(e.kind.clone());
        match &e.kind {
            EventKind::TurnCompleted(_) => return seen,
            EventKind::ApprovalRequested(a) => {
                let no = Decision::Deny { message: "not in this test".into() };
                let answer = match a.tool_name.as_str() {
                    "WebFetch" if a.input.to_string().contains("docs.test") => Decision::Allow,
                    "WebFetch" | nucleic_protocol::EGRESS_APPROVAL => no,
                    _ => Decision::Allow,
                };
                let _ = host.decide(id, &a.request_id, answer, "person").await;
            }
            _ => {}
        }
    }
}

fn tool_results(events: &[EventKind]) -> String {
    let results = events.iter().filter_map(|k| match k {
        EventKind::ToolResult(t) => Some(t.content.to_string()),
        _ => None,
    });
    results.collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_webfetch_reaches_its_name_and_nothing_else_gets_out() {
    if nucleic_testkit::isolated!(
        "an_allowed_webfetch_reaches_its_name_and_nothing_else_gets_out",
        mounts
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    names_at_elsewhere(dir.path(), "docs.test denied.test other.test");
    let root = crate::daemon::empty_repo(dir.path());
    // The site's certificate in the main checkout, which the agent's sandbox shows read-only.
    let ip = ELSEWHERE.parse().unwrap();
    let web = MockWeb::start(&root, ip, &["docs.test", "denied.test", "other.test"]).await.unwrap();
    let p = web.port();
    let ca = web.ca_file().display().to_string();
    // An allowed fetch of docs.test, a command reaching docs.test and other.test itself, a
    // denied fetch of denied.test.
    let probe = format!(
        "curl -sS -m 20 --cacert {ca} https://docs.test:{p}/by-command; \
         curl -sS -m 20 --cacert {ca} https://other.test:{p}/by-command; echo probe-done"
    );
    let calls = [
        web_fetch(&format!("https://docs.test:{p}/guide")),
        crate::real_policy::bash(&probe),
        web_fetch(&format!("https://denied.test:{p}/x")),
    ];
    let mut replies: Vec<Reply> =
        calls.into_iter().map(|c| Reply::ToolUses { text: None, calls: vec![c] }).collect();
    replies.push(Reply::Text("done".into()));
    let script = Script::new(replies);
    let mock = MockAnthropic::start(script).await.unwrap();
    let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
    env.push(("NODE_EXTRA_CA_CERTS".into(), ca.clone()));
    let mut config = host_config(&dir.path().join("home"), env, true);
    config.agent_isolation = nucleic_host::AgentIsolation::Required;
    let host = Host::open(config).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let request = new_session(&project.project_id, Backend::ClaudeCode, "read the guide");
    let id = host.new_session(request, "test").await.unwrap().session_id;
    let events = turn(&host, &id).await;
    shutdown(host).await;
    let output = tool_results(&events);
    assert_eq!(web.heard("docs.test").len(), 1, "the allowed fetch, once: {output}");
    assert!(web.heard("/guide")[0].starts_with("GET /guide"), "{:?}", web.heard("docs.test"));
    assert!(!output.contains("Unable to verify"), "the CLI's preflight failed it: {output}");
    // The page reached the model (the CLI's side query reading it), its answer the tool result.
    let page_seen = mock.requests().iter().any(|r| r.body.to_string().contains("MOCK-WEB-PAGE"));
    assert!(page_seen && PAGE.contains("MOCK-WEB-PAGE"), "the page reached no model: {output}");
    assert!(output.contains(SIDE_QUERY_ANSWER), "{output}");
    // A command the agent ran is not the fetch the person allowed: asked (and denied here).
    assert!(output.contains("probe-done"), "{output}");
    assert!(web.heard("by-command").is_empty(), "a command used the grant: {output}");
    let asked: Vec<String> = events
        .iter()
        .filter_map(|k| match k {
            EventKind::ApprovalRequested(a) if a.tool_name == nucleic_protocol::EGRESS_APPROVAL => {
                a.input["host"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert!(asked.contains(&"docs.test".into()), "{asked:?}: {output}");
    assert!(asked.contains(&"other.test".into()), "{asked:?}: {output}");
    // The denied fetch reached nothing.
    assert!(web.heard("denied.test").is_empty(), "{output}");
}
