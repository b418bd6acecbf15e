//! `welcome` lists the backends; `listFiles` / `readFile` / `listBranches` through
//! `nucleic-client`, paths that escape.

use nucleic_protocol::{FileEncoding, ProtocolErrorCode};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn welcome_lists_every_backend_with_its_capabilities() {
    let s = start().await;
    let client = client(&s).await;
    let backends = serde_json::to_value(&client.welcome().backends).unwrap();
    let backends = backends.as_array().unwrap();
    let names: Vec<&str> = backends.iter().map(|b| b["backend"].as_str().unwrap()).collect();
    assert_eq!(names, ["claudeCode", "codex", "gemini", "openCode", "qwen", "simulated"]);
    // This test host has no claude and a sim program that does not exist.
    assert!(backends.iter().all(|b| b["available"] == false), "{backends:?}");
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
    assert_eq!(backends[5]["models"], json!(["sim"]));
    let qwen = &backends[4];
    assert_eq!(qwen["capabilities"]["interactiveApprovals"], true, "{qwen}");
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
    let mut client = client(&s).await;

    let files = client.list_files(&id, "", true).await.unwrap();
    let paths: Vec<&str> = files.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"docs/notes.md") && paths.contains(&"pixel.gif"), "{files:?}");
    assert!(!paths.iter().any(|p| p.starts_with(".git")), "{files:?}");
    assert!(!files.truncated);
    let top = client.list_files(&id, "", false).await.unwrap();
    assert_eq!(top.path, "");
    assert!(!top.entries.iter().any(|e| e.path == "docs/notes.md"));

    let text = client.read_file(&id, "docs/notes.md").await.unwrap();
    assert_eq!(
        serde_json::to_value(&text).unwrap(),
        json!({"path": "docs/notes.md", "size": 8, "mime": "text/plain", "encoding": "utf8", "content": "# notes\n", "truncated": false})
    );
    let image = client.read_file(&id, "pixel.gif").await.unwrap();
    assert_eq!((image.mime.as_str(), image.encoding), ("image/gif", FileEncoding::Base64));
    assert_eq!(image.content, "R0lGODlhAQA=");

    for bad in ["../outside.txt", "/etc/hostname", ".git/config"] {
        let (code, _) = refused(client.read_file(&id, bad).await);
        assert_eq!(code, Some(ProtocolErrorCode::InvalidRequest), "{bad}");
    }
    assert_eq!(refused(client.read_file("nope", "a").await).0, Some(ProtocolErrorCode::NotFound));
    assert_eq!(
        refused(client.read_file(&id, "gone.txt").await).0,
        Some(ProtocolErrorCode::NotFound)
    );
    // A read reuses no earlier reply: the file changed, the content follows.
    std::fs::write(s.repo.join("docs/notes.md"), "# changed\n").unwrap();
    assert_eq!(client.read_file(&id, "docs/notes.md").await.unwrap().content, "# changed\n");
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
    let mut client = client(&s).await;
    let (mut branches, default_branch) = client.list_branches(&project).await.unwrap();
    assert_eq!(default_branch, "main");
    branches.sort_unstable();
    // The session's own `nucleic/…` branch is not offered as a base.
    assert_eq!(branches, vec!["feature/x", "main", "release"]);
    assert_eq!(refused(client.list_branches("nope").await).0, Some(ProtocolErrorCode::NotFound));
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
    let mut client = client(&s).await;
    let id = imported.session_id.as_str();
    let replies = [
        ("readFile etc/hostname", refused(client.read_file(id, "etc/hostname").await)),
        ("listFiles", refused(client.list_files(id, "", false).await)),
        ("listFiles etc", refused(client.list_files(id, "etc", true).await)),
    ];
    for (what, (code, message)) in replies {
        assert_eq!(code, Some(ProtocolErrorCode::InvalidRequest), "{what}: {message}");
        assert!(message.contains("imported"), "{what}: {message}");
    }
}
