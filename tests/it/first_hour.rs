//! A new user's first hour (issue 14): bad settings refused naming their own key, typos in
//! database URLs refused, read-only commands that never create a database, answers that only
//! show memory kept out of it, secrets refused, plain answers in groups, edited prompts, and
//! the `global` scope only by the person's choice.

use crate::common::{engram, fresh_postgres_url};

/// Runs `engram run` with one setting from the environment; (stderr, success).
fn start_with(dir: &std::path::Path, var: &str, value: &str) -> (String, bool) {
    let (_, err, ok) = engram(dir, &["run"], "", &[(var, value), ("USER", "alice")]);
    (err, ok)
}

#[test]
fn every_bad_setting_is_refused_under_its_own_key() {
    let dir = tempfile::tempdir().unwrap();
    // (variable, value, the key the error must name, words of what is allowed)
    let cases = [
        (
            "ENGRAM__MEMORY__MEMORY_MD_MAX_WORDS",
            "12",
            "memory.memory_md_max_words",
            "between 50",
        ),
        (
            "ENGRAM__MEMORY__DAILY_NOTES_DAYS",
            "0",
            "memory.daily_notes_days",
            "between 1",
        ),
        (
            "ENGRAM__MEMORY__DURABLE_CONFIDENCE",
            "1.5",
            "memory.durable_confidence",
            "between 0 and 1",
        ),
        (
            "ENGRAM__TELEGRAM__POLL_SECS",
            "30",
            "telegram.poll_secs",
            "between 1 and 15",
        ),
        (
            "ENGRAM__LOG__LEVEL",
            "loud",
            "log.level",
            "trace, debug, info",
        ),
        (
            "ENGRAM__LOG__LEVEL",
            "engram=loud",
            "log.level",
            "trace, debug, info",
        ),
        (
            "ENGRAM__LLM__BASE_URL",
            "http://",
            "llm.base_url",
            "http:// or https://",
        ),
        (
            "ENGRAM__LLM__BASE_URL",
            "localhost:11434/v1",
            "llm.base_url",
            "http:// or https://",
        ),
        (
            "ENGRAM__DISCORD__API_URL",
            "ftp://x",
            "discord.api_url",
            "http:// or https://",
        ),
        (
            "ENGRAM__TELEGRAM__API_URL",
            "",
            "telegram.api_url",
            "http:// or https://",
        ),
        (
            "ENGRAM__JOBS__LEASE_SECS",
            "1",
            "jobs.lease_secs",
            "between 10",
        ),
        (
            "ENGRAM__EMBED__PROVIDER",
            "magic",
            "embed.provider",
            "\"local\"",
        ),
        ("ENGRAM__LOG__FORMAT", "xml", "log.format", "\"json\""),
        (
            "ENGRAM__MEMORY__CONTEXT_BUDGET_TOKENS",
            "many",
            "memory.context_budget_tokens",
            "usize",
        ),
        (
            "ENGRAM__MEMORY__NO_SUCH_KEY",
            "1",
            "memory.no_such_key",
            "not a setting",
        ),
    ];
    let every_key: Vec<&str> = cases.iter().map(|c| c.2).collect();
    for (var, value, key, allowed) in cases {
        let (err, ok) = start_with(dir.path(), var, value);
        assert!(!ok, "{var}={value} was accepted");
        assert!(
            err.contains(key) && err.contains(allowed),
            "{var}={value}: {err}"
        );
        // Only its own key: no other key of the table is blamed.
        for other in every_key.iter().filter(|k| **k != key) {
            assert!(!err.contains(other), "{var}={value} blamed {other}: {err}");
        }
        assert!(
            !err.contains(&format!("default.{key}")),
            "figment's profile leaked: {err}"
        );
        assert!(
            !dir.path().join("data").exists(),
            "a refused start created a database"
        );
    }
    // Positive controls: good values of the same keys start (and answer).
    for (var, value) in [
        ("ENGRAM__LOG__LEVEL", "engram=debug,sqlx=warn"),
        ("ENGRAM__LLM__BASE_URL", ""),
        ("ENGRAM__DISCORD__API_URL", "http://127.0.0.1:9/api"),
        ("ENGRAM__MEMORY__MEMORY_MD_MAX_WORDS", "50"),
    ] {
        let (err, ok) = start_with(dir.path(), var, value);
        assert!(ok, "{var}={value} was refused: {err}");
    }
}

#[test]
fn a_bad_config_file_names_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("local.toml"), "[llm]\nmodle = \"llama3\"\n").unwrap();
    let (_, err, ok) = engram(dir.path(), &["--config", "local.toml", "run"], "", &[]);
    assert!(!ok);
    assert!(
        err.contains("llm.modle") && err.contains("local.toml") && !err.contains("default.llm"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("local.toml"),
        "[memory]\nhistory_days = 99\n",
    )
    .unwrap();
    let (_, err, ok) = engram(dir.path(), &["--config", "local.toml", "run"], "", &[]);
    assert!(!ok && err.contains("memory.history_days"), "{err}");
}

#[test]
fn a_typo_in_a_database_url_is_an_error_not_a_new_database() {
    let dir = tempfile::tempdir().unwrap();
    // A source worth copying.
    let (_, err, ok) = engram(
        dir.path(),
        &["chat", "--as", "alice"],
        "remember that I love Rust\n",
        &[],
    );
    assert!(ok, "{err}");
    let before: Vec<_> = walk(dir.path());
    for to in [
        "postgress://engram@127.0.0.1/engram",
        "mysql://x",
        "data/copy.db",
        "sqlite://",
    ] {
        let (out, err, ok) = engram(
            dir.path(),
            &["migrate", "--from", "sqlite://data/engram.db", "--to", to],
            "",
            &[],
        );
        assert!(!ok, "--to {to} succeeded: {out}");
        assert!(
            err.contains("--to") && !out.contains("rows added"),
            "{to}: {err}"
        );
        assert_eq!(walk(dir.path()), before, "--to {to} wrote a file");
    }
    // The URL in the settings: refused at start, naming the key.
    for url in ["sqlite://", "sqlite:", "postgress://u@h/db"] {
        let (err, ok) = start_with(dir.path(), "ENGRAM__STORE__URL", url);
        assert!(!ok && err.contains("store.url"), "{url}: {err}");
        assert!(!err.contains("no such table"), "{err}");
    }
    // Positive control: a correct target URL copies.
    let (out, err, ok) = engram(
        dir.path(),
        &[
            "migrate",
            "--from",
            "sqlite://data/engram.db",
            "--to",
            "sqlite://data/copy.db",
        ],
        "",
        &[],
    );
    assert!(ok && out.contains("rows added"), "{out}{err}");
}

#[test]
fn commands_that_only_read_never_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["export", "--out", "out"][..],
        &["search", "--user", "alice", "--query", "rust"],
        &["import", "--dir", "out"],
        &[
            "migrate",
            "--from",
            "sqlite://data/engram.db",
            "--to",
            "sqlite://copy.db",
        ],
    ] {
        let (_, err, ok) = engram(dir.path(), args, "", &[]);
        assert!(!ok, "{args:?} succeeded in an empty directory");
        assert!(
            err.contains("no database at data/engram.db"),
            "{args:?}: {err}"
        );
        assert_eq!(
            walk(dir.path()),
            Vec::<String>::new(),
            "{args:?} wrote files"
        );
    }
    // Positive control: where the bot ran, export works.
    let (_, err, ok) = engram(
        dir.path(),
        &["chat", "--as", "alice"],
        "remember that I love Rust\n",
        &[],
    );
    assert!(ok, "{err}");
    let (out, err, ok) = engram(dir.path(), &["export", "--out", "out"], "", &[]);
    assert!(ok && out.contains("1 people exported"), "{out}{err}");
}

/// Every file under `dir`, relative, sorted.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                found.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// The "N" of "(N tokens of 1500)" in an offline answer.
fn tokens_shown(reply: &str) -> usize {
    let at = reply
        .find(" tokens of ")
        .expect("the offline answer counts tokens");
    let digits: String = reply[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().unwrap()
}

#[tokio::test]
async fn answers_that_only_show_memory_are_not_memory() {
    let h = crate::common::Harness::offline().await;
    let reply = h.dm("alice", "remember that I love Rust").await;
    assert!(reply.contains("Got it"), "{reply}");
    let mut tokens = Vec::new();
    let mut last = String::new();
    for _ in 0..5 {
        h.clock.advance(chrono::Duration::minutes(1));
        last = h.dm("alice", "how are you").await;
        tokens.push(tokens_shown(&last));
    }
    // Each dump is not fed to the next: every question adds the same (itself and the short
    // note standing for the dump), where dumps fed back would grow with every turn.
    assert_eq!(last.matches("Here is the memory").count(), 1, "{last}");
    let steps: Vec<usize> = tokens.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        steps.iter().all(|s| s.abs_diff(steps[0]) <= 3),
        "the context grows faster every turn: {tokens:?}"
    );
    // The other answers that only show memory: a recall, /memory, its search and export.
    for ask in [
        "what do you know about me",
        "/memory",
        "/memory search rust",
        "/memory export",
    ] {
        let reply = h.dm("alice", ask).await;
        assert!(reply.contains("love Rust"), "{ask}: {reply}");
    }
    let db = crate::common::database_text(&h).await;
    for shown in [
        "Here is the memory",
        "Here's what I know",
        "User Preferences",
        "1. I love Rust",
    ] {
        assert!(!db.contains(shown), "{shown:?} was kept: {db}");
    }
    // Positive controls: the questions and the conversational answers are kept.
    assert!(db.contains("how are you") && db.contains("Got it, I'll remember that"));
    // Search finds the fact once (alice's own message), never a dump of it.
    let place = h
        .place(&crate::common::ConsoleOptions::private("alice"), "alice")
        .await;
    let found = crate::common::search_texts(&h, &place, h.person("alice").await, "love Rust").await;
    assert!(
        found.contains(&"remember that I love Rust".to_string()),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .all(|t| !t.contains("I love Rust") || t.starts_with("remember")),
        "a dump was found: {found:?}"
    );
}

#[tokio::test]
async fn secrets_are_refused_and_never_stored() {
    let h = crate::common::Harness::offline().await;
    for (said, secret, kind) in [
        (
            "remember that my password is hunter2",
            "hunter2",
            "password",
        ),
        ("please remember my PIN: 4921", "4921", "password or PIN"),
        (
            "remember that my PIN code is 9137",
            "9137",
            "password or PIN",
        ),
        ("remember that the door code is 5826", "5826", "API key"),
        (
            "note that my card is 4111 1111 1111 1111",
            "4111 1111 1111 1111",
            "card number",
        ),
        (
            "remember that my openai key is sk-proj-AbCdEfGhIjKlMnOpQrStUv12",
            "AbCdEfGhIjKlMnOpQrStUv12",
            "API key",
        ),
    ] {
        let reply = h.dm("alice", said).await;
        assert!(
            reply.contains(kind) && reply.contains("didn't save"),
            "{said}: {reply}"
        );
        assert!(
            !reply.contains(secret),
            "the reply repeats the secret: {reply}"
        );
        let rows = crate::common::rows_holding(&h, secret).await;
        assert!(rows.is_empty(), "{said}: kept in {rows:?}");
    }
    // About someone else: refused the same way.
    h.dm("bob", "hi").await;
    let reply = h
        .say_in(
            &crate::common::group("lab"),
            "alice",
            "Engram, remember this about @bob: his pin is 7731",
        )
        .await
        .unwrap();
    assert!(reply.contains("PIN"), "{reply}");
    let kept = crate::common::rows_holding(&h, "7731").await;
    assert!(kept.is_empty(), "{kept:?}");
    // Positive controls: ordinary facts that mention such words are kept.
    for said in [
        "remember that I need to change my password on Friday",
        "remember that my dog is called Rex",
    ] {
        let reply = h.dm("alice", said).await;
        assert!(reply.contains("Got it"), "{said}: {reply}");
    }
    assert!(!crate::common::rows_holding(&h, "Rex").await.is_empty());
    assert!(
        !crate::common::rows_holding(&h, "change my password")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_new_value_updates_the_entry_and_keeps_the_old_one_in_its_history() {
    let h = crate::common::Harness::offline().await;
    h.dm("alice", "remember that my timezone is UTC+1").await;
    h.clock.advance(chrono::Duration::hours(1));
    let reply = h.dm("alice", "remember that my timezone is UTC+2").await;
    assert!(reply.contains("Got it"), "{reply}");
    let md = h.dm("alice", "/memory").await;
    assert!(md.contains("UTC+2") && !md.contains("UTC+1"), "{md}");
    let alice = h.person("alice").await;
    let entries = h.store.entries(alice, None).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let history = h.store.entry_history(alice).await.unwrap();
    assert!(
        history.iter().any(|v| v.value.contains("UTC+1")),
        "{history:?}"
    );
    // Different attributes stay different entries (positive control).
    h.dm("alice", "remember that my favourite colour is green")
        .await;
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 2);
    // Natural variants are captured, not chatted about.
    for said in [
        "please remember that I like tea",
        "can you remember that I play chess?",
        "don't forget that I'm allergic to nuts",
    ] {
        let reply = h.dm("alice", said).await;
        assert!(reply.contains("Got it"), "{said}: {reply}");
    }
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 5);
}

#[tokio::test]
async fn a_plain_yes_in_a_group_answers_the_question_asked_there_for_a_short_time() {
    let h = crate::common::Harness::offline().await;
    let lab = crate::common::group("lab");
    h.say_in(&lab, "alice", "Engram, remember that I love Rust")
        .await;
    h.say_in(&lab, "alice", "Engram, remember that I love tea")
        .await;
    let alice = h.person("alice").await;
    let count = || async { h.store.entries(alice, None).await.unwrap().len() };
    assert_eq!(count().await, 2);

    let asked = h
        .say_in(&lab, "alice", "Engram, /memory forget rust")
        .await
        .unwrap();
    assert!(asked.contains("Reply \"yes\""), "{asked}");
    // Someone else's plain "yes" is chatter and changes nothing.
    assert_eq!(h.say_in(&lab, "bob", "yes").await, None);
    assert_eq!(count().await, 2);
    // Hers, in another channel, is chatter too.
    let other = crate::common::ConsoleOptions {
        channel: "random".into(),
        ..crate::common::group("lab")
    };
    assert_eq!(h.say_in(&other, "alice", "yes").await, None);
    // Hers, here: the answer.
    h.clock.advance(chrono::Duration::seconds(30));
    let done = h.say_in(&lab, "alice", "yes").await.expect("answered");
    assert!(done.contains("forgotten 1"), "{done}");
    assert_eq!(count().await, 1);
    // Answered once: another "yes" is chatter again.
    assert_eq!(h.say_in(&lab, "alice", "yes").await, None);

    // "no" works the same, and so does waiting too long (then "yes" is just chatter).
    h.say_in(&lab, "alice", "Engram, /memory forget tea")
        .await
        .unwrap();
    let kept = h.say_in(&lab, "alice", "no").await.expect("answered");
    assert!(kept.contains("nothing was changed"), "{kept}");
    h.say_in(&lab, "alice", "Engram, /memory forget tea")
        .await
        .unwrap();
    h.clock.advance(chrono::Duration::minutes(3));
    assert_eq!(h.say_in(&lab, "alice", "yes").await, None);
    assert_eq!(count().await, 1);
    // Chatting in between ends the plain-answer window: her "yes" then answers someone else.
    h.say_in(&lab, "alice", "Engram, /memory forget tea")
        .await
        .unwrap();
    h.say_in(&lab, "alice", "bob, coming tonight?").await;
    assert_eq!(h.say_in(&lab, "alice", "yes").await, None);
    // And "ok yes" or "yes!!" said to others are not the bare answer.
    assert_eq!(h.say_in(&lab, "alice", "ok yes").await, None);
    assert_eq!(count().await, 1);
    // A question lapses after 10 minutes by the bot's clock, named or not.
    h.say_in(&lab, "alice", "Engram, /memory forget tea")
        .await
        .unwrap();
    h.clock.advance(chrono::Duration::minutes(11));
    let lapsed = h.say_in(&lab, "alice", "Engram, yes").await.unwrap();
    assert!(lapsed.contains("lapsed"), "{lapsed}");
    assert_eq!(count().await, 1);
    h.say_in(&lab, "alice", "Engram, /memory forget tea")
        .await
        .unwrap();
    // With the name it still works after the short window (the question lasts longer).
    let done = h.say_in(&lab, "alice", "Engram, yes").await.unwrap();
    assert!(done.contains("forgotten 1"), "{done}");
    assert_eq!(count().await, 0);
}

#[test]
fn interactive_console_in_a_space_answers_only_what_addresses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = engram(
        dir.path(),
        &["chat", "--as", "alice", "--space", "lab"],
        "morning all, deploying today\nEngram, remember that I love Rust\nEngram, /memory forget rust\nyes\n",
        &[],
    );
    assert!(ok, "{err}");
    assert!(out.contains("only lines that address me"), "{out}");
    assert_eq!(out.matches("Engram: ").count(), 3, "{out}");
    assert!(
        out.contains("Got it") && out.contains("forgotten 1"),
        "{out}"
    );
    // In a private chat every line is answered (positive control).
    let (out, _, _) = engram(
        dir.path(),
        &["chat", "--as", "alice"],
        "hello\nhi again\n",
        &[],
    );
    assert_eq!(out.matches("Engram: ").count(), 2, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_prompts_are_used_checked_and_announced() {
    use engram::llm::fake::FakeLlmServer;
    let fake = FakeLlmServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = fake.base_url();
    let env = [("ENGRAM__LLM__BASE_URL", url.as_str())];
    let chat = |dir: std::path::PathBuf| {
        let env = env.map(|(k, v)| (k, v.to_string()));
        std::thread::spawn(move || {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            engram(&dir, &["chat", "--as", "alice"], "hello there\n", &env)
        })
        .join()
        .unwrap()
    };
    let replies = |fake: &FakeLlmServer| -> Vec<String> {
        fake.requests()
            .iter()
            .filter(|r| r.task == "reply")
            .map(|r| r.text())
            .collect()
    };
    // No prompts directory here: the built-in prompt (positive control for the marker).
    let (_, err, ok) = chat(dir.path().to_path_buf());
    assert!(ok, "{err}");
    assert!(!replies(&fake).is_empty() && replies(&fake).iter().all(|r| !r.contains("PIRATE")));
    assert!(!err.contains("edited prompts"), "{err}");

    // An edited reply prompt: used, and the log says so.
    let builtin = engram::llm::prompts::Prompts::builtin().reply;
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(
        dir.path().join("prompts/reply.md"),
        format!("{builtin}\nAlways answer like a PIRATE.\n"),
    )
    .unwrap();
    let (_, err, ok) = chat(dir.path().to_path_buf());
    assert!(ok, "{err}");
    assert!(
        replies(&fake)
            .last()
            .unwrap()
            .contains("Always answer like a PIRATE")
    );
    assert!(
        err.contains("using edited prompts") && err.contains("reply.md"),
        "{err}"
    );

    // A misspelt file name is named, not silently skipped.
    std::fs::write(dir.path().join("prompts/replly.md"), "# Task: reply\n").unwrap();
    let (_, err, ok) = chat(dir.path().to_path_buf());
    assert!(
        ok && err.contains("replly.md") && err.contains("not one of the prompts"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("prompts/replly.md")).unwrap();

    // A broken one is refused at start, naming the file and what it lacks.
    std::fs::write(
        dir.path().join("prompts/reply.md"),
        "# Task: reply\nYou are a bot.\n",
    )
    .unwrap();
    let (_, err, ok) = chat(dir.path().to_path_buf());
    assert!(
        !ok && err.contains("reply.md") && err.contains("{{bot_name}}"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("prompts/reply.md"),
        "# Task: reply\nYou are {{bot_name}}, talking to {{user}}.\n",
    )
    .unwrap();
    let (_, err, ok) = chat(dir.path().to_path_buf());
    assert!(
        !ok && err.contains("{{user}}") && err.contains("nothing fills"),
        "{err}"
    );
}

/// What bob hears about alice in `space`'s #general: her merged memory and, for what reaches
/// replies, her MEMORY.md as shown there.
async fn heard_about_alice(h: &crate::common::Harness, space: &str) -> String {
    let opts = crate::common::group(space);
    let recall = h
        .say_in(&opts, "bob", "Engram, what do you know about @alice?")
        .await
        .unwrap();
    let alice = h.person("alice").await;
    let place = h.place(&opts, "bob").await;
    let shown = h.memory.entries.memory_md(alice, &place).await.unwrap();
    format!("{recall}\n{shown}")
}

async fn global_facts_only_by_the_persons_choice(url: Option<String>) {
    let h = crate::common::harness_on(url, false).await;
    // Both are known in two groups.
    for space in ["lab", "chess"] {
        for who in ["alice", "bob"] {
            h.say_in(&crate::common::group(space), who, "hi all").await;
        }
    }
    // Said in private, in a restricted channel, in a group: stays there.
    h.dm("alice", "remember that I'm allergic to nuts").await;
    h.say_in(
        &crate::common::restricted("lab", "staff"),
        "alice",
        "Engram, remember that I lead the hiring panel",
    )
    .await
    .unwrap();
    h.say_in(
        &crate::common::group("lab"),
        "alice",
        "Engram, remember that I brought the cake",
    )
    .await
    .unwrap();
    // Chosen: known everywhere.
    let reply = h
        .dm("alice", "remember everywhere that my timezone is CET")
        .await;
    assert!(reply.contains("everywhere"), "{reply}");
    for space in ["lab", "chess"] {
        let heard = heard_about_alice(&h, space).await;
        assert!(heard.contains("CET"), "{space}: {heard}");
        assert!(
            !heard.contains("nuts") && !heard.contains("hiring"),
            "{space}: {heard}"
        );
    }
    assert!(
        heard_about_alice(&h, "lab").await.contains("cake"),
        "positive control"
    );
    assert!(!heard_about_alice(&h, "chess").await.contains("cake"));
    let alice = h.person("alice").await;
    let global = || async {
        h.store
            .entries(alice, Some(&[engram::domain::Scope::Global]))
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.value)
            .collect::<Vec<String>>()
    };
    assert_eq!(global().await, vec!["my timezone is CET".to_string()]);

    // A hostile member cannot make anything about alice global, nor share her entries.
    let reply = h
        .say_in(
            &crate::common::group("lab"),
            "bob",
            "Engram, remember everywhere that @alice is a thief",
        )
        .await
        .unwrap();
    assert!(reply.contains("Only the person"), "{reply}");
    for words in ["cake", "nuts"] {
        let reply = h
            .say_in(
                &crate::common::group("lab"),
                "bob",
                &format!("Engram, /memory share {words}"),
            )
            .await
            .unwrap();
        assert!(reply.starts_with("None of your entries"), "{reply}");
        // Said yes to anyway: nothing was asked, nothing is shared.
        h.say_in(&crate::common::group("lab"), "bob", "Engram, yes")
            .await
            .unwrap();
    }
    assert_eq!(global().await, vec!["my timezone is CET".to_string()]);
    let heard = heard_about_alice(&h, "chess").await;
    assert!(
        !heard.contains("thief") && !heard.contains("cake") && !heard.contains("nuts"),
        "{heard}"
    );

    // She shares the restricted channel's entry from there, then takes it back.
    let staff = crate::common::restricted("lab", "staff");
    let reply = h
        .say_in(&staff, "alice", "Engram, /memory share hiring")
        .await
        .unwrap();
    assert!(
        reply.contains("restricted channel staff") && reply.contains("Reply \"yes\""),
        "{reply}"
    );
    let heard = heard_about_alice(&h, "chess").await;
    assert!(!heard.contains("hiring panel"), "shared before the yes");
    let reply = h.say_in(&staff, "alice", "yes").await.unwrap();
    assert!(reply.starts_with("Shared"), "{reply}");
    let heard = heard_about_alice(&h, "chess").await;
    assert!(heard.contains("hiring panel"), "{heard}");
    let reply = h
        .say_in(
            &crate::common::group("chess"),
            "alice",
            "Engram, /memory unshare hiring panel",
        )
        .await
        .unwrap();
    assert!(
        reply.starts_with("Unshared") && reply.contains("private chat"),
        "{reply}"
    );
    for space in ["chess", "lab"] {
        let heard = heard_about_alice(&h, space).await;
        assert!(
            !heard.contains("hiring") && heard.contains("CET"),
            "{space}: {heard}"
        );
    }
    assert!(
        h.dm("alice", "/memory").await.contains("hiring panel"),
        "kept, privately"
    );
    let recall = h.dm("alice", "what do you know about me").await;
    assert!(
        recall.contains("hiring panel"),
        "its fact came along: {recall}"
    );
    // A loose match moves nothing: every word must be in the entry.
    let reply = h.dm("alice", "/memory share nuts cake").await;
    assert!(reply.starts_with("None of your entries"), "{reply}");
    // Her DM entry cannot be shared from a group, where she may not see it.
    let reply = h
        .say_in(
            &crate::common::group("lab"),
            "alice",
            "Engram, /memory share nuts",
        )
        .await
        .unwrap();
    assert!(reply.starts_with("None of your entries"), "{reply}");
}

on_both_harnesses!(global_facts_only_by_the_persons_choice);

#[test]
fn a_missing_embedding_model_is_a_warning_once_at_the_default_level() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = engram(dir.path(), &["chat", "--as", "alice"], "hello\nhi\n", &[]);
    assert!(ok && out.contains("Engram: "), "{err}");
    assert_eq!(err.matches("no embedding model found").count(), 1, "{err}");
    assert!(err.contains("WARN"), "{err}");
    // Chosen off: nothing to warn about.
    let (_, err, ok) = engram(
        dir.path(),
        &["chat", "--as", "alice"],
        "hello\n",
        &[("ENGRAM__EMBED__PROVIDER", "none")],
    );
    assert!(ok && !err.contains("no embedding model"), "{err}");
}

#[test]
fn a_copy_of_the_default_config_starts_and_names_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    // The natural first step: cp config/default.toml config/local.toml, then change a setting.
    let local = engram::config::DEFAULT_TOML.replace(
        "context_budget_tokens = 1500",
        "context_budget_tokens = 2000",
    );
    std::fs::write(dir.path().join("config/local.toml"), &local).unwrap();
    let (out, err, ok) = engram(dir.path(), &["chat", "--as", "alice"], "hello\n", &[]);
    assert!(ok && out.contains("tokens of 2000"), "{out}{err}");
    // A secret in it is refused, by its key, without its value.
    std::fs::write(
        dir.path().join("config/local.toml"),
        format!("{local}\n[secrets]\napi_key = \"sk-live-123\"\n"),
    )
    .unwrap();
    let (_, err, ok) = engram(dir.path(), &["chat", "--as", "alice"], "hello\n", &[]);
    assert!(
        !ok && err.contains("secrets.api_key") && !err.contains("sk-live-123"),
        "{err}"
    );
}

#[test]
fn an_export_goes_only_into_the_database_it_came_from() {
    let home = tempfile::tempdir().unwrap();
    let (_, err, ok) = engram(
        home.path(),
        &["chat", "--as", "alice"],
        "remember that I love Rust\n",
        &[],
    );
    assert!(ok, "{err}");
    let (out, err, ok) = engram(home.path(), &["export", "--out", "exp"], "", &[]);
    assert!(ok, "{out}{err}");
    let folder = std::fs::read_dir(home.path().join("exp"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(folder.file_name().to_string_lossy(), "1-alice");
    let md = std::fs::read_to_string(folder.path().join("MEMORY.md")).unwrap();
    assert!(
        md.contains("person 1, \"alice\"; accounts: console:alice"),
        "{md}"
    );

    // Another database, where person 1 is zed: refused, and nothing written.
    let other = tempfile::tempdir().unwrap();
    let (_, err, ok) = engram(other.path(), &["chat", "--as", "zed"], "hello\n", &[]);
    assert!(ok, "{err}");
    let exp = home.path().join("exp");
    let (_, err, ok) = engram(
        other.path(),
        &["import", "--dir", exp.to_str().unwrap()],
        "",
        &[],
    );
    assert!(
        !ok && err.contains("exported for console:alice") && err.contains("console:zed"),
        "{err}"
    );
    let (out, _, _) = engram(
        other.path(),
        &["search", "--user", "zed", "--query", "rust"],
        "",
        &[],
    );
    assert!(out.contains("nothing matches"), "{out}");
    // Positive control: into its own database it goes.
    let (_, err, ok) = engram(home.path(), &["import", "--dir", "exp"], "", &[]);
    assert!(ok, "{err}");
}

/// What is known everywhere is about the speaker only: an entry or a fact naming someone by a
/// Discord mention ("<@id>") is refused like one naming them with "@", and one naming no one
/// is shared (the control).
#[tokio::test]
async fn a_discord_mention_is_someone_else_for_everywhere() {
    let h = crate::common::Harness::offline().await;
    h.dm("alice", "remember that I lent <@4242> my car").await;
    h.dm("alice", "remember that I play the oboe").await;
    let refused = h.dm("alice", "/memory share lent car").await;
    assert!(
        refused.starts_with("That entry mentions someone else"),
        "{refused}"
    );
    let asked = h.dm("alice", "/memory share oboe").await;
    assert!(asked.contains("yes"), "the control: {asked}");
    let refused = h
        .dm("alice", "remember everywhere that I owe <@4242> ten euros")
        .await;
    assert!(
        refused.starts_with("Only the person a fact is about"),
        "{refused}"
    );
}
