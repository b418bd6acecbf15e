//! Running a test inside fresh Linux namespaces: a loopback-only network (nothing can leave the
//! machine) and, when asked, a private mount namespace (for tmpfs tricks like a full disk).
//!
//! A test calls [`isolated!`](crate::isolated) first thing. Outside the namespace it re-executes
//! its own test binary for just that test under `unshare`, checks that exactly that one test ran
//! and passed, and returns `true` (the caller returns). Inside, it checks the isolation holds and
//! returns `false` so the test body runs there.

use std::process::Command;

/// Environment variable naming the test that runs isolated in this process.
const ISOLATED_ENV: &str = "NUCLEIC_ISOLATED_TEST";

/// Which namespaces to enter besides the network one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Only a loopback-only network namespace.
    None,
    /// Also a private mount namespace.
    Mounts,
}

/// Re-runs the current test isolated; see the module docs. `full_name` is
/// `module_path!()::test_fn_name`.
pub fn enter(full_name: &str, extra: Extra) -> bool {
    if std::env::var(ISOLATED_ENV).as_deref() == Ok(full_name) {
        assert_loopback_only();
        return false;
    }
    // libtest names tests by their path inside the crate (without the crate name).
    let filter = full_name.split_once("::").map_or(full_name, |(_, rest)| rest);
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let mut cmd = Command::new("unshare");
    cmd.arg("--net");
    if extra == Extra::Mounts {
        cmd.arg("--mount");
    }
    cmd.args(["--", "sh", "-c", r#"ip link set lo up && exec "$@""#, "sh"])
        .arg(&exe)
        .args(["--exact", filter, "--nocapture", "--test-threads=1"])
        .env(ISOLATED_ENV, full_name);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare (util-linux) to isolate {full_name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "isolated run of {full_name} failed ({}); its output is above (isolation itself needs root for unshare, and iproute2)",
        out.status
    );
    true
}

/// Panics unless the only network interface is loopback.
pub fn assert_loopback_only() {
    // /proc/self/net/dev follows this process's network namespace (sysfs would not).
    let dev = std::fs::read_to_string("/proc/self/net/dev").unwrap_or_default();
    let ifaces: Vec<String> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|name| name.trim().to_owned())
        .collect();
    assert_eq!(ifaces, vec!["lo".to_owned()], "expected a loopback-only network namespace");
}

/// First statement of a test that must run in a loopback-only network namespace:
/// `if nucleic_testkit::isolated!("test_fn_name") { return; }`. Add `, mounts` for a private
/// mount namespace too.
#[macro_export]
macro_rules! isolated {
    ($name:literal) => {
        $crate::isolation::enter(
            concat!(module_path!(), "::", $name),
            $crate::isolation::Extra::None,
        )
    };
    ($name:literal, mounts) => {
        $crate::isolation::enter(
            concat!(module_path!(), "::", $name),
            $crate::isolation::Extra::Mounts,
        )
    };
}
