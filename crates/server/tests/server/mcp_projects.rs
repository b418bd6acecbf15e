//! A grant limited to one project, over the socket: following another project's session is
//! refused (forbidden), and the session changes pushed to it never name another project's
//! session — while its own project's arrive.

use std::time::{Duration, Instant};

use nucleic_client::{Backoff, Client, ClientOptions, Endpoint};
use nucleic_protocol::{HostMessage, Intent, McpGranted, McpScope, ProtocolErrorCode, Verbosity};

use crate::support::*;

async fn session_in(s: &Server, root: &std::path::Path) -> String {
    let project = s
        .host
        .add_project(root.to_str().unwrap(), None, |settings| {
            settings.setup_script = Some("exit 3".into())
        })
        .await
        .unwrap();
    let new = nucleic_protocol::NewSession {
        project_id: project.project_id,
        base_ref: None,
        backend: Some(nucleic_protocol::Backend::Simulated),
        model: None,
        permission_mode: None,
        title: None,
        mode: None,
        prompt: "p".into(),
    };
    s.host.new_session(new, "test").await.unwrap().session_id
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_of_one_project_follows_and_hears_of_that_project_only() {
    let s = start().await;
    let in_a = session_in(&s, &s.repo).await;
    let in_b = session_in(&s, &git_repo(&s.dir.path().join("b"))).await;
    let a = s.host.session_summary(&in_a).await.unwrap().project_id.unwrap();
    let mut person = client(&s).await;
    let granted: McpGranted = person
        .intent_as(Intent::GrantMcp {
            name: "a-only".into(),
            scopes: McpScope::ALL.to_vec(),
            session_id: None,
            project_ids: Some(vec![a]),
        })
        .await
        .unwrap();
    let mut options = ClientOptions::new("mcp", "mcp");
    options.reconnect = Backoff::never();
    options.session_changes = true;
    let mut mcp =
        Client::connect(Endpoint::Tcp(s.addr), &granted.credential, options).await.unwrap();

    // Following B's session is refused; A's is followed.
    let (code, why) = refused(mcp.subscribe(&in_b, 1, Verbosity::Full).await);
    assert_eq!(code, Some(ProtocolErrorCode::Forbidden), "{why}");
    assert!(why.contains("not in a project it covers"), "{why}");
    mcp.subscribe(&in_a, 1, Verbosity::Full).await.unwrap();

    // B changes first, then A: by the time A's change arrives, B's would have.
    for (session, title) in [(&in_b, "renamed b"), (&in_a, "renamed a")] {
        let rename = Intent::Rename { session_id: session.clone(), title: title.into() };
        person.intent(rename).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "A's change never arrived within 20 s");
        match mcp.next_within(Duration::from_millis(200)).await {
            Ok(HostMessage::SessionChanged { session }) => {
                assert_ne!(session.session_id, in_b, "B's change reached the grant: {session:?}");
                if session.session_id == in_a && session.title == "renamed a" {
                    break;
                }
            }
            Ok(_) | Err(nucleic_client::ClientError::Timeout { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
