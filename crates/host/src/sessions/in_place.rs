//! Adopting an outside session in place (PingPongCode's managed mode): the conversation itself
//! carried on, not forked, in the folder it ran in, under its lock (`in_place_lock.rs`) from
//! before the first event is written until it is handed over; re-taken when a follow-up
//! resumes it (after a handoff or a host restart), and refused while another host or adoption
//! holds it or a live `claude`/`codex` process is on the conversation.

use std::path::{Path, PathBuf};

use nucleic_catalog::{ProjectRow, SessionRow};
use nucleic_discover::OutsideSession;
use nucleic_protocol::{EventKind, SessionCreated, SessionSummary};

use crate::context::Context;
use crate::error::{HostError, blocking};
use crate::sessions::in_place_lock::{self, Holder, Taken};
use crate::sessions::outside::{AdoptOutside, note_draft, read_history};

/// Whether session `row` works in place: in its project's checkout (or a folder of it), with
/// no worktree of its own, on a conversation it carries on.
pub(crate) fn is_in_place(row: &SessionRow) -> bool {
    row.worktree.is_none()
        && row.project_id.is_some()
        && !row.read_only
        && row.backend_session_id.is_some()
}

impl Context {
    /// [`Context::adopt_outside`] in place: refused while a live CLI process holds `outside`,
    /// when its folder is gone, or while another host or session holds its lock.
    pub(crate) async fn adopt_in_place(
        &self,
        project: ProjectRow,
        outside: OutsideSession,
        request: AdoptOutside,
        by: &str,
    ) -> Result<SessionSummary, HostError> {
        let description = nucleic_agents::describe(outside.backend);
        if !description.capabilities.resume {
            return Err(HostError::Invalid(format!(
                "the {} backend cannot resume a conversation, so it cannot carry one on in place",
                description.label
            )));
        }
        if !outside.cwd_exists {
            return Err(HostError::Invalid(format!(
                "the folder {} the session ran in is gone; adopt it into a worktree instead",
                outside.cwd.display()
            )));
        }
        if !self.available(outside.backend) {
            return Err(HostError::Invalid(description.not_installed()));
        }
        let mode = self.start_mode(outside.backend, &project.id, request.mode.as_deref())?;
        let session_id = uuid::Uuid::new_v4().to_string();
        let cwd = outside.cwd.clone();
        // The lock first: a second driver is refused naming the holder (whose own agent is the
        // live process on it); only then a live CLI of the person's.
        let taken =
            self.take_in_place(&project, &session_id, outside.backend, &outside.id, &cwd).await?;
        if let Some(p) = &outside.live {
            return Err(HostError::Invalid(format!(
                "a live {} (pid {}, {}) is on the {} conversation {}: two programs must not \
                 drive one conversation; end it first, or adopt it into a worktree (a fork)",
                p.program,
                p.pid,
                p.why,
                outside.backend.as_str(),
                outside.id
            )));
        }
        let history = read_history(&outside, &session_id).await?;
        let title = outside.title.clone().unwrap_or_else(|| "adopted session".to_owned());
        let created = SessionCreated {
            title,
            project_id: Some(project.id.clone()),
            project_root: Some(project.root.clone()),
            cwd: cwd.to_string_lossy().into_owned(),
            worktree: None,
            model: outside.model.clone(),
            permission_mode: None,
            read_only: false,
            continues_session_id: None,
            created_by: Some(by.to_owned()),
            parent_session_id: None,
            mode,
        };
        let mut drafts = vec![nucleic_core::Draft::host(EventKind::SessionCreated(created))];
        drafts.extend(history);
        drafts.push(note_draft(adoption_note(&outside, &taken), by));
        self.in_place.keep(&session_id, taken.lock);
        let transcript = self.config.transcript_path(&session_id);
        let started = async {
            self.write_events(&session_id, outside.backend, &transcript, drafts).await?;
            let turn = self.writer_turns.take(&session_id).await?;
            let session = self.resume_in_place(&session_id, &outside.id).await?;
            drop(turn);
            self.turn_started(&session_id).await;
            session.send_user_text(&request.prompt).await?;
            Ok::<_, HostError>(())
        };
        if let Err(e) = started.await {
            // Nothing drives the conversation: nobody is kept from it.
            self.in_place.release(&session_id);
            return Err(e);
        }
        self.session_summary(&session_id).await
    }

    /// Before in-place session `row`'s agent resumes: its lock, taken again when this host no
    /// longer holds it (handed over, or the host restarted) — refused while another holds it,
    /// or while a live CLI process is on the conversation (the person's terminal after a
    /// handoff). A holder that died is replaced, and said so in the transcript.
    pub(crate) async fn relock_in_place(&self, row: &SessionRow) -> Result<(), HostError> {
        let (Some(project_id), Some(conversation)) = (&row.project_id, &row.backend_session_id)
        else {
            return Ok(());
        };
        if !is_in_place(row) || self.in_place.holds(&row.id) {
            return Ok(());
        }
        let project = self.project(project_id).await?;
        let cwd = PathBuf::from(&row.cwd);
        let taken = self.take_in_place(&project, &row.id, row.backend, conversation, &cwd).await?;
        let found = self.outside_sessions(project_id).await?;
        let live =
            found.sessions.iter().find(|s| &s.id == conversation).and_then(|s| s.live.clone());
        if let Some(p) = live {
            return Err(HostError::Invalid(format!(
                "a live {} (pid {}, {}) is on this session's conversation {conversation}: end \
                 it (the terminal it was handed to) before carrying it on here",
                p.program, p.pid, p.why
            )));
        }
        let note = match &taken.stale {
            Some(dead) => format!(
                "Took the in-place lock {} again, left by {} (pid {}, no longer running).",
                taken.lock.path.display(),
                dead.session,
                dead.pid
            ),
            None => format!("Took the in-place lock {} again.", taken.lock.path.display()),
        };
        self.in_place.keep(&row.id, taken.lock);
        let updated = nucleic_protocol::SessionUpdated {
            title: None,
            archived: None,
            mode: None,
            note: Some(note),
            by: "host".to_owned(),
        };
        let transcript = PathBuf::from(&row.transcript);
        let drafts = vec![nucleic_core::Draft::host(EventKind::SessionUpdated(updated))];
        if let Err(e) = self.write_events(&row.id, row.backend, &transcript, drafts).await {
            self.in_place.release(&row.id);
            return Err(e);
        }
        Ok(())
    }

    /// Before a keeper's agent of in-place session `row` is re-adopted after a restart: its
    /// lock again (the agent on it is this session's own, so no live-process check); refused,
    /// and the agent then stopped, when another host or adoption took it meanwhile.
    pub(crate) async fn relock_kept(&self, row: &SessionRow) -> Result<(), HostError> {
        let (Some(project_id), Some(conversation)) = (&row.project_id, &row.backend_session_id)
        else {
            return Ok(());
        };
        if !is_in_place(row) || self.in_place.holds(&row.id) {
            return Ok(());
        }
        let project = self.project(project_id).await?;
        let cwd = PathBuf::from(&row.cwd);
        let taken = self.take_in_place(&project, &row.id, row.backend, conversation, &cwd).await?;
        self.in_place.keep(&row.id, taken.lock);
        Ok(())
    }

    /// Takes the lock of `conversation` for session `session`, working in `cwd` of `project`;
    /// refused where the agent's sandbox could write the lock (the checkout holds the agents'
    /// home, or the project's sandbox makes a folder of it writable).
    async fn take_in_place(
        &self,
        project: &ProjectRow,
        session: &str,
        backend: nucleic_protocol::Backend,
        conversation: &str,
        cwd: &Path,
    ) -> Result<Taken, HostError> {
        let home = crate::policy::agent_home(&self.config);
        if home.as_os_str().len() <= 1 {
            return Err(HostError::Invalid(
                "carrying a session on in place needs the agents' HOME (its lock lives there)"
                    .into(),
            ));
        }
        let path = in_place_lock::lock_path(&home, backend, conversation);
        let dir = canonical(&home.join(in_place_lock::LOCK_DIR));
        let reachable = std::iter::once(canonical(cwd))
            .chain(project.settings.sandbox.writable.iter().map(|p| canonical(Path::new(p))))
            .find(|w| dir.starts_with(w));
        if let Some(w) = reachable {
            return Err(HostError::Invalid(format!(
                "cannot carry it on in place: the in-place lock's folder {} is under {}, which \
                 the agent may write",
                dir.display(),
                w.display()
            )));
        }
        let me = Holder {
            pid: std::process::id(),
            start_ticks: in_place_lock::my_start_ticks(),
            host: self.config.home.to_string_lossy().into_owned(),
            session: session.to_owned(),
            backend,
            conversation: conversation.to_owned(),
            checkout: cwd.to_string_lossy().into_owned(),
            since: crate::clock::now().to_string(),
        };
        blocking(move || in_place_lock::take(&path, &me)).await
    }

    /// Lets in-place session `id`'s conversation go (a handoff): another host, an adoption or
    /// the person's terminal may drive it now. Whether it was held.
    pub(crate) fn release_in_place(&self, id: &str) -> bool {
        self.in_place.release(id)
    }
}

/// `path` resolved as far as it exists (the rest appended), so prefixes compare truly.
fn canonical(path: &Path) -> PathBuf {
    let mut existing = path.to_owned();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    out.extend(rest.into_iter().rev());
    out
}

/// What the transcript says about an in-place adoption.
fn adoption_note(outside: &OutsideSession, taken: &Taken) -> String {
    let stale = match &taken.stale {
        Some(dead) => format!(
            " The lock was left by {} of the host at {} (pid {}, no longer running): taken over.",
            dead.session, dead.host, dead.pid
        ),
        None => String::new(),
    };
    format!(
        "Adopted in place from the {} session {} ({}): the conversation itself goes on in {}, \
         not forked, under the lock {} (no other host or adoption drives it until it is handed \
         over), and every new tool call passes Nucleic's policy. Nucleic only reads the \
         session's file; the agent appends its new turns to it.{stale}",
        outside.backend.as_str(),
        outside.id,
        outside.path.display(),
        outside.cwd.display(),
        taken.lock.path.display()
    )
}
