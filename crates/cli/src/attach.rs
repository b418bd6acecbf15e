//! `nucleic session attach`: streams a session's events. With a terminal on stdin it asks the
//! person about each approval (unless another client answers first); otherwise — a script
//! tailing the session, `</dev/null` — it only watches: an observer never answers for the
//! person, and the approval stays pending for another client.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use nucleic_protocol::{
    ApprovalRequested, ClientMessage, Decision, EventKind, HostMessage, Verbosity,
};

use crate::render::Renderer;
use nucleic_client::Client;

/// What came of asking about one approval.
enum Asked {
    Answer(Decision),
    /// Answered elsewhere, or the terminal closed: the approval is left to others.
    Nothing,
    /// Ctrl-C.
    Detach,
}

pub async fn attach(
    mut daemon: Client,
    session_id: String,
    from: u64,
    until_idle: bool,
) -> anyhow::Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    let message_id = daemon.id();
    daemon
        .request(ClientMessage::Subscribe {
            message_id,
            session_id: session_id.clone(),
            from_seq: from,
            verbosity: Verbosity::Full,
        })
        .await?;
    let mut renderer = Renderer::default();
    // Messages read while a question was open, not yet shown.
    let mut backlog = VecDeque::new();
    loop {
        let message = match backlog.pop_front() {
            Some(m) => m,
            None => tokio::select! {
                m = daemon.next() => m?,
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            },
        };
        let HostMessage::Event { event } = message else { continue };
        renderer.render(&event, &mut std::io::stdout().lock())?;
        std::io::stdout().flush()?;
        match &event.kind {
            EventKind::ApprovalRequested(a) if !interactive => {
                eprintln!(
                    "nucleic: watching only (stdin is not a terminal): approval {} stays pending; \
                     answer it with `nucleic session approve|deny {session_id} {}`",
                    a.request_id, a.request_id
                );
            }
            EventKind::ApprovalRequested(a) => {
                match ask_unless_answered(&mut daemon, &mut backlog, a).await? {
                    Asked::Answer(decision) => {
                        let message_id = daemon.id();
                        // A critical allow was typed twice (`ask_person`).
                        let confirmed = a.risk == Some(nucleic_protocol::Risk::Critical)
                            && crate::run::is_allow(&decision);
                        let request = ClientMessage::Decide {
                            message_id,
                            session_id: session_id.clone(),
                            request_id: a.request_id.clone(),
                            decision,
                            confirmed,
                        };
                        if let Err(e) = daemon.request(request).await {
                            eprintln!("nucleic: {e}");
                        }
                    }
                    Asked::Nothing => {}
                    Asked::Detach => return Ok(ExitCode::SUCCESS),
                }
            }
            EventKind::RunFinished(_) => return Ok(ExitCode::SUCCESS),
            EventKind::TurnCompleted(_) if until_idle => return Ok(ExitCode::SUCCESS),
            _ => {}
        }
    }
}

/// Asks the person about `a` while still reading the connection (so it stays alive, answering
/// the host's pings, and an answer from another client ends the question). What is read
/// meanwhile goes to `backlog`, in order.
async fn ask_unless_answered(
    daemon: &mut Client,
    backlog: &mut VecDeque<HostMessage>,
    a: &ApprovalRequested,
) -> anyhow::Result<Asked> {
    if backlog.iter().any(|m| resolves(m, &a.request_id)) {
        return Ok(Asked::Nothing);
    }
    let ask = crate::run::ask_person(a);
    tokio::pin!(ask);
    loop {
        tokio::select! {
            decision = &mut ask => {
                return Ok(match decision {
                    Some(decision) => Asked::Answer(decision),
                    None => {
                        eprintln!("\nnucleic: the terminal closed: approval {} stays pending", a.request_id);
                        Asked::Nothing
                    }
                });
            }
            message = daemon.next() => {
                let message = message?;
                let answered = resolves(&message, &a.request_id);
                backlog.push_back(message);
                if answered {
                    eprintln!("\nnucleic: approval {} was answered elsewhere", a.request_id);
                    return Ok(Asked::Nothing);
                }
            }
            _ = tokio::signal::ctrl_c() => return Ok(Asked::Detach),
        }
    }
}

/// Whether `message` is the resolution of approval `request_id`.
fn resolves(message: &HostMessage, request_id: &str) -> bool {
    matches!(message, HostMessage::Event { event }
        if matches!(&event.kind, EventKind::ApprovalResolved(r) if r.request_id == request_id))
}
