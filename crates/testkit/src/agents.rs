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

/// The OpenCode version the tests pin.
pub const OPENCODE_VERSION: &str = "1.18.33";

/// The Qwen Code version the tests pin.
pub const QWEN_VERSION: &str = "0.24.4";

/// The pinned `opencode`: `$NUCLEIC_OPENCODE_BIN`, else the install cache (as [`real_claude`]).
pub fn real_opencode() -> PathBuf {
    pinned("NUCLEIC_OPENCODE_BIN", &format!("opencode-{OPENCODE_VERSION}"), "opencode")
}

/// The pinned `qwen`: `$NUCLEIC_QWEN_BIN`, else the install cache (as [`real_claude`]).
pub fn real_qwen() -> PathBuf {
    pinned("NUCLEIC_QWEN_BIN", &format!("qwen-code-{QWEN_VERSION}"), "qwen")
}

/// The model both Chat Completions agents are configured with.
pub const MOCK_CHAT_MODEL: &str = "mock-model";

/// OpenCode's configuration for the mock (`OPENCODE_CONFIG_CONTENT`): one provider,
/// `@ai-sdk/openai-compatible` (bundled, nothing installed) at `base_url`, its model for the
/// turn and the title, no updates, no sharing, every edit and command asked.
pub fn opencode_config(base_url: &str) -> String {
    serde_json::json!({
        "model": format!("mock/{MOCK_CHAT_MODEL}"),
        "small_model": format!("mock/{MOCK_CHAT_MODEL}"),
        "autoupdate": false,
        "share": "disabled",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": base_url, "apiKey": "sk-mock"},
            "models": {MOCK_CHAT_MODEL: {
                "name": "Mock Model", "tool_call": true,
                "limit": {"context": 128000, "output": 4096},
            }},
        }},
        "permission": {"edit": "ask", "bash": "ask"},
    })
    .to_string()
}

/// Environment for a real `opencode acp` that may only reach `base_url` (the mock Chat
/// Completions API, `http://127.0.0.1:PORT/v1`): the config inline, a throwaway HOME and XDG
/// folders under `scratch`, no model catalogue fetch, no plugins (`OPENCODE_PURE`: without it,
/// npm-registry lookups at start), no LSP downloads, no updates, no sharing.
pub fn opencode_offline_env(base_url: &str, scratch: &Path) -> Vec<(String, String)> {
    let dir = |name: &str| {
        let d = scratch.join(name);
        let _ = std::fs::create_dir_all(&d);
        d.to_string_lossy().into_owned()
    };
    vec![
        ("HOME".into(), dir("opencode-home")),
        ("XDG_DATA_HOME".into(), dir("opencode-home/.local/share")),
        ("TMPDIR".into(), dir("opencode-tmp")),
        ("OPENCODE_CONFIG_CONTENT".into(), opencode_config(base_url)),
        ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
        ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
        ("OPENCODE_PURE".into(), "1".into()),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD".into(), "1".into()),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS".into(), "1".into()),
        ("OPENCODE_DISABLE_SHARE".into(), "1".into()),
    ]
}

/// The `~/.qwen/settings.json` that keeps Qwen Code silent: no auto-update, no usage
/// statistics, no telemetry (without it, DNS lookups of a RUM host), OpenAI-compatible auth.
pub const QWEN_SILENT_SETTINGS: &str = r#"{"general":{"enableAutoUpdate":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"security":{"auth":{"selectedType":"openai"}}}"#;

/// Environment for a real `qwen --acp` that may only reach `base_url` (the mock Chat
/// Completions API): a throwaway HOME under `scratch` with [`QWEN_SILENT_SETTINGS`], the
/// OpenAI-compatible variables with a dummy key, two processes instead of three.
pub fn qwen_offline_env(base_url: &str, scratch: &Path) -> Vec<(String, String)> {
    let home = scratch.join("qwen-home");
    let _ = std::fs::create_dir_all(home.join(".qwen"));
    let _ = std::fs::write(home.join(".qwen/settings.json"), QWEN_SILENT_SETTINGS);
    let tmp = scratch.join("qwen-tmp");
    let _ = std::fs::create_dir_all(&tmp);
    vec![
        ("HOME".into(), home.to_string_lossy().into_owned()),
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
        ("OPENAI_BASE_URL".into(), base_url.to_owned()),
        ("OPENAI_API_KEY".into(), "sk-mock".into()),
        ("OPENAI_MODEL".into(), MOCK_CHAT_MODEL.into()),
        ("QWEN_CODE_NO_RELAUNCH".into(), "true".into()),
    ]
}
