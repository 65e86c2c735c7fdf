//! The `engram` binary as a new user runs it: console chat on the embedded SQLite default with
//! no configuration, a script with several people, and clear start-up errors.

use crate::common::engram;

#[test]
fn run_opens_a_console_chat_that_remembers_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = engram(
        dir.path(),
        &["run"],
        "remember that I love Rust\n",
        &[("USER", "alice")],
    );
    assert!(ok, "{err}");
    assert!(out.contains("Got it, I'll remember that"), "{out}");
    assert!(
        dir.path().join("data/engram.db").exists(),
        "the default database is data/engram.db"
    );
    let (out, err, ok) = engram(
        dir.path(),
        &["run"],
        "what do you know about me\n",
        &[("USER", "alice")],
    );
    assert!(ok, "{err}");
    assert!(out.contains("I love Rust"), "{out}");
}

#[test]
fn a_script_plays_several_people_in_one_space() {
    let dir = tempfile::tempdir().unwrap();
    let script = "\
# chatter, then commands
[2026-11-20 10:00] alice: morning all, deploying the new release today
[2026-11-20 10:01] bob: good luck, I'm off climbing
[2026-11-20 10:02] alice: Engram, remember that I love Rust
[2026-11-20 10:03] bob: Engram, what do you know about @alice?
bob: Engram, forget that alice loves Rust
this line is malformed
";
    let (out, err, ok) = engram(
        dir.path(),
        &["chat", "--space", "lab", "--script", "-"],
        script,
        &[],
    );
    assert!(ok, "{err}");
    let replies: Vec<&str> = out.lines().filter(|l| l.starts_with("Engram: ")).collect();
    assert_eq!(replies.len(), 3, "chatter gets no reply: {out}");
    assert!(replies[0].contains("Got it"), "{out}");
    // bob's recall, not the echo of alice's line: the answer up to the next line of the script.
    let recall = out.split("Engram: ").nth(2).unwrap();
    let recall = recall.split("\nbob:").next().unwrap();
    assert!(
        recall.contains("about alice") && recall.contains("I love Rust"),
        "{recall}"
    );
    assert!(
        out.contains("Only alice"),
        "bob cannot make the bot forget alice's facts: {out}"
    );
    assert!(out.contains("line 7 skipped"), "{out}");
}

#[test]
fn bad_configuration_is_reported_clearly_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err, ok) = engram(
        dir.path(),
        &["chat"],
        "",
        &[("ENGRAM__MEMORY__CONTEXT_BUDGET_TOKENS", "lots")],
    );
    assert!(!ok);
    assert!(
        err.to_lowercase().contains("context_budget_tokens"),
        "{err}"
    );
    let (_, err, ok) = engram(
        dir.path(),
        &["chat"],
        "",
        &[("ENGRAM__STORE__URL", "mysql://root:hunter2@db/x")],
    );
    assert!(!ok);
    assert!(
        err.contains("store.url") && !err.contains("hunter2"),
        "{err}"
    );
    let (_, err, ok) = engram(dir.path(), &["chat", "--config", "nope.toml"], "", &[]);
    assert!(!ok && err.contains("does not exist"), "{err}");
    std::fs::write(
        dir.path().join("leak.toml"),
        "[llm]\napi_key = \"sk-123456\"\n",
    )
    .unwrap();
    let (_, err, ok) = engram(dir.path(), &["chat", "--config", "leak.toml"], "", &[]);
    assert!(
        !ok && err.contains("environment") && !err.contains("sk-123456"),
        "{err}"
    );
}

#[test]
fn secrets_never_reach_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err, ok) = engram(
        dir.path(),
        &["chat"],
        "remember that I love Rust\nhello\n",
        &[
            ("ENGRAM_LLM_API_KEY", "sk-secret-value-123"),
            ("ENGRAM__LLM__BASE_URL", "http://127.0.0.1:9/v1"),
            ("ENGRAM__LLM__TIMEOUT_SECS", "0.2"),
            ("ENGRAM__LLM__MAX_RETRIES", "0"),
            ("RUST_LOG", "trace"),
        ],
    );
    assert!(ok, "{err}");
    assert!(err.contains("LLM"), "logs were written: {err}");
    assert!(
        !err.contains("sk-secret-value-123"),
        "the key leaked into the logs"
    );
}

#[test]
fn bench_context_prints_json() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = engram(
        dir.path(),
        &[
            "bench",
            "context",
            "--people",
            "6",
            "--days",
            "3",
            "--messages",
            "300",
            "--warm-rounds",
            "2",
        ],
        "",
        &[],
    );
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(report["people"], 6);
    assert_eq!(report["messages"], 300);
    assert!(report["warm"]["p99_us"].as_f64().unwrap() > 0.0);
    assert!(
        report["llm_calls"].as_u64().unwrap() >= 3,
        "summaries and merges went to the fake LLM"
    );
    assert_eq!(report["warm_cache_hit_ratio"], 1.0);
    assert!(
        report["max_day_summary_calls_per_space_hour"]
            .as_u64()
            .unwrap()
            <= 1
    );
    // Episodes with working memory: one model call per refresh, none when nothing changed,
    // and the closed ones finished by the model.
    let e = &report["episodes"];
    let refreshed = e["refreshed"].as_u64().unwrap();
    assert!(refreshed > 0, "{e}");
    let messages = report["messages"].as_f64().unwrap();
    let per_1000 = |field: &str| e[field].as_f64().unwrap() * messages / 1000.0;
    assert_eq!(
        per_1000("working_memory_llm_calls_per_1000_messages").round() as u64,
        refreshed,
        "{e}"
    );
    assert_eq!(e["working_memory_llm_calls_unchanged"], 0, "{e}");
    assert!(
        e["working_memory_ms_per_refresh"].as_f64().unwrap() > 0.0,
        "{e}"
    );
    let closed = e["closed"].as_u64().unwrap();
    assert!(closed > 0, "{e}");
    assert!(
        per_1000("episode_summary_llm_calls_per_1000_messages") >= 1.0,
        "{e}"
    );
}

/// The data files the README's figures come from load and still score: language detection
/// on short chat lines (87% measured, the floor leaves room for a crate update's noise) and
/// retrieval on the multilingual dev set without vectors (turn R@10 0.88 measured).
#[test]
fn the_shipped_dev_sets_load_and_score() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let lines = repo.join("tests/data/language_lines.tsv");
    let (out, err, ok) = engram(
        dir.path(),
        &["bench", "language", "--data", lines.to_str().unwrap()],
        "",
        &[],
    );
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(report["lines"], 320, "{report}");
    assert!(report["accuracy"].as_f64().unwrap() >= 0.8, "{report}");
    for language in ["en", "ru", "de", "es", "fr", "pt"] {
        let score = &report["per_language"][language];
        assert!(
            score["accuracy"].as_f64().unwrap() >= 0.6,
            "{language}: {report}"
        );
    }

    let data = repo.join("tests/data/multilingual_dev.jsonl");
    let (out, err, ok) = engram(
        dir.path(),
        &[
            "bench",
            "retrieval",
            "--data",
            data.to_str().unwrap(),
            "--embedder",
            "none",
        ],
        "",
        &[],
    );
    assert!(ok, "{err}");
    let reports: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    let r = &reports[0];
    assert_eq!(r["records"], 7, "{r}");
    assert_eq!(r["questions"], 76, "{r}");
    assert!(
        r["turn"]["overall"]["r_at_10"].as_f64().unwrap() >= 0.8,
        "{}",
        r["turn"]["overall"]
    );
}

postgres_test! {
async fn migrate_copies_sqlite_to_postgres_and_the_bot_remembers_there() {
    let pg = crate::common::fresh_postgres_url().await;
    let dir = tempfile::tempdir().unwrap();
    let script = "\
[2026-11-20 10:00] alice: deploying the new release today
[2026-11-20 10:02] alice: Engram, remember that I love Rust
[2026-11-20 10:03] bob: Engram, remember this about @alice: she plays chess
";
    let (_, err, ok) = engram(
        dir.path(),
        &["chat", "--space", "lab", "--script", "-"],
        script,
        &[],
    );
    assert!(ok, "{err}");
    let sqlite = format!("sqlite://{}", dir.path().join("data/engram.db").display());
    for run in 0..2 {
        let (out, err, ok) = engram(
            dir.path(),
            &["migrate", "--from", &sqlite, "--to", &pg],
            "",
            &[],
        );
        assert!(ok, "run {run}: {out}\n{err}");
        let rows: Vec<&str> = out.lines().filter(|l| l.ends_with(" ok")).collect();
        assert_eq!(
            rows.len(),
            engram::store::Table::ALL.len(),
            "every table matches: {out}"
        );
        assert!(
            out.lines()
                .any(|l| l.starts_with("messages") && l.contains(" 5 ")),
            "3 messages and 2 replies: {out}"
        );
        assert!(
            out.contains(if run == 0 {
                "rows added"
            } else {
                "0 rows added"
            }),
            "{out}"
        );
    }
    let (out, err, ok) = engram(
        dir.path(),
        &["chat", "--space", "lab", "--script", "-"],
        "alice: Engram, what do you know about me\n",
        &[("ENGRAM__STORE__URL", &pg)],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("I love Rust") && out.contains("plays chess"),
        "{out}"
    );
    // Bad input: a missing source, a wrong URL, a server that is not there.
    let (_, err, ok) = engram(
        dir.path(),
        &["migrate", "--from", "sqlite://nope.db", "--to", &pg],
        "",
        &[],
    );
    assert!(!ok && err.contains("no database at nope.db"), "{err}");
    let (_, err, ok) = engram(
        dir.path(),
        &[
            "migrate",
            "--from",
            &sqlite,
            "--to",
            "postgres://u:pw@127.0.0.1:1/x",
        ],
        "",
        &[],
    );
    assert!(
        !ok && err.contains("opening the target") && !err.contains(":pw@"),
        "{err}"
    );
}
}

#[test]
fn extract_search_export_and_import_from_the_command_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt
        .block_on(engram::llm::fake::FakeLlmServer::start())
        .unwrap();
    let url = fake.base_url();
    let env = [("USER", "alice"), ("ENGRAM__LLM__BASE_URL", url.as_str())];
    let dir = tempfile::tempdir().unwrap();
    // Said at a set time (a script sets the bot's clock), not the wall clock: the day whose
    // window (ending at 23:00 UTC) holds the messages is known whenever the test runs.
    let (out, err, ok) = engram(
        dir.path(),
        &["chat", "--as", "alice", "--script", "-"],
        "[2026-11-20 10:00] alice: I work at the payments team\n[2026-11-20 10:01] alice: remember that my timezone is CET\n",
        &env,
    );
    assert!(ok && out.contains("Got it"), "{out}\n{err}");
    let day = "2026-11-20".to_string();
    let (out, err, ok) = engram(dir.path(), &["extract", "--all", "--day", &day], "", &env);
    assert!(ok, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(runs[0]["status"], "done", "{out}");
    assert!(runs[0]["written"].as_u64().unwrap() >= 1, "{out}");
    assert!(err.contains("1/1 people"), "a progress bar: {err}");
    let (out, _, ok) = engram(dir.path(), &["extract", "--all", "--day", &day], "", &env);
    assert!(
        ok && out.contains("already_done") && !out.contains("\"done\""),
        "{out}"
    );

    let (out, err, ok) = engram(
        dir.path(),
        &["search", "--user", "alice", "--query", "payments"],
        "",
        &env,
    );
    assert!(ok && out.contains("payments team"), "{out}\n{err}");

    let (_, err, ok) = engram(dir.path(), &["export", "--out", "exp"], "", &env);
    assert!(ok, "{err}");
    let (_, err, ok) = engram(dir.path(), &["import", "--dir", "exp"], "", &env);
    assert!(ok, "{err}");
    let (_, err, ok) = engram(dir.path(), &["export", "--out", "exp2"], "", &env);
    assert!(ok, "{err}");
    let files = |root: &str| {
        let mut out = Vec::new();
        for person in std::fs::read_dir(dir.path().join(root)).unwrap() {
            let person = person.unwrap().path();
            out.push(std::fs::read(person.join("MEMORY.md")).unwrap());
            for note in std::fs::read_dir(person.join("memory")).unwrap() {
                out.push(std::fs::read(note.unwrap().path()).unwrap());
            }
        }
        out
    };
    let first = files("exp");
    assert!(String::from_utf8_lossy(&first[0]).contains("## Key Facts\n- my timezone is CET"));
    assert_eq!(first, files("exp2"));
}

/// A group record (speakers are names): every speaker is a person in one public channel, so
/// a question naming one of them finds their words among many like them from the other.
#[test]
fn bench_retrieval_reads_group_chats_as_people() {
    let dir = tempfile::tempdir().unwrap();
    let mut turns = vec![serde_json::json!({
        "turn_id": "t-john", "speaker": "John",
        "text": "I started a new job at the bakery on the corner"
    })];
    for i in 0..15 {
        turns.push(serde_json::json!({
            "turn_id": format!("t-maria-{i}"), "speaker": "Maria",
            "text": format!("my job is fine, day {i} at the job was long")
        }));
    }
    let group = serde_json::json!({
        "conversation_id": "g1", "dataset": "test", "speakers": ["John", "Maria"],
        "sessions": [{"session_id": "s1", "date": "2023/05/20 (Sat) 02:21", "turns": turns}],
        "questions": [{"question_id": "q1", "question": "What did John say about his job?",
            "answer": "bakery", "category": "single_hop",
            "question_date": "2023/05/21 (Sun) 10:00",
            "evidence_turn_ids": ["t-john"], "evidence_session_ids": ["s1"]}]
    });
    let one_to_one = serde_json::json!({
        "conversation_id": "u1", "dataset": "test",
        "sessions": [{"session_id": "s1", "date": "2023/05/20 (Sat) 02:21", "turns": [
            {"turn_id": "u:1", "speaker": "user", "text": "I adopted a greyhound called Pip"},
            {"turn_id": "u:2", "speaker": "assistant", "text": "Congratulations on the adoption!"}
        ]}],
        "questions": [{"question_id": "q2", "question": "What is my dog called?",
            "answer": "Pip", "category": "single-session-user",
            "question_date": "2023/05/21 (Sun) 10:00",
            "evidence_turn_ids": ["u:1"], "evidence_session_ids": ["s1"]}]
    });
    let write = |name: &str, record: &serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{record}\n")).unwrap();
        path.display().to_string()
    };
    let (g, u) = (
        write("group.jsonl", &group),
        write("user.jsonl", &one_to_one),
    );
    let (out, err, ok) = engram(
        dir.path(),
        &[
            "bench",
            "retrieval",
            "--data",
            &g,
            "--data",
            &u,
            "--embedder",
            "none",
        ],
        "",
        &[],
    );
    assert!(ok, "{err}");
    let reports: Vec<serde_json::Value> = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(reports.len(), 2, "one report per file");
    assert_eq!(reports[0]["turns"], 16, "both speakers' turns are stored");
    let q = &reports[0]["per_question"][0];
    assert_eq!(q["turn_r_at_10"], 1.0, "John's words among Maria's: {q}");
    assert_eq!(
        q["evidence_session_ranks"],
        serde_json::json!([1]),
        "each evidence session's place among the sessions: {q}"
    );
    assert_eq!(reports[1]["turns"], 2);
    assert_eq!(reports[1]["per_question"][0]["turn_r_at_10"], 1.0);
    assert!(
        err.contains("| data | embedder |"),
        "the side-by-side table: {err}"
    );
}

/// `engram` as it runs after start-up (the console chat, its banner read), with `env`: its
/// environment, and its name as `ps` shows it. Then its chat still answers, and it ends with
/// its input.
#[cfg(target_os = "linux")]
fn started(env: &[(&str, &str)]) -> (Vec<String>, String) {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("run")
        .current_dir(dir.path())
        .env_remove("GLIBC_TUNABLES")
        .env("USER", "alice")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENGRAM") || k.ends_with("_TOKEN"))
    {
        cmd.env_remove(k);
    }
    cmd.env("ENGRAM__EMBED__PROVIDER", "none");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("engram starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    out.read_line(&mut banner).unwrap();
    assert!(banner.contains("Engram is listening"), "{banner}");
    // The process the test started, in its second start if it had one (same id).
    let proc = format!("/proc/{}", child.id());
    let environ: Vec<String> = std::fs::read(format!("{proc}/environ"))
        .unwrap()
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    let name = std::fs::read_to_string(format!("{proc}/comm")).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"remember that I love Rust\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(rest.contains("Got it, I'll remember that"), "{rest}");
    (environ, name.trim().to_string())
}

/// The second start itself (glibc then asks the kernel for huge pages: an `hg` among the
/// process's mappings' VmFlags once malloc grew by 2 MiB, which a short test cannot wait for
/// without a timer; the benchmarks show what it brings).
#[cfg(target_os = "linux")]
#[test]
fn memory_is_on_huge_pages_where_the_kernel_gives_them_on_request() {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !thp.contains("[madvise]") {
        // Given to every process, or to none: there is nothing to start again for.
        eprintln!("skipped: transparent huge pages are not given on request here ({thp})");
        return;
    }
    let tunable = |environ: &[String]| {
        environ
            .iter()
            .any(|v| v.starts_with("GLIBC_TUNABLES=") && v.contains("glibc.malloc.hugetlb=1"))
    };
    let second_start =
        |environ: &[String]| environ.iter().any(|v| v == "ENGRAM_HUGE_PAGES=started");
    let (environ, name) = started(&[]);
    assert!(tunable(&environ), "{environ:?}");
    assert!(second_start(&environ), "{environ:?}");
    assert_eq!(name, "engram", "called by its own name");
    // The operator's choice: as the system gives it.
    let (environ, name) = started(&[("ENGRAM_HUGE_PAGES", "0")]);
    assert!(!tunable(&environ), "{environ:?}");
    assert!(!second_start(&environ), "{environ:?}");
    assert_eq!(name, "engram");
    // Another tunable set: the setting is added (glibc shows only the first tunable in the
    // variable as it reads it; the second takes effect all the same).
    let (environ, _) = started(&[("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072")]);
    assert!(second_start(&environ), "{environ:?}");
    assert!(
        environ
            .iter()
            .any(|v| v.starts_with("GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072")),
        "{environ:?}"
    );
}
