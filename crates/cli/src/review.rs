//! `nucleic session diff [--turn N]` and `nucleic session review …`: a session's whole change
//! or one turn's, and review comments on its lines sent to the agent as one follow-up.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use nucleic_protocol::{ClientMessage, CommentStatus, HostMessage, Intent, ReviewComment};

use nucleic_client::Client;
use nucleic_client::results::{ReviewComments, ReviewSendout};

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Comment on a line (`PATH:LINE`) or lines (`PATH:START-END`) of the worktree as it is now.
    Comment {
        session_id: String,
        #[arg(value_name = "PATH:LINE[-END]")]
        at: String,
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// The comments, open and resolved (outdated: their lines changed since).
    List { session_id: String },
    /// Mark a comment resolved (`--reopen`: open again).
    Resolve {
        session_id: String,
        comment_id: String,
        #[arg(long)]
        reopen: bool,
    },
    /// Send the open comments not sent yet to the agent as one follow-up.
    Send { session_id: String },
}

/// `nucleic session diff ID [--turn N] [--patch]`.
pub async fn session_diff(
    daemon: &mut Client,
    session_id: String,
    turn: Option<u32>,
    patch: bool,
) -> anyhow::Result<ExitCode> {
    let message_id = daemon.id();
    let request = ClientMessage::GitFacts { message_id, session_id, include_patch: patch, turn };
    let HostMessage::GitFacts { facts, .. } = daemon.request(request).await? else {
        bail!("the daemon sent no git facts");
    };
    match facts.turn {
        Some(n) => println!("turn {n} of {}", facts.turns.len()),
        None => println!(
            "vs {} ({}): {} ahead, {} behind",
            facts.base_branch,
            &facts.base_sha[..facts.base_sha.len().min(12)],
            facts.ahead,
            facts.behind
        ),
    }
    for f in &facts.files {
        let path = nucleic_tui::sanitize::line(&f.path);
        println!("  {:<10} +{:<5} -{:<5} {path}", f.status, f.additions, f.deletions);
    }
    if facts.turn.is_none() && !facts.turns.is_empty() {
        println!("turns with snapshots: 1-{} (--turn N shows one)", facts.turns.len());
    }
    if !facts.conflicts.is_empty() {
        println!("would conflict: {}", facts.conflicts.join(", "));
    }
    if let Some(p) = facts.patch {
        print!("{p}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `nucleic session review …`.
pub async fn session_review(
    daemon: &mut Client,
    command: ReviewCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        ReviewCommand::Comment { session_id, at, text } => {
            let (path, line, end_line) = parse_at(&at)?;
            let body = text.join(" ");
            let add =
                Intent::AddReviewComment { session_id, path, line, end_line, body, snapshot: None };
            let comment: ReviewComment = daemon.intent_as(add).await?;
            print_comment(&comment);
        }
        ReviewCommand::List { session_id } => {
            let listed: ReviewComments =
                daemon.intent_as(Intent::ReviewComments { session_id }).await?;
            let comments = listed.comments;
            if comments.is_empty() {
                println!("no review comments");
            }
            comments.iter().for_each(print_comment);
        }
        ReviewCommand::Resolve { session_id, comment_id, reopen } => {
            let resolve =
                Intent::ResolveReviewComment { session_id, comment_id, resolved: !reopen };
            let comment: ReviewComment = daemon.intent_as(resolve).await?;
            print_comment(&comment);
        }
        ReviewCommand::Send { session_id } => {
            let sendout: ReviewSendout =
                daemon.intent_as(Intent::SendReview { session_id }).await?;
            println!("sent {} comment(s) to the agent", sendout.sent);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `src/a.rs:12` or `src/a.rs:12-14` (the last `:` splits, so paths may hold one).
fn parse_at(at: &str) -> anyhow::Result<(String, u32, Option<u32>)> {
    let (path, lines) =
        at.rsplit_once(':').with_context(|| format!("{at:?}: expected PATH:LINE"))?;
    let number = |n: &str| n.parse::<u32>().with_context(|| format!("{n:?} is not a line number"));
    let (line, end) = match lines.split_once('-') {
        Some((start, end)) => (number(start)?, Some(number(end)?)),
        None => (number(lines)?, None),
    };
    if path.is_empty() {
        bail!("{at:?}: the path is empty");
    }
    Ok((path.to_owned(), line, end))
}

fn print_comment(c: &ReviewComment) {
    let state = match c.status {
        CommentStatus::Open if c.sent_at.is_some() => "open, sent",
        CommentStatus::Open => "open",
        CommentStatus::Resolved => "resolved",
    };
    let outdated = if c.outdated { ", outdated" } else { "" };
    println!("{}  {}  ({state}{outdated})", c.comment_id, c.citation());
    for line in &c.quote {
        println!("  > {line}");
    }
    for line in c.body.lines() {
        println!("  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        assert_eq!(parse_at("a.py:3").ok(), Some(("a.py".into(), 3, None)));
        assert_eq!(parse_at("d:x/a.py:3-5").ok(), Some(("d:x/a.py".into(), 3, Some(5))));
        assert!(parse_at("a.py").is_err());
        assert!(parse_at(":3").is_err());
        assert!(parse_at("a.py:x").is_err());
    }
}
