//! The MCP server: its tools, each one request to the host over the sync protocol.

use std::sync::Arc;

use nucleic_client::Client;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

/// Arguments of `list_sessions`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListSessionsArgs {
    /// Only this project's sessions (its projectID); all projects when absent.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Include archived sessions.
    #[serde(default)]
    pub include_archived: bool,
}

/// The MCP server: one daemon connection shared by its tool calls, one request at a time.
#[derive(Clone)]
pub struct NucleicMcp {
    client: Arc<Mutex<Client>>,
    tool_router: ToolRouter<NucleicMcp>,
}

fn host_error(error: nucleic_client::ClientError) -> ErrorData {
    ErrorData::internal_error(format!("the Nucleic host: {error}"), None)
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
        let projects = self.client.lock().await.list_projects().await.map_err(host_error)?;
        Ok(CallToolResult::success(vec![ContentBlock::json(projects)?]))
    }

    #[tool(
        description = "List Nucleic sessions with their status, pending approvals, cost and last seq."
    )]
    async fn list_sessions(
        &self,
        Parameters(args): Parameters<ListSessionsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let sessions = self
            .client
            .lock()
            .await
            .list_sessions(args.project_id, args.include_archived)
            .await
            .map_err(host_error)?;
        Ok(CallToolResult::success(vec![ContentBlock::json(sessions)?]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NucleicMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves `client`'s host over stdin/stdout until the MCP client closes the stream.
pub async fn serve_stdio(client: Client) -> Result<(), std::io::Error> {
    let service = NucleicMcp::new(client)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(format!("MCP initialization: {e}")))?;
    service.waiting().await.map_err(|e| std::io::Error::other(format!("MCP service: {e}")))?;
    Ok(())
}
