//! The head and tail of a session file, as complete lines: what a discovery reads instead of
//! the whole file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

/// What was read of one file.
pub(crate) struct Window {
    /// Complete lines from the start (the last partial one dropped).
    pub head: Vec<String>,
    /// Complete lines of the end (the first partial one dropped); empty when `whole`.
    pub tail: Vec<String>,
    /// The whole file fit in the head.
    pub whole: bool,
    pub modified: Option<SystemTime>,
}

/// Opens `path` for reading without blocking on a FIFO swapped in after the listing, and
/// only if it is a regular file.
pub(crate) fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// The first line alone may be long (Codex's `session_meta` carries the base instructions):
/// the head is extended up to this to complete it.
const FIRST_LINE_LIMIT: usize = 1024 * 1024;

/// The first line of `path` alone (up to the first-line limit), when it is complete.
pub(crate) fn first_line(path: &Path, window: usize) -> std::io::Result<Option<String>> {
    let mut file = open(path)?;
    let mut head = Vec::new();
    (&mut file).take(window as u64).read_to_end(&mut head)?;
    if !head.contains(&b'\n') {
        let more = FIRST_LINE_LIMIT.saturating_sub(head.len()) as u64;
        (&mut file).take(more).read_to_end(&mut head)?;
    }
    Ok(lines(&head, false, true).into_iter().next())
}

/// Reads at most `window` bytes from each end of `path` (read-only). A file that changes while
/// it is read gives what was there at each read; a torn last line is left out.
pub(crate) fn read(path: &Path, window: usize) -> std::io::Result<Window> {
    let mut file = open(path)?;
    let meta = file.metadata()?;
    let len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut head = Vec::new();
    (&mut file).take(window as u64).read_to_end(&mut head)?;
    if !head.contains(&b'\n') && head.len() < len {
        let more = FIRST_LINE_LIMIT.saturating_sub(head.len()) as u64;
        (&mut file).take(more).read_to_end(&mut head)?;
    }
    let whole = head.len() >= len;
    let mut tail = Vec::new();
    if !whole {
        let start = len.saturating_sub(window).max(head.len());
        file.seek(SeekFrom::Start(start as u64))?;
        file.take(window as u64).read_to_end(&mut tail)?;
    }
    let head_lines = if whole { lines(&head, false, true) } else { lines(&head, false, false) };
    let tail_lines = if whole { Vec::new() } else { lines(&tail, true, true) };
    Ok(Window { head: head_lines, tail: tail_lines, whole, modified: meta.modified().ok() })
}

/// The lines of `bytes`: without the first when `skip_first` (it began before the window), and
/// the partial one after the last newline only when `keep_last` (the file's end) and whole.
fn lines(bytes: &[u8], skip_first: bool, keep_last: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut parts: Vec<&str> = text.split('\n').collect();
    // After the last '\n' comes a partial line (or nothing): kept only at the file's end,
    // where a complete JSON line without its newline is a line too.
    let last = parts.pop().unwrap_or_default();
    if skip_first && !parts.is_empty() {
        parts.remove(0);
    }
    let mut out: Vec<String> =
        parts.into_iter().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    // A last line without its newline is kept when it is whole JSON; otherwise it is torn (a
    // write in progress, or a crash mid-write) and left out, as the importers do.
    if keep_last && serde_json::from_str::<serde_json::Value>(last).is_ok() {
        out.push(last.to_owned());
    }
    out
}

/// The JSON objects among `lines`, and how many lines were not one.
pub(crate) fn objects<'a>(
    lines: impl Iterator<Item = &'a String>,
) -> (Vec<serde_json::Map<String, serde_json::Value>>, usize) {
    let mut bad = 0;
    let mut out = Vec::new();
    for line in lines {
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(o)) => out.push(o),
            _ => bad += 1,
        }
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn a_small_file_is_read_whole() {
        let f = file_with("a\nb\n{\"c\":1}");
        let w = read(f.path(), 1024).unwrap();
        assert!(w.whole);
        assert_eq!(w.head, ["a", "b", "{\"c\":1}"]);
        let torn = file_with("a\n{\"c\":");
        assert_eq!(read(torn.path(), 1024).unwrap().head, ["a"]);
        assert!(w.tail.is_empty());
    }

    #[test]
    fn a_large_file_gives_complete_lines_of_each_end() {
        let body: String = (0..1000).map(|i| format!("line-{i:04}\n")).collect();
        let f = file_with(&body);
        let w = read(f.path(), 100).unwrap();
        assert!(!w.whole);
        assert_eq!(w.head.first().map(String::as_str), Some("line-0000"));
        assert!(w.head.iter().all(|l| l.len() == 9), "{:?}", w.head);
        assert_eq!(w.tail.last().map(String::as_str), Some("line-0999"));
        assert!(w.tail.iter().all(|l| l.len() == 9), "{:?}", w.tail);
    }

    #[test]
    fn a_long_first_line_is_completed() {
        let body = format!("{}\nsecond\n{}", "m".repeat(5000), "z\n".repeat(2000));
        let f = file_with(&body);
        let w = read(f.path(), 256).unwrap();
        assert_eq!(w.head[0].len(), 5000);
    }
}
