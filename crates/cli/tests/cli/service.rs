//! `nucleic service`: the unit it writes (accepted by systemd's own `systemd-analyze verify`),
//! installed twice, edited by hand (kept unless forced, by effect: the file is unchanged),
//! uninstalled, and the machine without a systemd user manager (as this one and CI are: the
//! message says what to do instead) or without `systemctl` at all.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::nucleic;

struct Service {
    dir: tempfile::TempDir,
    /// `PATH` for the CLI (`None`: inherited).
    path: Option<String>,
}

impl Service {
    fn new() -> Service {
        Service { dir: tempfile::tempdir().unwrap(), path: None }
    }

    fn unit(&self) -> PathBuf {
        self.dir.path().join("config/systemd/user/nucleic.service")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(nucleic());
        command
            .arg("service")
            .args(args)
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("NUCLEIC_HOME", self.home())
            // No user manager is reachable through these (as on this machine and in CI).
            .env("XDG_RUNTIME_DIR", self.dir.path().join("no-runtime"))
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null());
        if let Some(path) = &self.path {
            command.env("PATH", path);
        }
        command.output().unwrap()
    }
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn has_systemd_analyze() -> bool {
    Command::new("systemd-analyze").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// `systemd-analyze verify` of the unit, as systemd itself reads it: what it complained about.
fn verify(unit: &Path) -> String {
    let runtime = tempfile::tempdir().unwrap();
    let out = Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(unit)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "systemd-analyze verify failed: {}", said(&out));
    said(&out)
}

#[test]
fn install_writes_a_unit_systemd_accepts_and_says_what_to_do_without_a_user_manager() {
    let s = Service::new();
    let out = s.run(&["install"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("no systemd user manager here"), "{text}");
    assert!(text.contains("run `nucleic serve` under"), "{text}");
    let unit = std::fs::read_to_string(s.unit()).unwrap();
    let program = std::fs::canonicalize(nucleic()).unwrap();
    assert!(unit.contains(&format!("ExecStart={} serve\n", program.display())), "{unit}");
    assert!(unit.contains(&format!("Environment=NUCLEIC_HOME={}\n", s.home().display())));
    for line in ["Restart=always", "KillMode=process", "ExecReload=/bin/kill -HUP $MAINPID"] {
        assert!(unit.contains(line), "{line} missing: {unit}");
    }
    if has_systemd_analyze() {
        assert_eq!(verify(&s.unit()).trim(), "", "systemd complained about the unit");
    } else {
        eprintln!("systemd-analyze is not installed: the unit was not checked by systemd");
    }
    // Status says it is there but cannot run.
    let status = said(&s.run(&["status"]));
    assert!(status.contains("service unit") && status.contains("it does not run"), "{status}");
    // Twice: unchanged.
    let again = said(&s.run(&["install"]));
    assert!(again.contains("is installed, unchanged"), "{again}");
}

#[test]
fn a_unit_edited_by_hand_is_kept_unless_forced() {
    let s = Service::new();
    s.run(&["install"]);
    let edited =
        std::fs::read_to_string(s.unit()).unwrap().replace("RestartSec=2", "RestartSec=30");
    std::fs::write(s.unit(), &edited).unwrap();
    let out = s.run(&["install"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(said(&out).contains("edited by hand"), "{}", said(&out));
    assert_eq!(std::fs::read_to_string(s.unit()).unwrap(), edited, "the edit was overwritten");
    assert!(said(&s.run(&["status"])).contains("(edited by hand)"));
    let out = s.run(&["uninstall"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(s.unit().exists(), "an edited unit was removed without --force");
    // Forced: replaced, then removed.
    s.run(&["install", "--force"]);
    assert!(std::fs::read_to_string(s.unit()).unwrap().contains("RestartSec=2\n"));
    let out = s.run(&["uninstall"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(!s.unit().exists());
    let out = s.run(&["uninstall"]);
    assert!(out.status.success() && said(&out).contains("nothing to do"), "{}", said(&out));
    assert!(said(&s.run(&["status"])).contains("service not installed"));
}

#[test]
fn without_systemctl_install_says_so() {
    let mut s = Service::new();
    // A PATH with nothing on it: no systemctl.
    let empty = s.dir.path().join("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    s.path = Some(empty.display().to_string());
    let out = s.run(&["install"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot run systemctl"), "{text}");
    assert!(s.unit().exists(), "the unit is written for later");
}
