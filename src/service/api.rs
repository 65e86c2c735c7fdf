//! The memory API over HTTP: `GET /api/v1/operations` (their schemas) and
//! `POST /api/v1/{operation}` with a JSON object, each behind `Authorization: Bearer <key>`;
//! and the MCP server's streamable HTTP transport at `/mcp`, behind the same keys. A request
//! without a known key is answered 401 before its body is read.

use super::mcp::McpServer;
use super::memory_api::{ApiError, ApiKey, MemoryApi, operations};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::sync::Arc;

/// The secret of an `Authorization: Bearer …` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A 401 that says only that a key is needed.
pub fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(json!({"error": ApiError::Unauthorized.to_string()})),
    )
        .into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized => return unauthorized(),
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::UnknownOperation(_) => StatusCode::NOT_FOUND,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        (status, axum::Json(json!({"error": self.to_string()}))).into_response()
    }
}

/// Lets a request with a known key through, the key in its extensions; else 401.
async fn require_key(State(api): State<Arc<MemoryApi>>, mut req: Request, next: Next) -> Response {
    let Some(key) = bearer(req.headers()).and_then(|s| api.keys().find(s)) else {
        return unauthorized();
    };
    req.extensions_mut().insert(key);
    next.run(req).await
}

async fn list() -> Response {
    let ops: Vec<Value> = operations()
        .iter()
        .map(|o| json!({"name": o.name, "description": o.description, "input_schema": o.schema}))
        .collect();
    axum::Json(json!({ "operations": ops })).into_response()
}

async fn call(
    State(api): State<Arc<MemoryApi>>,
    axum::Extension(key): axum::Extension<Arc<ApiKey>>,
    Path(operation): Path<String>,
    body: Bytes,
) -> Response {
    let args: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return ApiError::BadRequest(format!("the body is not JSON: {e}")).into_response();
        }
    };
    match api.call(&key, &operation, args).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The API's routes and `/mcp`, every one behind a key.
pub fn routes(api: Arc<MemoryApi>) -> Router {
    let mcp_api = api.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(McpServer::over_http(mcp_api.clone())),
        Arc::new(NeverSessionManager::default()),
        // Every request carries a key, so the Host check against DNS rebinding is not what
        // protects it; any browser Origin is refused (no web page calls this).
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .disable_allowed_hosts()
            .enforce_origin_validation(),
    );
    Router::new()
        .route("/api/v1/operations", get(list))
        .route("/api/v1/{operation}", post(call))
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            require_key,
        ))
        .with_state(api)
}
