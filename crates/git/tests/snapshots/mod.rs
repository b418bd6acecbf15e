//! Turn snapshots in one git process: the trees written in-process are the ones `git write-tree`
//! writes (SHA-1 and SHA-256, index v2 and v4, every entry kind), the kept snapshot index follows
//! every change, a snapshot costs one git process and an opened repository none, and a snapshot
//! killed half-way leaves nothing that breaks or falsifies the next one.

mod hostile;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use nucleic_git::{Repo, Worktree, git_processes};

use crate::support::{Fixture, fixture, run_git, temp_dir, write};

/// What `git add -A` + `git write-tree` make of `worktree` in a fresh copy of its index (the
/// test's own git, nothing of the host's).
fn expected_tree(worktree: &Path) -> String {
    let git_dir = run_git(worktree, &["rev-parse", "--absolute-git-dir"]);
    let scratch = temp_dir();
    let index = scratch.path().join("index");
    let real = Path::new(&git_dir).join("index");
    if real.exists() {
        std::fs::copy(&real, &index).unwrap();
    }
    let with_index = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(worktree)
            .args(["-c", "core.fsmonitor=false"])
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    with_index(&["add", "-A", "--ignore-errors"]);
    with_index(&["write-tree"])
}

/// Every kind of entry and name whose tree order differs from a naive sort.
fn plant_everything(wt: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for name in ["a-b", "a.b", "a0", "a/x", "a/y/z", "ü nicode.txt", "sp ace/f", "deep/1/2/3/4/f"]
    {
        write(&wt.join(name), &format!("{name}\n"));
    }
    write(&wt.join("run.sh"), "#!/bin/sh\n");
    std::fs::set_permissions(wt.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink("a.b", wt.join("link")).unwrap();
    symlink("nowhere", wt.join("a/dangling")).unwrap();
    write(&wt.join(".env"), "ignored\n");
}

/// A gitlink (a submodule's commit) staged in the worktree's own index.
fn stage_gitlink(wt: &Path, commit: &str) {
    run_git(wt, &["update-index", "--add", "--cacheinfo", &format!("160000,{commit},vendor/sub")]);
}

fn kept_index(f: &Fixture) -> PathBuf {
    f.root.parent().unwrap().join("host-state").join("snapshot.index")
}

#[test]
fn in_process_trees_are_the_trees_git_writes() {
    let f = fixture();
    let head = run_git(&f.root, &["rev-parse", "HEAD"]);
    for (slug, version) in [("v2", "2"), ("v4", "4")] {
        let wt = f.worktree(slug);
        run_git(&wt.path, &["update-index", "--index-version", version]);
        plant_everything(&wt.path);
        stage_gitlink(&wt.path, &head);
        std::fs::remove_file(wt.path.join("b.txt")).unwrap();
        let want = expected_tree(&wt.path);
        assert_eq!(f.repo.snapshot_tree(&wt).unwrap(), want, "index v{version}, a copy");
        let index = kept_index(&f).with_extension(slug);
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        let kept = f.repo.record_snapshot_kept(&wt, slug, "1", &index).unwrap();
        assert_eq!(kept, want, "index v{version}, kept");
        assert_eq!(run_git(&f.root, &["rev-parse", &format!("refs/nucleic/turns/{slug}/1")]), want);
    }
    // Everything written is a well-formed object git can read back.
    run_git(&f.root, &["fsck", "--no-dangling", "--no-progress"]);
}

#[test]
fn sha256_repositories_get_sha256_trees() {
    let dir = temp_dir();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    run_git(&root, &["init", "-q", "-b", "main", "--object-format=sha256"]);
    run_git(&root, &["config", "user.name", "T"]);
    run_git(&root, &["config", "user.email", "t@example.com"]);
    write(&root.join("a.txt"), "a\n");
    run_git(&root, &["add", "-A"]);
    run_git(&root, &["commit", "-q", "-m", "init"]);
    let repo = Repo::open(&root).unwrap();
    let wt = repo.create_worktree(&crate::support::spec("sha")).unwrap();
    plant_everything(&wt.path);
    let tree = repo.record_snapshot(&wt, "s", "1").unwrap();
    assert_eq!(tree.len(), 64);
    assert_eq!(tree, expected_tree(&wt.path));
    run_git(&root, &["fsck", "--no-dangling", "--no-progress"]);
}

/// Snapshot after snapshot through the kept index, each the tree a fresh `git add -A` gives.
#[test]
fn the_kept_index_follows_every_change_in_one_git_process_each() {
    let f = fixture();
    let wt = f.worktree("kept");
    let index = kept_index(&f);
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    // The one-time costs of the process (version check, confinement probe) first, and the
    // repository opened once its files are no longer changing (a fresher answer is not kept).
    f.repo.record_snapshot_kept(&wt, "k", "0", &index).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    let _ = Repo::open(&f.root).unwrap();
    type Step = Box<dyn Fn(&Path)>;
    let steps: Vec<Step> = vec![
        Box::new(|wt| write(&wt.join("a.txt"), "one\nTWO\nthree\n")),
        Box::new(|wt| write(&wt.join("src/new.rs"), "fn main() {}\n")),
        Box::new(|wt| std::fs::remove_file(wt.join("b.txt")).unwrap()),
        // The same size, the same second: racy git must not hide it.
        Box::new(|wt| write(&wt.join("a.txt"), "one\nTWX\nthree\n")),
        Box::new(plant_everything),
        Box::new(|wt| std::fs::remove_dir_all(wt.join("a")).unwrap()),
        Box::new(|wt| run_git(wt, &["add", "-A"]).truncate(0)),
        Box::new(|wt| run_git(wt, &["commit", "-q", "-m", "agent"]).truncate(0)),
        Box::new(|_| {}),
    ];
    for (n, step) in steps.iter().enumerate() {
        step(&wt.path);
        let before = git_processes();
        let repo = Repo::open(&f.root).unwrap();
        let tree = repo.record_snapshot_kept(&wt, "k", &format!("{}", n + 1), &index).unwrap();
        assert_eq!(git_processes() - before, 1, "step {n}: git processes for open + snapshot");
        assert_eq!(tree, expected_tree(&wt.path), "step {n}");
    }
    let wanted: Vec<String> =
        (0..=steps.len()).map(|n| format!("refs/nucleic/turns/k/{n}")).collect();
    let refs = run_git(&f.root, &["for-each-ref", "--format=%(refname)", "refs/nucleic/"]);
    let mut refs: Vec<&str> = refs.lines().collect();
    refs.sort_by_key(|r| r.rsplit('/').next().and_then(|n| n.parse::<usize>().ok()));
    assert_eq!(refs, wanted);
    assert_eq!(f.repo.drop_snapshots("k").unwrap(), steps.len() + 1);
}

/// `Repo::open` of a root opened before costs nothing while nothing it read changed, and asks
/// git again when something did.
#[test]
fn an_opened_repository_is_kept_until_what_git_read_changes() {
    let f = fixture();
    // An answer read while its files were still changing is not kept: the fixture just wrote.
    std::thread::sleep(Duration::from_millis(60));
    let _ = Repo::open(&f.root).unwrap();
    let before = git_processes();
    for _ in 0..5 {
        assert_eq!(Repo::open(&f.root).unwrap().root(), f.root);
    }
    assert_eq!(git_processes(), before, "a kept repository started git");
    // A config edit is re-read.
    std::thread::sleep(Duration::from_millis(60));
    run_git(&f.root, &["config", "nucleic.test", "1"]);
    let _ = Repo::open(&f.root).unwrap();
    assert_eq!(git_processes() - before, 2, "a changed config did not make open ask git");
    // The root's `.git` replaced by a gitlink to another repository: open finds that one.
    let other = f.root.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    run_git(&other, &["init", "-q"]);
    std::fs::rename(f.root.join(".git"), f.root.parent().unwrap().join("moved.git")).unwrap();
    write(&f.root.join(".git"), &format!("gitdir: {}\n", other.join(".git").display()));
    let reopened = Repo::open(&f.root).unwrap();
    assert_eq!(reopened.common_dir(), std::fs::canonicalize(other.join(".git")).unwrap());
    // And no repository at all any more.
    std::fs::remove_file(f.root.join(".git")).unwrap();
    assert!(Repo::open(&f.root).is_err());
}

/// The host is SIGKILLed while it snapshots, again and again: the next snapshot is correct and
/// no lock is left behind. Leftovers of a git killed with it (the kept index's lock, a ref's
/// lock, a half-written object, a torn index) are planted too.
#[test]
fn a_snapshot_killed_half_way_leaves_the_next_one_correct() {
    let f = fixture();
    let wt = f.worktree("killed");
    let index = kept_index(&f);
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    for i in 0..300 {
        write(&wt.path.join(format!("d{}/f{i}.txt", i % 7)), &format!("{i}\n"));
    }
    for round in 0..4u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "snapshots::snapshot_loop_child", "--nocapture"])
            .env(
                "NUCLEIC_SNAPSHOT_CHILD",
                format!("{}\n{}\n{}", f.root.display(), wt.path.display(), index.display()),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + 70 * round));
        let _ = Command::new("kill").args(["-KILL", &child.id().to_string()]).status();
        let _ = child.wait();
        write(&wt.path.join(format!("d0/f{round}.txt")), &format!("after kill {round}\n"));
    }
    let snapshots = run_git(&f.root, &["for-each-ref", "refs/nucleic/turns/killed/"]);
    assert!(snapshots.lines().count() >= 1, "the killed host took no snapshots: {snapshots}");
    // What a git killed with the host leaves.
    let mut lock = index.as_os_str().to_owned();
    lock.push(".lock");
    write(Path::new(&lock), "half an index");
    let refs = f.root.join(".git/refs/nucleic/turns/killed");
    std::fs::create_dir_all(&refs).unwrap();
    let ref_lock = refs.join("9-end.lock");
    write(&ref_lock, "");
    let old = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options().write(true).open(&ref_lock).unwrap().set_modified(old).unwrap();
    write(&f.root.join(".git/objects/ab/tmp_obj_nucleic_1_1"), "torn");

    let tree = f.repo.record_snapshot_kept(&wt, "killed", "9-end", &index).unwrap();
    assert_eq!(tree, expected_tree(&wt.path));
    assert_eq!(run_git(&f.root, &["rev-parse", "refs/nucleic/turns/killed/9-end"]), tree);
    assert!(!Path::new(&lock).exists(), "the kept index's lock is left");
    assert!(!ref_lock.exists(), "the ref's lock is left");

    // A torn kept index (not git's: git renames a whole one into place) is started afresh.
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, &bytes[..bytes.len() / 2]).unwrap();
    write(&wt.path.join("d1/new.txt"), "new\n");
    let tree = f.repo.record_snapshot_kept(&wt, "killed", "10-end", &index).unwrap();
    assert_eq!(tree, expected_tree(&wt.path));
    run_git(&f.root, &["fsck", "--no-dangling", "--no-progress"]);
}

/// The child of [`a_snapshot_killed_half_way_leaves_the_next_one_correct`]: snapshots until
/// killed. Does nothing when run as a test on its own.
#[test]
fn snapshot_loop_child() {
    let Ok(spec) = std::env::var("NUCLEIC_SNAPSHOT_CHILD") else { return };
    let mut lines = spec.lines();
    let (root, path, index) = (lines.next().unwrap(), lines.next().unwrap(), lines.next().unwrap());
    let repo = Repo::open(root).unwrap();
    let wt = Worktree {
        path: path.into(),
        branch: String::new(),
        base_ref: String::new(),
        base_sha: String::new(),
    };
    for n in 0.. {
        write(&Path::new(path).join(format!("d2/loop-{}.txt", n % 5)), &format!("{n}\n"));
        let _ = repo.record_snapshot_kept(&wt, "killed", &format!("{n}-x"), Path::new(index));
    }
}
