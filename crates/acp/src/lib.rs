//! Nucleic as an ACP agent (issue 30, `docs/acp.md`): the program an editor (Zed, JetBrains,
//! Neovim) starts on stdio, on the official `agent-client-protocol` SDK. Each ACP session is a
//! Nucleic session of the project whose checkout holds the editor's `cwd`, reached only through
//! `nucleic-client`; closing the editor leaves it running.
//!
//! - `stdio`: lines from stdin bounded at [`MAX_LINE_BYTES`], stdout behind a bounded queue.
//! - `agent`: the handlers (`initialize`, `session/new|load|prompt|cancel|set_mode`).
//! - `follow`: one task per attached session: its events as `session/update`, its approvals as
//!   `session/request_permission` (withdrawn when another client answers first), turn ends.
//! - `ask`: one pending approval asked in the editor: a tool call, a plan, questions.
//! - `interactive`: a plan's and a question's options and what each decides (pure).
//! - `translate`: a Nucleic event as ACP session updates (pure).
//! - `projects`: which registered project an editor's `cwd` belongs to.

mod agent;
mod ask;
mod follow;
mod interactive;
mod projects;
mod stdio;
mod translate;

pub use agent::{AcpOptions, serve_stdio};
pub use stdio::{MAX_LINE_BYTES, OUTGOING_LINES};
