//! The catalog follower: one task per live session that folds its events into the catalog (in
//! batches, in order) and announces the session's new summary to every client.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nucleic_catalog::{Catalog, SessionRow};
use nucleic_core::Subscription;
use nucleic_protocol::{Event, EventKind, SessionSummary};
use tokio::sync::broadcast;

use crate::error::blocking;

/// Most events folded in one catalog transaction.
const FOLD_BATCH: usize = 512;

/// Folds the session's events into the catalog until its stream ends.
pub(crate) async fn fold_into_catalog(
    catalog: Arc<Catalog>,
    session_id: String,
    transcript: PathBuf,
    mut events: Subscription,
    changes: broadcast::Sender<SessionSummary>,
    turns: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let mut ended = false;
    while !ended {
        let mut batch = Vec::new();
        match events.next().await {
            Ok(Some(e)) => batch.push(Event::clone(&e)),
            Ok(None) | Err(_) => break,
        }
        // Gather whatever else is ready (Subscription::next is cancel-safe).
        while batch.len() < FOLD_BATCH {
            match tokio::time::timeout(Duration::from_millis(10), events.next()).await {
                Ok(Ok(Some(e))) => batch.push(Event::clone(&e)),
                Ok(Ok(None) | Err(_)) => {
                    ended = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let turn_ended = batch.iter().any(|e| matches!(e.kind, EventKind::TurnCompleted(_)));
        let (catalog, id, path) = (catalog.clone(), session_id.clone(), transcript.clone());
        let folded = blocking(move || {
            catalog.apply_events(&id, &path, &batch)?;
            catalog.session(&id)
        })
        .await;
        match folded {
            Ok(Some(row)) => {
                let _ = changes.send(summary_of(&row));
                if turn_ended {
                    let _ = turns.send(session_id.clone());
                }
            }
            Ok(None) => {}
            // The transcript keeps the events; the next batch (or a rebuild) folds them.
            Err(_) => {}
        }
    }
}

/// A catalog row as list views see it.
pub(crate) fn summary_of(row: &SessionRow) -> SessionSummary {
    SessionSummary {
        session_id: row.id.clone(),
        project_id: row.project_id.clone(),
        title: row.title.clone(),
        backend: row.backend,
        status: row.status,
        pending_approvals: u32::try_from(row.pending_approvals).unwrap_or(u32::MAX),
        cost_usd: row.cost_usd,
        last_seq: row.last_seq,
        updated_at: row.updated_at,
        worktree: row.worktree.clone(),
        outcome: row.outcome,
        archived: row.archived,
        read_only: row.read_only,
        disk: row.disk,
        worktree_reclaimed: row.worktree_reclaimed,
        mode: row.mode.clone(),
    }
}
