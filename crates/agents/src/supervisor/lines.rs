//! Line framing with a cap: a byte stream in, lines out, a line longer than the cap cut to its
//! head (the rest consumed and dropped) rather than exhausting memory. Read by a task, not a
//! thread: an agent waiting for its next prompt costs the host no thread.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};

/// Longest stdout line kept whole; longer lines are cut (and flagged) rather than exhausting memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Longest stderr line kept whole; the rest of a longer one is dropped.
pub const MAX_STDERR_LINE_BYTES: usize = 64 * 1024;

/// What the next read of a stream gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its newline (lossily decoded if it was not UTF-8).
    Line(String),
    /// A line longer than the cap: its first bytes, and how long it really was.
    Oversized { head: String, len: usize },
    /// End of stream.
    Eof,
    /// Reading failed; the stream is given up.
    Failed(String),
}

/// Reads a stream line by line, no line longer than the cap.
#[derive(Debug)]
pub struct LineReader<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    cap: usize,
    /// Bytes of the stream taken so far (newlines included).
    consumed: u64,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of at most `cap` bytes, read through a buffer of `buffer` bytes.
    pub fn new(reader: R, cap: usize, buffer: usize) -> LineReader<R> {
        LineReader {
            reader: BufReader::with_capacity(buffer, reader),
            buf: Vec::new(),
            cap,
            consumed: 0,
        }
    }

    /// The next line (once one is complete, the stream ends, or reading fails).
    pub async fn next_frame(&mut self) -> Frame {
        match read_line_capped(&mut self.reader, &mut self.buf, self.cap, &mut self.consumed).await
        {
            Ok(frame) => frame,
            Err(e) => Frame::Failed(e.to_string()),
        }
    }

    /// Bytes of the stream taken so far, newlines included: after a line, the offset just past
    /// it (where an agent's output is resumed after a host restart).
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Whether another complete line is already buffered (then a batch can wait for it).
    pub fn more_buffered(&self) -> bool {
        self.reader.buffer().contains(&b'\n')
    }
}

/// Reads the next line of at most `max` bytes; the rest of a longer line is consumed and dropped.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
    consumed: &mut u64,
) -> std::io::Result<Frame> {
    buf.clear();
    let mut total = 0usize;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if total == 0 {
                return Ok(Frame::Eof);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        total += take;
        let used = if done { take + 1 } else { take };
        reader.consume(used);
        *consumed += used as u64;
        if done {
            break;
        }
    }
    let text = match std::str::from_utf8(buf) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(buf).into_owned(),
    };
    if total > max {
        return Ok(Frame::Oversized { head: text, len: total });
    }
    Ok(Frame::Line(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_capped() {
        let data = b"short\nthis line is far too long\nlast-without-newline".to_vec();
        let mut lines = LineReader::new(&data[..], 10, 4);
        assert_eq!(lines.next_frame().await, Frame::Line("short".into()));
        assert_eq!(lines.consumed(), 6);
        assert_eq!(
            lines.next_frame().await,
            Frame::Oversized { head: "this line ".into(), len: 25 }
        );
        assert_eq!(lines.consumed(), 32);
        lines.cap = 100;
        assert_eq!(lines.next_frame().await, Frame::Line("last-without-newline".into()));
        assert_eq!(lines.next_frame().await, Frame::Eof);
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_is_whole_and_bad_utf8_is_replaced() {
        let mut lines = LineReader::new(&b"0123456789\n\xff\xfeok\n"[..], 10, 3);
        assert_eq!(lines.next_frame().await, Frame::Line("0123456789".into()));
        assert_eq!(lines.next_frame().await, Frame::Line("\u{fffd}\u{fffd}ok".into()));
        assert_eq!(lines.next_frame().await, Frame::Eof);
    }

    #[tokio::test]
    async fn buffered_lines_are_seen() {
        let mut lines = LineReader::new(&b"a\nb\nc"[..], 10, 64);
        assert_eq!(lines.next_frame().await, Frame::Line("a".into()));
        assert!(lines.more_buffered());
        assert_eq!(lines.next_frame().await, Frame::Line("b".into()));
        assert!(!lines.more_buffered(), "c has no newline yet");
    }
}
