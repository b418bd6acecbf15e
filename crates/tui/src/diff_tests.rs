use nucleic_protocol::{CommentStatus, DiffFile};

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
        snapshot: Some("tree1".into()),
    }
}

fn comment(id: &str, path: &str, line: u32, snapshot: &str, outdated: bool) -> ReviewComment {
    ReviewComment {
        comment_id: id.into(),
        path: path.into(),
        line,
        end_line: None,
        body: format!("about {id}"),
        quote: vec![],
        snapshot: snapshot.into(),
        status: CommentStatus::Open,
        outdated,
        created_at: 0,
        created_by: "local".into(),
        sent_at: None,
    }
}

const PATCH: &str = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,4 +1,4 @@\n one\n--- two\n+++ 2\n three\n\\ No newline at end of file\ndiff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\n--- a/gone.rs\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/b c.txt b/b c.txt\n--- a/b c.txt\t\n+++ b/b c.txt\t\n@@ -10,2 +10,3 @@\n ten\n+new\n eleven\n";

#[test]
fn a_patch_reads_as_files_hunks_and_changes_and_hostile_text_is_shown_as_symbols() {
    let patch = "diff --git a/a.txt b/a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,3 @@\n+hi \u{1b}[2J\n context\n-gone";
    let d = Diff::of("s", &facts(patch));
    let kinds: Vec<DiffLine> = d.rows.iter().map(|r| r.kind).collect();
    use DiffLine::*;
    assert_eq!(kinds, [Summary, Summary, Summary, File, File, File, Hunk, Added, Context, Removed]);
    assert_eq!(d.rows[0].text, "1 file changed, +1 −0 against main (ahead 1, behind 0)");
    assert_eq!(d.rows[7].text, "+hi ␛[2J");
    assert!(d.rows.iter().all(|r| sanitize::is_clean(&r.text)));
}

#[test]
fn hunks_are_read_by_their_counts_and_each_new_line_knows_its_file_and_number() {
    let d = Diff::of("s", &facts(PATCH));
    let at = |text: &str| {
        let row = d.rows.iter().find(|r| r.text == text).unwrap_or_else(|| panic!("{text}"));
        (row.kind, row.place.map(|p| (d.files[p.file].as_str(), p.line)))
    };
    // A removed line reading `-- two` and an added `++ 2` are no file headers.
    assert_eq!(at("--- two"), (DiffLine::Removed, None));
    assert_eq!(at("+++ 2"), (DiffLine::Added, Some(("src/a.rs", 2))));
    assert_eq!(at(" one"), (DiffLine::Context, Some(("src/a.rs", 1))));
    assert_eq!(at(" three"), (DiffLine::Context, Some(("src/a.rs", 3))));
    assert_eq!(at("\\ No newline at end of file"), (DiffLine::Summary, None));
    // A deleted file has no new side; a name with a space ends with git's tab.
    assert_eq!(at("-bye"), (DiffLine::Removed, None));
    assert_eq!(at("+new"), (DiffLine::Added, Some(("b c.txt", 11))));
    assert_eq!(at(" eleven"), (DiffLine::Context, Some(("b c.txt", 12))));
    assert_eq!(d.files, ["src/a.rs", "b c.txt"]);
    assert_eq!(d.rows[d.cursor].text, " one", "the cursor starts on the first line");
}

#[test]
fn a_quoted_name_is_unquoted_and_a_broken_quote_has_no_new_side() {
    assert_eq!(new_side("\"b/caf\\303\\251 \\\"x\\\".txt\"").as_deref(), Some("café \"x\".txt"));
    assert_eq!(new_side("\"b/cut\\\""), None, "an escape cut off");
    assert_eq!(new_side("\"b/\\377\""), None, "not UTF-8: no name the host would know");
    assert_eq!(new_side("/dev/null"), None);
}

#[test]
fn comments_go_under_their_line_or_above_the_patch() {
    let mut d = Diff::of("s", &facts(PATCH));
    d.move_cursor(3, 50);
    let cursor_text = d.rows[d.cursor].text.clone();
    d.set_comments(vec![
        comment("c1", "src/a.rs", 2, "old-tree", false),
        comment("c2", "b c.txt", 11, "tree1", false),
        comment("c3", "src/a.rs", 3, "old-tree", true),
        comment("c4", "nowhere.rs", 1, "tree1", false),
    ]);
    let texts: Vec<&str> = d.rows.iter().map(|r| r.text.as_str()).collect();
    let after = |line: &str| texts[texts.iter().position(|t| *t == line).unwrap() + 1];
    assert!(after("+++ 2").contains("about c1"), "not outdated: still on its line");
    assert!(after("+new").contains("about c2"));
    assert!(!after(" three").contains("about c3"), "outdated: listed apart");
    let first_file = texts.iter().position(|t| t.starts_with("diff --git")).unwrap();
    assert!(
        texts[first_file - 2].contains("src/a.rs:3") && texts[first_file - 2].contains("outdated")
    );
    assert!(texts[first_file - 1].contains("nowhere.rs:1"));
    assert_eq!(d.rows[d.cursor].text, cursor_text, "the cursor stays on its line");
    // In one turn's diff only comments made on that snapshot are placed.
    let mut turn = facts(PATCH);
    turn.turn = Some(1);
    turn.snapshot = Some("old-tree".into());
    let mut d = Diff::of("s", &turn);
    d.set_comments(vec![comment("c2", "b c.txt", 11, "tree1", false)]);
    assert!(d.rows.iter().position(|r| r.text.contains("about c2")).unwrap() < 5);
}

#[test]
fn a_comment_target_is_a_new_side_line_or_a_range_within_one_file() {
    let mut d = Diff::of("s", &facts(PATCH));
    assert_eq!(d.comment_target(), Ok(("src/a.rs".into(), 1, 1)));
    d.mark = Some(d.cursor);
    d.move_cursor(3, 50); // " three"
    assert_eq!(d.comment_target(), Ok(("src/a.rs".into(), 1, 3)));
    d.move_cursor(-1, 50); // "+++ 2"
    assert_eq!(d.comment_target(), Ok(("src/a.rs".into(), 1, 2)));
    d.move_cursor(-1, 50); // "--- two": no new side
    assert!(d.comment_target().is_err());
    let new = d.rows.iter().position(|r| r.text == "+new").unwrap();
    d.cursor = new;
    assert_eq!(d.comment_target(), Err("A range comment stays within one file"));
}

#[test]
fn the_cursor_and_pages_stay_inside_the_diff_and_on_screen() {
    let patch: String =
        std::iter::once("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,0 +1,100 @@\n".to_owned())
            .chain((0..100).map(|i| format!("+line {i}\n")))
            .collect();
    let mut d = Diff::of("s", &facts(&patch));
    d.page(-5, 20);
    assert_eq!(d.top, 0);
    d.page(1000, 20);
    assert_eq!(d.top, d.rows.len() - 20);
    assert_eq!(d.cursor, d.rows.len() - 1);
    d.move_cursor(-30, 20);
    assert!(d.cursor >= d.top && d.cursor < d.top + 20);
}
