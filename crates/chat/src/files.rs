//! Files through the chat: the size limit of an inbound attachment, the 0600 spool the outbox
//! keeps an outgoing file in until it is sent, safe names, and `multipart/form-data` bodies.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest file a chat may send in: the host's limit (and Telegram's bots cannot download
/// more than 20 MB).
pub const ATTACHMENT_LIMIT: u64 = nucleic_protocol::MAX_ATTACHMENT_BYTES;

/// A size for people (`512 B`, `3.2 KiB`, `50.0 MiB`).
pub fn human(bytes: u64) -> String {
    // Lossy on purpose: a size to read, not to compute with.
    #[allow(clippy::cast_precision_loss)]
    let (kib, mib) = (bytes as f64 / 1024.0, bytes as f64 / 1_048_576.0);
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{kib:.1} KiB"),
        _ => format!("{mib:.1} MiB"),
    }
}

/// `name` as one harmless file name: its last component only, without control characters,
/// separators or a leading dot, at most 120 characters (`file` when nothing is left).
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|') { '_' } else { c })
        .take(120)
        .collect();
    let cleaned = cleaned.trim_start_matches('.').trim().to_owned();
    if cleaned.is_empty() { "file".to_owned() } else { cleaned }
}

/// Writes `bytes` to a new 0600 file in `dir` (made 0700 when absent); its path.
pub fn spool(dir: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    let path = dir.join(uuid::Uuid::new_v4().simple().to_string());
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(path)
}

/// A `multipart/form-data` body being built.
#[derive(Debug)]
pub struct Multipart {
    boundary: String,
    body: Vec<u8>,
}

impl Default for Multipart {
    fn default() -> Multipart {
        Multipart::new()
    }
}

impl Multipart {
    pub fn new() -> Multipart {
        Multipart {
            boundary: format!("nucleic-{}", uuid::Uuid::new_v4().simple()),
            body: Vec::new(),
        }
    }

    /// A text field.
    pub fn text(&mut self, name: &str, value: &str) {
        self.part(&format!("Content-Disposition: form-data; name=\"{}\"\r\n", quoted(name)));
        self.body.extend_from_slice(value.as_bytes());
        self.body.extend_from_slice(b"\r\n");
    }

    /// A file field.
    pub fn file(&mut self, name: &str, file_name: &str, mime: &str, bytes: &[u8]) {
        self.part(&format!(
            "Content-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n",
            quoted(name),
            quoted(file_name),
            mime.replace(['\r', '\n'], "")
        ));
        self.body.extend_from_slice(bytes);
        self.body.extend_from_slice(b"\r\n");
    }

    fn part(&mut self, headers: &str) {
        self.body.extend_from_slice(format!("--{}\r\n{headers}\r\n", self.boundary).as_bytes());
    }

    /// The content type (with the boundary) and the body.
    pub fn finish(mut self) -> (String, Vec<u8>) {
        self.body.extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        (format!("multipart/form-data; boundary={}", self.boundary), self.body)
    }
}

/// A header parameter's value with its quotes and line breaks made harmless.
fn quoted(value: &str) -> String {
    value.replace(['"', '\r', '\n'], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_harmless_component_and_sizes_read_plainly() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..\\..\\boot.ini"), "boot.ini");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("a\nb:c.txt"), "ab_c.txt");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name(""), "file");
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3000), "2.9 KiB");
        assert_eq!(human(50 << 20), "50.0 MiB");
    }

    #[test]
    fn a_multipart_body_has_its_fields_and_a_closing_boundary() {
        let mut form = Multipart::new();
        form.text("chat_id", "42");
        form.file("document", "a\"b.txt", "text/plain", b"hello");
        let (content_type, body) = form.finish();
        let boundary = content_type.strip_prefix("multipart/form-data; boundary=").unwrap();
        let body = String::from_utf8(body).unwrap();
        assert!(body.contains("name=\"chat_id\"\r\n\r\n42\r\n"), "{body}");
        assert!(body.contains("filename=\"a_b.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n"));
        assert!(body.ends_with(&format!("--{boundary}--\r\n")));
    }

    #[test]
    fn a_spooled_file_is_0600_in_a_0700_dir() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = spool(&dir.path().join("out"), b"x").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let parent = std::fs::metadata(dir.path().join("out")).unwrap();
        assert_eq!(parent.permissions().mode() & 0o777, 0o700);
    }
}
