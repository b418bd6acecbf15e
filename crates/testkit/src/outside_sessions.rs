//! Session files as the agent CLIs write them, planted for tests of finding and adopting
//! sessions made outside Nucleic (no CLI run).

use std::path::{Path, PathBuf};

/// A one-prompt Claude Code transcript of conversation `id` run in `cwd`, under the config
/// folder `claude` (`~/.claude`, or `$CLAUDE_CONFIG_DIR`): `<claude>/projects/<slug>/<id>.jsonl`.
pub fn plant_claude_session(claude: &Path, cwd: &Path, id: &str, prompt: &str) -> PathBuf {
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = claude.join("projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let line = serde_json::json!({
        "type": "user", "sessionId": id, "cwd": cwd, "version": "2.1.332",
        "timestamp": "2026-12-07T06:00:00.000Z", "uuid": "u1", "parentUuid": null,
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}
    });
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::write(&file, format!("{line}\n"))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    file
}

/// A Codex rollout of thread `id` run in `cwd`, under `codex_home` (`~/.codex`, or
/// `$CODEX_HOME`): `<codex_home>/sessions/2026/12/07/rollout-…-<id>.jsonl`.
pub fn plant_codex_rollout(codex_home: &Path, cwd: &Path, id: &str) -> PathBuf {
    let dir = codex_home.join("sessions/2026/12/07");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let meta = serde_json::json!({
        "timestamp": "2026-12-07T06:00:00.000Z", "type": "session_meta",
        "payload": {"id": id, "cwd": cwd, "cli_version": "0.171.0",
                    "timestamp": "2026-12-07T06:00:00.000Z"}
    });
    let file = dir.join(format!("rollout-2026-12-07T06-00-00-{id}.jsonl"));
    std::fs::write(&file, format!("{meta}\n"))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    file
}
