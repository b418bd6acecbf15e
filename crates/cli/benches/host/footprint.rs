//! Where this process's resident memory is, from `/proc/self/smaps`: the main heap, other
//! anonymous memory (glibc's thread arenas and large allocations), thread stacks, and files;
//! next to them the Rust allocator's live bytes (`stats_alloc`, counted by this binary).

/// Resident memory by kind, in KiB, and the thread count.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Footprint {
    pub(crate) rss: u64,
    /// `[heap]`: the main arena (brk).
    pub(crate) heap: u64,
    /// Anonymous read-write mappings that are not thread stacks: glibc's other arenas and
    /// mmapped allocations, SQLite's page cache when it lives there.
    pub(crate) anon: u64,
    /// Anonymous mappings of a thread stack's size (2 MiB) and `[stack]`.
    pub(crate) stacks: u64,
    /// File-backed mappings (the binary, libraries, SQLite's `-shm`).
    pub(crate) files: u64,
    pub(crate) threads: u64,
    /// Live bytes of the Rust allocator (`stats_alloc`), in KiB.
    pub(crate) rust: i64,
}

impl Footprint {
    pub(crate) fn now() -> Footprint {
        let mut f = Footprint {
            threads: crate::proc_status_kb("self", "Threads"),
            rust: crate::rust_heap_bytes() / 1024,
            ..Footprint::default()
        };
        let Ok(text) = std::fs::read_to_string("/proc/self/smaps") else { return f };
        let (mut kind, mut size) = (Kind::Files, 0u64);
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let Some(first) = words.next() else { continue };
            if first.contains('-') && !first.ends_with(':') {
                let perms = words.next().unwrap_or("");
                let path = words.nth(3).unwrap_or("");
                kind = match path {
                    "[heap]" => Kind::Heap,
                    "[stack]" => Kind::Stack,
                    "" if perms.starts_with("rw") => Kind::Anon,
                    "" => Kind::Other,
                    p if p.starts_with('[') => Kind::Other,
                    _ => Kind::Files,
                };
                continue;
            }
            let mut value = || words.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            match first {
                "Size:" => size = value(),
                "Rss:" => {
                    let rss = value();
                    f.rss += rss;
                    match kind {
                        Kind::Heap => f.heap += rss,
                        Kind::Stack => f.stacks += rss,
                        Kind::Anon if (2040..=2060).contains(&size) || size == 8192 => {
                            f.stacks += rss
                        }
                        Kind::Anon => f.anon += rss,
                        Kind::Files => f.files += rss,
                        Kind::Other => {}
                    }
                }
                _ => {}
            }
        }
        f
    }

    pub(crate) fn brief(&self) -> String {
        let mib = |kb: u64| kb as f64 / 1024.0;
        format!(
            "RSS {:.1} = heap {:.1} + arenas/mmap {:.1} + stacks {:.1} + files {:.1} MiB (Rust heap live {:.1} MiB), {} threads",
            mib(self.rss),
            mib(self.heap),
            mib(self.anon),
            mib(self.stacks),
            mib(self.files),
            self.rust as f64 / 1024.0,
            self.threads
        )
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Heap,
    Stack,
    Anon,
    Files,
    Other,
}
