//! The HTTP listener for operators and programs (`server.listen`, off by default): `/healthz`
//! (the process answers), `/readyz` (the store answers, its migrations are this build's, every
//! platform is connected) and `/metrics` (Prometheus text, from `telemetry`); the memory API
//! and MCP (`api`, when keys are configured); the admin page (`admin`, when its token is
//! set). Answers say what is wrong in general words; the details (which may name hosts) go
//! to the log only.

pub mod admin;
pub mod api;
pub mod mcp;
pub mod memory_api;

use crate::domain::status::{Connection, PlatformStatus, Shards};
use crate::store::{Readiness, Store};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{info, warn};

#[derive(Debug, thiserror::Error)]
/// Why the listener did not start.
pub enum ServiceError {
    /// `server.listen` could not be bound.
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        cause: std::io::Error,
    },
    /// The metrics recorder could not be installed.
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
}

/// What the listener reads: the store, the platforms' connections, the metrics recorder.
#[derive(Clone)]
pub struct ServiceState {
    /// The store whose health `/readyz` checks.
    pub store: Arc<dyn Store>,
    /// The platforms of this process.
    pub platforms: PlatformStatus,
    /// The recorder `/metrics` renders.
    pub metrics: PrometheusHandle,
}

/// What `/readyz` (and `engram status`) report.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReadyReport {
    /// Store reachable, migrations current, every platform connected.
    pub ready: bool,
    /// The database.
    pub store: StoreHealth,
    /// Each platform of this process and its connection.
    pub platforms: BTreeMap<&'static str, Connection>,
    /// The gateway shards each platform runs here and which are connected (Discord).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shards: BTreeMap<&'static str, Shards>,
}

/// The database as `/readyz` sees it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum StoreHealth {
    /// It answered.
    Reachable {
        /// Its schema against this build's migrations.
        migrations: Readiness,
    },
    /// It did not answer (details in the log).
    Unreachable,
}

/// Checks the store and the platforms.
pub async fn readiness(store: &dyn Store, platforms: &PlatformStatus) -> ReadyReport {
    let store = match store.readiness().await {
        Ok(migrations) => StoreHealth::Reachable { migrations },
        Err(e) => {
            warn!(error = %e, "readiness: the store did not answer");
            StoreHealth::Unreachable
        }
    };
    let schema_ok = matches!(&store, StoreHealth::Reachable { migrations } if migrations.current());
    ReadyReport {
        ready: schema_ok && platforms.all_connected(),
        store,
        platforms: platforms.all(),
        shards: platforms.shards(),
    }
}

/// What the listener serves besides health and metrics, each when configured.
#[derive(Default, Clone)]
pub struct Programs {
    /// The memory API and MCP (`server.api_keys`).
    pub api: Option<Arc<memory_api::MemoryApi>>,
    /// The admin page (`ENGRAM_ADMIN_TOKEN`).
    pub admin: Option<Arc<admin::Admin>>,
}

/// The routes of the listener.
pub fn router(state: ServiceState, programs: Programs) -> Router {
    let mut routes = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .with_state(state);
    if let Some(api) = programs.api {
        routes = routes.merge(api::routes(api));
    }
    if let Some(admin) = programs.admin {
        routes = routes.merge(admin::routes(admin));
    }
    routes
}

async fn ready(State(state): State<ServiceState>) -> Response {
    let report = readiness(state.store.as_ref(), &state.platforms).await;
    let status = if report.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(report)).into_response()
}

async fn metrics(State(state): State<ServiceState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// A listener running in the background.
pub struct Listening {
    /// The address it is bound to (the port chosen when `server.listen` said 0).
    pub addr: SocketAddr,
    /// Ends when `shutdown` turned true and open requests finished.
    pub task: tokio::task::JoinHandle<()>,
}

/// Binds `listen` and serves `routes` until `shutdown` turns true; the metrics recorder's
/// upkeep runs beside it.
pub async fn serve(
    listen: &str,
    routes: Router,
    metrics: PrometheusHandle,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Listening, ServiceError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|cause| ServiceError::Bind {
            addr: listen.to_string(),
            cause,
        })?;
    let addr = listener.local_addr().map_err(|cause| ServiceError::Bind {
        addr: listen.to_string(),
        cause,
    })?;
    info!(%addr, "listening: /healthz /readyz /metrics");
    let task = tokio::spawn(async move {
        let mut upkeep = tokio::time::interval(Duration::from_secs(5));
        let stop = async move {
            loop {
                tokio::select! {
                    _ = upkeep.tick() => metrics.run_upkeep(),
                    changed = shutdown.changed() => {
                        if changed.is_err() || *shutdown.borrow() {
                            return;
                        }
                    }
                }
            }
        };
        if let Err(e) = axum::serve(listener, routes)
            .with_graceful_shutdown(stop)
            .await
        {
            warn!(error = %e, "the HTTP listener stopped");
        }
    });
    Ok(Listening { addr, task })
}
