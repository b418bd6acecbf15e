//! Files through `nucleic chat` on Telegram (the testkit's mock Bot API) with the daemon running
//! the simulated agent: `/cc send` sends a worktree file as a document, and refuses `../`,
//! absolute paths and a symlink to a secret outside (checked by what the mock received); a
//! document and a photo sent in become the session's attachments (0600, readable by the
//! confined agent, not writable, gone after `keep`); a 50 MB document, and one whose declared
//! size lies, are refused without being kept; a file name with `../` stays in its folder.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nucleic_testkit::mock_telegram::MockTelegram;

use crate::chat_bridge::{
    BridgeProc, ME, TOKEN, code_of, drained, only_session, pair, sent_containing, setup, show,
};

/// Approves the next approval after `skip` (by code) and waits for the turn's end.
async fn approve_next(mock: &MockTelegram, skip: usize) {
    let approval = sent_containing(mock, ME, "Approval ", skip).await;
    let code = code_of(&approval);
    mock.push_message(ME, None, ME, &format!("/cc approve {code}"));
    sent_containing(mock, ME, &format!("{code} approved"), skip).await;
    sent_containing(mock, ME, "Turn ended", skip).await;
}

/// Every byte the bot sent, in messages and documents.
fn everything_sent(mock: &MockTelegram) -> Vec<u8> {
    let mut all = Vec::new();
    for s in mock.sent() {
        all.extend_from_slice(s.text.as_bytes());
        if let Some((_, bytes)) = &s.file {
            all.extend_from_slice(bytes);
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_files_go_both_ways_confined_to_the_worktree_and_size_capped() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "files");
    pair(&home, &mock).await;

    // A file before any session: nothing to attach it to, said plainly.
    mock.push_document(ME, ME, "early.txt", b"early", 5, None);
    sent_containing(&mock, ME, "Not taken: early.txt has no session", 0).await;

    mock.push_message(ME, None, ME, "/cc write hello.txt containing hi there");
    approve_next(&mock, 0).await;
    let session = only_session(&home).await;
    let worktree =
        PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap().to_owned());

    // Out: a worktree file as a document, its bytes as on disk.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc send hello.txt");
    sent_containing(&mock, ME, "Sending hello.txt", skip).await;
    let doc = sent_containing(&mock, ME, "hello.txt from session", skip).await;
    assert_eq!(doc.method, "sendDocument");
    let (name, bytes) = doc.file.clone().unwrap();
    assert_eq!(name, "hello.txt");
    assert_eq!(bytes, std::fs::read(worktree.join("hello.txt")).unwrap());
    let spool = home.join("chat/files/out");
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0, "the sent file's spool copy stays");

    // Attacks: a symlink in the worktree to a secret outside it (absolute and relative), `../`,
    // an absolute path, `.git`. Not one byte of the secret is sent.
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-7f3a\n").unwrap();
    std::os::unix::fs::symlink(&secret, worktree.join("leak")).unwrap();
    let up = "../".repeat(worktree.strip_prefix(dir.path()).unwrap().components().count());
    std::os::unix::fs::symlink(format!("{up}secret.txt"), worktree.join("rel-leak")).unwrap();
    std::fs::create_dir(worktree.join("sub")).unwrap();
    std::os::unix::fs::symlink(dir.path(), worktree.join("sub/out")).unwrap();
    let skip = mock.sent().len();
    for path in ["leak", "rel-leak", "sub/out/secret.txt"] {
        mock.push_message(ME, None, ME, &format!("/cc send {path}"));
        sent_containing(&mock, ME, "Not sent: ", skip).await;
    }
    for path in ["../secret.txt", "/etc/hostname", "sub/../../secret.txt"] {
        mock.push_message(ME, None, ME, &format!("/cc send {path}"));
    }
    mock.push_message(ME, None, ME, "/cc send .git/config");
    drained(&mock).await;
    let refusals: Vec<String> = mock
        .sent()
        .iter()
        .skip(skip)
        .map(|s| s.text.clone())
        .filter(|t| !t.contains("/cc <task>"))
        .collect();
    assert_eq!(refusals.len(), 7, "one answer per attempt: {refusals:#?}");
    assert!(
        refusals.iter().all(|t| t.contains("Not sent") || t.contains("/cc send")),
        "{refusals:#?}"
    );
    assert!(
        mock.sent().iter().skip(skip).all(|s| s.method != "sendDocument"),
        "a document went out"
    );
    assert!(!contains(&everything_sent(&mock), b"TOP-SECRET-7f3a"), "the secret was sent");
    // A file over the host's 4 MiB read limit: refused, not cut.
    std::fs::write(worktree.join("big.bin"), vec![b'x'; 5 << 20]).unwrap();
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc send big.bin");
    let refused = sent_containing(&mock, ME, "Not sent: big.bin is 5.0 MiB", skip).await;
    println!("refused: {}", refused.text);

    // In: a document becomes the session's attachment, 0600 in a 0700 folder.
    let attachments = home.join("attachments").join(&session);
    let skip = mock.sent().len();
    mock.push_document(ME, ME, "notes.txt", b"attached-notes-91c2\n", 20, None);
    sent_containing(&mock, ME, "Attached notes.txt", skip).await;
    let kept = attachments.join("notes.txt");
    assert_eq!(std::fs::read(&kept).unwrap(), b"attached-notes-91c2\n");
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&attachments).unwrap().permissions().mode() & 0o777, 0o700);
    // The same name again: a new file beside it, never over it.
    mock.push_document(ME, ME, "notes.txt", b"second", 6, None);
    sent_containing(&mock, ME, "Attached 2-notes.txt", skip).await;
    assert_eq!(std::fs::read(&kept).unwrap(), b"attached-notes-91c2\n");
    // A name with `../`: kept in the session's folder under its last component only.
    mock.push_document(ME, ME, "../../../escape.txt", b"escape", 6, None);
    sent_containing(&mock, ME, "Attached escape.txt", skip).await;
    assert!(attachments.join("escape.txt").is_file());
    assert!(!home.join("escape.txt").exists() && !home.join("attachments/escape.txt").exists());
    // A photo: its largest size.
    let photo: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    mock.push_photo(ME, ME, &photo);
    sent_containing(&mock, ME, "Attached photo-", skip).await;
    let photos: Vec<PathBuf> = std::fs::read_dir(&attachments)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("photo-"))
        .collect();
    assert_eq!(photos.len(), 1, "{photos:?}");
    assert_eq!(std::fs::read(&photos[0]).unwrap(), photo);

    // 50 MB declared: refused before any download. A declared 10 bytes that are 21 MB: refused
    // by getFile's size. Neither is kept.
    let downloads = mock.downloads().len();
    // A stranger's document: not downloaded, not answered, not kept.
    let replies = mock.sent().len();
    mock.push_document(666, 666, "stranger.txt", b"from a stranger", 15, None);
    drained(&mock).await;
    assert_eq!(mock.downloads().len(), downloads, "a stranger's file was downloaded");
    assert!(mock.sent().iter().skip(replies).all(|s| s.chat_id != 666));
    assert!(!attachments.join("stranger.txt").exists());
    mock.push_document(ME, ME, "huge.bin", b"small-really", 50 << 20, None);
    let huge = sent_containing(&mock, ME, "Not taken: huge.bin is 50.0 MiB", skip).await;
    assert!(huge.text.contains("up to 20.0 MiB"), "{}", huge.text);
    mock.push_document(ME, ME, "liar.bin", &vec![0u8; 21 << 20], 10, None);
    let liar =
        sent_containing(&mock, ME, "Not taken: liar.bin could not be downloaded", skip).await;
    println!("refused: {}\nrefused: {}", huge.text, liar.text);
    assert_eq!(mock.downloads().len(), downloads, "a refused file was downloaded");
    assert!(!attachments.join("huge.bin").exists() && !attachments.join("liar.bin").exists());

    // The bridge SIGKILLed and started again before the next message: the notes are kept.
    bridge.kill().await;
    let bridge = BridgeProc::start(&home, &mock, "after-kill");
    // The agent is told where the file is by the next message, reads it in its sandbox, and
    // cannot write beside it.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc say write seen.txt containing");
    approve_next(&mock, skip).await;
    let seen = std::fs::read_to_string(worktree.join("seen.txt")).unwrap();
    assert!(seen.contains(&format!("[Attached file: {}", kept.display())), "{seen}");
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, &format!("/cc say run cat {} > got.txt", kept.display()));
    approve_next(&mock, skip).await;
    assert_eq!(std::fs::read(worktree.join("got.txt")).unwrap(), b"attached-notes-91c2\n");
    let skip = mock.sent().len();
    let pwn = attachments.join("pwn");
    mock.push_message(ME, None, ME, &format!("/cc say run echo x > {}", pwn.display()));
    approve_next(&mock, skip).await;
    assert!(!pwn.exists(), "the agent wrote into its attachments folder");

    // The task is over: its attachments go.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc keep");
    sent_containing(&mock, ME, "Kept session", skip).await;
    assert!(!attachments.exists(), "the attachments outlived the session");
    bridge.kill().await;
}

/// Whether the host refuses `attach` with a bad name by itself (not only the bridge's cleaning).
#[tokio::test(flavor = "multi_thread")]
async fn chat_files_the_host_refuses_an_attachment_name_that_leaves_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let info = nucleic_client::read_daemon_file(&home).unwrap();
    let token = nucleic_client::read_token(&home).unwrap();
    let options = nucleic_client::ClientOptions::new("chat-files-test", "test");
    let mut client =
        nucleic_client::Client::connect(info.endpoint(), &token, options).await.unwrap();
    let project = client.list_projects().await.unwrap()[0].project_id.clone();
    let args = ["session", "new", "--project", &project, "--agent", "sim", "hi"];
    let (code, out, err) = crate::chat_bridge::cli(&home, &args).await;
    assert_eq!(code, 0, "{out}{err}");
    let session = only_session(&home).await;
    for name in ["../escape.txt", "a/b.txt", ".bashrc", ".."] {
        let intent = nucleic_protocol::Intent::Attach {
            session_id: session.clone(),
            name: name.into(),
            content: "ZXNjYXBl".into(),
            append: None,
        };
        let refused = client.intent(intent).await.unwrap_err();
        assert!(refused.to_string().contains("attachment name"), "{name}: {refused}");
    }
    let stray: Vec<PathBuf> =
        walk(&home).into_iter().filter(|p| p.ends_with("escape.txt")).collect();
    assert!(stray.is_empty(), "{stray:?}");
    // One part over 512 KiB is refused; parts past 20 MiB in all are refused and the file goes.
    let attach = |content: String, append: Option<String>| nucleic_protocol::Intent::Attach {
        session_id: session.clone(),
        name: "big.bin".into(),
        content,
        append,
    };
    let part = base64_of(&vec![7u8; 512 << 10]);
    let refused = client.intent(attach(base64_of(&vec![7u8; 600 << 10]), None)).await.unwrap_err();
    assert!(refused.to_string().contains("in parts"), "{refused}");
    let first: nucleic_protocol::Attached =
        client.intent_as(attach(part.clone(), None)).await.unwrap();
    for _ in 1..40 {
        let _: nucleic_protocol::Attached =
            client.intent_as(attach(part.clone(), Some(first.name.clone()))).await.unwrap();
    }
    assert_eq!(std::fs::metadata(&first.path).unwrap().len(), 20 << 20);
    let refused = client.intent(attach(part, Some(first.name.clone()))).await.unwrap_err();
    assert!(refused.to_string().contains("the limit is"), "{refused}");
    assert!(!Path::new(&first.path).exists(), "the oversized attachment stayed");
    // `append` naming a file outside the folder, or a symlink in it: refused.
    let outside = dir.path().join("target.txt");
    std::fs::write(&outside, "keep").unwrap();
    std::os::unix::fs::symlink(&outside, Path::new(&first.path).with_file_name("link")).unwrap();
    for name in ["../../../target.txt", "link"] {
        let refused = client.intent(attach(base64_of(b"x"), Some(name.into()))).await.unwrap_err();
        println!("append {name}: {refused}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep", "appended through a link");
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_needs_you_only_sends_notices_without_content_and_refuses_what_quotes_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let mock = MockTelegram::start(TOKEN).await.unwrap();
    let bridge = BridgeProc::start(&home, &mock, "needs-you");
    pair(&home, &mock).await;
    mock.push_message(ME, None, ME, "/cc needs-you on");
    sent_containing(&mock, ME, "notices only", 0).await;
    let from = mock.sent().len();

    // A task whose every report would quote its file and content.
    mock.push_message(ME, None, ME, "/cc write plan-91.txt containing MARK-CONTENT-5e");
    let notice = sent_containing(&mock, ME, "needs you: approval ", from).await;
    let code = code_of_notice(&notice.text);
    let keyboard = &notice.body["reply_markup"]["inline_keyboard"][0];
    assert_eq!(keyboard[0]["callback_data"], format!("a:{code}"), "the buttons stay");
    mock.push_callback(ME, ME, notice.message_id, &format!("a:{code}"));
    sent_containing(&mock, ME, "it waits for you", from).await;
    let session = only_session(&home).await;
    let worktree =
        PathBuf::from(show(&home, &session).await["worktree"]["path"].as_str().unwrap().to_owned());
    assert!(worktree.join("plan-91.txt").is_file(), "the approval by notice worked");
    for command in ["/cc diff", "/cc report", "/cc send plan-91.txt", "/cc session"] {
        let skip = mock.sent().len();
        mock.push_message(ME, None, ME, command);
        sent_containing(&mock, ME, "notices only, without content", skip).await;
    }
    let quiet: Vec<String> = mock.sent().iter().skip(from).map(|s| s.text.clone()).collect();
    println!("needs-you-only messages: {quiet:#?}");
    assert!(mock.sent().iter().skip(from).all(|s| s.file.is_none()), "a file went out");
    for text in &quiet {
        assert!(
            !text.contains("plan-91") && !text.contains("MARK-CONTENT") && !text.contains("Write"),
            "content in a needs-you-only chat: {text}"
        );
    }

    // Off again: the full reports.
    let skip = mock.sent().len();
    mock.push_message(ME, None, ME, "/cc needs-you off");
    sent_containing(&mock, ME, "full reports again", skip).await;
    mock.push_message(ME, None, ME, "/cc diff");
    sent_containing(&mock, ME, "plan-91.txt", skip).await;
    bridge.kill().await;
}

/// The code of a "Session … needs you: approval K7P2 · …" notice.
fn code_of_notice(text: &str) -> String {
    let after = text.split("approval ").nth(1).unwrap();
    after.chars().take(4).collect()
}
