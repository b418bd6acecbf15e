//! A session's diff against its base, or one turn's (the host's `gitFacts` with the patch): its
//! files and counts, then the patch read hunk by hunk, each line knowing its file and its line
//! on the new side (what a review comment is made on), sanitized and cut into rows once.

use nucleic_protocol::{GitFacts, ReviewComment};

use crate::sanitize;

/// How a diff row reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLine {
    /// `diff --git`, `+++`, `---`, `index`: a file's header.
    File,
    /// `@@ … @@`.
    Hunk,
    Added,
    Removed,
    Context,
    /// The summary lines above the patch, and git's notes (`\ No newline at end of file`).
    Summary,
    /// A review comment, under the line it is on (or above the patch when it is on none).
    Comment,
}

/// A line of the new side: which file of [`Diff::files`], and its 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub file: usize,
    pub line: u32,
}

/// One row of the diff screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub kind: DiffLine,
    /// Sanitized: the patch is the worktree's, agent-written.
    pub text: String,
    /// The new side's line it shows (added and context lines of a file with a new side).
    pub place: Option<Place>,
    /// The comment it shows (an index into [`Diff::comments`]).
    pub comment: Option<usize>,
}

impl Row {
    fn plain(kind: DiffLine, text: String) -> Row {
        Row { kind, text, place: None, comment: None }
    }
}

/// What the diff screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub session_id: String,
    /// The turn shown (none: the whole session against its base).
    pub turn: Option<u32>,
    /// How many turns have snapshots.
    pub turns: u32,
    /// The worktree snapshot the new side is (what a comment made here is on).
    pub snapshot: Option<String>,
    /// The new-side path of each file of the patch, as git wrote it (raw: sent back to the
    /// host; shown sanitized).
    pub files: Vec<String>,
    /// The patch's rows, without comments.
    patch: Vec<Row>,
    /// The session's review comments, as last read.
    pub comments: Vec<ReviewComment>,
    /// What is drawn: the patch's rows with each comment under its line.
    pub rows: Vec<Row>,
    /// The first row on screen.
    pub top: usize,
    /// The row under the cursor.
    pub cursor: usize,
    /// The other end of a range being marked for a comment (`V`).
    pub mark: Option<usize>,
    /// Changes whenever `rows` do (what syntax colours were worked out for).
    pub generation: u64,
}

/// The next [`Diff::generation`].
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Lines of patch kept for showing (a larger patch says how much was left out).
pub const PATCH_LINES: usize = 100_000;

impl Diff {
    /// The diff of `session_id` from its facts.
    pub fn of(session_id: &str, facts: &GitFacts) -> Diff {
        let mut patch = summary(facts);
        let mut files = Vec::new();
        read_patch(facts.patch.as_deref().unwrap_or(""), &mut patch, &mut files);
        if facts.patch.as_deref().unwrap_or("").is_empty() && facts.files.is_empty() {
            patch.push(Row::plain(DiffLine::Context, "No changes yet.".into()));
        }
        let turns = u32::try_from(facts.turns.len()).unwrap_or(u32::MAX);
        let mut diff = Diff {
            session_id: session_id.to_owned(),
            turn: facts.turn,
            turns,
            snapshot: facts.snapshot.clone(),
            files,
            rows: patch.clone(),
            patch,
            comments: Vec::new(),
            top: 0,
            cursor: 0,
            mark: None,
            generation: next_generation(),
        };
        diff.cursor = diff.rows.iter().position(|r| r.place.is_some()).unwrap_or(0);
        diff
    }

    /// Shows `comments` under their lines: a comment on this diff's snapshot, or (the whole
    /// session's diff, the worktree as it is) one whose lines did not change since, goes under
    /// its last line; the others are listed above the patch. The cursor stays on its line.
    pub fn set_comments(&mut self, comments: Vec<ReviewComment>) {
        let on_cursor = self.rows.get(self.cursor).and_then(|r| r.place);
        self.comments = comments;
        let mut under: Vec<Vec<usize>> = vec![Vec::new(); self.patch.len()];
        let mut elsewhere = Vec::new();
        for (index, comment) in self.comments.iter().enumerate() {
            let here = self.snapshot.as_deref() == Some(comment.snapshot.as_str())
                || (self.turn.is_none() && !comment.outdated);
            let last = comment.end_line.unwrap_or(comment.line);
            let row = here
                .then(|| {
                    self.patch.iter().position(|r| {
                        r.place
                            .is_some_and(|p| p.line == last && self.files[p.file] == comment.path)
                    })
                })
                .flatten();
            match row {
                Some(row) => under[row].push(index),
                None => elsewhere.push(index),
            }
        }
        let mut rows = Vec::with_capacity(self.patch.len() + self.comments.len());
        let first_patch_row = self.patch.iter().position(|r| r.kind != DiffLine::Summary);
        for (i, row) in self.patch.iter().enumerate() {
            if Some(i) == first_patch_row {
                for &c in &elsewhere {
                    rows.push(self.comment_row(c, true));
                }
            }
            rows.push(row.clone());
            for &c in &under[i] {
                rows.push(self.comment_row(c, false));
            }
        }
        if first_patch_row.is_none() {
            rows.extend(elsewhere.iter().map(|&c| self.comment_row(c, true)));
        }
        self.rows = rows;
        self.generation = next_generation();
        self.mark = None;
        if let Some(row) =
            on_cursor.and_then(|place| self.rows.iter().position(|r| r.place == Some(place)))
        {
            self.cursor = row;
        }
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
    }

    fn comment_row(&self, index: usize, elsewhere: bool) -> Row {
        let c = &self.comments[index];
        let mut status = match c.status {
            nucleic_protocol::CommentStatus::Open => "open",
            nucleic_protocol::CommentStatus::Resolved => "resolved",
        }
        .to_owned();
        if c.outdated {
            status.push_str(", outdated");
        }
        if c.sent_at.is_some() {
            status.push_str(", sent");
        }
        let at =
            if elsewhere { format!("{} ", sanitize::line(&c.citation())) } else { String::new() };
        let text = format!("  ▸ {at}[{status}] {} — {}", sanitize::line(&c.body), c.created_by);
        Row {
            kind: DiffLine::Comment,
            text: sanitize::line(&text),
            place: None,
            comment: Some(index),
        }
    }

    /// Moves the cursor by `by` rows (negative: up), within the diff, keeping it on a screen
    /// of `height` rows.
    pub fn move_cursor(&mut self, by: isize, height: usize) {
        let last = self.rows.len().saturating_sub(1);
        let to = self.cursor as isize + by;
        self.cursor = usize::try_from(to.max(0)).unwrap_or(0).min(last);
        let height = height.max(1);
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + height {
            self.top = self.cursor + 1 - height;
        }
    }

    /// Moves the screen by `by` rows and the cursor with it (a page).
    pub fn page(&mut self, by: isize, height: usize) {
        let last_top = self.rows.len().saturating_sub(height.max(1));
        let top = self.top as isize + by;
        self.top = usize::try_from(top.max(0)).unwrap_or(0).min(last_top);
        self.move_cursor(by, height);
    }

    /// The comment a new one at the cursor (or over the marked range) would be on: the file's
    /// raw path and its first and last line, or why there is none.
    pub fn comment_target(&self) -> Result<(String, u32, u32), &'static str> {
        let at = |row: usize| self.rows.get(row).and_then(|r| r.place);
        let Some(here) = at(self.cursor) else {
            return Err("Comments go on an added or unchanged line of the new side");
        };
        let there = match self.mark {
            Some(mark) => at(mark).ok_or("The marked row is no line of the new side")?,
            None => here,
        };
        if there.file != here.file {
            return Err("A range comment stays within one file");
        }
        let (first, last) = (here.line.min(there.line), here.line.max(there.line));
        Ok((self.files[here.file].clone(), first, last))
    }

    /// The comment under the cursor, if the cursor is on one.
    pub fn comment_at_cursor(&self) -> Option<&ReviewComment> {
        self.rows.get(self.cursor).and_then(|r| r.comment).and_then(|c| self.comments.get(c))
    }

    /// What the diff's first line says it is.
    pub fn title(&self) -> String {
        match self.turn {
            Some(n) => format!("turn {n} of {}", self.turns),
            None => "the whole session".to_owned(),
        }
    }
}

/// The rows above the patch: what is shown, the files and their counts.
fn summary(facts: &GitFacts) -> Vec<Row> {
    let mut rows = Vec::new();
    let (adds, dels): (u64, u64) =
        facts.files.iter().fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    let files = facts.files.len();
    let noun = if files == 1 { "file" } else { "files" };
    let base = sanitize::line(&facts.base_branch);
    let first = match facts.turn {
        Some(n) => format!(
            "Turn {n} of {}: {files} {noun} changed, +{adds} −{dels} ([ ] other turns, w whole session)",
            facts.turns.len()
        ),
        None => {
            let turns = match facts.turns.len() {
                0 => String::new(),
                n => format!(" · {n} turns ([ ] one turn)"),
            };
            format!(
                "{files} {noun} changed, +{adds} −{dels} against {base} (ahead {}, behind {}){turns}",
                facts.ahead, facts.behind
            )
        }
    };
    rows.push(Row::plain(DiffLine::Summary, first));
    if !facts.conflicts.is_empty() {
        let conflicts: Vec<String> = facts.conflicts.iter().map(|c| sanitize::line(c)).collect();
        rows.push(Row::plain(
            DiffLine::Removed,
            format!("would conflict: {}", conflicts.join(", ")),
        ));
    }
    for f in &facts.files {
        let counts = if f.binary {
            "binary".to_owned()
        } else {
            format!("+{} −{}", f.additions, f.deletions)
        };
        let status = sanitize::line(&f.status);
        rows.push(Row::plain(
            DiffLine::Summary,
            format!("  {status:<10} {} ({counts})", sanitize::line(&f.path)),
        ));
    }
    rows.push(Row::plain(DiffLine::Summary, String::new()));
    rows
}

/// Where the reader of a patch is.
#[derive(Default)]
struct Reader {
    /// The file's index in `files`, once its `+++` named a new side.
    file: Option<usize>,
    /// Lines of the hunk still to come on each side.
    old_left: u64,
    new_left: u64,
    /// The next new-side line.
    new_line: u32,
}

/// Reads `patch` into rows: headers, hunks by their counts (so a removed `-- x` line is no
/// header), each added or context line with its place on the new side.
fn read_patch(patch: &str, rows: &mut Vec<Row>, files: &mut Vec<String>) {
    let mut at = Reader::default();
    let mut total = 0;
    for line in patch.lines() {
        total += 1;
        if total > PATCH_LINES {
            continue;
        }
        let in_hunk = at.old_left > 0 || at.new_left > 0;
        let mut place = None;
        let kind = if in_hunk && line.starts_with('+') {
            at.new_left = at.new_left.saturating_sub(1);
            place = at.file.map(|file| Place { file, line: at.new_line });
            at.new_line += 1;
            DiffLine::Added
        } else if in_hunk && line.starts_with('-') {
            at.old_left = at.old_left.saturating_sub(1);
            DiffLine::Removed
        } else if in_hunk && (line.starts_with(' ') || line.is_empty()) {
            at.old_left = at.old_left.saturating_sub(1);
            at.new_left = at.new_left.saturating_sub(1);
            place = at.file.map(|file| Place { file, line: at.new_line });
            at.new_line += 1;
            DiffLine::Context
        } else if line.starts_with('\\') {
            DiffLine::Summary
        } else if let Some((old, new, start)) = hunk_header(line) {
            (at.old_left, at.new_left, at.new_line) = (old, new, start);
            DiffLine::Hunk
        } else if line.starts_with("diff --git") {
            at = Reader::default();
            DiffLine::File
        } else if let Some(path) = line.strip_prefix("+++ ") {
            at.file = new_side(path).map(|p| {
                files.push(p);
                files.len() - 1
            });
            DiffLine::File
        } else {
            DiffLine::File
        };
        rows.push(Row { kind, text: sanitize::line(line), place, comment: None });
    }
    if total > PATCH_LINES {
        let more = total - PATCH_LINES;
        rows.push(Row::plain(
            DiffLine::Summary,
            format!("… {more} more lines (nucleic session diff --patch shows all)"),
        ));
    }
}

/// `@@ -a[,b] +c[,d] @@`: the old and new line counts and the first new line.
fn hunk_header(line: &str) -> Option<(u64, u64, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let count = |range: &str| -> Option<(u32, u64)> {
        match range.split_once(',') {
            Some((start, n)) => Some((start.parse().ok()?, n.parse().ok()?)),
            None => Some((range.parse().ok()?, 1)),
        }
    };
    let (_, old_count) = count(old)?;
    let (new_start, new_count) = count(new)?;
    // An empty new side (`+0,0`) has no line to point at.
    Some((old_count, new_count, new_start.max(1)))
}

/// The path of `+++ b/PATH` (git ends a name with a space with a tab, and quotes one with
/// special characters C-style); none for `/dev/null`.
fn new_side(path: &str) -> Option<String> {
    let path = path.strip_suffix('\t').unwrap_or(path);
    match path.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(quoted) => unquote(quoted)?.strip_prefix("b/").map(str::to_owned),
        None => path.strip_prefix("b/").map(str::to_owned),
    }
}

/// A name git quoted (`\\`, `\"`, `\t`, `\n`, octal bytes), if it is UTF-8.
fn unquote(quoted: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(quoted.len());
    let mut rest = quoted.bytes();
    while let Some(b) = rest.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let escaped = match rest.next()? {
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            d @ b'0'..=b'3' => {
                let digit = |d: u8| d.checked_sub(b'0').filter(|d| *d < 8);
                let (d2, d3) = (digit(rest.next()?)?, digit(rest.next()?)?);
                (d - b'0') * 64 + d2 * 8 + d3
            }
            other => other,
        };
        bytes.push(escaped);
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
