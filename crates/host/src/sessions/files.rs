//! Read-only views of a session's worktree: directory listings and file contents, opened
//! beneath the worktree's directory descriptor one name at a time, never escaping it.

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{
    AtFlags, CWD, Dir, FileType, Mode, OFlags, ResolveFlags, fstat, openat2, readlinkat, statat,
};

use nucleic_protocol::{
    FileContent, FileEncoding, FileEntry, FileKind, MAX_FILE_CONTENT_BYTES, MAX_FILE_ENTRIES,
};

use crate::context::Context;
use crate::error::{HostError, blocking};

/// A directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The listed directory, normalized (`""` for the root).
    pub path: String,
    pub entries: Vec<FileEntry>,
    /// More than `MAX_FILE_ENTRIES` entries existed.
    pub truncated: bool,
}

impl Context {
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
        blocking(move || list_in(&root.open()?, &path, recursive, MAX_FILE_ENTRIES)).await
    }

    /// Reads one file of the session's worktree (the first `MAX_FILE_CONTENT_BYTES` of it).
    pub async fn read_file(&self, id: &str, path: &str) -> Result<FileContent, HostError> {
        let root = self.session_root(id).await?;
        let path = path.to_owned();
        blocking(move || read_in(&root.open()?, &path, MAX_FILE_CONTENT_BYTES)).await
    }

    /// Where the session's files are, from the host's own records: its worktree (reached from
    /// its project's root one real directory at a time), else its project's root. Imported
    /// (read-only) sessions have no files.
    async fn session_root(&self, id: &str) -> Result<FileRoot, HostError> {
        let row = self.session_row(id).await?;
        let project = match &row.project_id {
            Some(p) if !row.read_only => self.project(p).await.ok(),
            _ => None,
        };
        if row.read_only || row.project_id.is_none() {
            return Err(HostError::Invalid(format!(
                "session {id} was imported: it is a transcript only and has no files to show"
            )));
        }
        let worktree = row.worktree.map(|w| PathBuf::from(w.path));
        Ok(match (project, worktree) {
            (Some(p), Some(w)) => match w.strip_prefix(&p.root) {
                Ok(inside) => {
                    FileRoot { base: PathBuf::from(&p.root), inside: Some(inside.into()) }
                }
                Err(_) => FileRoot { base: w, inside: None },
            },
            (None, Some(w)) => FileRoot { base: w, inside: None },
            (Some(p), None) => FileRoot { base: PathBuf::from(p.root), inside: None },
            (None, None) => {
                return Err(HostError::Invalid(format!("session {id} has no directory")));
            }
        })
    }
}

/// A session's file root: `base` (a path the host recorded, its symlinks followed) and, for a
/// worktree inside its project, the worktree's place under it (walked without any symlink, so
/// an agent that swaps `.nucleic/worktrees/<slug>` for a symlink gets a refusal).
#[derive(Debug, Clone)]
struct FileRoot {
    base: PathBuf,
    inside: Option<PathBuf>,
}

impl FileRoot {
    fn open(&self) -> Result<OwnedFd, HostError> {
        let gone = |e: rustix::io::Errno| {
            HostError::Invalid(format!(
                "the session's directory {} is gone ({e})",
                self.base.display()
            ))
        };
        let base = open_root(&self.base).map_err(gone)?;
        let Some(inside) = &self.inside else { return Ok(base) };
        let parts = inside.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        match walk(&base, &inside.to_string_lossy(), parts, Symlinks::Refuse)? {
            Walked::Dir(dir) => Ok(dir),
            Walked::Entry { .. } => Err(HostError::Invalid(format!(
                "the session's directory {} is not a directory",
                inside.display()
            ))),
        }
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

/// Every open below the root: one name, beneath the directory descriptor it is relative to,
/// following no symlink at all (magic links such as `/proc/self/root` included). Symlinks
/// inside the worktree are read and walked by [`walk`] itself.
const ONE_NAME: ResolveFlags =
    ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

/// Symlinks a path may pass through before it is refused (the kernel's own limit).
const MAX_SYMLINKS: usize = 40;

/// Opens the directory the host recorded (following its symlinks: the path is the host's, not
/// the agent's; magic links are refused).
fn open_root(path: &Path) -> Result<OwnedFd, rustix::io::Errno> {
    openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_MAGICLINKS,
    )
}

/// Whether [`walk`] follows symlinks that stay inside the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Symlinks {
    Follow,
    Refuse,
}

/// Where a walk ended.
#[derive(Debug)]
enum Walked {
    /// A directory (an `O_PATH` descriptor).
    Dir(OwnedFd),
    /// Something else, named `name` in the directory `parent`.
    Entry { parent: OwnedFd, name: String },
}

/// Walks `parts` from `root` one name at a time, holding a descriptor of every directory on
/// the way: no step can leave the directory it starts from, a symlink's target is walked from
/// the directory holding it (refused when absolute, when it climbs above `root` or names
/// `.git`), so nothing outside `root` is ever reached, whatever is renamed meanwhile.
fn walk(
    root: &OwnedFd,
    path: &str,
    parts: Vec<String>,
    symlinks: Symlinks,
) -> Result<Walked, HostError> {
    let mut chain = vec![root.try_clone().map_err(|e| cannot_open(path, &e))?];
    let mut pending: VecDeque<String> = parts.into();
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        match name.as_str() {
            "" | "." => continue,
            ".." if chain.len() == 1 => return Err(invalid(path, "leads outside the worktree")),
            ".." => {
                chain.pop();
                continue;
            }
            ".git" => return Err(invalid(path, "is inside .git")),
            _ => {}
        }
        let Some(dir) = chain.last() else { break };
        let fd = openat2(
            dir,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ONE_NAME,
        )
        .map_err(|e| open_error(path, e))?;
        let kind = FileType::from_raw_mode(fstat(&fd).map_err(|e| open_error(path, e))?.st_mode);
        match kind {
            FileType::Symlink if symlinks == Symlinks::Follow => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(invalid(path, "passes through too many symlinks"));
                }
                let target = readlinkat(&fd, "", Vec::new()).map_err(|e| open_error(path, e))?;
                let target = Path::new(std::ffi::OsStr::from_bytes(target.to_bytes()));
                if target.has_root() {
                    return Err(invalid(path, "leads outside the worktree (an absolute symlink)"));
                }
                let mut next: VecDeque<String> =
                    target.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                next.extend(pending);
                pending = next;
            }
            FileType::Symlink => return Err(invalid(path, "passes through a symlink")),
            FileType::Directory => chain.push(fd),
            _ if pending.is_empty() => {
                let parent = chain.pop().ok_or_else(|| invalid(path, "has no parent"))?;
                return Ok(Walked::Entry { parent, name });
            }
            _ => return Err(invalid(path, "is not a directory")),
        }
    }
    chain.pop().map(Walked::Dir).ok_or_else(|| invalid(path, "leads outside the worktree"))
}

fn cannot_open(path: &str, e: &dyn std::fmt::Display) -> HostError {
    HostError::Invalid(format!("cannot open {path:?}: {e}"))
}

/// An open that failed, as the client should hear it.
fn open_error(path: &str, e: rustix::io::Errno) -> HostError {
    use rustix::io::Errno;
    match e {
        Errno::NOENT => HostError::NotFound(format!("file {path:?}")),
        Errno::XDEV => invalid(path, "leads outside the worktree"),
        Errno::LOOP => invalid(path, "changed into a symlink while being opened"),
        Errno::NOTDIR => invalid(path, "is not a directory"),
        _ => cannot_open(path, &e),
    }
}

/// Reopens a directory reached by [`walk`] for reading its entries.
fn open_dir(dir: &OwnedFd, path: &str) -> Result<Dir, HostError> {
    let fd = openat2(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ONE_NAME,
    )
    .map_err(|e| open_error(path, e))?;
    Dir::new(fd).map_err(|e| open_error(path, e))
}

/// Lists `path` under the directory `root` (a path the host trusts), at most `max` entries.
#[cfg(test)]
pub(crate) fn list(
    root: &Path,
    path: &str,
    recursive: bool,
    max: usize,
) -> Result<Listing, HostError> {
    let root = open_root(root)
        .map_err(|e| HostError::Invalid(format!("cannot open the worktree: {e}")))?;
    list_in(&root, path, recursive, max)
}

/// Lists `path` beneath the open directory `root`. Each directory is read through its own
/// descriptor; a recursive listing reopens subdirectories from the listed one by name, refusing
/// symlinks, so at most a path's depth of descriptors is open at a time.
fn list_in(root: &OwnedFd, path: &str, recursive: bool, max: usize) -> Result<Listing, HostError> {
    let parts = relative_parts(path)?;
    let normalized = parts.join("/");
    let top = match walk(root, path, parts, Symlinks::Follow)? {
        Walked::Dir(dir) => dir,
        Walked::Entry { .. } => return Err(invalid(path, "is not a directory")),
    };
    let mut entries = Vec::new();
    let mut truncated = false;
    // (names below `top`, listed prefix)
    let mut queue = VecDeque::from([(Vec::<String>::new(), normalized.clone())]);
    while let Some((below, prefix)) = queue.pop_front() {
        let dir = if below.is_empty() {
            top.try_clone().map_err(|e| cannot_open(path, &e))?
        } else {
            match walk(&top, &prefix, below.clone(), Symlinks::Refuse) {
                Ok(Walked::Dir(dir)) => dir,
                // Replaced or removed since it was listed: left out.
                Ok(Walked::Entry { .. }) | Err(_) => continue,
            }
        };
        for (name, kind, size) in read_dir_sorted(&dir, &prefix)? {
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            if entries.len() == max {
                truncated = true;
                break;
            }
            if recursive && kind == FileKind::Dir {
                let mut next = below.clone();
                next.push(name);
                queue.push_back((next, rel.clone()));
            }
            entries.push(FileEntry { path: rel, kind, size });
        }
        if truncated {
            break;
        }
    }
    Ok(Listing { path: normalized, entries, truncated })
}

/// A directory's entries (name, kind, size), by name, `.git` left out: read from its
/// descriptor, each entry's metadata taken relative to it without following symlinks.
fn read_dir_sorted(dir: &OwnedFd, path: &str) -> Result<Vec<(String, FileKind, u64)>, HostError> {
    let mut read = open_dir(dir, path)?;
    let mut out = Vec::new();
    while let Some(entry) = read.read() {
        let entry = entry.map_err(|e| HostError::Invalid(format!("cannot list {path:?}: {e}")))?;
        let raw = entry.file_name();
        let name = String::from_utf8_lossy(raw.to_bytes()).into_owned();
        if matches!(name.as_str(), "." | ".." | ".git") {
            continue;
        }
        let Ok(stat) = statat(dir, raw, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => FileKind::Symlink,
            FileType::Directory => FileKind::Dir,
            _ => FileKind::File,
        };
        let size =
            if kind == FileKind::File { u64::try_from(stat.st_size).unwrap_or(0) } else { 0 };
        out.push((name, kind, size));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reads `path` under the directory `root` (a path the host trusts): the first `max` bytes, as
/// UTF-8 text when it is text, else base64.
#[cfg(test)]
pub(crate) fn read(root: &Path, path: &str, max: u64) -> Result<FileContent, HostError> {
    let root = open_root(root)
        .map_err(|e| HostError::Invalid(format!("cannot open the worktree: {e}")))?;
    read_in(&root, path, max)
}

/// [`read`] beneath the open directory `root`. The file is opened by name from the descriptor
/// of the directory [`walk`] reached (no symlink followed, non-blocking so a FIFO cannot hang
/// the read) and checked to be a regular file through that same descriptor.
fn read_in(root: &OwnedFd, path: &str, max: u64) -> Result<FileContent, HostError> {
    let parts = relative_parts(path)?;
    let normalized = parts.join("/");
    let (parent, name) = match walk(root, path, parts, Symlinks::Follow)? {
        Walked::Entry { parent, name } => (parent, name),
        Walked::Dir(_) => return Err(invalid(path, "is not a file")),
    };
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd =
        openat2(&parent, &name, flags, Mode::empty(), ONE_NAME).map_err(|e| open_error(path, e))?;
    let stat = fstat(&fd).map_err(|e| open_error(path, e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(invalid(path, "is not a file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| HostError::Invalid(format!("cannot read {path:?}: {e}")))?;
    let size = u64::try_from(stat.st_size).unwrap_or(0).max(bytes.len() as u64);
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
