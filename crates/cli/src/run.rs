//! `nucleic run`: one session in place, in the foreground — spawn the agent, drive its single
//! writer, print events, answer approvals, and exit with the run's outcome.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, bail};

use nucleic_agents::{AgentLaunch, LaunchRequest};
use nucleic_core::{CoreError, SessionConfig, SessionController, SessionHandle};
use nucleic_protocol::{ApprovalRequested, Decision, EventKind, SessionCreated};
use tokio::sync::{mpsc, oneshot};

use crate::locate::nucleic_home;
use crate::render::{Renderer, summarize_input};
use crate::{ApproveMode, RunArgs};

/// Runs the session; `Ok` carries the exit code (0 only when the run completed).
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = cwd
        .canonicalize()
        .with_context(|| format!("working directory {} does not exist", cwd.display()))?;
    let mut launch = agent_launch(&args, cwd)?;
    let backend = launch.backend();
    let prompt = args.prompt.join(" ");
    let home = nucleic_home(args.home.clone())
        .context("cannot tell where to store sessions: set NUCLEIC_HOME")?;
    let session_id = uuid::Uuid::new_v4().to_string();
    let transcript = home.join("sessions").join(&session_id).join("transcript.jsonl");
    let (confinement, egress) = confine(&mut launch, &home, &session_id)?;
    let (agent, outputs) = launch.spawn()?;
    let session = SessionController::start(
        SessionConfig {
            session_id,
            backend,
            transcript,
            approval_timeout: args.approval_timeout.map(Duration::from_secs),
            created: Some(SessionCreated {
                title: nucleic_host::title_from_prompt(&prompt),
                project_id: None,
                project_root: None,
                cwd: launch.common().cwd.to_string_lossy().into_owned(),
                worktree: None,
                model: args.model.clone(),
                permission_mode: Some(args.permission_mode.clone()),
                read_only: false,
                continues_session_id: None,
                created_by: Some("terminal".into()),
                parent_session_id: None,
                mode: None,
            }),
            keep_open: false,
            policy: None,
        },
        agent,
        outputs,
    )?;
    session.record(confinement).await?;
    if let Some(mut egress) = egress {
        let writer = session.clone();
        tokio::spawn(async move {
            while let Some(decision) = egress.decisions.recv().await {
                if let nucleic_host::EgressEvent::Refused { host, port, method, reason } = decision
                {
                    let refused = nucleic_protocol::EgressRefused { host, port, method, reason };
                    let _ = writer.record(EventKind::EgressRefused(refused)).await;
                }
            }
        });
    }
    let mut events = session.subscribe(1)?;
    session.send_user_text(&prompt).await?;

    let mut renderer = Renderer::default();
    let mut interrupts = 0u32;
    let mut finished = None;
    let mut timed_out = false;
    // Approvals being answered, by request id: resolving one withdraws its terminal prompt.
    let mut withdraw: HashMap<String, oneshot::Sender<()>> = HashMap::new();
    // Where the adapter's watchdog applies the idle timeout to turns (Codex, with a clearer
    // message), this timer is only a backstop, at twice the time.
    let backstop = if launch.provider_timeout().is_some() { 2 } else { 1 };
    let idle = args.idle_timeout.map(|secs| Duration::from_secs(secs * backstop));
    loop {
        let event = tokio::select! {
            e = events.next() => e?,
            () = sleep_or_never(idle), if !timed_out => {
                timed_out = true;
                let secs = idle.map_or(0, |d| d.as_secs());
                let reason = format!("the agent produced no output for {secs} s; stopping it");
                eprintln!("nucleic: {reason}");
                let _ = session.stop(Duration::from_secs(3), Some(&reason)).await;
                continue;
            }
            _ = tokio::signal::ctrl_c() => {
                interrupts += 1;
                if interrupts == 1 {
                    match session.interrupt("terminal").await {
                        // codex exec has no turns to interrupt: the first Ctrl-C stops it.
                        Err(CoreError::Unsupported(_)) => {
                            eprintln!("nucleic: this agent cannot be interrupted; stopping it");
                            let _ = session.stop(Duration::from_secs(3), None).await;
                        }
                        _ => eprintln!("nucleic: interrupting (Ctrl-C again to stop the agent)"),
                    }
                } else {
                    let _ = session.stop(Duration::from_secs(3), None).await;
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        {
            let mut out = std::io::stdout().lock();
            if args.json {
                serde_json::to_writer(&mut out, &*event)?;
                writeln!(out)?;
                out.flush()?;
            } else {
                renderer.render(&event, &mut out)?;
            }
        }
        match &event.kind {
            EventKind::ApprovalRequested(a) => {
                let (tx, rx) = oneshot::channel();
                withdraw.insert(a.request_id.clone(), tx);
                tokio::spawn(answer(session.clone(), a.clone(), args.approve, rx));
            }
            EventKind::ApprovalResolved(r) => {
                if let Some(tx) = withdraw.remove(&r.request_id) {
                    let _ = tx.send(());
                }
            }
            // One prompt per run: once its turn is over, let the agent exit.
            EventKind::TurnCompleted(_) => {
                let _ = session.close_input().await;
            }
            // Keep reading: the writer may still record the final status change.
            EventKind::RunFinished(f) => finished = Some(f.clone()),
            _ => {}
        }
    }
    let Some(finished) = finished else { bail!("the session ended without reporting how") };
    if timed_out {
        eprintln!("nucleic: run failed (timeout): the agent hung and was stopped");
        return Ok(ExitCode::from(1));
    }
    if finished.outcome.is_success() {
        return Ok(ExitCode::SUCCESS);
    }
    let outcome = serde_json::to_value(finished.outcome)?;
    eprintln!(
        "nucleic: run failed ({}): {}",
        outcome.as_str().unwrap_or("unknown"),
        finished.message.as_deref().unwrap_or("no details")
    );
    Ok(ExitCode::from(1))
}

/// The backend's launch from the command line, built by its description (what it cannot do —
/// `--fork`, `--exec`, `--append-system-prompt`, a mode it has not — is refused there).
fn agent_launch(args: &RunArgs, cwd: PathBuf) -> anyhow::Result<AgentLaunch> {
    let description = nucleic_agents::describe(args.agent);
    let (program, prefix) = match &args.agent_bin {
        Some(bin) => (bin.clone(), Vec::new()),
        None => crate::locate::find_agent(description).with_context(|| {
            format!(
                "{} not found on PATH or in the agent cache; run scripts/install-agents.sh, \
                 pass --agent-bin, or use --agent sim",
                description.name
            )
        })?,
    };
    let mut request = LaunchRequest::new(program, cwd);
    request.prefix_args = prefix;
    request.common.permission_mode.clone_from(&args.permission_mode);
    request.common.model.clone_from(&args.model);
    request.common.resume.clone_from(&args.resume);
    request.fork = args.fork;
    request.append_system_prompt.clone_from(&args.append_system_prompt);
    request.exec = args.exec;
    // A backend with a watchdog (codex retries an unreachable provider forever, and its retry
    // notices count as output) applies the idle timeout to turns that make no progress.
    request.provider_timeout = args.idle_timeout.map(Duration::from_secs);
    Ok(description.launch(request)?)
}

/// Confines the run's agent as a daemon session's would be (`NUCLEIC_AGENT_ISOLATION`), with its
/// own egress proxy; the `confinement` event that says what holds.
fn confine(
    launch: &mut AgentLaunch,
    home: &Path,
    run_id: &str,
) -> anyhow::Result<(EventKind, Option<nucleic_host::RunEgress>)> {
    let config = crate::serve::host_config(home)?;
    let backend = launch.backend();
    let common = launch.common_mut();
    let (cwd, program) = (common.cwd.clone(), common.program.clone());
    let isolation = nucleic_host::run_isolation(&config, backend, &cwd, run_id, &program)?;
    let confined = isolation.is_some();
    let egress = match isolation.as_ref().and_then(|i| i.network.as_ref()) {
        Some(_) => Some(nucleic_host::RunEgress::start(&config, run_id, backend)?),
        None => None,
    };
    common.isolation = isolation;
    let allowed = match egress {
        Some(_) => nucleic_host::confinement::model_endpoints(&config, backend),
        None => Vec::new(),
    };
    let commands = launch.commands_note().map(|n| format!("; {n}")).unwrap_or_default();
    let summary = if confined {
        format!(
            "bubblewrap: your home and secrets hidden, writes only in {} and the agent's own \
             state, no privilege, network only to {}{commands}",
            cwd.display(),
            if allowed.is_empty() { "nothing".to_owned() } else { allowed.join(", ") }
        )
    } else {
        format!(
            "{}=off or no bubblewrap for the simulated agent",
            nucleic_host::AgentIsolation::VARIABLE
        )
    };
    let event = nucleic_protocol::Confinement { confined, summary, egress_allowed: allowed };
    Ok((EventKind::Confinement(event), egress))
}

async fn sleep_or_never(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Answers one approval. Runs as its own task so events keep flowing while a person thinks;
/// `answered` fires when the approval was resolved some other way (its timeout, the turn ending),
/// which withdraws the terminal prompt.
async fn answer(
    session: SessionHandle,
    request: ApprovalRequested,
    mode: ApproveMode,
    answered: oneshot::Receiver<()>,
) {
    let (decision, by) = match mode {
        ApproveMode::Allow => (Decision::Allow, "cli:--approve allow"),
        ApproveMode::Deny => (
            Decision::Deny { message: "denied by nucleic run --approve deny".into() },
            "cli:--approve deny",
        ),
        ApproveMode::Ask => tokio::select! {
            decision = ask_terminal(&request) => (decision, "terminal"),
            _ = answered => {
                eprintln!("\nnucleic: approval {} was answered without you", request.request_id);
                return;
            }
        },
    };
    match session.decide(&request.request_id, decision, by).await {
        Ok(_) => {}
        // Someone (or the timeout) answered first, or the turn is over: nothing left to do.
        Err(CoreError::AlreadyResolved { .. } | CoreError::UnknownRequest(_)) => {}
        Err(e) => eprintln!("nucleic: could not answer approval {}: {e}", request.request_id),
    }
}

/// Lines typed on the terminal, read by one thread for the whole process. A prompt holds the lock
/// while it waits (one prompt at a time); dropping a waiting prompt (its approval was answered
/// elsewhere) consumes no line, and the runtime never waits on a blocked read when the run ends.
fn terminal_lines() -> &'static tokio::sync::Mutex<mpsc::UnboundedReceiver<String>> {
    static LINES: OnceLock<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line.trim().to_owned()).is_err() {
                    break;
                }
            }
        });
        tokio::sync::Mutex::new(rx)
    })
}

/// Asks on the terminal: allow, deny with a reason, always, or stop. A closed terminal denies.
pub async fn ask_terminal(request: &ApprovalRequested) -> Decision {
    ask_person(request)
        .await
        .unwrap_or_else(|| Decision::Deny { message: "no answer: the terminal closed".into() })
}

/// Reads one line typed after `prompt` (one prompt at a time); `None` once the terminal closed.
async fn read_answer(prompt: &str) -> Option<String> {
    let mut lines = terminal_lines().lock().await;
    let mut err = std::io::stderr();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    lines.recv().await
}

/// Asks on the terminal; `None` when it closed before an answer.
pub async fn ask_person(request: &ApprovalRequested) -> Option<Decision> {
    use crate::plan_prompt::{plan_decision, plan_prompt, question_prompt, typed_answer};
    if request.tool_name == nucleic_protocol::EXIT_PLAN_MODE {
        return Some(plan_decision(&read_answer(&plan_prompt(request)).await?));
    }
    if request.tool_name == nucleic_protocol::ASK_USER_QUESTION {
        let mut typed = Vec::new();
        while let Some(prompt) = question_prompt(request, typed.len()) {
            typed.push(typed_answer(request, typed.len(), &read_answer(&prompt).await?));
        }
        return Some(match crate::approvals::answers(request, &typed) {
            Ok(answers) => Decision::Answer { answers },
            Err(e) => Decision::Deny { message: format!("no usable answer: {e}") },
        });
    }
    let prompt = match nucleic_protocol::EgressAsked::of(request) {
        Some(asked) => format!(
            "Allow network access to {}? [y]es / [n]o <reason> / [a]lways (for the project): ",
            asked.destination()
        ),
        None => format!(
            "Allow {} {}? [y]es / [n]o <reason> / [a]lways / [s]top: ",
            request.tool_name,
            summarize_input(&request.input, 80)
        ),
    };
    let line = read_answer(&prompt).await?;
    let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
    let reason = if rest.trim().is_empty() {
        "denied by the user".to_owned()
    } else {
        rest.trim().to_owned()
    };
    let decision = match word.to_ascii_lowercase().as_str() {
        "y" | "yes" | "allow" => Decision::Allow,
        "a" | "always" => Decision::AllowAlways { scope: None },
        "s" | "stop" => Decision::DenyAndStop { message: reason },
        _ => Decision::Deny { message: reason },
    };
    if !is_allow(&decision) || request.risk != Some(nucleic_protocol::Risk::Critical) {
        return Some(decision);
    }
    // A critical call is allowed only after a second, explicit confirmation.
    let confirm = format!(
        "This is CRITICAL ({}). Type \"allow\" to confirm, anything else denies: ",
        request.risk_reasons.join(", ")
    );
    let again = read_answer(&confirm).await;
    Some(match again?.trim() {
        "allow" => decision,
        _ => Decision::Deny { message: "denied: a critical call was not confirmed".into() },
    })
}

/// Whether `decision` lets the call run.
pub fn is_allow(decision: &Decision) -> bool {
    match decision {
        Decision::Allow
        | Decision::AllowEdited { .. }
        | Decision::AllowAlways { .. }
        | Decision::ApprovePlan { .. }
        | Decision::Answer { .. } => true,
        Decision::Deny { .. } | Decision::DenyAndStop { .. } => false,
    }
}
