//! Rebuilding the session index from transcripts alone (after a lost or corrupt database).

use std::path::Path;

use nucleic_store::read_range;
use rusqlite::params;

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext, to_i64};
use crate::fold::fold;
use crate::sessions;
use crate::wire::path_str;

/// Events read and folded per transaction.
const CHUNK: usize = 1000;

/// What a rebuild found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Sessions (re)indexed: transcripts with at least one event.
    pub sessions: usize,
    /// Events folded.
    pub events: usize,
    /// Transcripts ending in a partial line (ignored, as the store does).
    pub torn_tails: usize,
    /// Complete lines that did not decode (skipped, as the store does).
    pub skipped_lines: usize,
    /// Projects recreated from `sessionCreated` events.
    pub projects_created: usize,
    /// Sessions that could not be indexed, as `"<id>: <error>"` (the rest still were).
    pub failed: Vec<String>,
}

impl Catalog {
    /// Re-indexes every `<sessions_dir>/<id>/transcript.jsonl`, folding each from scratch with
    /// the same code as [`Catalog::apply_events`] (one transaction per chunk of events).
    ///
    /// Idempotent: each session's row and approvals are replaced, not added to; its recorded
    /// agent process is kept. Missing projects are recreated from `sessionCreated`, existing
    /// ones are reused. Rows whose transcript is gone, and sessions whose transcript is empty,
    /// are left as they are. A session that fails to read (or holds another session's events)
    /// is listed in [`RebuildReport::failed`]; database errors abort the rebuild.
    pub fn rebuild_sessions(&self, sessions_dir: &Path) -> Result<RebuildReport> {
        let mut report = RebuildReport::default();
        let entries = match std::fs::read_dir(sessions_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
            Err(e) => return Err(CatalogError::io(sessions_dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| CatalogError::io(sessions_dir, e))?;
            let transcript = entry.path().join("transcript.jsonl");
            if !transcript.is_file() {
                continue;
            }
            match entry.file_name().into_string() {
                Ok(id) => ids.push((id, transcript)),
                Err(name) => report.failed.push(format!(
                    "{}: session directory name is not UTF-8",
                    name.to_string_lossy()
                )),
            }
        }
        ids.sort();
        for (id, transcript) in ids {
            match self.rebuild_one(&id, &transcript, &mut report) {
                Ok(()) => {}
                Err(
                    e @ (CatalogError::Transcript(_)
                    | CatalogError::SessionMismatch { .. }
                    | CatalogError::NonUtf8Path { .. }),
                ) => report.failed.push(format!("{id}: {e}")),
                Err(e) => return Err(e),
            }
        }
        Ok(report)
    }

    fn rebuild_one(&self, id: &str, transcript: &Path, report: &mut RebuildReport) -> Result<()> {
        let transcript_str = path_str(transcript)?;
        let mut conn = self.conn();
        let agent = sessions::by_id(&conn, id)?.and_then(|row| row.agent);
        let mut offset = 0;
        let mut first = true;
        loop {
            let out = read_range(transcript, offset, 0, CHUNK)?;
            offset = out.complete_len;
            report.skipped_lines += out.skipped.len();
            if out.torn_tail {
                report.torn_tails += 1;
            }
            if out.events.is_empty() {
                break;
            }
            let tx = conn.transaction().ctx("begin rebuild")?;
            if first {
                // Approvals go with the row (ON DELETE CASCADE): the fold starts from nothing.
                tx.execute("DELETE FROM sessions WHERE id = ?", [id]).ctx("reset session")?;
            }
            let stats = fold(&tx, id, transcript_str, &out.events)?;
            if first && let Some(agent) = agent {
                tx.execute(
                    "UPDATE sessions SET agent_pid = ?, agent_start_ticks = ? WHERE id = ?",
                    params![
                        i64::from(agent.pid),
                        to_i64("agent_start_ticks", agent.start_ticks)?,
                        id
                    ],
                )
                .ctx("restore agent process")?;
            }
            tx.commit().ctx("commit rebuild")?;
            if first {
                report.sessions += 1;
            }
            first = false;
            report.events += stats.applied;
            report.projects_created += stats.projects_created;
            if out.events.len() < CHUNK || out.torn_tail {
                break;
            }
        }
        Ok(())
    }
}
