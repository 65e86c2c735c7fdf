//! The memory engine as an MCP server (the official Rust SDK, `rmcp`): the memory API's
//! operations as tools. Over stdio (`engram mcp`) it acts with the one key it was started
//! with; over streamable HTTP (`/mcp`) with the key of each request.

use super::memory_api::{ApiError, ApiKey, MemoryApi, operations};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

/// The MCP server over the memory API.
#[derive(Clone)]
pub struct McpServer {
    api: Arc<MemoryApi>,
    /// The key of a stdio server; over HTTP each request brings its own.
    key: Option<Arc<ApiKey>>,
}

impl McpServer {
    /// A stdio server acting with `key`.
    pub fn with_key(api: Arc<MemoryApi>, key: Arc<ApiKey>) -> McpServer {
        McpServer {
            api,
            key: Some(key),
        }
    }

    /// The server of `/mcp`: each request's key was checked and put in its extensions.
    pub fn over_http(api: Arc<MemoryApi>) -> McpServer {
        McpServer { api, key: None }
    }

    fn key(&self, ctx: &RequestContext<RoleServer>) -> Option<Arc<ApiKey>> {
        self.key.clone().or_else(|| {
            ctx.extensions
                .get::<axum::http::request::Parts>()?
                .extensions
                .get::<Arc<ApiKey>>()
                .cloned()
        })
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("engram", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Engram's long-term memory of people. Every tool acts for one person (person, \
                 platform) in one place (space and channel, or their private chat when space \
                 is left out), and sees only what that person may see there.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            operations()
                .iter()
                .map(|o| Tool::new(o.name, o.description.clone(), Arc::new(o.schema.clone())))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(key) = self.key(&context) else {
            return Ok(failed(&ApiError::Unauthorized));
        };
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        Ok(match self.api.call(&key, &request.name, args).await {
            Ok(value) => CallToolResult::structured(value).into(),
            Err(e) => failed(&e),
        })
    }
}

/// A refused call as a tool error the agent reads (`MemoryApi::call` logged any cause).
fn failed(e: &ApiError) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()
}
