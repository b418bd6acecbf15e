//! A session's attachments (files a person sent from a chat): kept 0600 in a folder of the
//! host's own, shown read-only inside the agent's sandbox, removed when the session finishes.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use base64::Engine as _;
use nucleic_protocol::{Attached, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENT_CHUNK_BYTES};

use crate::config::HostConfig;
use crate::context::Context;
use crate::error::{HostError, blocking};

/// The folder of a session's attachments.
pub(crate) fn attachments_dir(config: &HostConfig, session_id: &str) -> PathBuf {
    config.home.join("attachments").join(session_id)
}

/// Makes the folder of a session's attachments (0700) so the sandbox can show it.
pub(crate) fn prepare(config: &HostConfig, session_id: &str) -> std::io::Result<PathBuf> {
    let dir = attachments_dir(config, session_id);
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Removes a session's attachments (nothing when it has none).
pub(crate) fn remove(config: &HostConfig, session_id: &str) {
    let _ = std::fs::remove_dir_all(attachments_dir(config, session_id));
}

/// `name` when it is one plain file name, else why not.
fn check_name(name: &str) -> Result<(), HostError> {
    let refuse = |why: &str| Err(HostError::Invalid(format!("attachment name {name:?} {why}")));
    if name.is_empty() || name.len() > 200 {
        return refuse("must have 1 to 200 bytes");
    }
    if name.contains(['/', '\\', '\0']) || name.chars().any(char::is_control) {
        return refuse("must be one file name (no separators or control characters)");
    }
    if name.starts_with('.') {
        return refuse("must not start with a dot (no `..`, no hidden files)");
    }
    Ok(())
}

impl Context {
    /// Keeps `content` (base64) as the session's attachment `name`, or appends it to the
    /// attachment `append`; where the agent reads it.
    pub async fn attach(
        &self,
        id: &str,
        name: &str,
        content: &str,
        append: Option<&str>,
    ) -> Result<Attached, HostError> {
        check_name(name)?;
        if let Some(existing) = append {
            check_name(existing)?;
        }
        // Checked before decoding: base64 is 4/3 of the bytes it carries.
        let chunk = usize::try_from(MAX_ATTACHMENT_CHUNK_BYTES).unwrap_or(usize::MAX);
        if content.len() > chunk / 3 * 4 + 4 {
            return Err(HostError::Invalid(format!(
                "one attach carries at most {MAX_ATTACHMENT_CHUNK_BYTES} bytes; send a larger file in parts (append)"
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content.as_bytes())
            .map_err(|e| HostError::Invalid(format!("attachment {name:?} is not base64: {e}")))?;
        let row = self.session_row(id).await?;
        if row.read_only || row.worktree.is_none() {
            return Err(HostError::Invalid(format!(
                "session {id} has no worktree (imported or finished): nothing to attach to"
            )));
        }
        let config = self.config.clone();
        let (id, name, append) = (id.to_owned(), name.to_owned(), append.map(str::to_owned));
        blocking(move || match append {
            Some(existing) => append_to(&config, &id, &existing, &bytes),
            None => write_new(&config, &id, &name, &bytes),
        })
        .await
    }
}

fn io_error(name: &str) -> impl Fn(std::io::Error) -> HostError + '_ {
    move |e| HostError::Invalid(format!("cannot keep attachment {name:?}: {e}"))
}

fn attached(name: &str, path: &std::path::Path, size: u64) -> Attached {
    Attached { name: name.to_owned(), path: path.to_string_lossy().into_owned(), size }
}

/// Writes a new file (never over one, never through a symlink): `name`, else `2-name`, ….
fn write_new(
    config: &HostConfig,
    id: &str,
    name: &str,
    bytes: &[u8],
) -> Result<Attached, HostError> {
    let io = io_error(name);
    let dir = prepare(config, id).map_err(&io)?;
    for n in 1..=100 {
        let candidate = if n == 1 { name.to_owned() } else { format!("{n}-{name}") };
        let path = dir.join(&candidate);
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nofollow())
            .open(&path);
        match opened {
            Ok(mut file) => {
                file.write_all(bytes).map_err(&io)?;
                file.sync_all().map_err(&io)?;
                return Ok(attached(&candidate, &path, len(bytes)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
    }
    Err(HostError::Invalid(format!("session {id} has 100 attachments named {name:?} already")))
}

/// Appends to an attachment the session has (never through a symlink), within the limit.
fn append_to(
    config: &HostConfig,
    id: &str,
    name: &str,
    bytes: &[u8],
) -> Result<Attached, HostError> {
    let io = io_error(name);
    let path = attachments_dir(config, id).join(name);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(nofollow())
        .open(&path)
        .map_err(&io)?;
    let before = file.metadata().map_err(&io)?.len();
    let after = before.saturating_add(len(bytes));
    if after > MAX_ATTACHMENT_BYTES {
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(HostError::Invalid(format!(
            "attachment {name:?} would be {after} bytes; the limit is {MAX_ATTACHMENT_BYTES} bytes (removed)"
        )));
    }
    file.write_all(bytes).map_err(&io)?;
    file.sync_all().map_err(&io)?;
    Ok(attached(name, &path, after))
}

fn len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

/// `O_NOFOLLOW`: the last component is never a symlink followed.
fn nofollow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_plain_file_name() {
        for bad in ["", "../x", "a/b", ".bashrc", "..", "a\\b", "a\nb", "a\0b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("photo 1.jpg").unwrap();
    }
}
