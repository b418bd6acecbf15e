//! Reading a git index file (versions 2 to 4) for the entries a tree is written from.
//!
//! Only what writing a tree needs is kept: each entry's mode, object id and path. An index this
//! reader does not take on ([`Unsupported`]: unmerged or intent-to-add entries, a sparse index's
//! directory entries, a split index, an unknown version) is left to `git write-tree`.

use std::path::Path;

/// One index entry at stage 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// `0o100644`, `0o100755`, `0o120000` (symlink) or `0o160000` (gitlink).
    pub mode: u32,
    pub oid: Vec<u8>,
    pub path: Vec<u8>,
}

/// Why an index is left to git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub &'static str);

const ENTRY_FIXED: usize = 40;
const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const SKIP_WORKTREE: u16 = 0x4000;
const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: u16 = 0x0fff;
const INTENT_TO_ADD: u16 = 0x2000;

/// The entries of the index file at `path`, in index order (which is tree order), for object
/// ids of `hash_len` bytes.
pub(crate) fn read(
    path: &Path,
    hash_len: usize,
) -> std::io::Result<Result<Vec<Entry>, Unsupported>> {
    let bytes = std::fs::read(path)?;
    Ok(parse(&bytes, hash_len))
}

/// Parses index file bytes (see `read`).
pub(crate) fn parse(bytes: &[u8], hash_len: usize) -> Result<Vec<Entry>, Unsupported> {
    parse_checked(bytes, hash_len, false)
}

/// Whether the index bytes can seed a kept snapshot index: an index this reader takes on in
/// which no entry is marked assume-unchanged or skip-worktree. Git trusts such entries without
/// looking at the file, so one the agent marked in its own index would hide its later edits of
/// that file from every snapshot made through the kept index.
pub(crate) fn can_seed(bytes: &[u8], hash_len: usize) -> bool {
    parse_checked(bytes, hash_len, true).is_ok()
}

fn parse_checked(bytes: &[u8], hash_len: usize, no_trust: bool) -> Result<Vec<Entry>, Unsupported> {
    let mut at = Cursor { bytes, at: 0 };
    if at.take(4)? != b"DIRC" {
        return Err(Unsupported("not an index file"));
    }
    let version = at.u32()?;
    if !(2..=4).contains(&version) {
        return Err(Unsupported("unknown index version"));
    }
    let count = usize::try_from(at.u32()?).map_err(|_| Unsupported("too many entries"))?;
    let mut entries: Vec<Entry> = Vec::with_capacity(count.min(bytes.len() / ENTRY_FIXED));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at.at;
        let fixed = at.take(ENTRY_FIXED)?;
        let mode = u32::from_be_bytes([fixed[24], fixed[25], fixed[26], fixed[27]]);
        let oid = at.take(hash_len)?.to_vec();
        let flags = at.u16()?;
        if no_trust && flags & ASSUME_VALID != 0 {
            return Err(Unsupported("assume-unchanged entries"));
        }
        if flags & STAGE_MASK != 0 {
            return Err(Unsupported("unmerged entries"));
        }
        if flags & EXTENDED != 0 {
            if version < 3 {
                return Err(Unsupported("extended flags in a version 2 index"));
            }
            let extended = at.u16()?;
            if no_trust && extended & SKIP_WORKTREE != 0 {
                return Err(Unsupported("skip-worktree entries"));
            }
            if extended & INTENT_TO_ADD != 0 {
                return Err(Unsupported("intent-to-add entries"));
            }
        }
        let path = if version == 4 {
            let strip = at.varint()?;
            let keep = previous.len().checked_sub(strip).ok_or(Unsupported("bad path prefix"))?;
            let suffix = at.until_nul()?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(suffix);
            path
        } else {
            let length = usize::from(flags & NAME_MASK);
            let name = if length < usize::from(NAME_MASK) {
                let name = at.take(length)?;
                if at.take(1)? != [0] {
                    return Err(Unsupported("path not terminated"));
                }
                name
            } else {
                at.until_nul()?
            };
            // Padding: the entry is a multiple of 8 bytes, its path NUL-terminated (1-8 NULs).
            let used = at.at - start;
            let padded = (used + 7) & !7;
            at.take(padded - used)?;
            name.to_vec()
        };
        let mode = match mode >> 12 {
            0o10 if mode & 0o100 != 0 => 0o100_755,
            0o10 => 0o100_644,
            0o12 => 0o120_000,
            0o16 => 0o160_000,
            0o04 => return Err(Unsupported("sparse index directory entries")),
            _ => return Err(Unsupported("unknown entry mode")),
        };
        let plain = !path.is_empty()
            && !path.starts_with(b"/")
            && !path.ends_with(b"/")
            && !path.windows(2).any(|w| w == b"//")
            && path.split(|b| *b == b'/').all(|part| part != b"." && part != b"..")
            && !path.contains(&0);
        if !plain {
            return Err(Unsupported("an entry path that is not plain"));
        }
        if entries.last().is_some_and(|last| last.path >= path) {
            return Err(Unsupported("entries out of order"));
        }
        previous.clone_from(&path);
        entries.push(Entry { mode, oid, path });
    }
    // Extensions: a split index keeps its entries in another file.
    while bytes.len() - at.at > hash_len {
        let signature = at.take(4)?;
        if signature == b"link" {
            return Err(Unsupported("split index"));
        }
        if signature == b"sdir" {
            return Err(Unsupported("sparse index"));
        }
        let size = usize::try_from(at.u32()?).map_err(|_| Unsupported("bad extension"))?;
        at.take(size)?;
    }
    Ok(entries)
}

/// A bounds-checked reader.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Unsupported> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len());
        let end = end.ok_or(Unsupported("truncated index"))?;
        let part = &self.bytes[self.at..end];
        self.at = end;
        Ok(part)
    }

    fn u32(&mut self) -> Result<u32, Unsupported> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, Unsupported> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn until_nul(&mut self) -> Result<&'a [u8], Unsupported> {
        let rest = &self.bytes[self.at..];
        let len = rest.iter().position(|b| *b == 0).ok_or(Unsupported("truncated index"))?;
        self.at += len + 1;
        Ok(&rest[..len])
    }

    /// Git's offset varint (index v4 path prefixes).
    fn varint(&mut self) -> Result<usize, Unsupported> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .and_then(|v| v.checked_add(usize::from(byte & 0x7f)))
                .ok_or(Unsupported("bad path prefix"))?;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_indexes_are_refused_not_misread() {
        assert_eq!(parse(b"", 20), Err(Unsupported("truncated index")));
        assert_eq!(parse(b"XXXX\0\0\0\x02\0\0\0\0", 20), Err(Unsupported("not an index file")));
        assert_eq!(parse(b"DIRC\0\0\0\x05\0\0\0\0", 20), Err(Unsupported("unknown index version")));
        // One entry announced, none there.
        assert_eq!(parse(b"DIRC\0\0\0\x02\0\0\0\x01", 20), Err(Unsupported("truncated index")));
        // An empty index (no entries, only the checksum).
        let mut empty = b"DIRC\0\0\0\x02\0\0\0\0".to_vec();
        empty.extend([0u8; 20]);
        assert_eq!(parse(&empty, 20), Ok(Vec::new()));
    }
}
