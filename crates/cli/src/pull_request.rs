//! `nucleic session pr`, and the pull request a session was finished with (`session show`).

use std::time::Duration;

use anyhow::Context;
use nucleic_protocol::{
    ClientMessage, EventKind, FinishAction, HostMessage, PullRequestOpened, SessionSummary,
    Verbosity,
};

use nucleic_client::Client;

/// `nucleic session pr <id> [--title T] [--draft] [--base B] [--repo R] [--force REASON]`.
#[derive(Debug, clap::Args)]
pub struct PrArgs {
    session_id: String,
    /// Default: the session's title.
    #[arg(long)]
    title: Option<String>,
    /// Open it as a draft.
    #[arg(long)]
    draft: bool,
    /// The branch to merge into (default: the session's base branch).
    #[arg(long)]
    base: Option<String>,
    /// `[HOST/]OWNER/REPO` (default: the one the remote's URL names).
    #[arg(long)]
    repo: Option<String>,
    /// Open it even though required checks fail; the reason is recorded.
    #[arg(long, value_name = "REASON")]
    force: Option<String>,
}

impl PrArgs {
    /// The session and the finishing action.
    pub fn into_action(self) -> (String, FinishAction) {
        let PrArgs { session_id, title, draft, base, repo, force } = self;
        (session_id, FinishAction::PullRequest { title, draft, base, repo, force_reason: force })
    }
}

/// How long reading a session's events may take.
const READ_DEADLINE: Duration = Duration::from_secs(30);

/// The last pull request opened for the session, if any (read from its transcript).
pub async fn latest(
    daemon: &mut Client,
    summary: &SessionSummary,
) -> anyhow::Result<Option<PullRequestOpened>> {
    if summary.last_seq == 0 {
        return Ok(None);
    }
    let session_id = summary.session_id.clone();
    let message_id = daemon.id();
    let subscribe = ClientMessage::Subscribe {
        message_id,
        session_id: session_id.clone(),
        from_seq: 1,
        verbosity: Verbosity::Full,
    };
    daemon.request(subscribe).await?;
    let mut latest = None;
    let fold = async {
        loop {
            let HostMessage::Event { event } = daemon.next().await? else { continue };
            if event.session_id != session_id {
                continue;
            }
            if let EventKind::PullRequestOpened(pr) = event.kind {
                latest = Some(pr);
            }
            if event.seq >= summary.last_seq {
                return Ok::<_, anyhow::Error>(());
            }
        }
    };
    tokio::time::timeout(READ_DEADLINE, fold)
        .await
        .with_context(|| format!("reading the events of session {session_id} timed out"))??;
    let message_id = daemon.id();
    daemon.request(ClientMessage::Unsubscribe { message_id, session_id }).await?;
    Ok(latest)
}
