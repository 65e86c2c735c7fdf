//! The HTTP listener for operators and programs (`server.listen`, off by default): `/healthz`
//! (the process answers), `/readyz` (the store answers, its migrations are this build's, every
//! platform is connected) and `/metrics` (Prometheus text, from `telemetry`); the memory API
//! and MCP (`api`, when keys are configured); the admin page (`admin`, when its token is
//! set). Answers say what is wrong in general words; the details (which may name hosts) go
//! to the log only.

pub mod admin;
pub mod api;
pub mod guesses;
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

/// How long and how many: what keeps a client that is slow on purpose (a request sent a byte
/// at a time, connections opened and left) from holding the listener, and with it the
/// process's files and sockets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// A connection whose request headers have not all come by then is closed (an idle one
    /// too, between requests), and so is one whose client reads nothing of an answer for
    /// that long.
    pub header_timeout: Duration,
    /// A request not answered by then (its body still coming, or its work) gets 408.
    pub request_timeout: Duration,
    /// Connections open at once; another one is closed as it comes.
    pub max_connections: usize,
    /// Wrong secrets one address may show within `wrong_secrets_window` (0: no limit).
    pub wrong_secrets: usize,
    /// The window of `wrong_secrets`.
    pub wrong_secrets_window: Duration,
}

impl Bounds {
    /// The bounds of `[server]`.
    pub fn of(server: &crate::config::ServerConfig) -> Bounds {
        Bounds {
            header_timeout: Duration::from_secs_f64(server.header_timeout_secs),
            request_timeout: Duration::from_secs_f64(server.request_timeout_secs),
            max_connections: server.max_connections,
            wrong_secrets: server.wrong_secrets,
            wrong_secrets_window: Duration::from_secs_f64(server.wrong_secrets_window_secs),
        }
    }
}

/// `request` answered within `limit`, or 408. The work runs on a task of its own and is not
/// cut off: a clear or a forget past the limit goes on to its end (only its answer is
/// lost), and a body that never ends stops its task when the connection closes.
async fn in_time(
    State(limit): State<Duration>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let work = tokio::spawn(next.run(request));
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(response)) => response,
        // A handler's panic goes on as that panic, as it would have in place.
        Ok(Err(e)) => std::panic::resume_unwind(e.into_panic()),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            "not answered in time; work already started goes on\n",
        )
            .into_response(),
    }
}

/// Binds `listen` and serves `routes` within `bounds` until `shutdown` turns true (open
/// requests finish first, each within its timeout); the metrics recorder's upkeep runs
/// beside it.
pub async fn serve(
    listen: &str,
    routes: Router,
    metrics: PrometheusHandle,
    bounds: Bounds,
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
    let guesses = guesses::Guesses::new(bounds.wrong_secrets, bounds.wrong_secrets_window);
    let routes = routes
        .layer(axum::middleware::from_fn_with_state(
            bounds.request_timeout,
            in_time,
        ))
        .layer(axum::middleware::from_fn_with_state(
            guesses,
            guesses::limit,
        ));
    let task = tokio::spawn(async move {
        let places = Arc::new(tokio::sync::Semaphore::new(bounds.max_connections));
        let mut upkeep = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = upkeep.tick() => metrics.run_upkeep(),
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
                accepted = listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of files, most often: the next try may find one.
                            warn!(error = %e, "a connection could not be accepted");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let Ok(place) = places.clone().try_acquire_owned() else {
                        warn!(max = bounds.max_connections, "too many connections: one closed");
                        continue;
                    };
                    // Each request knows its client's address (`guesses` counts per address).
                    let routes = routes.clone();
                    let service = hyper::service::service_fn(
                        move |mut request: hyper::Request<hyper::body::Incoming>| {
                            request
                                .extensions_mut()
                                .insert(axum::extract::ConnectInfo(peer));
                            tower::ServiceExt::oneshot(routes.clone(), request)
                        },
                    );
                    let stop = shutdown.clone();
                    tokio::spawn(connection(stream, service, bounds.header_timeout, stop, place));
                }
            }
        }
        // Open requests finish (within their timeout); idle connections close now (each saw
        // the stop too). A connection still open after both timeouts is left to the
        // runtime's end.
        let all = u32::try_from(bounds.max_connections).unwrap_or(u32::MAX);
        let grace = bounds.request_timeout + bounds.header_timeout;
        if tokio::time::timeout(grace, places.acquire_many(all))
            .await
            .is_err()
        {
            warn!("connections still open at the listener's stop: left behind");
        }
    });
    Ok(Listening { addr, task })
}

/// One client's connection, until it closes, stays quiet past `header_timeout` (sending, or
/// reading what it is sent), or the listener stops (`stop` changes; then its open request is
/// finished first).
async fn connection(
    stream: tokio::net::TcpStream,
    service: impl hyper::service::Service<
        hyper::Request<hyper::body::Incoming>,
        Response = Response,
        Error = std::convert::Infallible,
        Future: Send,
    > + Send
    + 'static,
    header_timeout: Duration,
    mut stop: watch::Receiver<bool>,
    _place: tokio::sync::OwnedSemaphorePermit,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout);
    // hyper has no write timeout: a client that stops reading would hold its place forever.
    let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
    stream.set_write_timeout(Some(header_timeout));
    let stream = hyper_util::rt::TokioIo::new(Box::pin(stream));
    let conn = http.serve_connection(stream, service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
