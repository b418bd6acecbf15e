//! The real agent CLIs for tests: where the pinned installs are, and the offline environment
//! that keeps them talking only to our mock servers (see the reference docs, section 3).

use std::path::{Path, PathBuf};

/// The Claude Code version the tests pin.
pub const CLAUDE_VERSION: &str = "2.1.332";

/// The Codex version the tests pin.
pub const CODEX_VERSION: &str = "0.171.0";

/// The Gemini CLI version the tests pin.
pub const GEMINI_VERSION: &str = "0.61.0";

/// The pinned `claude`: `$NUCLEIC_CLAUDE_BIN`, else the install cache of
/// `scripts/install-agents.sh`. Panics with instructions when it is missing: the real-CLI tests
/// are not optional.
pub fn real_claude() -> PathBuf {
    pinned("NUCLEIC_CLAUDE_BIN", &format!("claude-code-{CLAUDE_VERSION}"), "claude")
}

/// The pinned `codex`: `$NUCLEIC_CODEX_BIN`, else the install cache (as [`real_claude`]).
pub fn real_codex() -> PathBuf {
    pinned("NUCLEIC_CODEX_BIN", &format!("codex-{CODEX_VERSION}"), "codex")
}

/// The pinned `gemini`: `$NUCLEIC_GEMINI_BIN`, else the install cache (as [`real_claude`]).
pub fn real_gemini() -> PathBuf {
    pinned("NUCLEIC_GEMINI_BIN", &format!("gemini-cli-{GEMINI_VERSION}"), "gemini")
}

fn pinned(override_var: &str, dir: &str, bin: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(override_var) {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("NUCLEIC_AGENT_CACHE").map(PathBuf::from).or_else(|| {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|c| c.join("nucleic/agents"))
    });
    let path =
        cache.map(|c| c.join(dir).join("node_modules/.bin").join(bin)).filter(|p| p.is_file());
    path.unwrap_or_else(|| {
        panic!("the pinned {dir} is not installed: run scripts/install-agents.sh (or set {override_var})")
    })
}

/// Environment for a real `claude` that may only reach `base_url`: a throwaway HOME under
/// `scratch`, the mock's URL and a dummy key, no non-essential traffic, one API retry, and the
/// CLI's stray sockets/temp files kept inside `scratch`.
pub fn claude_offline_env(base_url: &str, scratch: &Path) -> Vec<(String, String)> {
    let dir = |name: &str| {
        let d = scratch.join(name);
        let _ = std::fs::create_dir_all(&d);
        d.to_string_lossy().into_owned()
    };
    vec![
        ("HOME".into(), dir("home")),
        ("XDG_RUNTIME_DIR".into(), dir("run")),
        ("CLAUDE_CODE_TMPDIR".into(), dir("tmp")),
        ("ANTHROPIC_BASE_URL".into(), base_url.to_owned()),
        ("ANTHROPIC_API_KEY".into(), "sk-test".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
    ]
}

/// Environment for a real `codex` whose `CODEX_HOME` (with [`crate::mock_openai::codex_config_toml`])
/// is `codex_home`: the mock provider's dummy key and a throwaway HOME under `scratch`. The
/// throwaway HOME matters: codex runs commands in a login shell, which would otherwise source
/// the machine's `~/.bashrc` — here that runs `pyenv rehash`, which waits forever on a lock a
/// killed shell left behind, so every command hung until codex's 10 s yield.
pub fn codex_offline_env(codex_home: &Path, scratch: &Path) -> Vec<(String, String)> {
    let home = scratch.join("user-home");
    let _ = std::fs::create_dir_all(&home);
    // A daemon started with this environment commits when finishing sessions.
    let _ = std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Nucleic Test\n\temail = test@nucleic.invalid\n",
    );
    // Codex prefers a `bwrap` on PATH to its bundled one; Debian 12's (0.8.0) lacks `--argv0`,
    // so codex then execs its sandbox helper through an alias it refuses to create under the
    // temporary dir — where tests keep CODEX_HOME. Its own temporary dir goes elsewhere.
    let tmp = scratch.join("codex-tmp");
    let _ = std::fs::create_dir_all(&tmp);
    let mut env = vec![
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
        ("CODEX_HOME".into(), codex_home.to_string_lossy().into_owned()),
        (crate::mock_openai::API_KEY_ENV.into(), "sk-mock".into()),
        ("HOME".into(), home.to_string_lossy().into_owned()),
    ];
    // A daemon started with this environment still finds the pinned CLIs in the real cache.
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(cache) = cache {
        env.push(("XDG_CACHE_HOME".into(), cache.to_string_lossy().into_owned()));
    }
    env
}

/// The `~/.gemini/settings.json` that keeps Gemini CLI silent: no update checks, no usage
/// statistics, no telemetry (with it, no DNS lookup at all; without, `play.googleapis.com`).
pub const GEMINI_SILENT_SETTINGS: &str = r#"{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}"#;

/// Environment for a real `gemini --acp` that may only reach `base_url` (the mock Gemini API):
/// a throwaway HOME under `scratch` holding [`GEMINI_SILENT_SETTINGS`], the gateway base URL
/// with a dummy key (auth type `gateway` is then picked without `authenticate`), one process
/// (no relaunch), and the workspace trusted (privileged modes refuse an untrusted folder).
pub fn gemini_offline_env(base_url: &str, scratch: &Path) -> Vec<(String, String)> {
    let home = scratch.join("gemini-home");
    let _ = std::fs::create_dir_all(home.join(".gemini"));
    let _ = std::fs::write(home.join(".gemini/settings.json"), GEMINI_SILENT_SETTINGS);
    let tmp = scratch.join("gemini-tmp");
    let _ = std::fs::create_dir_all(&tmp);
    vec![
        ("HOME".into(), home.to_string_lossy().into_owned()),
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
        ("GOOGLE_GEMINI_BASE_URL".into(), base_url.to_owned()),
        ("GEMINI_API_KEY".into(), "mock-gemini-key".into()),
        ("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()),
        ("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()),
    ]
}
