//! `nucleic tui` end to end: the real binary in tmux (`send-keys`, `capture-pane`) against a
//! real daemon running simulated sessions. The session list, the inbox, allow, deny with a
//! reason, opening a session, a follow-up and an approval in it, its diff and merge, an approval answered first
//! by another client, a daemon that dies and comes back (no duplicate rows), resizes down to
//! 20×5, hostile escape sequences in agent output that the terminal never acts on, and quitting;
//! and the TUI of a paired terminal (`--remote`) answering through the channel. Each step waits,
//! with a deadline, for the screen to show it and for the host to have recorded it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::chat_bridge::{cli, setup, show};
use crate::support::nucleic;

const WAIT: Duration = Duration::from_secs(30);

/// A tmux server of its own (its own socket), with one 120×40 window running `nucleic tui`;
/// killed when dropped.
struct Tmux {
    socket: String,
    exit_file: PathBuf,
}

impl Tmux {
    fn start(home: &Path, dir: &Path) -> Tmux {
        Tmux::start_with(home, dir, "")
    }

    /// [`Tmux::start`] with `options` before `tui` (e.g. `--remote HOST`).
    fn start_with(home: &Path, dir: &Path, options: &str) -> Tmux {
        let socket = format!("nucleic-tui-test-{}-{}", std::process::id(), options.len());
        let exit_file = dir.join("tui.exit");
        let shell = format!(
            "NUCLEIC_HOME='{}' '{}' {options} tui 2>'{}'; echo $? > '{}'",
            home.display(),
            nucleic().display(),
            dir.join("tui.stderr").display(),
            exit_file.display()
        );
        let tmux = Tmux { socket, exit_file };
        let out = tmux
            .command(&["new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", &shell])
            .output()
            .expect("tmux runs (scripts/test.sh and .ci/run install it)");
        assert!(out.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&out.stderr));
        tmux
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket, "-f", "/dev/null"]).args(args).env("LANG", "C.UTF-8");
        cmd
    }

    fn screen(&self) -> String {
        let out = self.command(&["capture-pane", "-p", "-t", "tui"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn title(&self) -> String {
        let out = self
            .command(&["display-message", "-p", "-t", "tui", "#{pane_title}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Types `keys` as tmux key names (`Enter`, `BSpace`, `Tab`, or single characters). Not
    /// `Escape` followed by another key: sent at once, the terminal reads them as Alt+key.
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend_from_slice(keys);
        assert!(self.command(&args).status().unwrap().success());
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        assert!(self.command(&["send-keys", "-t", "tui", "-l", text]).status().unwrap().success());
    }

    /// The selected row of a list (drawn in reverse video), below the tab line.
    fn selected(&self) -> Option<String> {
        let out = self.command(&["capture-pane", "-p", "-e", "-t", "tui"]).output().unwrap();
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        screen.lines().skip(1).find(|l| reversed(l)).map(str::to_owned)
    }

    /// From the session list, opens the session whose title contains `title`.
    fn open(&self, title: &str) {
        self.keys(&["1"]);
        self.until("the session list", |s| s.contains("approvals") && !s.contains("m Message"));
        // Up to the first row (keys sent before the list showed went to the screen before it),
        // then down to the one wanted.
        let first_row = || {
            let out = self.command(&["capture-pane", "-p", "-e", "-t", "tui"]).output().unwrap();
            let screen = String::from_utf8_lossy(&out.stdout).into_owned();
            screen.lines().nth(2).is_some_and(reversed)
        };
        let deadline = Instant::now() + WAIT;
        while !first_row() {
            assert!(Instant::now() < deadline, "the list's first row never selected");
            self.keys(&["k"]);
            std::thread::sleep(Duration::from_millis(100));
        }
        loop {
            if self.selected().is_some_and(|l| l.contains(title)) {
                break;
            }
            assert!(Instant::now() < deadline, "no row {title:?} to select: {}", self.screen());
            self.keys(&["j"]);
            std::thread::sleep(Duration::from_millis(200));
        }
        self.keys(&["Enter"]);
        self.until(&format!("session {title:?} open"), |s| {
            s.lines().next().unwrap_or("").contains(title) && s.contains("m Message")
        });
    }

    /// Waits until the screen satisfies `ok`; the screen then.
    fn until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen did not show {what} within {WAIT:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn shows(&self, needle: &str) -> String {
        self.until(&format!("{needle:?}"), |s| s.contains(needle))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

/// Waits, with a deadline, until the host's record satisfies `ok` (polled through the CLI).
/// Whether a captured line is drawn reversed (the selection): tmux writes `ESC[7m`, or
/// `ESC[0;7m` when the attributes are reset at the same time (the first row).
fn reversed(line: &str) -> bool {
    line.contains("\u{1b}[7m") || line.contains("\u{1b}[0;7m")
}

async fn until_host(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok().await {
        assert!(Instant::now() < deadline, "the host did not record {what} within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn new_session(home: &Path, prompt: &str) -> String {
    let (code, out, err) = cli(home, &["project", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let project = out.split_whitespace().next().unwrap().to_owned();
    let args = ["session", "new", "--project", &project, "--agent", "sim", prompt];
    let (code, out, err) = cli(home, &args).await;
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().next().unwrap().to_owned()
}

fn transcript(home: &Path, session: &str) -> Vec<Value> {
    let path = home.join("sessions").join(session).join("transcript.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The resolutions recorded in `session`'s transcript: (decision, message).
fn resolutions(home: &Path, session: &str) -> Vec<(String, Option<String>)> {
    transcript(home, session)
        .iter()
        .filter(|e| e["kind"]["type"] == "approvalResolved")
        .map(|e| {
            let kind = &e["kind"];
            (
                kind["decision"].as_str().unwrap_or("").to_owned(),
                kind["message"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

async fn pending(home: &Path, session: &str) -> u64 {
    show(home, session).await["pendingApprovals"].as_u64().unwrap_or(0)
}

async fn worktree(home: &Path, session: &str) -> PathBuf {
    PathBuf::from(show(home, session).await["worktree"]["path"].as_str().unwrap())
}

/// The inbox lines (`› …` selected, `  …` not) naming a Write of `file`.
fn inbox_has(screen: &str, file: &str) -> bool {
    screen.lines().any(|l| l.contains(&format!("Write {file}")))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_in_tmux_lists_approves_denies_with_a_reason_and_sends_a_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let allowed = new_session(&home, "write allowed.txt containing yes").await;
    let denied = new_session(&home, "write denied.txt containing no").await;
    let hostile = new_session(&home, "say hi \u{1b}]2;pwned\u{7} and \u{1b}[2J done").await;
    until_host("both approvals pending", async || {
        pending(&home, &allowed).await == 1 && pending(&home, &denied).await == 1
    })
    .await;

    // (1) The session list: every session, with its status.
    let tmux = Tmux::start(&home, dir.path());
    let title_before = tmux.title();
    let screen = tmux.until("the three sessions and two approvals waiting", |s| {
        s.contains("write allowed.txt")
            && s.contains("write denied.txt")
            && s.contains("say hi")
            && s.contains("2 Inbox 2")
    });
    assert!(screen.contains("needs approval"), "{screen}");

    // (2) The inbox: allow one with `a`.
    tmux.keys(&["2"]);
    tmux.until("both approvals in the inbox", |s| {
        inbox_has(s, "allowed.txt") && inbox_has(s, "denied.txt")
    });
    // The selection stays on whichever request it first fell on; go to the top, then down.
    tmux.keys(&["k", "k"]);
    std::thread::sleep(Duration::from_millis(200));
    if !tmux.screen().lines().any(|l| l.starts_with("› ") && l.contains("allowed.txt")) {
        tmux.keys(&["j"]);
    }
    tmux.until("allowed.txt selected", |s| {
        s.lines().any(|l| l.starts_with("› ") && l.contains("allowed.txt"))
    });
    tmux.keys(&["a"]);
    tmux.until("the allowed approval gone from the inbox", |s| !inbox_has(s, "allowed.txt"));
    let tree = worktree(&home, &allowed).await;
    until_host("the allow carried out", async || tree.join("allowed.txt").exists()).await;
    assert_eq!(resolutions(&home, &allowed), [("allow".to_owned(), None)]);

    // Deny the other with a reason typed at the prompt.
    tmux.keys(&["d"]);
    tmux.shows("Why not?");
    tmux.type_text("not this file");
    tmux.keys(&["Enter"]);
    tmux.shows("Nothing waits for you.");
    until_host("the deny with its reason", async || !resolutions(&home, &denied).is_empty()).await;
    assert_eq!(
        resolutions(&home, &denied),
        [("deny".to_owned(), Some("not this file".to_owned()))]
    );
    let tree = worktree(&home, &denied).await;
    assert!(!tree.join("denied.txt").exists(), "a denied write did not happen");

    // (3) Open the allowed session from the list.
    tmux.keys(&["1"]);
    tmux.shows("status");
    tmux.open("write allowed.txt");
    tmux.until("its transcript with the answered approval", |s| {
        s.contains("Allowed by") && s.contains("Write allowed.txt ✓")
    });

    // A follow-up from the composer, then its approval answered in the session view.
    tmux.keys(&["m"]);
    tmux.shows("Message the agent…");
    tmux.type_text("write second.txt containing two");
    tmux.keys(&["Enter"]);
    tmux.shows("you › write second.txt containing two");
    until_host("the follow-up in the transcript", async || {
        transcript(&home, &allowed).iter().any(|e| {
            e["kind"]["type"] == "userText"
                && e["kind"]["text"] == "write second.txt containing two"
        })
    })
    .await;
    tmux.shows("a Allow · A Always");
    tmux.keys(&["a"]);
    let tree = worktree(&home, &allowed).await;
    until_host("the second write", async || tree.join("second.txt").exists()).await;
    tmux.until("the second write done", |s| s.contains("Write second.txt ✓"));

    // Its diff: both files, their lines.
    tmux.keys(&["D"]);
    let screen = tmux.until("the diff", |s| s.contains("+yes") && s.contains("+two"));
    assert!(screen.contains("2 files changed"), "{screen}");
    assert!(screen.contains("allowed.txt") && screen.contains("second.txt"), "{screen}");
    // Merge it, from the diff: refused while the base branch is checked out (no file changes),
    // then done with the checkout updated.
    let repo = dir.path().join("repo");
    let on_main = |file: &str| {
        Command::new("git")
            .args(["show", &format!("main:{file}")])
            .current_dir(&repo)
            .output()
            .unwrap()
    };
    tmux.keys(&["M"]);
    tmux.shows("Merge into main?");
    tmux.keys(&["y"]);
    tmux.shows("Merge refused");
    assert!(!on_main("allowed.txt").status.success(), "a refused merge moved main");
    assert!(!repo.join("allowed.txt").exists());
    tmux.keys(&["M"]);
    tmux.shows("Merge into main?");
    tmux.keys(&["u"]);
    tmux.shows("Merge: done");
    assert_eq!(String::from_utf8_lossy(&on_main("second.txt").stdout), "two\n");
    assert_eq!(std::fs::read_to_string(repo.join("allowed.txt")).unwrap(), "yes\n");
    tmux.keys(&["BSpace"]);
    tmux.shows("m Message");
    tmux.shows("Worktree merged by");

    // First responder wins: an approval answered by another client leaves the inbox.
    let (code, _, err) = cli(&home, &["session", "send", &denied, "write third.txt"]).await;
    assert_eq!(code, 0, "{err}");
    tmux.keys(&["BSpace", "2"]);
    tmux.until("the new approval in the inbox", |s| inbox_has(s, "third.txt"));
    let (code, _, err) = cli(&home, &["session", "approve", &denied]).await;
    assert_eq!(code, 0, "{err}");
    let screen = tmux.until("it answered elsewhere", |s| !inbox_has(s, "third.txt"));
    assert!(
        screen.contains("Nothing waits for you.") || screen.contains("Answered elsewhere"),
        "{screen}"
    );

    // The denied session: a mode switch with `o r` reaches the host, which refuses it for
    // the simulated agent (it has no policy) and the refusal is shown; then kept with `K y`.
    tmux.keys(&["1"]);
    tmux.shows("status");
    tmux.open("write denied.txt");
    tmux.keys(&["o"]);
    tmux.shows("Mode? ");
    tmux.keys(&["r"]);
    tmux.shows("has no policy");
    tmux.keys(&["K"]);
    tmux.shows("Keep this session");
    tmux.keys(&["n"]);
    tmux.keys(&["K"]);
    tmux.shows("Keep this session");
    tmux.keys(&["y"]);
    tmux.shows("Kept");
    let finished = |home: &Path| {
        transcript(home, &denied).iter().filter(|e| e["kind"]["type"] == "worktreeFinished").count()
    };
    until_host("the keep carried out once", async || finished(&home) == 1).await;
    assert!(worktree(&home, &denied).await.exists(), "a kept session keeps its worktree");
    tmux.keys(&["BSpace"]);

    // The daemon dies and comes back: offline said, then online, no row twice.
    tmux.keys(&["1"]);
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("daemon.json")).unwrap()).unwrap();
    let pid = nix::unistd::Pid::from_raw(info["pid"].as_i64().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    tmux.shows("offline");
    let (code, _, err) = cli(&home, &["session", "list"]).await; // starts the daemon again
    assert_eq!(code, 0, "{err}");
    tmux.until("online again", |s| s.contains("● online"));
    let screen = tmux.shows("write allowed.txt");
    let rows = screen.lines().filter(|l| l.contains("write allowed.txt")).count();
    assert_eq!(rows, 1, "one row per session after the reconnect:\n{screen}");

    // Resized to 80×24, to 20×5 (something sane, no panic) and back.
    for (w, h) in [("80", 24), ("20", 5), ("120", 40)] {
        let size = h.to_string();
        assert!(
            tmux.command(&["resize-window", "-t", "tui", "-x", w, "-y", &size])
                .status()
                .unwrap()
                .success()
        );
        tmux.until(&format!("the screen at {w}x{h}"), |s| {
            s.lines().count() == h
                && s.starts_with("nucleic")
                && (h < 10 || s.contains("write allowed"))
        });
    }
    tmux.shows("write allowed.txt");

    // Hostile escape sequences in agent output: shown as symbols, never acted on.
    tmux.keys(&["k", "k", "k"]);
    tmux.keys(&["BSpace"]);
    tmux.open("say hi");
    tmux.shows("You said: say hi");
    // The agent's own text carries the raw sequences (what the terminal must never act on).
    let raw = transcript(&home, &hostile).iter().any(|e| {
        e["kind"]["type"] == "assistantText"
            && e["kind"]["text"].as_str().is_some_and(|t| t.contains("\u{1b}]2;pwned\u{7}"))
    });
    assert!(raw, "the simulated agent's reply holds the escape sequences");
    // The check can see an effect: the same sequence printed raw in a window of the same
    // server does set that window's title.
    let probe = "printf '\\033]2;pwned-probe\\007'; sleep 10";
    assert!(
        tmux.command(&["new-window", "-d", "-t", "tui", "-n", "probe", probe])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let out = tmux
            .command(&["display-message", "-p", "-t", "tui:probe", "#{pane_title}"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "pwned-probe" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a raw OSC 2 did not set a tmux title: the check is blind"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300)); // what a terminal acts on, it has by now
    assert_eq!(tmux.title(), title_before, "the agent's text set the terminal's title");
    let screen = tmux.shows("␛]2;pwned␇");
    assert!(screen.contains("␛[2J"), "{screen}");
    let top = screen.lines().next().unwrap_or("");
    assert!(top.starts_with("nucleic"), "the screen was cleared: {screen}");

    // `?` lists the keys in the cockpit's words; `q` quits with success.
    tmux.keys(&["?"]);
    tmux.until("the keys", |s| {
        s.contains("Always (this session)") && s.contains("Message the agent")
    });
    tmux.keys(&["x"]); // any key closes the list of keys
    tmux.until("the keys closed", |s| !s.contains("Always (this session)"));
    tmux.keys(&["q"]);
    let deadline = Instant::now() + WAIT;
    while !tmux.exit_file.exists() {
        assert!(Instant::now() < deadline, "nucleic tui did not quit on q: {}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(100));
    let code = std::fs::read_to_string(&tmux.exit_file).unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("tui.stderr")).unwrap_or_default();
    assert_eq!(code.trim(), "0", "nucleic tui exited {code}: {stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_of_a_paired_terminal_answers_an_approval_through_the_channel() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    let _served = crate::remote_device::serve(&host).await;
    let root = crate::daemon::empty_repo(dir.path());
    let (code, _, err) = cli(&host, &["project", "add", root.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    let session = new_session(&host, "write afar.txt containing yes").await;
    until_host("the approval pending", async || pending(&host, &session).await == 1).await;
    let (link, host_id) = crate::remote_device::link(&host, "MARKER-tmux").await;
    let laptop = dir.path().join("laptop");
    let (code, _, err) = cli(&laptop, &["remote", "pair", &link]).await;
    assert_eq!(code, 0, "{err}");

    let tmux = Tmux::start_with(&laptop, dir.path(), &format!("--remote {}", &host_id[..12]));
    tmux.keys(&["2"]);
    tmux.until("the approval in the inbox", |s| inbox_has(s, "afar.txt"));
    tmux.keys(&["a"]);
    tmux.until("the approval gone from the inbox", |s| !inbox_has(s, "afar.txt"));
    let tree = worktree(&host, &session).await;
    until_host("the allow carried out", async || tree.join("afar.txt").exists()).await;
    let by: Vec<String> = transcript(&host, &session)
        .iter()
        .filter(|e| e["kind"]["type"] == "approvalResolved")
        .filter_map(|e| e["kind"]["by"].as_str().map(str::to_owned))
        .collect();
    // Recorded as the paired device (its name), not as the host's token.
    assert_eq!(by, ["MARKER-tmux"]);
    tmux.keys(&["q"]);
}
