//! Read-only views of a session's worktree: directory listings and file contents, never escaping it.

use std::collections::VecDeque;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use nucleic_protocol::{
    FileContent, FileEncoding, FileEntry, FileKind, MAX_FILE_CONTENT_BYTES, MAX_FILE_ENTRIES,
};

use crate::error::{HostError, blocking};
use crate::host::Host;

/// A directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The listed directory, normalized (`""` for the root).
    pub path: String,
    pub entries: Vec<FileEntry>,
    /// More than `MAX_FILE_ENTRIES` entries existed.
    pub truncated: bool,
}

impl Host {
    /// Lists `path` (relative to the session's worktree; `""` is its root), recursively when
    /// asked. `.git` is never listed; symlinks are listed, not followed.
    pub async fn list_files(
        &self,
        id: &str,
        path: &str,
        recursive: bool,
    ) -> Result<Listing, HostError> {
        let root = self.session_root(id).await?;
        let path = path.to_owned();
        blocking(move || list(&root, &path, recursive, MAX_FILE_ENTRIES)).await
    }

    /// Reads one file of the session's worktree (the first `MAX_FILE_CONTENT_BYTES` of it).
    pub async fn read_file(&self, id: &str, path: &str) -> Result<FileContent, HostError> {
        let root = self.session_root(id).await?;
        let path = path.to_owned();
        blocking(move || read(&root, &path, MAX_FILE_CONTENT_BYTES)).await
    }

    async fn session_root(&self, id: &str) -> Result<PathBuf, HostError> {
        let row = self.session_row(id).await?;
        let root = PathBuf::from(row.worktree.map_or(row.cwd, |w| w.path));
        if !root.is_dir() {
            return Err(HostError::Invalid(format!(
                "the session's directory {} is gone",
                root.display()
            )));
        }
        Ok(root)
    }
}

fn invalid(path: &str, why: &str) -> HostError {
    HostError::Invalid(format!("path {path:?} {why}"))
}

/// `path` as clean relative components: no absolute paths, no `..`, no `.git`.
fn relative_parts(path: &str) -> Result<Vec<String>, HostError> {
    if path.contains('\0') {
        return Err(invalid(path, "contains a NUL byte"));
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => {
                let part = part.to_string_lossy().into_owned();
                if part == ".git" {
                    return Err(invalid(path, "is inside .git"));
                }
                parts.push(part);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid(path, "leaves the worktree (..)")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid(path, "must be relative to the worktree"));
            }
        }
    }
    Ok(parts)
}

/// The real location of `path` under `root`, refused when it (through symlinks) leaves the
/// worktree or lands in `.git`. Returns (canonical root, canonical target, normalized path).
fn resolve(root: &Path, path: &str) -> Result<(PathBuf, PathBuf, String), HostError> {
    let parts = relative_parts(path)?;
    let root = root
        .canonicalize()
        .map_err(|e| HostError::Invalid(format!("cannot open the worktree: {e}")))?;
    let joined = parts.iter().fold(root.clone(), |p, part| p.join(part));
    let target = joined.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => HostError::NotFound(format!("file {path:?}")),
        _ => HostError::Invalid(format!("cannot open {path:?}: {e}")),
    })?;
    let inside = target.strip_prefix(&root).map_err(|_| invalid(path, "leaves the worktree"))?;
    if inside.components().any(|c| c.as_os_str() == ".git") {
        return Err(invalid(path, "is inside .git"));
    }
    Ok((root, target, parts.join("/")))
}

/// Lists `path` under `root`, at most `max` entries.
pub fn list(root: &Path, path: &str, recursive: bool, max: usize) -> Result<Listing, HostError> {
    let (_, dir, normalized) = resolve(root, path)?;
    if !dir.is_dir() {
        return Err(invalid(path, "is not a directory"));
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    let mut queue = VecDeque::from([(dir, normalized.clone())]);
    while let Some((dir, prefix)) = queue.pop_front() {
        let children = read_dir_sorted(&dir)?;
        for (name, kind, size) in children {
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            if entries.len() == max {
                truncated = true;
                break;
            }
            if recursive && kind == FileKind::Dir {
                queue.push_back((dir.join(&name), rel.clone()));
            }
            entries.push(FileEntry { path: rel, kind, size });
        }
        if truncated {
            break;
        }
    }
    Ok(Listing { path: normalized, entries, truncated })
}

/// A directory's entries (name, kind, size), by name, `.git` left out.
fn read_dir_sorted(dir: &Path) -> Result<Vec<(String, FileKind, u64)>, HostError> {
    let read = std::fs::read_dir(dir)
        .map_err(|e| HostError::Invalid(format!("cannot list {}: {e}", dir.display())))?;
    let mut out = Vec::new();
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        let kind = if meta.file_type().is_symlink() {
            FileKind::Symlink
        } else if meta.is_dir() {
            FileKind::Dir
        } else {
            FileKind::File
        };
        let size = if kind == FileKind::File { meta.len() } else { 0 };
        out.push((name, kind, size));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reads `path` under `root`: the first `max` bytes, as UTF-8 text when it is text, else base64.
pub fn read(root: &Path, path: &str, max: u64) -> Result<FileContent, HostError> {
    let (_, target, normalized) = resolve(root, path)?;
    let meta =
        target.metadata().map_err(|e| HostError::Invalid(format!("cannot read {path:?}: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(path, "is not a file"));
    }
    let file = std::fs::File::open(&target)
        .map_err(|e| HostError::Invalid(format!("cannot read {path:?}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| HostError::Invalid(format!("cannot read {path:?}: {e}")))?;
    let size = meta.len().max(bytes.len() as u64);
    let truncated = size > bytes.len() as u64;
    let image = image_mime(&normalized);
    let (encoding, content) = match text_of(&bytes, truncated) {
        Some(text) if image.is_none_or(|m| m == "image/svg+xml") => (FileEncoding::Utf8, text),
        _ => {
            use base64::Engine;
            (FileEncoding::Base64, base64::engine::general_purpose::STANDARD.encode(&bytes))
        }
    };
    let mime = match (image, encoding) {
        (Some(m), _) => m.to_owned(),
        (None, FileEncoding::Utf8) => "text/plain".to_owned(),
        (None, FileEncoding::Base64) => "application/octet-stream".to_owned(),
    };
    Ok(FileContent { path: normalized, size, mime, encoding, content, truncated })
}

/// The text of `bytes` if they are UTF-8 without NUL bytes (a cut at the end of a truncated
/// file is dropped, not counted against it).
fn text_of(bytes: &[u8], truncated: bool) -> Option<String> {
    let valid = match std::str::from_utf8(bytes) {
        Ok(s) => s,
        // Only the last character was cut in half by the size cap.
        Err(e) if truncated && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    (!valid.contains('\0')).then(|| valid.to_owned())
}

/// The image MIME type for a file name, by extension.
fn image_mime(path: &str) -> Option<&'static str> {
    let ext = Path::new(path).extension()?.to_string_lossy().to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "avif" => "image/avif",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
