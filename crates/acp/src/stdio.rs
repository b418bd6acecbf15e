//! The stdio transport the SDK runs on. stdin is read line by line, each line at most
//! [`MAX_LINE_BYTES`]: a longer one is dropped unread and handed on as a short line that is not
//! JSON, which the SDK answers as a parse error (`id: null`). stdout is written by one task from
//! a queue of [`OUTGOING_LINES`]: session updates wait for room in it, and stdin is read only
//! while it has room, so a client that never reads stops Nucleic from reading and writing
//! instead of growing its memory.

use std::io;

use futures_util::{Sink, Stream};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read from the client (as `nucleic mcp`).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Lines queued for stdout before writers wait.
pub const OUTGOING_LINES: usize = 256;

/// The queue of lines for stdout.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    tx: mpsc::Sender<String>,
}

impl Outgoing {
    /// Queues one line, waiting for room; false once stdout is gone.
    pub(crate) async fn send(&self, line: String) -> bool {
        self.tx.send(line).await.is_ok()
    }

    /// Waits until the queue has room (at once when stdout is gone).
    pub(crate) async fn room(&self) {
        if let Ok(permit) = self.tx.reserve().await {
            drop(permit);
        }
    }

    /// The queue as the SDK's outgoing sink.
    pub(crate) fn sink(&self) -> impl Sink<String, Error = io::Error> + Send + 'static {
        futures_util::sink::unfold(self.clone(), |out, line: String| async move {
            if out.send(line).await {
                Ok(out)
            } else {
                Err(io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
            }
        })
    }
}

/// Starts the task writing queued lines to `out`, flushing when the queue runs dry.
pub(crate) fn writer(
    out: impl AsyncWrite + Unpin + Send + 'static,
) -> (Outgoing, JoinHandle<io::Result<()>>) {
    let (tx, mut rx) = mpsc::channel::<String>(OUTGOING_LINES);
    let task = tokio::spawn(async move {
        let mut out = out;
        while let Some(line) = rx.recv().await {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
            while let Ok(line) = rx.try_recv() {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
            }
            out.flush().await?;
        }
        Ok(())
    });
    (Outgoing { tx }, task)
}

/// One line read from the client.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    Text(String),
    /// Longer than the limit: its length, its bytes dropped.
    TooLong(usize),
    Eof,
}

/// Reads one line of at most `max` bytes (without its `\n` or `\r\n`); a longer line is read
/// to its end and dropped, holding no more than one buffer of it.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> io::Result<Line> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            if total == 0 {
                return Ok(Line::Eof);
            }
            break;
        }
        let newline = chunk.iter().position(|&b| b == b'\n');
        let take = newline.unwrap_or(chunk.len());
        total = total.saturating_add(take);
        if total <= max {
            buf.extend_from_slice(&chunk[..take]);
        } else if !buf.is_empty() {
            buf = Vec::new();
        }
        r.consume(take + usize::from(newline.is_some()));
        if newline.is_some() {
            break;
        }
    }
    if total > max {
        return Ok(Line::TooLong(total));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Line::Text(String::from_utf8_lossy(&buf).into_owned()))
}

/// The client's lines for the SDK, read only while stdout's queue has room; blank lines skipped.
pub(crate) fn incoming(
    input: impl AsyncBufRead + Unpin + Send + 'static,
    room: Outgoing,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures_util::stream::unfold((input, room), |(mut input, room)| async move {
        loop {
            room.room().await;
            let line = match read_line(&mut input, MAX_LINE_BYTES).await {
                Ok(Line::Eof) => return None,
                Ok(Line::Text(text)) if text.trim().is_empty() => continue,
                Ok(Line::Text(text)) => Ok(text),
                Ok(Line::TooLong(n)) => Ok(format!(
                    "nucleic acp: a line of {n} bytes is longer than the limit of \
                     {MAX_LINE_BYTES} bytes and was dropped unread"
                )),
                Err(e) => Err(e),
            };
            return Some((line, (input, room)));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut r, max).await.unwrap();
            if line == Line::Eof {
                return out;
            }
            out.push(line);
        }
    }

    #[tokio::test]
    async fn lines_are_split_and_a_long_one_is_dropped_whole() {
        let got = lines(b"ab\r\n0123456789abcdef\nxyz\nlast", 8).await;
        assert_eq!(
            got,
            [
                Line::Text("ab".into()),
                Line::TooLong(16),
                Line::Text("xyz".into()),
                Line::Text("last".into())
            ]
        );
        assert_eq!(lines(b"12345678\n", 8).await, [Line::Text("12345678".into())]);
        assert_eq!(lines(b"123456789", 8).await, [Line::TooLong(9)]);
        assert_eq!(lines(b"", 8).await, []);
    }

    proptest::proptest! {
        /// Any bytes, any buffer size: the lines are the input split at `\n` (a trailing
        /// `\r` dropped), each longer than the limit reported by its length instead.
        #[test]
        fn lines_are_the_input_split_however_it_is_buffered(
            input in proptest::collection::vec(proptest::prop_oneof![
                Just(b'\n'), Just(b'\r'), Just(b'a'), proptest::num::u8::ANY
            ], 0..300),
            capacity in 1usize..40,
            max in 0usize..30,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(async {
                let mut r = tokio::io::BufReader::with_capacity(capacity, input.as_slice());
                let mut out = Vec::new();
                loop {
                    match read_line(&mut r, max).await.unwrap() {
                        Line::Eof => return out,
                        line => out.push(line),
                    }
                }
            });
            let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
            if input.last() == Some(&b'\n') || input.is_empty() {
                pieces.pop();
            }
            let want: Vec<Line> = pieces
                .into_iter()
                .map(|p| {
                    if p.len() > max {
                        Line::TooLong(p.len())
                    } else {
                        let p = p.strip_suffix(b"\r").unwrap_or(p);
                        Line::Text(String::from_utf8_lossy(p).into_owned())
                    }
                })
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    use proptest::prelude::Just;

    #[tokio::test]
    async fn a_full_queue_stops_reading_until_there_is_room() {
        let (tx, mut rx) = mpsc::channel::<String>(1);
        let out = Outgoing { tx };
        assert!(out.send("first".into()).await);
        let waiting = tokio::spawn({
            let out = out.clone();
            async move { out.room().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "room while the queue is full");
        assert_eq!(rx.recv().await.as_deref(), Some("first"));
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await.unwrap().unwrap();
    }
}
