//! Moving sessions in and out of Nucleic: exports and imports over strings and given files.
//!
//! [`export::markdown`] writes the seed's "Nucleic session export" (a header for people, a
//! Conversation with one line per event, and every event as raw JSONL); [`export::jsonl`] writes
//! the events alone. [`import::nucleic_export`] reads either back — events come from the raw
//! JSONL, the source of truth — and [`import::claude_transcript`] / [`import::codex_rollout`]
//! convert Claude Code's transcripts and Codex's rollouts into read-only sessions. Nothing here
//! touches a file it was not given.
//!
//! - [`export`]: the seed's markdown export, or JSONL.
//! - [`import`]: Nucleic exports (markdown or JSONL), Claude Code transcripts, Codex rollouts.
//! - `conversation`: one human line per event for an export's "Conversation" section.
//! - `meta`: the export header's session metadata ([`ExportMeta`]) and what an import reads back.
//! - `error`: [`TransferError`].

mod conversation;
mod error;
pub mod export;
pub mod import;
mod meta;

pub use conversation::{PAYLOAD_LIMIT, RAW_LIMIT, entry as conversation_entry};
pub use error::{Result, TransferError};
pub use import::ImportedSession;
pub use meta::{ExportMeta, ImportedMeta, ProjectMeta, parse_status, status_label};
