//! Review comments on a session's diff: kept by the host (`sessions/<id>/review.json`), anchored
//! to a file, its lines and the worktree snapshot they were made on, and sent to the agent as
//! one follow-up that cites `path:line`, quotes the lines and gives the comment.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nucleic_git::Repo;
use nucleic_protocol::{CommentStatus, EventKind, ReviewComment, ReviewSent};
use serde::{Deserialize, Serialize};

use crate::clock::now;
use crate::context::Context;
use crate::dev_loop::turns::{read_json, write_json};
use crate::error::{HostError, blocking};

/// Most comments one session keeps.
const MAX_COMMENTS: usize = 500;
/// Longest comment, in bytes.
const MAX_BODY_BYTES: usize = 16 * 1024;
/// Most lines one comment covers (and quotes).
const MAX_LINES: u32 = 200;
/// Largest file a comment can quote from.
const MAX_FILE_BYTES: u64 = 8 << 20;

/// `sessions/<id>/review.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ReviewLog {
    comments: Vec<ReviewComment>,
}

/// What a new comment says and where.
#[derive(Debug, Clone)]
pub struct NewComment {
    pub path: String,
    pub line: u32,
    pub end_line: Option<u32>,
    pub body: String,
    /// The snapshot the diff showed; `None`: the worktree now.
    pub snapshot: Option<String>,
}

impl Context {
    /// Adds a review comment after checking that the file exists at the snapshot and the lines
    /// are in it; the lines are quoted from there.
    pub async fn add_review_comment(
        &self,
        id: &str,
        new: NewComment,
        by: &str,
    ) -> Result<ReviewComment, HostError> {
        let body = new.body.trim().to_owned();
        if body.is_empty() {
            return Err(HostError::Invalid("a review comment needs some text".into()));
        }
        if body.len() > MAX_BODY_BYTES {
            return Err(HostError::Invalid(format!(
                "a review comment is at most {MAX_BODY_BYTES} bytes ({} given)",
                body.len()
            )));
        }
        let end = new.end_line.unwrap_or(new.line);
        if new.line == 0 || end < new.line {
            return Err(HostError::Invalid(format!(
                "bad lines {}-{end}: lines count from 1 and a range ends at or after its start",
                new.line
            )));
        }
        if end - new.line >= MAX_LINES {
            return Err(HostError::Invalid(format!("a comment covers at most {MAX_LINES} lines")));
        }
        let place = self.reviewable(id).await?;
        let path = new.path.clone();
        let given = new.snapshot.clone();
        let (snapshot, lines) = blocking(move || {
            let repo = Repo::open(&place.root)?;
            let tree = match given {
                Some(tree) => tree,
                None => repo.snapshot_tree(&place.worktree)?,
            };
            let lines = lines_at(&repo, &tree, &path)?;
            Ok::<_, HostError>((tree, lines))
        })
        .await?;
        let Some(lines) = lines else {
            return Err(HostError::Invalid(format!(
                "{} is not a text file of the session's worktree at that snapshot",
                new.path
            )));
        };
        if end as usize > lines.len() {
            return Err(HostError::Invalid(format!(
                "line {end} is past the end of {} ({} lines)",
                new.path,
                lines.len()
            )));
        }
        let quote = lines[new.line as usize - 1..end as usize].to_vec();
        let comment = ReviewComment {
            comment_id: uuid::Uuid::new_v4().to_string(),
            path: new.path,
            line: new.line,
            end_line: new.end_line.filter(|e| *e != new.line),
            body,
            quote,
            snapshot,
            status: CommentStatus::Open,
            outdated: false,
            created_at: now().unix_millis(),
            created_by: by.to_owned(),
            sent_at: None,
        };
        self.change_review(id, |log| {
            if log.comments.len() >= MAX_COMMENTS {
                return Err(HostError::Limit(format!(
                    "session {id} has {MAX_COMMENTS} review comments; resolve and send some first"
                )));
            }
            log.comments.push(comment.clone());
            Ok(())
        })
        .await?;
        Ok(comment)
    }

    /// Marks a comment resolved (or open again).
    pub async fn resolve_review_comment(
        &self,
        id: &str,
        comment_id: &str,
        resolved: bool,
    ) -> Result<ReviewComment, HostError> {
        self.session_row(id).await?;
        self.change_review(id, |log| {
            let comment =
                log.comments.iter_mut().find(|c| c.comment_id == comment_id).ok_or_else(|| {
                    HostError::NotFound(format!("review comment {comment_id} of session {id}"))
                })?;
            comment.status = if resolved { CommentStatus::Resolved } else { CommentStatus::Open };
            Ok(comment.clone())
        })
        .await
    }

    /// The session's comments, each marked `outdated` when its lines are no longer what it
    /// quoted in the worktree now (none is, once the worktree is gone).
    pub async fn review_comments(&self, id: &str) -> Result<Vec<ReviewComment>, HostError> {
        self.session_row(id).await?;
        let mut comments = self.review_log(id).await?.comments;
        if comments.is_empty() {
            return Ok(comments);
        }
        let Ok(place) = self.session_worktree(id).await else { return Ok(comments) };
        let paths: Vec<String> = comments.iter().map(|c| c.path.clone()).collect();
        let now_lines = blocking(move || {
            let repo = Repo::open(&place.root)?;
            let tree = repo.snapshot_tree(&place.worktree)?;
            let mut files = HashMap::new();
            for path in paths {
                // A file that cannot be read any more (gone, too large) outdates its comments.
                files.entry(path).or_insert_with_key(|p| lines_at(&repo, &tree, p).ok().flatten());
            }
            Ok::<_, HostError>(files)
        })
        .await?;
        for c in &mut comments {
            let lines = now_lines.get(&c.path).and_then(Option::as_ref);
            let start = c.line as usize - 1;
            c.outdated = lines.and_then(|l| l.get(start..start + c.quote.len())) != Some(&c.quote);
        }
        Ok(comments)
    }

    /// Sends the open comments not sent yet as one follow-up, then records `reviewSent`; how
    /// many, and the prompt.
    pub async fn send_review(&self, id: &str, by: &str) -> Result<(usize, String), HostError> {
        self.reviewable(id).await?;
        let lock = self.review_locks.of(id);
        let held = lock.lock().await;
        let log = self.review_log(id).await?;
        let unsent: Vec<&ReviewComment> = log
            .comments
            .iter()
            .filter(|c| c.status == CommentStatus::Open && c.sent_at.is_none())
            .collect();
        if unsent.is_empty() {
            return Err(HostError::Invalid(format!(
                "session {id} has no open review comments that were not sent yet"
            )));
        }
        let prompt = review_prompt(&unsent);
        let sent: Vec<String> = unsent.iter().map(|c| c.comment_id.clone()).collect();
        let mut cited: Vec<ReviewComment> = unsent.into_iter().cloned().collect();
        drop(held);
        self.send_input(id, &prompt).await?;
        let held = lock.lock().await;
        let mut log = self.review_log(id).await?;
        let at = now().unix_millis();
        for c in log.comments.iter_mut().filter(|c| sent.contains(&c.comment_id)) {
            c.sent_at = Some(at);
        }
        write_json(&self.review_path(id), &log).await?;
        drop(held);
        cited.iter_mut().for_each(|c| c.sent_at = Some(at));
        let record = ReviewSent { comments: cited, by: by.to_owned() };
        self.record(id, EventKind::ReviewSent(record)).await?;
        Ok((sent.len(), prompt))
    }

    /// The session's worktree, or why there is nothing to review.
    async fn reviewable(
        &self,
        id: &str,
    ) -> Result<crate::dev_loop::turns::SessionWorktree, HostError> {
        self.session_worktree(id).await.map_err(|e| match e {
            HostError::Git(nucleic_git::GitError::WorktreeMissing { path }) => {
                HostError::Invalid(format!(
                    "session {id}'s worktree {} is gone (discarded or rolled back): its work \
                     can no longer be reviewed",
                    path.display()
                ))
            }
            e => e,
        })
    }

    /// Applies `change` to the session's comments under its lock and saves them.
    async fn change_review<T>(
        &self,
        id: &str,
        change: impl FnOnce(&mut ReviewLog) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let lock = self.review_locks.of(id);
        let _held = lock.lock().await;
        let mut log = self.review_log(id).await?;
        let out = change(&mut log)?;
        write_json(&self.review_path(id), &log).await?;
        Ok(out)
    }

    fn review_path(&self, id: &str) -> PathBuf {
        self.config.transcript_path(id).with_file_name("review.json")
    }

    async fn review_log(&self, id: &str) -> Result<ReviewLog, HostError> {
        read_json(&self.review_path(id)).await
    }
}

/// The lines of the text file `path` at snapshot `tree`: `None` when there is no such file or
/// it is binary.
fn lines_at(repo: &Repo, tree: &str, path: &str) -> Result<Option<Vec<String>>, HostError> {
    let bytes = repo.file_in_tree(tree, Path::new(path), MAX_FILE_BYTES).map_err(|e| match e {
        nucleic_git::GitError::PathEscape { .. } => {
            HostError::Invalid(format!("{path:?} is not a plain relative path in the worktree"))
        }
        nucleic_git::GitError::UnknownRef { .. } => {
            HostError::Invalid(format!("{tree:?} is not a snapshot id"))
        }
        nucleic_git::GitError::TooLarge { size, max, .. } => HostError::Invalid(format!(
            "{path} is too large to comment on ({size} bytes; at most {max})"
        )),
        e => e.into(),
    })?;
    Ok(bytes.filter(|b| !b.contains(&0)).map(|b| {
        String::from_utf8_lossy(&b)
            .lines()
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
            .collect()
    }))
}

/// The follow-up a review becomes: per comment its `path:line`, the quoted lines and the text.
fn review_prompt(comments: &[&ReviewComment]) -> String {
    let mut out = format!(
        "Review comments on your changes ({}). Address each one; the quoted lines are the \
         file as it was when the comment was made.\n",
        comments.len()
    );
    for (i, c) in comments.iter().enumerate() {
        out.push_str(&format!("\n{}. {}\n", i + 1, c.citation()));
        for line in &c.quote {
            out.push_str(&format!("   > {line}\n"));
        }
        for line in c.body.lines() {
            out.push_str(&format!("   {line}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_cites_quotes_and_comments_each() {
        let comment = |path: &str, line, end_line, quote: &[&str], body: &str| ReviewComment {
            comment_id: "x".into(),
            path: path.into(),
            line,
            end_line,
            body: body.into(),
            quote: quote.iter().map(|s| (*s).to_owned()).collect(),
            snapshot: "a".repeat(40),
            status: CommentStatus::Open,
            outdated: false,
            created_at: 0,
            created_by: "me".into(),
            sent_at: None,
        };
        let a = comment("calc.py", 2, None, &["    return a - b"], "This should add.");
        let b = comment("test_calc.py", 4, Some(5), &["x = 1", "y = 2"], "Two\nlines.");
        let prompt = review_prompt(&[&a, &b]);
        assert!(prompt.starts_with("Review comments on your changes (2)."), "{prompt}");
        assert!(prompt.contains("\n1. calc.py:2\n   >     return a - b\n   This should add.\n"));
        assert!(
            prompt.contains("\n2. test_calc.py:4-5\n   > x = 1\n   > y = 2\n   Two\n   lines.\n")
        );
    }
}
