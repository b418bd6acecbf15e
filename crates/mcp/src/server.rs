//! The MCP server: its tools, each a request to the host over the sync protocol as the MCP
//! grant the connection authenticated with. What a tool may do is the host's to decide: a
//! refusal comes back as the tool's error result, saying why.

use std::sync::Arc;
use std::time::Duration;

use nucleic_client::{Client, ClientError};
use nucleic_protocol::{
    Backend, Decision, FinishAction, Intent, IntentResult, NewSession, QuestionAnswer,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::args::{
    Answer, AnswerArgs, DEFAULT_EVENTS, DEFAULT_WAIT_SECS, DiffArgs, FinishArgs, FinishHow,
    ListSessionsArgs, MAX_EVENTS, MAX_RESULT_BYTES, MAX_WAIT_SECS, ReadTranscriptArgs,
    SendMessageArgs, SessionArgs, StartSessionArgs, WaitArgs,
};
use crate::wait::{Waited, wait_for};

/// The longest line of JSON-RPC `nucleic mcp` reads; a longer one is dropped unread.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// How long reading a transcript window or the pending approvals may take.
const READ_WITHIN: Duration = Duration::from_secs(30);

/// The MCP server: one daemon connection shared by its tool calls, one request at a time.
#[derive(Clone)]
pub struct NucleicMcp {
    client: Arc<Mutex<Client>>,
    tool_router: ToolRouter<NucleicMcp>,
}

/// A host's answer as the tool's result: a refusal is the tool's error (the model reads why);
/// a broken connection is a JSON-RPC error.
fn answered<T: serde::Serialize>(
    result: Result<T, ClientError>,
) -> Result<CallToolResult, ErrorData> {
    match result {
        Ok(value) => Ok(CallToolResult::success(vec![ContentBlock::json(value)?])),
        Err(ClientError::Rejected(refusal)) => {
            Ok(CallToolResult::error(vec![ContentBlock::text(refusal.to_string())]))
        }
        Err(e) => Err(ErrorData::internal_error(format!("the Nucleic host: {e}"), None)),
    }
}

fn bad_argument(why: String) -> ErrorData {
    ErrorData::invalid_params(why, None)
}

fn backend(name: &str) -> Result<Backend, ErrorData> {
    let alias = match name {
        "claude" => "claudeCode",
        other => other,
    };
    serde_json::from_value(json!(alias)).map_err(|_| {
        bad_argument(format!(
            "unknown backend {name:?}: claude (or claudeCode), codex, gemini or simulated"
        ))
    })
}

/// `value` cut to fit `MAX_RESULT_BYTES` when serialized: the events that fit, at least one.
fn fitting(events: Vec<Value>) -> (Vec<Value>, bool) {
    let mut total = 0usize;
    let mut kept = Vec::new();
    let count = events.len();
    for event in events {
        total += event.to_string().len();
        if total > MAX_RESULT_BYTES && !kept.is_empty() {
            break;
        }
        kept.push(event);
    }
    let cut = kept.len() < count;
    (kept, cut)
}

impl std::fmt::Debug for NucleicMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NucleicMcp").finish_non_exhaustive()
    }
}

#[tool_router]
impl NucleicMcp {
    pub fn new(client: Client) -> NucleicMcp {
        NucleicMcp { client: Arc::new(Mutex::new(client)), tool_router: Self::tool_router() }
    }

    /// The tools this server offers, as `tools/list` shows them.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        Self::tool_router().list_all()
    }

    #[tool(
        description = "List the projects the Nucleic host knows (id, name, root, default branch and backend)."
    )]
    async fn list_projects(&self) -> Result<CallToolResult, ErrorData> {
        answered(self.client.lock().await.list_projects().await)
    }

    #[tool(
        description = "List Nucleic sessions with their status, pending approvals, cost and last seq."
    )]
    async fn list_sessions(
        &self,
        Parameters(args): Parameters<ListSessionsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut client = self.client.lock().await;
        answered(client.list_sessions(args.project_id, args.include_archived).await)
    }

    #[tool(
        description = "Start a Nucleic session: a new worktree of the project and an agent working on the prompt. Needs the `start` scope; the session is recorded as started by this MCP grant."
    )]
    async fn start_session(
        &self,
        Parameters(args): Parameters<StartSessionArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = NewSession {
            project_id: args.project_id,
            base_ref: args.base_ref,
            backend: args.backend.as_deref().map(backend).transpose()?,
            model: None,
            permission_mode: None,
            title: args.title,
            mode: args.mode,
            prompt: args.prompt,
        };
        let mut client = self.client.lock().await;
        let started = client.intent(Intent::NewSession(request)).await;
        answered(started.map(|r| match r {
            Some(IntentResult::Session(summary)) => json!(summary),
            other => json!(other),
        }))
    }

    #[tool(description = "Send a follow-up prompt to a session. Needs the `steer` scope.")]
    async fn send_message(
        &self,
        Parameters(args): Parameters<SendMessageArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let sent = self.client.lock().await.send_input(&args.session_id, &args.text).await;
        answered(sent.map(|()| json!({ "sent": true })))
    }

    #[tool(
        description = "Read a window of a session's transcript: its events from `from_seq` (default 1), at most `limit` (default 50, at most 200, fewer past 256 KiB). Go on from `nextSeq`."
    )]
    async fn read_transcript(
        &self,
        Parameters(args): Parameters<ReadTranscriptArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let from = args.from_seq.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_EVENTS).clamp(1, MAX_EVENTS) as usize;
        let mut client = self.client.lock().await;
        let summary = match client.session(&args.session_id).await {
            Ok(summary) => summary,
            Err(e) => return answered::<()>(Err(e)),
        };
        let read = client
            .events_window(&args.session_id, from, summary.last_seq, limit, READ_WITHIN)
            .await;
        answered(read.map(|events| {
            let values = events.iter().map(|e| json!(e)).collect();
            let (events, cut) = fitting(values);
            let next = events.last().and_then(|e| e["seq"].as_u64()).map_or(from, |s| s + 1);
            json!({
                "events": events,
                "nextSeq": next,
                "lastSeq": summary.last_seq,
                "more": next <= summary.last_seq,
                "cutAtBytes": cut.then_some(MAX_RESULT_BYTES),
            })
        }))
    }

    #[tool(
        description = "The approvals and questions a session waits on: request id, tool, input, risk and why."
    )]
    async fn pending_approvals(
        &self,
        Parameters(args): Parameters<SessionArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut client = self.client.lock().await;
        let summary = match client.session(&args.session_id).await {
            Ok(summary) => summary,
            Err(e) => return answered::<()>(Err(e)),
        };
        if summary.pending_approvals == 0 {
            return answered(Ok(json!([])));
        }
        answered(client.pending_approvals(&args.session_id, summary.last_seq, READ_WITHIN).await)
    }

    #[tool(
        description = "Answer a pending approval or question: allow (with `answers` for a question), deny or deny_and_stop. Needs the `approve` scope; the host refuses critical requests and this grant's own session's or its ancestors', saying why. Recorded as answered by this MCP grant."
    )]
    async fn answer_approval(
        &self,
        Parameters(args): Parameters<AnswerArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let message = args.message.unwrap_or_else(|| "denied through MCP".to_owned());
        let decision = match (args.decision, args.answers.is_empty()) {
            (Answer::Allow, true) => Decision::Allow,
            (Answer::Allow, false) => Decision::Answer {
                answers: args
                    .answers
                    .into_iter()
                    .map(|a| QuestionAnswer {
                        question: a.question,
                        choices: a.choices,
                        other: a.other,
                    })
                    .collect(),
            },
            (Answer::Deny, _) => Decision::Deny { message },
            (Answer::DenyAndStop, _) => Decision::DenyAndStop { message },
        };
        let mut client = self.client.lock().await;
        answered(client.decide(&args.session_id, &args.request_id, decision, false).await)
    }

    #[tool(
        description = "Wait until a session needs attention (an approval or question pending, its turn over) or its agent ended, at most `timeout_secs` (default 60, at most 600). Says which, with the session's summary."
    )]
    async fn wait_for_session(
        &self,
        Parameters(args): Parameters<WaitArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let secs = args.timeout_secs.unwrap_or(DEFAULT_WAIT_SECS).clamp(1, MAX_WAIT_SECS);
        let within = Duration::from_secs(u64::from(secs));
        let waited = wait_for(&self.client, &args.session_id, within).await;
        answered(
            waited
                .map(|Waited { reason, summary }| json!({ "reason": reason, "session": summary })),
        )
    }

    #[tool(
        description = "A session's diff against its base: files changed, ahead/behind, conflicts; with `include_patch` the unified diff (cut at 256 KiB)."
    )]
    async fn session_diff(
        &self,
        Parameters(args): Parameters<DiffArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut client = self.client.lock().await;
        let facts = client.git_facts(&args.session_id, args.include_patch, None).await;
        answered(facts.map(|mut facts| {
            let cut = facts.patch.as_ref().is_some_and(|p| p.len() > MAX_RESULT_BYTES);
            if let Some(patch) = facts.patch.as_mut().filter(|_| cut) {
                let mut end = MAX_RESULT_BYTES;
                while !patch.is_char_boundary(end) {
                    end -= 1;
                }
                patch.truncate(end);
            }
            json!({ "facts": facts, "patchCutAtBytes": cut.then_some(MAX_RESULT_BYTES) })
        }))
    }

    #[tool(
        description = "Finish a session and keep its work: keep (end it, the worktree and branch stay), merge, squash or rebase into its base branch, or open a pull request. Needs the `finish` scope; the required checks gate it as for the person (never forced), the grant's own session and its ancestors are refused, and discarding or rolling back is the person's. Recorded as finished by this MCP grant."
    )]
    async fn finish_session(
        &self,
        Parameters(args): Parameters<FinishArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let (message, update_checkout) = (args.message, args.update_checkout);
        let action = match args.how {
            FinishHow::Keep => FinishAction::Keep,
            FinishHow::Merge => {
                FinishAction::Merge { message, update_checkout, force_reason: None }
            }
            FinishHow::Squash => {
                FinishAction::Squash { message, update_checkout, force_reason: None }
            }
            FinishHow::Rebase => {
                FinishAction::Rebase { message, update_checkout, force_reason: None }
            }
            FinishHow::PullRequest => FinishAction::PullRequest {
                title: message,
                draft: false,
                base: None,
                repo: None,
                force_reason: None,
            },
        };
        let intent = Intent::Finish { session_id: args.session_id, action };
        let mut client = self.client.lock().await;
        answered(client.intent(intent).await.map(|result| json!(result)))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NucleicMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves `client`'s host over stdin/stdout until the MCP client closes the stream. A line
/// longer than [`MAX_LINE_BYTES`] is dropped unread (there is no id to answer without reading
/// it) and the server goes on.
pub async fn serve_stdio(client: Client) -> Result<(), std::io::Error> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(stdin, stdout)
        .with_max_line_length(MAX_LINE_BYTES);
    let service = NucleicMcp::new(client)
        .serve(transport)
        .await
        .map_err(|e| std::io::Error::other(format!("MCP initialization: {e}")))?;
    service.waiting().await.map_err(|e| std::io::Error::other(format!("MCP service: {e}")))?;
    Ok(())
}
