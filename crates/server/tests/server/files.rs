//! `welcome` lists the backends; `listFiles` / `readFile` over the WebSocket, paths that escape.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn welcome_lists_every_backend_with_its_capabilities() {
    let s = start().await;
    let mut socket = ws(&s).await;
    send(
        &mut socket,
        json!({"type": "hello", "clientID": "c1", "clientName": "t", "protocolVersion": 1}),
    )
    .await;
    let welcome = recv(&mut socket).await;
    assert_eq!(welcome["type"], "welcome");
    let backends = welcome["backends"].as_array().unwrap();
    let names: Vec<&str> = backends.iter().map(|b| b["backend"].as_str().unwrap()).collect();
    assert_eq!(names, ["claudeCode", "codex", "gemini", "simulated"]);
    // This test host has no claude and a sim program that does not exist.
    assert!(backends.iter().all(|b| b["available"] == false), "{welcome}");
    let claude = &backends[0];
    assert_eq!(claude["capabilities"]["editedToolInput"], true);
    assert_eq!(claude["permissionModes"][0], "default");
    assert!(claude["models"].as_array().unwrap().contains(&json!("sonnet")));
    let codex = &backends[1];
    assert_eq!(codex["capabilities"]["editedToolInput"], false);
    assert_eq!(codex["capabilities"]["setModel"], false);
    let gemini = &backends[2];
    assert_eq!(gemini["capabilities"]["interactiveApprovals"], true);
    assert_eq!(gemini["capabilities"]["resume"], false);
    assert_eq!(gemini["permissionModes"][3], "bypassPermissions");
    assert!(gemini["models"].as_array().unwrap().contains(&json!("gemini-2.5-pro")));
    assert_eq!(backends[3]["models"], json!(["sim"]));
}

/// A session with no agent (its setup script failed): its directory is the project root.
pub(crate) async fn agentless_session(s: &Server) -> String {
    let root = s.repo.to_str().unwrap().to_owned();
    let project = s
        .host
        .add_project(&root, None, |settings| settings.setup_script = Some("exit 3".into()))
        .await
        .unwrap();
    let session = s
        .host
        .new_session(
            nucleic_protocol::NewSession {
                project_id: project.project_id,
                base_ref: None,
                backend: Some(nucleic_protocol::Backend::Simulated),
                model: None,
                permission_mode: None,
                title: None,
                mode: None,
                prompt: "p".into(),
            },
            "test",
        )
        .await
        .unwrap();
    session.session_id
}

#[tokio::test]
async fn files_of_a_session_are_listed_and_read_and_escapes_refused() {
    let s = start().await;
    std::fs::create_dir_all(s.repo.join("docs")).unwrap();
    std::fs::write(s.repo.join("docs/notes.md"), "# notes\n").unwrap();
    std::fs::write(s.repo.join("pixel.gif"), b"GIF89a\x01\x00").unwrap();
    std::fs::write(s.dir.path().join("outside.txt"), "secret").unwrap();
    let id = agentless_session(&s).await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;

    send(&mut socket, json!({"type": "listFiles", "messageID": "l1", "sessionID": id, "path": "", "recursive": true})).await;
    let files = recv(&mut socket).await;
    assert_eq!((files["type"].as_str(), files["messageID"].as_str()), (Some("files"), Some("l1")));
    let paths: Vec<&str> =
        files["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"docs/notes.md") && paths.contains(&"pixel.gif"), "{files}");
    assert!(!paths.iter().any(|p| p.starts_with(".git")), "{files}");
    assert_eq!(files["truncated"], false);
    // `path` and `recursive` may be left out.
    send(&mut socket, json!({"type": "listFiles", "messageID": "l2", "sessionID": id})).await;
    let top = recv(&mut socket).await;
    assert_eq!(top["path"], "");
    assert!(!top["entries"].as_array().unwrap().iter().any(|e| e["path"] == "docs/notes.md"));

    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "r1", "sessionID": id, "path": "docs/notes.md"}),
    )
    .await;
    let text = recv(&mut socket).await;
    assert_eq!(text["type"], "fileContent");
    assert_eq!(
        text["file"],
        json!({"path": "docs/notes.md", "size": 8, "mime": "text/plain", "encoding": "utf8", "content": "# notes\n", "truncated": false})
    );
    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "r2", "sessionID": id, "path": "pixel.gif"}),
    )
    .await;
    let image = recv(&mut socket).await;
    assert_eq!(
        (image["file"]["mime"].as_str(), image["file"]["encoding"].as_str()),
        (Some("image/gif"), Some("base64"))
    );
    assert_eq!(image["file"]["content"], "R0lGODlhAQA=");

    for (n, bad) in ["../outside.txt", "/etc/hostname", ".git/config"].iter().enumerate() {
        let mid = format!("bad{n}");
        send(
            &mut socket,
            json!({"type": "readFile", "messageID": mid, "sessionID": id, "path": bad}),
        )
        .await;
        let reply: Value = recv(&mut socket).await;
        assert_eq!(
            (reply["type"].as_str(), reply["code"].as_str()),
            (Some("error"), Some("invalidRequest")),
            "{bad}: {reply}"
        );
        assert_eq!(reply["messageID"], mid.as_str());
    }
    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "nf", "sessionID": "nope", "path": "a"}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["code"], "notFound");
    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "nf2", "sessionID": id, "path": "gone.txt"}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["code"], "notFound");
    // A read reuses no earlier reply: the file changed, the content follows.
    std::fs::write(s.repo.join("docs/notes.md"), "# changed\n").unwrap();
    send(
        &mut socket,
        json!({"type": "readFile", "messageID": "r1", "sessionID": id, "path": "docs/notes.md"}),
    )
    .await;
    assert_eq!(recv(&mut socket).await["file"]["content"], "# changed\n");
}

#[tokio::test]
async fn a_projects_branches_are_listed_without_session_branches() {
    let s = start().await;
    let id = agentless_session(&s).await;
    let row = s.host.list_sessions(None, true).await.unwrap();
    let project = row.iter().find(|r| r.session_id == id).unwrap().project_id.clone().unwrap();
    for args in [["branch", "feature/x"], ["branch", "release"]] {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(&s.repo)
                .status()
                .unwrap()
                .success()
        );
    }
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    send(&mut socket, json!({"type": "listBranches", "messageID": "b1", "projectID": project}))
        .await;
    let reply = recv(&mut socket).await;
    assert_eq!(reply["type"], "branches", "{reply}");
    assert_eq!(reply["defaultBranch"], "main");
    let mut branches: Vec<&str> =
        reply["branches"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
    branches.sort_unstable();
    // The session's own `nucleic/…` branch is not offered as a base.
    assert_eq!(branches, vec!["feature/x", "main", "release"]);
    send(&mut socket, json!({"type": "listBranches", "messageID": "b2", "projectID": "nope"}))
        .await;
    assert_eq!(recv(&mut socket).await["code"], "notFound");
}

#[tokio::test]
async fn an_imported_session_has_no_files_even_when_its_directory_is_the_root() {
    let s = start().await;
    // A Claude Code transcript whose working directory is `/`.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../transfer/tests/fixtures/claude-transcript.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap().replace("/home/dev/ws/hello", "/");
    let transcript = s.dir.path().join("rooted.jsonl");
    std::fs::write(&transcript, text).unwrap();
    let imported = s.host.import_session(&transcript).await.unwrap();
    assert!(imported.read_only);
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    let id = imported.session_id.as_str();
    for (mid, request) in [
        ("i1", json!({"type": "readFile", "sessionID": id, "path": "etc/hostname"})),
        ("i2", json!({"type": "listFiles", "sessionID": id, "path": ""})),
        ("i3", json!({"type": "listFiles", "sessionID": id, "path": "etc", "recursive": true})),
    ] {
        let mut request = request;
        request["messageID"] = json!(mid);
        send(&mut socket, request).await;
        let reply = recv(&mut socket).await;
        assert_eq!(
            (reply["type"].as_str(), reply["code"].as_str()),
            (Some("error"), Some("invalidRequest")),
            "{mid}: {reply}"
        );
        assert!(reply["message"].as_str().unwrap().contains("imported"), "{reply}");
    }
}
