//! `nucleic project sessions` and `nucleic project adopt`: the person's own agent sessions of a
//! project, made outside Nucleic, and carrying one on as a Nucleic session.

use std::process::ExitCode;

use nucleic_client::Client;
use nucleic_protocol::{Intent, OutsideSession, OutsideSessions, SessionSummary};

/// Lists project `project_id`'s outside sessions, newest first (`--json`: the whole result).
pub async fn list(daemon: &mut Client, project_id: String, json: bool) -> anyhow::Result<ExitCode> {
    let found: OutsideSessions = daemon.intent_as(Intent::OutsideSessions { project_id }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.sessions.is_empty() {
        println!("no Claude Code or Codex session of this project was made outside Nucleic");
    }
    for session in &found.sessions {
        println!("{}", line(session));
    }
    for skipped in &found.skipped {
        println!("skipped {}: {}", skipped.path, skipped.why);
    }
    if let Some(why) = &found.truncated {
        println!("incomplete: {why}");
    }
    Ok(ExitCode::SUCCESS)
}

/// One session: `claudeCode 2.1.332  ID  LAST  3 turns  "title"  PATH  (notes)`.
fn line(s: &OutsideSession) -> String {
    let backend = match &s.cli_version {
        Some(version) => format!("{} {version}", s.backend.as_str()),
        None => s.backend.as_str().to_owned(),
    };
    let turns = match (s.turns, s.turns_exact) {
        (1, true) => "1 turn".to_owned(),
        (n, true) => format!("{n} turns"),
        (n, false) => format!("{n}+ turns"),
    };
    let mut notes = Vec::new();
    if let Some(live) = &s.live {
        notes.push(format!("live: {} pid {} ({}), fork only", live.program, live.pid, live.why));
    }
    if !s.cwd_exists {
        notes.push(format!("its folder {} is gone", s.cwd));
    }
    if !s.adoptable {
        notes.push("not adoptable yet: `nucleic import PATH` shows it".to_owned());
    }
    if s.unknown_lines + s.bad_lines > 0 {
        notes.push(format!("{} unknown and {} bad lines", s.unknown_lines, s.bad_lines));
    }
    let title = s.title.as_deref().unwrap_or("(no prompt)");
    let last = s.last_at.as_deref().unwrap_or("-");
    let notes = if notes.is_empty() { String::new() } else { format!("  ({})", notes.join("; ")) };
    format!("{backend}  {}  {last}  {turns}  {title:?}  {}{notes}", s.id, s.path)
}

/// Adopts an outside session (`intent`, an `adoptSession`); prints the new session's id and
/// where it works: its worktree, or the checkout itself when adopted in place.
pub async fn adopt(daemon: &mut Client, intent: Intent) -> anyhow::Result<ExitCode> {
    let adopted: SessionSummary = daemon.intent_as(intent).await?;
    let place = adopted
        .worktree
        .map_or_else(|| "in place, in the project's checkout".to_owned(), |w| w.path);
    println!("{}  {place}", adopted.session_id);
    Ok(ExitCode::SUCCESS)
}
