//! A session's diff against its base (the host's `gitFacts` with the patch): its files and
//! counts, then the patch, sanitized and cut into lines once; drawn a screenful at a time.

use nucleic_protocol::GitFacts;

use crate::sanitize;

/// How a diff line reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLine {
    /// `diff --git`, `+++`, `---`, `index`: a file's header.
    File,
    /// `@@ … @@`.
    Hunk,
    Added,
    Removed,
    Context,
    /// The summary lines above the patch.
    Summary,
}

/// What the diff screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub session_id: String,
    /// Each line and how it reads (the patch is the worktree's: agent-written, sanitized).
    pub lines: Vec<(DiffLine, String)>,
    /// The first line on screen.
    pub top: usize,
}

/// Lines of patch kept for showing (a larger patch says how much was left out).
pub const PATCH_LINES: usize = 100_000;

impl Diff {
    /// The diff of `session_id` from its facts.
    pub fn of(session_id: &str, facts: &GitFacts) -> Diff {
        let mut lines = Vec::new();
        let (adds, dels): (u64, u64) =
            facts.files.iter().fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
        let files = facts.files.len();
        let noun = if files == 1 { "file" } else { "files" };
        let base = sanitize::line(&facts.base_branch);
        lines.push((
            DiffLine::Summary,
            format!(
                "{files} {noun} changed, +{adds} −{dels} against {base} (ahead {}, behind {})",
                facts.ahead, facts.behind
            ),
        ));
        if !facts.conflicts.is_empty() {
            let conflicts: Vec<String> =
                facts.conflicts.iter().map(|c| sanitize::line(c)).collect();
            lines.push((DiffLine::Removed, format!("would conflict: {}", conflicts.join(", "))));
        }
        for f in &facts.files {
            let counts = if f.binary {
                "binary".to_owned()
            } else {
                format!("+{} −{}", f.additions, f.deletions)
            };
            let status = sanitize::line(&f.status);
            lines.push((
                DiffLine::Summary,
                format!("  {status:<10} {} ({counts})", sanitize::line(&f.path)),
            ));
        }
        lines.push((DiffLine::Summary, String::new()));
        let patch = facts.patch.as_deref().unwrap_or("");
        let mut total = 0;
        for line in patch.lines() {
            total += 1;
            if total > PATCH_LINES {
                continue;
            }
            let kind = if line.starts_with("diff --git")
                || line.starts_with("+++")
                || line.starts_with("---")
                || line.starts_with("index ")
            {
                DiffLine::File
            } else if line.starts_with("@@") {
                DiffLine::Hunk
            } else if line.starts_with('+') {
                DiffLine::Added
            } else if line.starts_with('-') {
                DiffLine::Removed
            } else {
                DiffLine::Context
            };
            lines.push((kind, sanitize::line(line)));
        }
        if total > PATCH_LINES {
            let more = total - PATCH_LINES;
            lines.push((
                DiffLine::Summary,
                format!("… {more} more lines (nucleic session diff --patch shows all)"),
            ));
        }
        if patch.is_empty() && files == 0 {
            lines.push((DiffLine::Context, "No changes yet.".into()));
        }
        Diff { session_id: session_id.to_owned(), lines, top: 0 }
    }

    /// Moves the first line on screen by `by` lines (negative: up), within the diff.
    pub fn scroll(&mut self, by: isize, height: usize) {
        let last_top = self.lines.len().saturating_sub(height.max(1));
        let top = self.top as isize + by;
        self.top = usize::try_from(top.max(0)).unwrap_or(0).min(last_top);
    }
}

#[cfg(test)]
mod tests {
    use nucleic_protocol::DiffFile;

    use super::*;

    fn facts(patch: &str) -> GitFacts {
        GitFacts {
            base_branch: "main".into(),
            base_sha: "abc".into(),
            files: vec![DiffFile {
                path: "a.txt".into(),
                old_path: None,
                status: "added".into(),
                additions: 1,
                deletions: 0,
                binary: false,
            }],
            patch: Some(patch.into()),
            ahead: 1,
            behind: 0,
            conflicts: vec![],
            turn: None,
            turns: vec![],
            snapshot: None,
        }
    }

    #[test]
    fn a_patch_reads_as_files_hunks_and_changes_and_hostile_text_is_shown_as_symbols() {
        let patch = "diff --git a/a.txt b/a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi \u{1b}[2J\n context\n-gone";
        let d = Diff::of("s", &facts(patch));
        let kinds: Vec<DiffLine> = d.lines.iter().map(|(k, _)| *k).collect();
        use DiffLine::*;
        assert_eq!(
            kinds,
            [Summary, Summary, Summary, File, File, File, Hunk, Added, Context, Removed]
        );
        assert_eq!(d.lines[0].1, "1 file changed, +1 −0 against main (ahead 1, behind 0)");
        assert_eq!(d.lines[7].1, "+hi ␛[2J");
    }

    #[test]
    fn scrolling_stays_inside_the_diff() {
        let patch: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let mut d = Diff::of("s", &facts(&patch));
        d.scroll(-5, 20);
        assert_eq!(d.top, 0);
        d.scroll(1000, 20);
        assert_eq!(d.top, d.lines.len() - 20);
    }
}
