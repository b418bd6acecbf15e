//! The spool's record format, shared by the file a keeper writes, the stream it sends a host,
//! and the requests a host sends it: a one-line header, then records of a tag byte, a
//! little-endian `u32` length and that many bytes. A record cut short at the end of a file is
//! a torn tail (the keeper died mid-write): the reader stops before it.

use std::io::{self, Read, Write};

/// The first bytes of every spool file (and of the stream a keeper sends). A keeper of another
/// version writes another header and is not adopted.
pub const SPOOL_HEADER: &[u8] = b"nucleic-spool/1\n";

/// Longest record payload accepted (a chunk of output is at most 64 KiB; input lines are
/// capped by the agent adapters).
pub const MAX_RECORD: usize = 64 * 1024 * 1024;

/// Record tags.
pub mod tag {
    /// A chunk of the agent's stdout (spool, stream).
    pub const STDOUT: u8 = b'o';
    /// A chunk of the agent's stderr (spool, stream).
    pub const STDERR: u8 = b'e';
    /// The agent exited: JSON `{"code":…,"signal":…}` (spool, stream; always last).
    pub const EXIT: u8 = b'x';
    /// The keeper's hello: JSON [`super::super::KeeperHello`] (stream, first).
    pub const HELLO: u8 = b'h';
    /// Host → keeper, first on a connection: send the spool from this byte offset (`u64` LE).
    pub const ATTACH: u8 = b'a';
    /// Host → keeper, first on a connection: this connection writes the agent's input.
    pub const INPUT_LINK: u8 = b'w';
    /// Host → keeper: bytes for the agent's stdin.
    pub const INPUT: u8 = b'i';
    /// Host → keeper: close the agent's stdin.
    pub const CLOSE_INPUT: u8 = b'c';
    /// Host → keeper: the host has recorded the run's end; remove the spool and exit.
    pub const RELEASE: u8 = b'r';
}

/// Encodes one record.
pub fn encode(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(payload.len() + 5);
    record.push(tag);
    // Callers keep payloads under MAX_RECORD (< 4 GiB).
    record.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(u32::MAX).to_le_bytes());
    record.extend_from_slice(payload);
    record
}

/// Writes one record.
pub fn write_record(out: &mut impl Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    out.write_all(&encode(tag, payload))
}

/// What reading the next record gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Record(u8, Vec<u8>),
    /// The stream ended on a record boundary.
    End,
    /// The stream ended inside a record (a torn tail).
    Torn,
}

/// Reads the next record.
pub fn read_record(input: &mut impl Read) -> io::Result<Next> {
    let mut head = [0u8; 5];
    match read_full(input, &mut head)? {
        0 => return Ok(Next::End),
        5 => {}
        _ => return Ok(Next::Torn),
    }
    let mut payload = vec![0u8; payload_len(&head)?];
    if read_full(input, &mut payload)? < payload.len() {
        return Ok(Next::Torn);
    }
    Ok(Next::Record(head[0], payload))
}

/// [`read_record`] from an async reader (a live keeper's stream, read by a task rather than
/// a thread of its own).
pub async fn read_record_async(
    input: &mut (impl tokio::io::AsyncRead + Unpin),
) -> io::Result<Next> {
    use tokio::io::AsyncReadExt;
    async fn read_full_async(
        input: &mut (impl tokio::io::AsyncRead + Unpin),
        buf: &mut [u8],
    ) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match input.read(&mut buf[filled..]).await? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
    let mut head = [0u8; 5];
    match read_full_async(input, &mut head).await? {
        0 => return Ok(Next::End),
        5 => {}
        _ => return Ok(Next::Torn),
    }
    let mut payload = vec![0u8; payload_len(&head)?];
    if read_full_async(input, &mut payload).await? < payload.len() {
        return Ok(Next::Torn);
    }
    Ok(Next::Record(head[0], payload))
}

/// The payload length a record's head announces, refused over [`MAX_RECORD`].
fn payload_len(head: &[u8; 5]) -> io::Result<usize> {
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_RECORD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a spool record of {len} bytes (over the {MAX_RECORD}-byte cap)"),
        ));
    }
    Ok(len)
}

/// Reads and checks the header.
pub fn read_header(input: &mut impl Read) -> io::Result<()> {
    let mut header = vec![0u8; SPOOL_HEADER.len()];
    let n = read_full(input, &mut header)?;
    if header[..n] != *SPOOL_HEADER {
        let seen = String::from_utf8_lossy(&header[..n]).trim().to_owned();
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not a spool of this Nucleic version (header {seen:?}, expected {:?})",
                String::from_utf8_lossy(SPOOL_HEADER).trim()
            ),
        ));
    }
    Ok(())
}

/// Fills `buf` unless the stream ends first; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_is_seen() {
        let mut bytes = SPOOL_HEADER.to_vec();
        write_record(&mut bytes, tag::STDOUT, b"hello\n").unwrap();
        write_record(&mut bytes, tag::EXIT, b"{}").unwrap();
        let mut input = &bytes[..];
        read_header(&mut input).unwrap();
        assert_eq!(
            read_record(&mut input).unwrap(),
            Next::Record(tag::STDOUT, b"hello\n".to_vec())
        );
        assert_eq!(read_record(&mut input).unwrap(), Next::Record(tag::EXIT, b"{}".to_vec()));
        assert_eq!(read_record(&mut input).unwrap(), Next::End);
        for cut in [SPOOL_HEADER.len() + 3, bytes.len() - 1] {
            let mut input = &bytes[..cut];
            read_header(&mut input).unwrap();
            let mut last = read_record(&mut input).unwrap();
            while let Next::Record(..) = last {
                last = read_record(&mut input).unwrap();
            }
            assert_eq!(last, Next::Torn, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn the_async_reader_reads_what_the_blocking_one_does() {
        let mut bytes = Vec::new();
        write_record(&mut bytes, tag::STDOUT, b"hello\n").unwrap();
        write_record(&mut bytes, tag::EXIT, b"{}").unwrap();
        let mut input = &bytes[..];
        let first = read_record_async(&mut input).await.unwrap();
        assert_eq!(first, Next::Record(tag::STDOUT, b"hello\n".to_vec()));
        assert_eq!(
            read_record_async(&mut input).await.unwrap(),
            Next::Record(tag::EXIT, b"{}".to_vec())
        );
        assert_eq!(read_record_async(&mut input).await.unwrap(), Next::End);
        let mut torn = &bytes[..bytes.len() - 1];
        read_record_async(&mut torn).await.unwrap();
        assert_eq!(read_record_async(&mut torn).await.unwrap(), Next::Torn);
        let mut huge = encode(tag::STDOUT, &[]);
        huge[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = read_record_async(&mut &huge[..]).await.unwrap_err();
        assert!(e.to_string().contains("over the"), "{e}");
    }

    #[test]
    fn another_version_and_oversized_records_are_refused() {
        let e = read_header(&mut &b"nucleic-spool/0\n"[..]).unwrap_err();
        assert!(e.to_string().contains("not a spool of this Nucleic version"), "{e}");
        let mut huge = vec![tag::STDOUT];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(read_record(&mut &huge[..]).is_err());
    }
}
