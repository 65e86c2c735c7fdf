//! Writers racing on one SQLite file: captures, forgets, the daily extraction and the
//! maintenance job's work at once, from several tasks of two bots (two pools, as two processes
//! have) and from two `engram chat` processes. No writer fails with "database is locked": every
//! "remember" is confirmed and lands, every forget is answered.

use crate::common::*;
use engram::llm::fake::FakeLlmServer;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

const PER_PERSON: usize = 8;

fn fact(who: &str, i: usize) -> String {
    format!("I keep beehive {who}x{i}")
}

/// `engram chat --as who` on the database at `url`, told `PER_PERSON` facts; its stdout.
async fn chat_process(dir: &std::path::Path, url: &str, who: &str) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.args(["chat", "--as", who])
        .current_dir(dir)
        .env("ENGRAM__STORE__URL", url)
        .env("ENGRAM__LOG__LEVEL", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| {
        k.starts_with("ENGRAM") && k != "ENGRAM__STORE__URL" || k.ends_with("_TOKEN")
    }) {
        cmd.env_remove(k);
    }
    let mut child = cmd.spawn().expect("engram starts");
    let script: String = (0..PER_PERSON)
        .map(|i| format!("remember that {}\n", fact(who, i)))
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(script.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_remember_lands_while_writers_race_on_one_sqlite_file() {
    let fake = FakeLlmServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    let bots = bots_on(&url, &fake, 2).await;
    let (a, b) = (&bots[0], &bots[1]);
    // Something to forget and something to extract, said before the race.
    for who in ["alice", "bob"] {
        for i in 0..4 {
            assert!(
                a.dm(who, &format!("remember that I like seed{i}"))
                    .await
                    .starts_with("Got it")
            );
            a.dm(who, &format!("I had tea number {i} today")).await;
        }
    }
    let day = a.clock.now().date_naive();

    let captures = async {
        let per_person = ["alice", "bob", "carol", "dave"].map(|who| {
            let h = if who < "c" { a } else { b };
            async move {
                for i in 0..PER_PERSON {
                    let reply = h.dm(who, &format!("remember that {}", fact(who, i))).await;
                    assert!(reply.starts_with("Got it"), "{who} {i}: {reply}");
                }
            }
        });
        futures::future::join_all(per_person).await;
    };
    let forgets = async {
        for i in 0..4 {
            for who in ["alice", "bob"] {
                let reply = b.dm(who, &format!("forget that I like seed{i}")).await;
                assert!(!reply.contains("went wrong"), "{who} forget {i}: {reply}");
            }
        }
    };
    let extraction = async {
        for round in 0..3 {
            let runs = a
                .extractor(&format!("x{round}"))
                .extract_all(day, false, |_, _| {})
                .await
                .unwrap();
            for run in runs {
                // A forget of theirs landing while the model answered keeps the answer out:
                // the run is tried again below.
                assert!(
                    run.error.is_none()
                        || run.error.as_deref()
                            == Some("something was forgotten while the model answered"),
                    "extraction: {run:?}"
                );
            }
        }
    };
    let maintenance = async {
        for _ in 0..5 {
            let now = b.clock.now();
            b.store.prune_memory(now, day).await.unwrap();
            b.store.maintain().await.unwrap();
        }
    };
    let processes = async {
        tokio::join!(
            chat_process(dir.path(), &url, "erin"),
            chat_process(dir.path(), &url, "frank")
        )
    };
    let ((), (), (), (), (erin, frank)) =
        tokio::join!(captures, forgets, extraction, maintenance, processes);

    for (who, out) in [("erin", &erin), ("frank", &frank)] {
        assert!(!out.contains("went wrong"), "{who}: {out}");
        assert_eq!(out.matches("Got it").count(), PER_PERSON, "{who}: {out}");
    }
    // Every fact told, by every writer, is there.
    for who in ["alice", "bob", "carol", "dave", "erin", "frank"] {
        let kept = entry_values(a, a.person(who).await).await;
        for i in 0..PER_PERSON {
            let want = fact(who, i);
            assert!(
                kept.iter().any(|v| v.contains(&want)),
                "{want} lost: {kept:?}"
            );
        }
    }
    // And the forgets took.
    for who in ["alice", "bob"] {
        let kept = entry_values(a, a.person(who).await).await;
        assert!(kept.iter().all(|v| !v.contains("seed")), "{who}: {kept:?}");
    }
    // The day's extraction ends done for everyone once nothing races it.
    let runs = a
        .extractor("after")
        .extract_all(day, false, |_, _| {})
        .await
        .unwrap();
    assert!(runs.iter().all(|r| r.error.is_none()), "{runs:?}");
}
