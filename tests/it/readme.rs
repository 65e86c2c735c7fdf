//! The README's console examples, run against the binary: the command tables, the demo script,
//! the console commands, the settings it names and the overrides it shows. What the README
//! says they do is checked, so the README cannot drift from the binary again.

use crate::common::engram;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The fenced block after the line containing `marker`.
fn block_after(readme: &str, marker: &str) -> String {
    let at = readme
        .find(marker)
        .unwrap_or_else(|| panic!("README has {marker:?}"));
    let rest = &readme[at..];
    let start = rest.find("```").unwrap();
    let body = &rest[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// The last answer of the bot in a console transcript.
fn last_answer(out: &str) -> Option<String> {
    out.rfind("Engram: ")
        .map(|at| out[at + "Engram: ".len()..].trim().to_string())
}

/// Every command of the README's "say | does" tables: the backticked phrases of the first
/// cell, with placeholders filled in; and the does-cell.
fn table_commands(readme: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_table = false;
    for line in readme.lines() {
        if line.starts_with("| say | does |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
        }
        let Some(row) = line.strip_prefix("| `").filter(|_| in_table) else {
            continue;
        };
        let full = format!("`{row}");
        let (say, does) = full.split_once(" | ").unwrap();
        for (i, part) in say.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            // "… about @bob" after "what do you know about me": the same question.
            let part = match (part.strip_prefix("… "), out.last()) {
                (Some(rest), Some((previous, _))) => {
                    let word = rest.split_whitespace().next().unwrap_or("");
                    let stem = previous.split(word).next().unwrap_or("");
                    format!("{stem}{rest}")
                }
                _ => part.to_string(),
            };
            let command = part
                .replace('…', "I like green tea")
                .replace("<words>", "tea")
                .replace("<topic>", "tea");
            out.push((command, does.to_string()));
        }
    }
    out
}

#[test]
fn every_command_of_the_tables_is_understood() {
    let readme = readme();
    let commands = table_commands(&readme);
    assert!(commands.len() >= 20, "the tables were read: {commands:?}");
    let dir = tempfile::tempdir().unwrap();
    // bob is known (for "@bob"), alice has something to search, show and forget.
    let (_, err, ok) = engram(
        dir.path(),
        &["chat", "--space", "lab", "--script", "-"],
        "bob: hi all\nalice: hello\n",
        &[],
    );
    assert!(ok, "{err}");
    for (command, does) in &commands {
        let script = format!("alice: remember that I like green tea\nalice: {command}\n");
        let (out, err, ok) = engram(
            dir.path(),
            &["chat", "--as", "alice", "--script", "-"],
            &script,
            &[],
        );
        assert!(ok, "{command}: {err}");
        let answer = last_answer(&out).unwrap_or_else(|| panic!("{command}: no answer: {out}"));
        // A command, not conversation (offline, conversation shows the memory it would use).
        assert!(
            !answer.contains("I have no language model configured"),
            "{command:?} was taken as conversation: {answer}"
        );
        assert!(
            !answer.contains("I don't know \"/memory"),
            "{command:?}: {answer}"
        );
        // What the README quotes the bot saying, it says.
        for (i, quoted) in does.split('"').enumerate() {
            let quoted = quoted.trim_end_matches(['.', ',']);
            if i % 2 == 1 && quoted.starts_with("Got it") {
                assert!(
                    answer.contains(quoted),
                    "{command:?}: README says {quoted:?}, got {answer}"
                );
            }
        }
    }
    // The help lists what the table lists.
    let (out, _, _) = engram(
        dir.path(),
        &["chat", "--as", "alice", "--script", "-"],
        "alice: help\n",
        &[],
    );
    for phrase in [
        "remember that I love Rust",
        "/memory share",
        "remember everywhere",
    ] {
        assert!(out.contains(phrase), "help lacks {phrase:?}: {out}");
    }
}

#[test]
fn the_demo_script_does_what_the_readme_says() {
    let readme = readme();
    let demo = block_after(&readme, "A script has one message a");
    assert!(demo.contains("# demo.txt"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("demo.txt"), &demo).unwrap();
    let (out, err, ok) = engram(
        dir.path(),
        &["chat", "--space", "lab", "--script", "demo.txt"],
        "",
        &[],
    );
    assert!(ok, "{err}");
    // Only the lines that address the bot are answered; the rest is chatter.
    let addressed = demo.lines().filter(|l| l.contains(": Engram,")).count();
    assert_eq!(out.matches("Engram: ").count(), addressed, "{out}");
    assert!(out.contains("Got it, I'll remember that"), "{out}");
    // bob asks what the bot knows about alice: her fact.
    let recall = last_answer(&out).unwrap();
    assert!(recall.contains("I love Rust"), "{recall}");
}

#[test]
fn the_console_commands_run() {
    let readme = readme();
    let commands = block_after(&readme, "### Console chat and scripts");
    let demo = block_after(&readme, "A script has one message a");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("demo.txt"), &demo).unwrap();
    let mut ran = 0;
    for line in commands.lines() {
        let line = line.split(" #").next().unwrap().trim();
        let Some(args) = line.strip_prefix("engram ") else {
            continue;
        };
        let args: Vec<&str> = args.split_whitespace().collect();
        let (out, err, ok) = engram(dir.path(), &args, "Engram, help\n", &[]);
        assert!(ok, "{line}: {err}");
        assert!(out.contains("Engram: "), "{line}: no answer: {out}");
        ran += 1;
    }
    assert_eq!(ran, 4, "{commands}");
}

#[test]
fn every_setting_the_readme_names_exists_and_its_overrides_start() {
    let readme = readme();
    let defaults: toml::Table = engram::config::DEFAULT_TOML.parse().unwrap();
    let mut named = 0;
    for (i, piece) in readme.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let name = piece.split([' ', '=', ':']).next().unwrap();
        let Some((section, key)) = name.split_once('.') else {
            continue;
        };
        let Some(toml::Value::Table(table)) = defaults.get(section) else {
            continue;
        };
        named += 1;
        assert!(
            table.contains_key(key),
            "the README names `{name}`, which is not a setting"
        );
    }
    assert!(named >= 30, "settings were read: {named}");

    // The overrides it shows (not those that need a server or a secret): the bot starts.
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = 0;
    for (i, piece) in readme.split("ENGRAM__").enumerate() {
        if i == 0 {
            continue;
        }
        let assignment: String = piece
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '`' && *c != ')')
            .collect();
        let Some((var, value)) = assignment.split_once('=') else {
            continue;
        };
        if value.contains("://") || value.contains("...") || value.is_empty() {
            continue;
        }
        let var = format!("ENGRAM__{var}");
        let (out, err, ok) = engram(
            dir.path(),
            &["chat", "--as", "alice"],
            "hello\n",
            &[(var.as_str(), value)],
        );
        assert!(ok && out.contains("Engram: "), "{var}={value}: {err}");
        overrides += 1;
    }
    assert!(overrides >= 1);
}
