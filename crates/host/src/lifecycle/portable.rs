//! Sessions leaving and entering the host: exports in the seed's "Nucleic session export"
//! format (or JSONL), imports of Nucleic exports, Claude Code transcripts and Codex rollouts as
//! read-only sessions, and garbage collection of worktrees no session owns.

use std::path::{Path, PathBuf};

use nucleic_catalog::SessionFilter;
use nucleic_core::Draft;
use nucleic_git::{Repo, Worktree};
use nucleic_protocol::{
    Backend, EventKind, ExportFormat, GcReport, SessionCreated, SessionSummary, Timestamp,
};
use nucleic_store::read_transcript;
use nucleic_transfer::{ExportMeta, ImportedSession, ProjectMeta, export, import};
use serde_json::Value;

use crate::clock::now;
use crate::context::Context;
use crate::error::{HostError, blocking};

impl Context {
    /// The session as a document.
    pub async fn export_session(
        &self,
        id: &str,
        format: ExportFormat,
    ) -> Result<String, HostError> {
        let row = self.session_row(id).await?;
        let project = match &row.project_id {
            Some(p) => self.project(p).await.ok(),
            None => None,
        };
        let transcript = PathBuf::from(&row.transcript);
        let events = blocking(move || read_transcript(&transcript, 1).map(|r| r.events)).await?;
        Ok(match format {
            ExportFormat::Jsonl => export::jsonl(&events),
            ExportFormat::Markdown => {
                let meta = ExportMeta {
                    title: row.title.clone(),
                    session_id: row.id.clone(),
                    status: row.status,
                    backend: row.backend,
                    backend_session_id: row.backend_session_id.clone(),
                    model: row.model.clone(),
                    effort: None,
                    branch: row.worktree.as_ref().map(|w| w.branch.clone()),
                    worktree: row.worktree.as_ref().map(|w| w.path.clone()),
                    base_sha: row.worktree.as_ref().map(|w| w.base_sha.clone()),
                    last_seq: row.last_seq,
                    transcript_path: Some(row.transcript.clone()),
                    created_at: Timestamp::from_unix_millis(row.created_at),
                    updated_at: Timestamp::from_unix_millis(row.updated_at),
                    project: project.map(|p| ProjectMeta {
                        name: p.name,
                        root: p.root,
                        default_branch: p.settings.default_branch,
                    }),
                };
                export::markdown(&meta, &events)
            }
        })
    }

    /// Imports a file as a new read-only session: a Claude Code transcript, a Codex rollout, or
    /// a Nucleic export (markdown or JSONL). Its first event records the import.
    pub async fn import_session(&self, path: &Path) -> Result<SessionSummary, HostError> {
        let path = path.to_path_buf();
        let session_id = uuid::Uuid::new_v4().to_string();
        let id = session_id.clone();
        let imported = blocking(move || {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| HostError::Invalid(format!("cannot read {}: {e}", path.display())))?;
            if looks_like_codex_rollout(&text) {
                import::codex_rollout(&text, &id).map_err(|e| HostError::Invalid(e.to_string()))
            } else if looks_like_claude_transcript(&text) {
                import::claude_transcript(&text, &id).map_err(|e| HostError::Invalid(e.to_string()))
            } else {
                import::nucleic_export(&text).map_err(|e| HostError::Invalid(e.to_string()))
            }
        })
        .await?;
        let (backend, drafts) = readonly_drafts(imported);
        let transcript = self.config.transcript_path(&session_id);
        self.write_events(&session_id, backend, &transcript, drafts).await
    }

    /// Worktrees under `.nucleic/worktrees` of every project that no (unarchived or archived)
    /// session owns, stray keepers, and finished sessions' worktrees due for reclaiming under
    /// their projects' disk policies; with `apply`, orphans and strays are removed (worktree and
    /// branch) and due worktrees reclaimed (branch and uncommitted work kept).
    pub async fn gc(&self, apply: bool) -> Result<GcReport, HostError> {
        let projects = self.catalog(|c| c.list_projects()).await?;
        let sessions = self
            .catalog(|c| {
                c.list_sessions(&SessionFilter { project_id: None, include_archived: true })
            })
            .await?;
        let owned: Vec<String> =
            sessions.iter().filter_map(|s| s.worktree.as_ref().map(|w| w.path.clone())).collect();
        // Turn snapshots are kept while their session's worktree is.
        let reviewable: Vec<String> = sessions
            .iter()
            .filter(|s| s.worktree.as_ref().is_some_and(|w| Path::new(&w.path).is_dir()))
            .map(|s| s.id.clone())
            .collect();
        let mut orphans = Vec::new();
        let mut stale_pooled = Vec::new();
        let mut stale_snapshots = Vec::new();
        // Pooled worktrees belong to the pool while it runs; without it, none is in use.
        let pooled_known = self.pools.known();
        for project in projects {
            let root = PathBuf::from(&project.root);
            let owned = owned.clone();
            let pooled_known = pooled_known.clone();
            let reviewable = reviewable.clone();
            let (found, stale, snapshots) = blocking(move || {
                let repo = Repo::open(&root)?;
                repo.prune()?;
                let mut snapshots = Vec::new();
                for key in repo.snapshot_keys()? {
                    if !reviewable.contains(&key) {
                        if apply {
                            repo.drop_snapshots(&key)?;
                        }
                        snapshots.push(key);
                    }
                }
                let mut stale = Vec::new();
                for (name, path) in repo.list_pooled()? {
                    if pooled_known.contains(&name) {
                        continue;
                    }
                    if apply {
                        repo.discard_pooled_named(&name);
                    }
                    stale.push(path.to_string_lossy().into_owned());
                }
                let mut found = Vec::new();
                for entry in repo.list_worktrees()? {
                    let path = entry.path.to_string_lossy().into_owned();
                    if !path.contains("/.nucleic/worktrees/") || owned.contains(&path) {
                        continue;
                    }
                    if apply && let Some(branch) = entry.branch.clone() {
                        let worktree = Worktree {
                            path: entry.path.clone(),
                            branch,
                            base_ref: String::new(),
                            base_sha: String::new(),
                        };
                        repo.discard(&worktree)?;
                    }
                    found.push(path);
                }
                Ok::<_, nucleic_git::GitError>((found, stale, snapshots))
            })
            .await?;
            orphans.extend(found);
            stale_pooled.extend(stale);
            stale_snapshots.extend(snapshots);
        }
        let strays = self.stray_keepers(apply);
        let reclaimable = self.reclaim_due(apply, "gc").await?;
        Ok(GcReport {
            reclaimable_worktrees: reclaimable,
            orphan_worktrees: orphans,
            stale_pooled_worktrees: stale_pooled,
            stray_keepers: strays,
            stale_turn_snapshots: stale_snapshots,
            removed: apply,
        })
    }
}

/// A Claude Code transcript has `sessionId` + `type` user/assistant lines; a Nucleic JSONL has
/// `sessionID` + `seq`.
fn looks_like_claude_transcript(text: &str) -> bool {
    text.lines().filter(|l| !l.trim().is_empty()).take(20).any(|l| {
        serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v.get("sessionId").is_some() && v.get("seq").is_none())
    })
}

/// A Codex rollout starts with a `session_meta` line (`{"timestamp", "type", "payload"}`).
fn looks_like_codex_rollout(text: &str) -> bool {
    text.lines().find(|l| !l.trim().is_empty()).is_some_and(|l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| {
            v.get("type").and_then(Value::as_str) == Some("session_meta")
                && v.get("payload").is_some()
        })
    })
}

/// The imported events (with their times), starting with a read-only `sessionCreated`, and the
/// backend they are recorded under.
fn readonly_drafts(imported: ImportedSession) -> (Backend, Vec<Draft>) {
    // One session, one backend: the sequencer stamps it on every event.
    let backend = imported
        .events
        .first()
        .map(|e| e.backend)
        .or(imported.meta.backend)
        .unwrap_or(crate::agents::backends::DEFAULT_BACKEND);
    let first_is_created =
        matches!(imported.events.first().map(|e| &e.kind), Some(EventKind::SessionCreated(_)));
    let mut drafts = Vec::with_capacity(imported.events.len() + 1);
    if !first_is_created {
        let created = SessionCreated {
            title: imported.meta.title.clone().unwrap_or_else(|| "imported session".into()),
            project_id: None,
            project_root: imported.meta.project.as_ref().map(|p| p.root.clone()),
            cwd: imported.meta.cwd.clone().unwrap_or_default(),
            worktree: None,
            model: imported.meta.model.clone(),
            permission_mode: None,
            read_only: true,
            continues_session_id: None,
            created_by: None,
            parent_session_id: None,
            mode: None,
        };
        let at = imported.events.first().map_or_else(now, |e| e.at);
        drafts.push(Draft {
            native_type: None,
            kind: EventKind::SessionCreated(created),
            at: Some(at),
            origin: None,
        });
    }
    drafts.extend(imported.events.into_iter().map(|e| Draft {
        native_type: e.native_type,
        kind: e.kind,
        at: Some(e.at),
        origin: None,
    }));
    for d in &mut drafts {
        if let EventKind::SessionCreated(c) = &mut d.kind {
            c.read_only = true;
            c.project_id = None;
        }
    }
    (backend, drafts)
}
