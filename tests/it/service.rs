//! The HTTP listener: `/healthz`, `/readyz` following the store's schema and the platforms'
//! connections, `/metrics`; `engram run` starting it on the console; `engram status`.

use crate::common::*;
use engram::app;
use engram::domain::Platform;
use engram::domain::status::{Connection, PlatformStatus};
use std::io::{BufRead, Write};

/// The listener of `h`'s store on a free port, reporting `platforms`.
async fn listen(
    h: &Harness,
    platforms: PlatformStatus,
) -> (String, tokio::sync::watch::Sender<bool>) {
    let mut config = h.config.clone();
    config.server.listen = "127.0.0.1:0".into();
    let (listening, stop) =
        app::start_service(&config, h.store.clone(), platforms, Default::default())
            .await
            .unwrap()
            .expect("server.listen is set");
    (format!("http://{}", listening.addr), stop)
}

async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn ready(base: &str) -> (u16, serde_json::Value) {
    let (code, body) = get(&format!("{base}/readyz")).await;
    (code, serde_json::from_str(&body).unwrap())
}

async fn readyz_follows_the_schema_and_the_platforms(url: Option<String>) {
    let h = harness_on(url, false).await;
    let platforms = PlatformStatus::default();
    let (base, stop) = listen(&h, platforms.clone()).await;
    assert_eq!(get(&format!("{base}/healthz")).await, (200, "ok\n".into()));

    // Nothing connected yet: not ready.
    let (code, body) = ready(&base).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["store"]["state"], "reachable");
    platforms.set(Platform::Telegram, Connection::Connecting);
    let (code, body) = ready(&base).await;
    assert_eq!(
        (code, &body["platforms"]["telegram"]["state"]),
        (503, &"connecting".into())
    );
    // Connected: ready (the positive control of every 503 below).
    platforms.set(
        Platform::Telegram,
        Connection::Connected {
            since: h.clock.now(),
        },
    );
    let (code, body) = ready(&base).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["ready"], true);
    assert_eq!(
        body["store"]["migrations"]["pending"],
        serde_json::json!([])
    );
    // A platform's last error shows, and makes the process not ready.
    platforms.set(
        Platform::Telegram,
        Connection::Failed {
            error: "getUpdates failed: connection refused".into(),
            at: h.clock.now(),
        },
    );
    let (code, body) = ready(&base).await;
    assert_eq!(code, 503);
    assert_eq!(
        body["platforms"]["telegram"]["error"],
        "getUpdates failed: connection refused"
    );
    platforms.set(
        Platform::Telegram,
        Connection::Connected {
            since: h.clock.now(),
        },
    );
    assert_eq!(ready(&base).await.0, 200);

    // A database migrated by a newer build: not this build's schema.
    let db = h.config.store.url.clone();
    exec(
        &db,
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99999999, 'from a newer build', TRUE, '', 0)",
    )
    .await;
    let (code, body) = ready(&base).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        body["store"]["migrations"]["unknown"],
        serde_json::json!([99999999])
    );
    exec(&db, "DELETE FROM _sqlx_migrations WHERE version = 99999999").await;
    assert_eq!(ready(&base).await.0, 200);
    // One this build has, missing: an older database.
    exec(
        &db,
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .await;
    let (code, body) = ready(&base).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        body["store"]["migrations"]["pending"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(get(&format!("{base}/nothing-here")).await.0, 404);
    let _ = stop.send(true);
}

on_both_harnesses!(readyz_follows_the_schema_and_the_platforms);

postgres_test! {
    /// A database that went away: not ready, and the answer names no host, user or database.
    async fn readyz_says_unreachable_without_details() {
        // Its bot sees its connections ended until the end.
        let _alone = ENDING_CONNECTIONS.lock().await;
        let url = fresh_postgres_url().await;
        let h = harness_on(Some(url.clone()), false).await;
        let platforms = PlatformStatus::default();
        platforms.set(Platform::Console, Connection::Connected { since: h.clock.now() });
        let (base, stop) = listen(&h, platforms).await;
        assert_eq!(ready(&base).await.0, 200, "the positive control");
        let (server, name) = url.rsplit_once('/').unwrap();
        exec(
            &format!("{server}/postgres"),
            &format!("DROP DATABASE {name} WITH (FORCE)"),
        )
        .await;
        let (code, body) = get(&format!("{base}/readyz")).await;
        assert_eq!(code, 503);
        assert!(body.contains("unreachable"), "{body}");
        let host = server.rsplit('@').next().unwrap();
        for secret in [name, host, "password", "postgres://"] {
            assert!(!body.contains(secret), "{secret} leaked: {body}");
        }
        let _ = stop.send(true);
    }
}

/// `engram run` on the console with `server.listen`: the listener answers while the chat runs,
/// its counters follow the conversation, and `engram status` reads the same database.
#[test]
fn engram_run_serves_health_and_metrics_on_the_console() {
    let dir = tempfile::tempdir().unwrap();
    // A free port, given back at once for engram to take.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("run")
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("USER", "alice")
        .env("ENGRAM__SERVER__LISTEN", &addr)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The console's greeting comes once the listener is up.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut greeting = String::new();
    out.read_line(&mut greeting).unwrap();
    assert!(
        greeting.contains("listening in a private chat"),
        "{greeting}"
    );
    let base = format!("http://{addr}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (code, body) = rt.block_on(get(&format!("{base}/readyz")));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"console\""), "{body}");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "remember that I love green tea").unwrap();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "engram ended before answering"
        );
        if line.contains("Got it") {
            break;
        }
    }
    let (_, page) = rt.block_on(get(&format!("{base}/metrics")));
    assert!(
        page.contains(r#"engram_messages_stored_total{platform="console",author="person"} 1"#),
        "{page}"
    );
    assert!(
        page.contains(r#"engram_replies_total{platform="console"} 1"#),
        "{page}"
    );
    // `engram status --ready` asks the running process.
    let (status, serr, ok) = engram(
        dir.path(),
        &["status", "--ready"],
        "",
        &[("ENGRAM__SERVER__LISTEN", addr.as_str())],
    );
    assert!(ok, "{status}{serr}");
    // And `engram status` reads the database and the running process.
    let (status, serr, ok) = engram(
        dir.path(),
        &["status"],
        "",
        &[("ENGRAM__SERVER__LISTEN", addr.as_str())],
    );
    assert!(ok, "{serr}");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["migrations_current"], true);
    assert_eq!(status["rows"]["messages"], 2, "{status}");
    assert_eq!(status["running_process"]["ready"], true, "{status}");
    // Every scheduled job is listed, closing episodes among them, and the leases (none here).
    for job in engram::jobs::SCHEDULED {
        assert!(status["jobs"][job]["done"].is_u64(), "{job}: {status}");
    }
    assert_eq!(status["jobs"]["episode"]["running"], 0, "{status}");
    assert_eq!(status["leases"], serde_json::json!([]), "{status}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Nobody listens any more: `status --ready` fails, `status` still reads the database.
    let (_, _, ok) = engram(
        dir.path(),
        &["status", "--ready"],
        "",
        &[("ENGRAM__SERVER__LISTEN", addr.as_str())],
    );
    assert!(!ok, "not ready when nothing answers");
    let (status, serr, ok) = engram(dir.path(), &["status"], "", &[]);
    assert!(ok, "{serr}");
    assert!(status.contains("not_answering"), "{status}");

    // A schema older than the build (its newest migration not applied) is reported as it is:
    // `engram status` never migrates a database that older processes may still use.
    let db = format!("sqlite://{}/data/engram.db", dir.path().display());
    rt.block_on(exec(
        &db,
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    ));
    for _ in 0..2 {
        let (status, serr, ok) = engram(dir.path(), &["status"], "", &[]);
        assert!(ok, "{serr}");
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        assert_eq!(status["migrations_current"], false, "{status}");
        assert_eq!(
            status["migrations"]["pending"].as_array().map(Vec::len),
            Some(1),
            "still pending the second time: {status}"
        );
    }
    // A database never migrated (an empty file): every migration of the build is pending,
    // and the file stays as it was.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let empty_url = format!("sqlite://{}", empty.display());
    let (status, serr, ok) = engram(
        dir.path(),
        &["status"],
        "",
        &[("ENGRAM__STORE__URL", empty_url.as_str())],
    );
    assert!(ok, "{serr}");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let build = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .count();
    assert_eq!(
        (
            status["migrations_current"].clone(),
            status["migrations"]["applied"].clone(),
            status["migrations"]["pending"].as_array().map(Vec::len)
        ),
        (serde_json::json!(false), serde_json::json!(0), Some(build)),
        "{status}"
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "not migrated");
    // A database that cannot be opened: the report says so, and the command fails.
    let (status, _, ok) = engram(
        dir.path(),
        &["status"],
        "",
        &[("ENGRAM__STORE__URL", "sqlite://nowhere/engram.db")],
    );
    assert!(!ok);
    assert!(status.contains("\"unreachable\""), "{status}");
}
