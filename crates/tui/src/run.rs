//! The client loop: the terminal (raw mode, alternate screen, restored on exit and on panic),
//! a thread reading keys, one task following events on its own connection, one task making
//! requests on another, and the loop drawing the [`App`] between them. The UI never waits
//! on the host: requests and events come back through channels.

use std::io::IsTerminal;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nucleic_client::results::{Integrated, ReviewComments, ReviewSendout};
use nucleic_client::{Client, ClientError, code_name};
use nucleic_protocol::{
    FinishAction, HostMessage, Intent, ProtocolErrorCode, ReviewComment, Verbosity,
};
use ratatui::crossterm::event::{self, Event as TermEvent};
use ratatui::crossterm::execute;
use tokio::sync::mpsc;

use crate::app::{App, Command, Finish, Integration, Reply, Target};
use crate::reviewing::CommentDraft;
use crate::transcript::decision_words;
use crate::{keys, render};

/// Why the cockpit could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("nucleic tui needs a terminal (stdin and stdout are not both one)")]
    NotATerminal,
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// What the events task reports.
#[derive(Debug)]
enum Feed {
    Message(Box<HostMessage>),
    /// The connection is lost (and being made again); why.
    Lost(String),
    /// It is back (events resume from the cursors; lists are fetched again).
    Back,
}

/// How often the events task looks at new sessions to follow, and the screen redraws with
/// nothing happening (for "5 min ago").
const TICK: Duration = Duration::from_millis(200);
const IDLE_REDRAW: Duration = Duration::from_secs(5);
/// Waiting after the client gave up reconnecting, before trying again.
const HOST_RETRY: Duration = Duration::from_secs(1);
/// At most this many host messages are folded between two frames (a catch-up of 100,000
/// events still redraws as it goes).
const MESSAGES_PER_FRAME: usize = 5_000;
/// The first prompt of a session continued from another (the chat bridge's and the CLI's).
const CONTINUE_PROMPT: &str = "Continue from where the previous session left off.";

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Runs the cockpit on this terminal until the person quits. `requests` makes requests;
/// `events` (with `session_changes` on) follows sessions.
pub async fn run(requests: Client, events: Client) -> Result<(), TuiError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal);
    }
    let mut terminal = ratatui::try_init()?;
    execute!(std::io::stdout(), event::EnableBracketedPaste)?;
    let result = drive(&mut terminal, requests, events).await;
    let _ = execute!(std::io::stdout(), event::DisableBracketedPaste);
    ratatui::try_restore()?;
    result
}

async fn drive(
    terminal: &mut ratatui::DefaultTerminal,
    requests: Client,
    events: Client,
) -> Result<(), TuiError> {
    let (input_tx, mut input_rx) = mpsc::channel(256);
    std::thread::spawn(move || read_terminal(input_tx));
    let (follow_tx, follow_rx) = mpsc::unbounded_channel();
    let (feed_tx, mut feed_rx) = mpsc::channel(4096);
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel();
    let mut app = App::new(now_ms());
    app.backends = requests.welcome().backends.clone();
    let follower = tokio::spawn(follow(events, follow_rx, feed_tx));
    let requester = tokio::spawn(request(requests, command_rx, reply_tx));

    app.command(Command::Refresh);
    let result = loop {
        for command in app.take_commands() {
            let _ = match command {
                Command::Follow { session_id, from_seq } => {
                    follow_tx.send((session_id, from_seq)).map_err(|_| ())
                }
                other => command_tx.send(other).map_err(|_| ()),
            };
        }
        app.now_ms = now_ms();
        if let Err(e) = terminal.draw(|frame| render::draw(frame, &mut app)) {
            break Err(e.into());
        }
        if app.quit {
            break Ok(());
        }
        tokio::select! {
            input = input_rx.recv() => match input {
                Some(Ok(TermEvent::Key(key))) => {
                    app.flash = None;
                    keys::handle(&mut app, key);
                }
                Some(Ok(TermEvent::Paste(text))) => keys::paste(&mut app, &text),
                Some(Ok(_)) => {} // a resize (or focus, mouse): redrawn below
                Some(Err(e)) => break Err(e.into()),
                None => break Ok(()),
            },
            feed = feed_rx.recv() => {
                let Some(feed) = feed else { break Ok(()) };
                on_feed(&mut app, feed);
                let mut more = 0;
                while more < MESSAGES_PER_FRAME && let Ok(feed) = feed_rx.try_recv() {
                    on_feed(&mut app, feed);
                    more += 1;
                }
            }
            reply = reply_rx.recv() => match reply {
                Some(reply) => app.on_reply(reply),
                None => break Ok(()),
            },
            () = tokio::time::sleep(IDLE_REDRAW) => {}
        }
    };
    follower.abort();
    requester.abort();
    result
}

fn on_feed(app: &mut App, feed: Feed) {
    match feed {
        Feed::Message(message) => app.on_host(*message),
        Feed::Lost(why) => app.on_link(Some(why)),
        Feed::Back => app.on_link(None),
    }
}

/// The key reader: crossterm's blocking reads, on a thread of its own.
fn read_terminal(tx: mpsc::Sender<std::io::Result<TermEvent>>) {
    loop {
        let read = event::read();
        let failed = read.is_err();
        if tx.blocking_send(read).is_err() || failed {
            return;
        }
    }
}

/// Follows the sessions asked for on `client`, handing on what the host pushes.
async fn follow(
    mut client: Client,
    mut asks: mpsc::UnboundedReceiver<(String, u64)>,
    feed: mpsc::Sender<Feed>,
) {
    let mut lost = false;
    let mut reconnects = client.stats().reconnects;
    loop {
        while let Ok((session, from)) = asks.try_recv() {
            match client.subscribe(&session, from, Verbosity::Full).await {
                Ok(()) | Err(ClientError::Rejected(_)) => {}
                Err(e) => {
                    let _ = feed.send(Feed::Lost(e.to_string())).await;
                    lost = true;
                }
            }
        }
        let next = client.next_within(TICK).await;
        let seen = client.stats().reconnects;
        match next {
            Ok(_) | Err(ClientError::Timeout { .. }) if lost || seen != reconnects => {
                lost = false;
                reconnects = seen;
                if feed.send(Feed::Back).await.is_err() {
                    return;
                }
            }
            _ => {}
        }
        match next {
            Ok(message) => {
                if feed.send(Feed::Message(Box::new(message))).await.is_err() {
                    return;
                }
            }
            Err(ClientError::Timeout { .. }) => {}
            Err(e) => {
                if feed.send(Feed::Lost(e.to_string())).await.is_err() {
                    return;
                }
                lost = true;
                tokio::time::sleep(HOST_RETRY).await;
            }
        }
    }
}

/// Carries out commands on `client`, one at a time, reporting each outcome.
async fn request(
    mut client: Client,
    mut commands: mpsc::UnboundedReceiver<Command>,
    replies: mpsc::UnboundedSender<Reply>,
) {
    while let Some(command) = commands.recv().await {
        let reply = match command {
            Command::Refresh => match client.list_projects().await {
                Ok(projects) => {
                    let _ = replies.send(Reply::Projects(projects));
                    match client.list_sessions(None, false).await {
                        Ok(sessions) => Reply::Sessions(sessions),
                        Err(e) => done("Listing sessions", Err(e)),
                    }
                }
                Err(e) => done("Listing projects", Err(e)),
            },
            Command::Decide { target, decision, confirmed } => {
                let Target { session_id, request_id } = &target;
                let result = match client.decide(session_id, request_id, decision, confirmed).await
                {
                    Ok(resolved) => {
                        Ok(format!("{} ({request_id})", decision_words(resolved.decision)))
                    }
                    Err(ClientError::Rejected(r))
                        if r.code == Some(ProtocolErrorCode::AlreadyResolved) =>
                    {
                        let by = r.resolved_by.unwrap_or_else(|| "another client".into());
                        Err(format!("Already answered by {by}: first answer wins"))
                    }
                    Err(e) => Err(refusal(e)),
                };
                Reply::Decided { target, result }
            }
            Command::Send { session_id, text } => {
                done("Sent", client.send_input(&session_id, &text).await)
            }
            Command::Interrupt { session_id } => done(
                "Interrupt requested",
                client.intent(Intent::Interrupt { session_id }).await.map(drop),
            ),
            Command::Stop { session_id } => {
                done("Stopped", client.intent(Intent::Stop { session_id }).await.map(drop))
            }
            Command::Diff { session_id, turn } => {
                let result = client.git_facts(&session_id, true, turn).await;
                Reply::Diff { session_id, result: result.map(Box::new).map_err(refusal) }
            }
            Command::Comments { session_id } => comments(&mut client, session_id, None).await,
            Command::Comment(draft) => {
                let CommentDraft { session_id, path, line, end_line, snapshot, text } = draft;
                let intent = Intent::AddReviewComment {
                    session_id: session_id.clone(),
                    path,
                    line,
                    end_line,
                    body: text,
                    snapshot,
                };
                match client.intent_as::<ReviewComment>(intent).await {
                    Ok(c) => {
                        let said = format!("Commented on {} (R sends the review)", c.citation());
                        comments(&mut client, session_id, Some(said)).await
                    }
                    Err(e) => done("Comment refused", Err(e)),
                }
            }
            Command::ResolveComment { session_id, comment_id, resolved } => {
                let intent = Intent::ResolveReviewComment {
                    session_id: session_id.clone(),
                    comment_id,
                    resolved,
                };
                match client.intent(intent).await {
                    Ok(_) => {
                        let said = if resolved { "Resolved" } else { "Reopened" };
                        comments(&mut client, session_id, Some(said.to_owned())).await
                    }
                    Err(e) => done("Resolve refused", Err(e)),
                }
            }
            Command::SendReview { session_id } => {
                match client.intent_as::<ReviewSendout>(Intent::SendReview { session_id }).await {
                    Ok(sent) => Reply::Done {
                        what: format!("Sent {} comment(s) to the agent", sent.sent),
                        result: Ok(()),
                    },
                    Err(e) => done("Send review refused", Err(e)),
                }
            }
            Command::SetModel { session_id, model } => {
                let what = format!("Model: {}", crate::sanitize::line(&model));
                done(&what, client.intent(Intent::SetModel { session_id, model }).await.map(drop))
            }
            Command::Merge { session_id, how, update_checkout } => {
                let action = match how {
                    Integration::Merge => {
                        FinishAction::Merge { message: None, update_checkout, force_reason: None }
                    }
                    Integration::Squash => {
                        FinishAction::Squash { message: None, update_checkout, force_reason: None }
                    }
                    Integration::Rebase => {
                        FinishAction::Rebase { message: None, update_checkout, force_reason: None }
                    }
                };
                let intent = Intent::Finish { session_id, action };
                let word = how.word();
                match client.intent_as::<Integrated>(intent).await {
                    Ok(done) => {
                        let tip: String = done.new_tip.chars().take(8).collect();
                        let what = format!("{word}: done ({} at {tip})", done.base_branch);
                        Reply::Done { what, result: Ok(()) }
                    }
                    Err(e) => {
                        Reply::Done { what: format!("{word} refused"), result: Err(refusal(e)) }
                    }
                }
            }
            Command::Finish { session_id, finish } => {
                let (action, what) = match finish {
                    Finish::Keep => (FinishAction::Keep, "Kept"),
                    Finish::Discard => (FinishAction::Discard, "Discarded"),
                    Finish::Continue => (
                        FinishAction::Continue {
                            prompt: CONTINUE_PROMPT.to_owned(),
                            backend: None,
                        },
                        "Continued in a new session (in the list)",
                    ),
                };
                done(what, client.intent(Intent::Finish { session_id, action }).await.map(drop))
            }
            Command::SetMode { session_id, mode } => {
                let intent = Intent::SetMode { session_id, mode: mode.to_owned() };
                done(&format!("Mode: {mode}"), client.intent(intent).await.map(drop))
            }
            // Follows go to the events task.
            Command::Follow { .. } => continue,
        };
        if replies.send(reply).is_err() {
            return;
        }
    }
}

fn refusal(e: ClientError) -> String {
    match e {
        ClientError::Rejected(r) => match r.code {
            Some(code) => format!("{} ({})", r.message, code_name(code)),
            None => r.message,
        },
        other => other.to_string(),
    }
}

/// The session's review comments, after `said`.
async fn comments(client: &mut Client, session_id: String, said: Option<String>) -> Reply {
    let intent = Intent::ReviewComments { session_id: session_id.clone() };
    let result = client.intent_as::<ReviewComments>(intent).await;
    Reply::Comments { session_id, said, result: result.map(|r| r.comments).map_err(refusal) }
}

fn done(what: &str, result: Result<(), ClientError>) -> Reply {
    Reply::Done { what: what.to_owned(), result: result.map_err(refusal) }
}
