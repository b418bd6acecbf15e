//! Tree objects and snapshot refs written in-process: what `git write-tree` and `git update-ref`
//! did for a turn snapshot, without their two processes.
//!
//! Trees are built from the entries of an index that `git add` wrote (paths and object ids only;
//! no file is read) and stored as loose objects exactly as git stores them (zlib-deflated
//! `tree <size>\0<body>`, named by its SHA-1 or SHA-256, written to a temporary file and renamed
//! into place). A snapshot ref is a loose ref file written under its `.lock` and renamed, which
//! is git's own protocol for a loose ref; a loose ref overrides a packed one, and deleting goes
//! through `git update-ref -d`, which removes both. The agent can write the common dir, so
//! nothing is written through a symlink it planted: every directory on the way is checked to be
//! a real directory, and files are created new (`O_EXCL`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use sha1::Digest;

use crate::error::{GitError, Result};
use crate::index::{Entry, Unsupported};

/// How old an existing loose object may be before it is freshened (its mtime set to now), so a
/// `git gc` never prunes an object a new snapshot ref is about to name (gc prunes unreferenced
/// loose objects older than two weeks by default).
const FRESH_ENOUGH: Duration = Duration::from_secs(3600);

/// How old a leftover `.lock` of a snapshot ref must be to count as stale (its writer killed).
const STALE_LOCK: Duration = Duration::from_secs(10);

/// Writes the loose objects of one repository.
pub(crate) struct Objects {
    dir: PathBuf,
    sha256: bool,
}

impl Objects {
    /// The object store of the repository whose common dir is `common_dir`, with ids of
    /// `hash_len` bytes (20: SHA-1, 32: SHA-256).
    pub(crate) fn new(common_dir: &Path, hash_len: usize) -> Objects {
        Objects { dir: common_dir.join("objects"), sha256: hash_len == 32 }
    }

    /// Writes the trees of `entries` (index order) and returns the root tree's id in hex.
    pub(crate) fn write_trees(
        &self,
        entries: &[Entry],
    ) -> Result<std::result::Result<String, Unsupported>> {
        real_dir(&self.dir)?;
        Ok(match self.tree(entries, 0)? {
            Ok(oid) => Ok(hex(&oid)),
            Err(unsupported) => Err(unsupported),
        })
    }

    fn tree(
        &self,
        entries: &[Entry],
        prefix: usize,
    ) -> Result<std::result::Result<Vec<u8>, Unsupported>> {
        let mut body = Vec::with_capacity(entries.len() * 48);
        let mut previous: Option<&[u8]> = None;
        let mut i = 0;
        while i < entries.len() {
            let entry = &entries[i];
            let rest = &entry.path[prefix..];
            let (name, mode, oid, next) = match rest.iter().position(|b| *b == b'/') {
                None => (rest, entry.mode, entry.oid.clone(), i + 1),
                Some(slash) => {
                    let dir = &rest[..=slash];
                    let mut j = i + 1;
                    while j < entries.len() && entries[j].path[prefix..].starts_with(dir) {
                        j += 1;
                    }
                    let oid = match self.tree(&entries[i..j], prefix + slash + 1)? {
                        Ok(oid) => oid,
                        Err(unsupported) => return Ok(Err(unsupported)),
                    };
                    (&rest[..slash], 0o40_000, oid, j)
                }
            };
            // A file and a directory of the same name (git's index never has both).
            if previous == Some(name) {
                return Ok(Err(Unsupported("a path both a file and a directory")));
            }
            previous = Some(name);
            write!(body, "{mode:o} ")
                .map_err(|e| GitError::io("cannot build tree", &self.dir, e))?;
            body.extend_from_slice(name);
            body.push(0);
            body.extend_from_slice(&oid);
            i = next;
        }
        self.write("tree", &body).map(Ok)
    }

    /// Stores one object (if not already stored loose) and returns its id.
    fn write(&self, kind: &str, body: &[u8]) -> Result<Vec<u8>> {
        let header = format!("{kind} {}\0", body.len());
        let oid = if self.sha256 {
            let mut hash = sha2::Sha256::new();
            hash.update(header.as_bytes());
            hash.update(body);
            hash.finalize().to_vec()
        } else {
            let mut hash = sha1::Sha1::new();
            hash.update(header.as_bytes());
            hash.update(body);
            hash.finalize().to_vec()
        };
        let name = hex(&oid);
        let fan = self.dir.join(&name[..2]);
        let path = fan.join(&name[2..]);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.is_file() {
                freshen(&path, &meta);
                return Ok(oid);
            }
            return Err(refused(&path));
        }
        match std::fs::create_dir(&fan) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(GitError::io("cannot create", &fan, e)),
        }
        real_dir(&fan)?;
        let mut deflated = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(body.len() / 2 + 64),
            flate2::Compression::fast(),
        );
        let io = |e| GitError::io("cannot write object", &path, e);
        deflated.write_all(header.as_bytes()).map_err(io)?;
        deflated.write_all(body).map_err(io)?;
        let deflated = deflated.finish().map_err(io)?;
        let temp = fan.join(temp_name("tmp_obj"));
        create_new(&temp, &deflated, 0o444)?;
        std::fs::rename(&temp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            GitError::io("cannot store object", &path, e)
        })?;
        Ok(oid)
    }
}

/// What [`write_ref`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefWrite {
    Written,
    /// Not a files-backend repository (reftable): the caller asks git.
    NotLoose,
}

/// Points the loose ref `reference` (a checked `refs/...` name) of the repository whose common
/// dir is `common_dir` at `oid`: `<ref>.lock` created new, the id written, renamed onto the ref.
/// No reflog is written (git writes none for refs outside `refs/heads`, `refs/remotes`,
/// `refs/notes` and `HEAD` unless `core.logAllRefUpdates=always`), and no
/// `reference-transaction` hook runs (the host's git never runs hooks either).
pub(crate) fn write_ref(common_dir: &Path, reference: &str, oid: &str) -> Result<RefWrite> {
    if std::fs::symlink_metadata(common_dir.join("reftable")).is_ok() {
        return Ok(RefWrite::NotLoose);
    }
    let mut parts: Vec<&str> = reference.split('/').collect();
    let Some(name) = parts.pop() else {
        return Err(GitError::UnknownRef { reference: reference.to_owned() });
    };
    let mut dir = common_dir.to_path_buf();
    for part in parts {
        dir.push(part);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(GitError::io("cannot create", &dir, e)),
        }
        real_dir(&dir)?;
    }
    let target = dir.join(name);
    let lock = dir.join(format!("{name}.lock"));
    let content = format!("{oid}\n");
    if let Err(e) = create_new(&lock, content.as_bytes(), 0o644) {
        // A lock left by a writer that was killed (a SIGKILLed host) is removed once; a fresh
        // one is another writer's (a `git pack-refs` in the person's checkout).
        let stale = std::fs::symlink_metadata(&lock)
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age >= STALE_LOCK);
        if !stale {
            return Err(e);
        }
        let _ = std::fs::remove_file(&lock);
        create_new(&lock, content.as_bytes(), 0o644)?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(&target)
        && !meta.is_file()
    {
        let _ = std::fs::remove_file(&lock);
        return Err(refused(&target));
    }
    std::fs::rename(&lock, &target).map_err(|e| {
        let _ = std::fs::remove_file(&lock);
        GitError::io("cannot write ref", &target, e)
    })?;
    Ok(RefWrite::Written)
}

/// `path` must be a directory itself, not a symlink to one.
fn real_dir(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(refused(path)),
        Err(e) => Err(GitError::io("cannot read", path, e)),
    }
}

fn refused(path: &Path) -> GitError {
    GitError::io(
        "refusing to write through what is not a plain file or directory:",
        path,
        std::io::Error::from(std::io::ErrorKind::InvalidInput),
    )
}

/// Creates `path` new (never through a symlink: `O_EXCL`) with `bytes`.
fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|e| {
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                let _ = std::fs::remove_file(path);
            }
            GitError::io("cannot create", path, e)
        })
}

/// Sets the mtime of an existing loose object to now when it is older than [`FRESH_ENOUGH`]
/// (what git does when it would write an object it already has). Best effort.
fn freshen(path: &Path, meta: &std::fs::Metadata) {
    let old = meta
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > FRESH_ENOUGH);
    if old && let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// A name no other writer uses: `<prefix>_nucleic_<pid>_<n>`.
fn temp_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_nucleic_{}_{n}", std::process::id())
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}
