//! Test counts from the closing lines of common runners: cargo test, cargo nextest, pytest,
//! go test (`-v`), vitest, jest, node's test runner (TAP and spec reporters) and the plain
//! `N passed, N failed` line. Pure: fed one line at a time, so a run of any size is read in
//! bounded memory.

/// Tests that passed, failed and were skipped, and which runner's lines said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// `cargo`, `nextest`, `pytest`, `go`, `vitest`, `jest`, `node` or `plain`.
    pub runner: &'static str,
}

/// Reads a run's output line by line and keeps the counts found so far.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Every `test result:` line of cargo test (one per test binary), summed.
    cargo: Option<Counts>,
    /// Go's `--- PASS/FAIL/SKIP` lines of top-level tests.
    go: Option<Counts>,
    /// Node's `# pass N` / `ℹ pass N` totals, field by field.
    node: Option<Counts>,
    /// The last closing line of a runner that prints one summary (nextest, pytest, vitest,
    /// jest, plain).
    last_summary: Option<Counts>,
}

impl Tally {
    pub fn new() -> Tally {
        Tally::default()
    }

    /// Takes one line of output (without its newline).
    pub fn line(&mut self, line: &str) {
        let line = strip_ansi(line);
        let trimmed = line.trim();
        if let Some(c) = cargo_result(trimmed) {
            let sum = self.cargo.get_or_insert(Counts { runner: "cargo", ..Counts::default() });
            sum.passed += c.passed;
            sum.failed += c.failed;
            sum.skipped += c.skipped;
        } else if let Some(c) = nextest_summary(trimmed)
            .or_else(|| pytest_summary(trimmed))
            .or_else(|| vitest_summary(trimmed))
            .or_else(|| jest_summary(trimmed))
            .or_else(|| plain_summary(trimmed))
        {
            self.last_summary = Some(c);
        } else if let Some(outcome) = go_outcome(&line) {
            let go = self.go.get_or_insert(Counts { runner: "go", ..Counts::default() });
            match outcome {
                GoOutcome::Pass => go.passed += 1,
                GoOutcome::Fail => go.failed += 1,
                GoOutcome::Skip => go.skipped += 1,
            }
        } else if let Some((field, n)) = node_total(trimmed) {
            let node = self.node.get_or_insert(Counts { runner: "node", ..Counts::default() });
            match field {
                NodeField::Pass => node.passed = n,
                NodeField::Fail => node.failed = n,
                NodeField::Skipped => node.skipped = n,
            }
        }
    }

    /// The counts of the run, when a runner's lines were seen: a single-summary runner's line
    /// first (nextest and pytest also print lines that look like others'), then cargo's sum,
    /// node's totals, go's tally.
    pub fn counts(&self) -> Option<Counts> {
        self.last_summary.or(self.cargo).or(self.node).or(self.go)
    }
}

/// The counts in a whole output.
pub fn counts_in(output: &str) -> Option<Counts> {
    let mut tally = Tally::new();
    for line in output.lines() {
        tally.line(line);
    }
    tally.counts()
}

/// `line` without ANSI colour sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `N word` pairs of a comma/semicolon/pipe separated list: `2 passed; 1 failed` →
/// `[(2, "passed"), (1, "failed")]`. Parenthesised notes are dropped.
fn number_words(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for part in text.split([',', ';', '|']) {
        let part = part.split('(').next().unwrap_or_default().trim();
        let mut words = part.split_whitespace();
        let (Some(n), Some(word)) = (words.next(), words.next()) else { continue };
        if let Ok(n) = n.parse::<u64>() {
            out.push((n, word.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase()));
        }
    }
    out
}

/// Counts from `N word` pairs; `None` unless `passed` or `failed` is among them.
fn counts_of(pairs: &[(u64, String)], runner: &'static str) -> Option<Counts> {
    let mut c = Counts { runner, ..Counts::default() };
    let mut seen = false;
    for (n, word) in pairs {
        match word.as_str() {
            "passed" | "pass" => {
                c.passed += n;
                seen = true;
            }
            "failed" | "fail" | "error" | "errors" | "timed" => {
                c.failed += n;
                seen = true;
            }
            "skipped" | "ignored" | "todo" | "xfailed" | "deselected" => c.skipped += n,
            _ => {}
        }
    }
    seen.then_some(c)
}

/// `test result: FAILED. 1 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; …`
fn cargo_result(line: &str) -> Option<Counts> {
    let rest = line.strip_prefix("test result: ")?;
    let (_, list) = rest.split_once(". ")?;
    counts_of(&number_words(list), "cargo")
}

/// `Summary [   0.012s] 3 tests run: 2 passed, 1 failed, 1 skipped`
fn nextest_summary(line: &str) -> Option<Counts> {
    let rest = line.strip_prefix("Summary [")?;
    let (_, list) = rest.split_once("run: ")?;
    counts_of(&number_words(list), "nextest")
}

/// `===== 1 failed, 2 passed, 1 skipped in 0.12s =====` (or the same without the rules, `-q`).
fn pytest_summary(line: &str) -> Option<Counts> {
    let inner = line.trim_matches(|c| c == '=' || c == ' ');
    let (list, time) = inner.rsplit_once(" in ")?;
    let time = time.trim();
    if !(time.ends_with('s') && time.starts_with(|c: char| c.is_ascii_digit())) {
        return None;
    }
    let pairs = number_words(list);
    if pairs.is_empty() || pairs.len() != list.split(',').count() {
        return None;
    }
    counts_of(&pairs, "pytest")
}

/// `Tests  1 failed | 2 passed (3)` (not `Test Files …`).
fn vitest_summary(line: &str) -> Option<Counts> {
    let rest = line.strip_prefix("Tests ")?;
    if rest.starts_with(':') {
        return None;
    }
    counts_of(&number_words(rest), "vitest")
}

/// `Tests:       1 failed, 2 passed, 3 total`
fn jest_summary(line: &str) -> Option<Counts> {
    let rest = line.strip_prefix("Tests:")?;
    counts_of(&number_words(rest), "jest")
}

/// `N passed, N failed[, N skipped]` alone on a line, maybe after one `word:`.
fn plain_summary(line: &str) -> Option<Counts> {
    let body = match line.split_once(':') {
        Some((word, rest)) if !word.contains(' ') && !word.is_empty() => rest.trim(),
        _ => line,
    };
    let parts: Vec<&str> = body.split(", ").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let expected = ["passed", "failed", "skipped"];
    let mut numbers = [0u64; 3];
    for (i, part) in parts.iter().enumerate() {
        let (n, word) = part.trim().split_once(' ')?;
        if word != expected[i] {
            return None;
        }
        numbers[i] = n.parse().ok()?;
    }
    Some(Counts { passed: numbers[0], failed: numbers[1], skipped: numbers[2], runner: "plain" })
}

#[derive(Debug, Clone, Copy)]
enum GoOutcome {
    Pass,
    Fail,
    Skip,
}

/// `--- PASS: TestName (0.00s)` of a top-level test (subtests are indented).
fn go_outcome(line: &str) -> Option<GoOutcome> {
    let rest = line.strip_prefix("--- ")?;
    if rest.starts_with("PASS: ") {
        Some(GoOutcome::Pass)
    } else if rest.starts_with("FAIL: ") {
        Some(GoOutcome::Fail)
    } else if rest.starts_with("SKIP: ") {
        Some(GoOutcome::Skip)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy)]
enum NodeField {
    Pass,
    Fail,
    Skipped,
}

/// `# pass 2` (TAP reporter) or `ℹ pass 2` (spec reporter).
fn node_total(line: &str) -> Option<(NodeField, u64)> {
    let rest = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ "))?;
    let (word, n) = rest.split_once(' ')?;
    let n = n.trim().parse().ok()?;
    let field = match word {
        "pass" => NodeField::Pass,
        "fail" => NodeField::Fail,
        "skipped" => NodeField::Skipped,
        _ => return None,
    };
    Some((field, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(output: &str) -> (u64, u64, u64, &'static str) {
        let c = counts_in(output).unwrap_or_default();
        (c.passed, c.failed, c.skipped, c.runner)
    }

    #[test]
    fn cargo_sums_every_test_binary() {
        let out = "running 2 tests\ntest a ... ok\n\
            test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
            test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
        assert_eq!(counts(out), (5, 2, 1, "cargo"));
    }

    #[test]
    fn the_plain_line_counts_with_or_without_a_word_before_it() {
        assert_eq!(counts("3 passed, 1 failed"), (3, 1, 0, "plain"));
        assert_eq!(counts("Results: 3 passed, 0 failed, 2 skipped"), (3, 0, 2, "plain"));
        assert_eq!(counts("we had 3 passed, 1 failed today"), (0, 0, 0, ""));
        assert_eq!(counts("3 passed, 1 failed, 2 broken"), (0, 0, 0, ""));
    }

    #[test]
    fn jest_vitest_and_nextest_lines() {
        assert_eq!(counts("Tests:       1 failed, 2 passed, 3 total"), (2, 1, 0, "jest"));
        assert_eq!(counts("      Tests  1 failed | 2 passed | 1 skipped (4)"), (2, 1, 1, "vitest"));
        assert_eq!(counts(" Test Files  1 failed (1)"), (0, 0, 0, ""));
        assert_eq!(
            counts("     Summary [   0.012s] 4 tests run: 3 passed (1 slow), 1 failed, 2 skipped"),
            (3, 1, 2, "nextest")
        );
    }

    #[test]
    fn go_counts_top_level_tests_only() {
        let out = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n\
                   --- FAIL: TestB (0.00s)\n    --- PASS: TestB/sub (0.00s)\n--- SKIP: TestC (0.00s)\nFAIL\n";
        assert_eq!(counts(out), (1, 1, 1, "go"));
    }

    #[test]
    fn colours_do_not_hide_a_summary() {
        assert_eq!(
            counts("\u{1b}[31m1 failed\u{1b}[0m, \u{1b}[32m2 passed\u{1b}[0m in 0.05s"),
            (2, 1, 0, "pytest")
        );
    }

    #[test]
    fn nothing_recognisable_gives_no_counts() {
        assert_eq!(counts_in("compiling...\nerror: could not compile\n"), None);
    }
}
