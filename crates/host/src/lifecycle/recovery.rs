//! Starting after a crash: a damaged catalog is set aside and rebuilt from transcripts; rows
//! catch up with their transcripts; sessions that were live in the dead host are closed as
//! interrupted (their pending approvals voided) and stay resumable; agent processes the dead
//! host left behind are stopped; worktrees git lost track of are pruned, and ones no session
//! owns are reported for `gc`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_catalog::{Catalog, SessionFilter, SessionRow};
use nucleic_core::Draft;
use nucleic_protocol::{
    ApprovalResolved, DecisionKind, EventKind, RunFinished, RunOutcome, SessionStatus,
    StatusChanged,
};
use nucleic_store::read_transcript;

use crate::clock::now;
use crate::error::HostError;
use crate::lifecycle::recovery_report::RecoveryReport;
use crate::sessions::writing::write_and_index;

/// Opens the catalog at `path`, rebuilding it from `sessions_dir` when it is damaged.
pub(crate) fn open_catalog(
    path: &Path,
    sessions_dir: &Path,
    report: &mut RecoveryReport,
) -> Result<Catalog, HostError> {
    match Catalog::open(path) {
        Ok(c) => Ok(c),
        Err(e) if e.is_corrupt() => {
            let aside = path.with_extension(format!("corrupt-{}", now().unix_millis()));
            std::fs::rename(path, &aside).map_err(|io| {
                HostError::Invalid(format!(
                    "cannot move the damaged catalog {} aside: {io}",
                    path.display()
                ))
            })?;
            for suffix in ["-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            let catalog = Catalog::open(path)?;
            catalog.rebuild_sessions(sessions_dir)?;
            report.catalog_rebuilt_from = Some(aside);
            Ok(catalog)
        }
        Err(e) => Err(e.into()),
    }
}

/// Brings every session's row up to date and closes the ones the dead host left running.
pub(crate) fn recover_sessions(
    catalog: &Catalog,
    sessions_dir: &Path,
    keepers_dir: &Path,
    report: &mut RecoveryReport,
) -> Result<(), HostError> {
    // Transcripts without a row (the host died before indexing them) come back through a rebuild.
    let rows =
        catalog.list_sessions(&SessionFilter { project_id: None, include_archived: true })?;
    let known: std::collections::HashSet<String> = rows.iter().map(|r| r.id.clone()).collect();
    let unindexed = std::fs::read_dir(sessions_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| !known.contains(&e.file_name().to_string_lossy().into_owned()))
                .count()
        })
        .unwrap_or(0);
    if unindexed > 0 {
        catalog.rebuild_sessions(sessions_dir)?;
    }
    let rows =
        catalog.list_sessions(&SessionFilter { project_id: None, include_archived: true })?;
    for row in rows {
        let transcript = PathBuf::from(&row.transcript);
        let read = read_transcript(&transcript, row.last_seq + 1)?;
        if !read.events.is_empty() {
            catalog.apply_events(&row.id, &transcript, &read.events)?;
            report.rows_caught_up += 1;
        }
        let row = catalog.session(&row.id)?.unwrap_or(row);
        if !row.read_only
            && !crate::agents::keeper_dirs::keeper_dirs_of(keepers_dir, &row.id).is_empty()
        {
            // Its keeper (alive, or its spool) is taken up once the host is open.
            report.kept.push(row.id.clone());
            continue;
        }
        if !row.status.is_terminal() && !row.read_only {
            // A live writer (another host on this home) owns the session: refuse before
            // touching its agent.
            drop(nucleic_core::Sequencer::open(&row.id, row.backend, &transcript)?);
        }
        if let Some(agent) = row.agent {
            if nucleic_agents::process::is_running(agent.pid, agent.start_ticks) {
                stop_orphan(agent.pid);
                report.orphans_stopped.push(agent.pid);
            }
            catalog.set_agent_process(&row.id, None)?;
        }
        if !row.status.is_terminal() && !row.read_only {
            close_interrupted(catalog, &row, &transcript, report)?;
        }
        if let Some(worktree) = &row.worktree
            && !Path::new(&worktree.path).is_dir()
        {
            report.missing_worktrees.push(row.id.clone());
        }
    }
    // Reconcile with `git worktree list`: forget entries whose directory is gone.
    for project in catalog.list_projects()? {
        if let Ok(repo) = nucleic_git::Repo::open(&project.root) {
            let _ = repo.prune();
        }
    }
    Ok(())
}

/// Appends "voided approvals, interrupted, finished" to a session the dead host left open.
pub(crate) fn close_interrupted(
    catalog: &Catalog,
    row: &SessionRow,
    transcript: &Path,
    report: &mut RecoveryReport,
) -> Result<(), HostError> {
    let mut kinds: Vec<EventKind> = catalog
        .pending_approvals(&row.id)?
        .into_iter()
        .map(|a| {
            EventKind::ApprovalResolved(ApprovalResolved {
                request_id: a.request_id,
                decision: DecisionKind::Cancelled,
                by: "host".into(),
                updated_input: None,
                message: Some("the host stopped before an answer".into()),
                mode: None,
            })
        })
        .collect();
    let message =
        "the host stopped while this session was live; send a prompt to resume it".to_owned();
    kinds.push(EventKind::RunFinished(RunFinished::new(
        RunOutcome::Interrupted,
        Some(message),
        None,
    )));
    kinds.push(EventKind::StatusChanged(StatusChanged {
        status: SessionStatus::Finished,
        previous: row.status,
    }));
    let drafts = kinds.into_iter().map(Draft::host).collect();
    let written = write_and_index(catalog, &row.id, row.backend, transcript, drafts)?;
    if written.truncated_bytes > 0 {
        report.torn_tails += 1;
    }
    report.interrupted.push(row.id.clone());
    Ok(())
}

pub(crate) fn stop_orphan(pid: u32) {
    nucleic_agents::process::terminate_tree_blocking(pid, Duration::from_millis(300));
}
