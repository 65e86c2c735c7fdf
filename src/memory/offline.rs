//! The deterministic offline fallback: what memory does without an LLM (none configured, or it
//! failed). Verbatim facts, extractive summaries, and ordered concatenation instead of merges.
//! Pure functions, tested directly.

use chrono::NaiveDate;

/// Appends a fact verbatim, attributed, as one line. Returns None when it is already there.
pub fn remember_verbatim(facts: &str, subject: &str, told_by: &str, fact: &str) -> Option<String> {
    let line = if told_by == subject {
        format!("- {subject}: {}", fact.trim())
    } else {
        format!("- {told_by} about {subject}: {}", fact.trim())
    };
    if facts.lines().any(|l| l.trim() == line) {
        return None;
    }
    let mut out = facts.trim_end().to_string();
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&line);
    Some(out)
}

/// The words of `text`, lowercase, as a person may have typed them any of several ways: a
/// typographic apostrophe is a plain one ("j’aime" is "j'aime"), "ё" is "е" (Russian writes
/// either), accents are composed.
fn words(text: &str) -> Vec<String> {
    crate::domain::composed(text)
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'").replace('ё', "е"))
        .collect()
}

/// Sentences of one line.
fn sentences(line: &str) -> Vec<&str> {
    line.split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `text` holds the words of `target` in order, side by side (case, punctuation and
/// spacing aside): "Remember that my salary is 90k!" holds "my salary is 90k".
pub fn contains_words(text: &str, target: &str) -> bool {
    let needle = words(target);
    !needle.is_empty()
        && words(text)
            .windows(needle.len())
            .any(|w| w == needle.as_slice())
}

/// The sentences of `before` that `after` no longer has: what a facts change removed.
pub fn removed_sentences(before: &str, after: &str) -> Vec<String> {
    let kept: std::collections::HashSet<String> = after
        .lines()
        .flat_map(sentences)
        .map(|s| words(s).join(" "))
        .collect();
    before
        .lines()
        .flat_map(sentences)
        .filter(|s| !kept.contains(&words(s).join(" ")))
        .map(str::to_string)
        .collect()
}

/// Removes every sentence the target's words (in order, side by side) fall in, line by line,
/// so both verbatim bullet lines and merged prose keep their shape. A target may span
/// sentences of one line ("a nurse at St. Mary's", "I earn 3.5k", a whole line of two
/// sentences): every sentence it touches goes. Returns the remaining text and whether
/// anything matched.
pub fn forget_matching(facts: &str, target: &str) -> (String, bool) {
    let needle = words(target);
    if needle.is_empty() {
        return (facts.to_string(), false);
    }
    let mut found = false;
    let mut lines = Vec::new();
    for line in facts.lines() {
        let all = sentences(line);
        let touched = sentences_touched(&all, &needle);
        let kept: Vec<&str> = all
            .iter()
            .zip(&touched)
            .filter(|(_, t)| !**t)
            .map(|(s, _)| *s)
            .collect();
        if kept.len() == all.len() {
            lines.push(line.to_string());
            continue;
        }
        found = true;
        // Keep what is left of the line, unless only punctuation is.
        if kept.iter().any(|s| !words(s).is_empty()) {
            lines.push(kept.join(" "));
        }
    }
    if !found {
        return (facts.to_string(), false);
    }
    (lines.join("\n"), true)
}

/// For each of a line's `sentences`, whether an occurrence of `needle` (words, at least
/// one) in the line touches it. The sentences' words, one after the other, are the line's words: a sentence
/// ends at '.', '!' or '?', which no word holds.
fn sentences_touched(sentences: &[&str], needle: &[String]) -> Vec<bool> {
    let mut line: Vec<String> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (i, s) in sentences.iter().enumerate() {
        for w in words(s) {
            line.push(w);
            owner.push(i);
        }
    }
    let mut touched = vec![false; sentences.len()];
    for (start, run) in line.windows(needle.len()).enumerate() {
        if run == needle {
            for o in &owner[start..start + needle.len()] {
                touched[*o] = true;
            }
        }
    }
    touched
}

const STOPWORDS: &[&str] = &[
    "the", "and", "that", "this", "with", "have", "just", "what", "your", "from", "they", "them",
    "then", "there", "about", "would", "could", "should", "really", "think", "know", "like",
    "yeah", "okay", "it's", "i'm", "been", "were", "when", "will", "some", "much", "very", "also",
    "into", "than", "only", "over", "here",
];

fn salience(text: &str) -> usize {
    let mut seen: Vec<String> = words(text)
        .into_iter()
        .filter(|w| w.chars().count() > 3 && !STOPWORDS.contains(&w.as_str()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.len()
}

/// Clips to at most `max_chars` characters at a word boundary, with "…" when cut.
pub fn clip_chars(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let prefix: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    let cut = prefix
        .rfind(char::is_whitespace)
        .filter(|&i| i > prefix.len() / 2)
        .unwrap_or(prefix.len());
    format!("{}…", prefix[..cut].trim_end())
}

/// An extractive summary of one person's messages: the most informative ones, in the order
/// they were said, within `max_chars`, after their name ("Alice: … / …": no words of any
/// one language, since whoever reads it may speak another).
pub fn extractive_summary(name: &str, messages: &[&str], max_chars: usize) -> String {
    let mut ranked: Vec<(usize, usize)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.trim().is_empty())
        .map(|(i, m)| (i, salience(m)))
        .collect();
    if ranked.is_empty() {
        return String::new();
    }
    // Most informative first; ties go to the later message (more recent).
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let head = format!("{name}: ");
    let mut budget = max_chars.saturating_sub(head.chars().count());
    let mut chosen = Vec::new();
    for (i, _) in ranked {
        let text = messages[i].split_whitespace().collect::<Vec<_>>().join(" ");
        let len = text.chars().count() + 3;
        if len <= budget {
            budget -= len;
            chosen.push(i);
        } else if chosen.is_empty() {
            chosen.push(i);
            break;
        }
    }
    chosen.sort_unstable();
    let body = chosen
        .iter()
        .map(|&i| messages[i].split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" / ");
    clip_chars(&format!("{head}{body}"), max_chars)
}

/// Day summaries joined newest first, one dated line each (recency matters most when space
/// runs out), whatever their length.
pub fn history_text(days: &[(NaiveDate, String)]) -> String {
    let mut sorted: Vec<&(NaiveDate, String)> =
        days.iter().filter(|(_, s)| !s.trim().is_empty()).collect();
    sorted.sort_by_key(|d| std::cmp::Reverse(d.0));
    sorted
        .iter()
        .map(|(d, s)| format!("{}: {}", d.format("%a %d %b"), s.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `history_text` cut to `max_chars`.
pub fn history_concat(days: &[(NaiveDate, String)], max_chars: usize) -> String {
    clip_chars(&history_text(days), max_chars)
}

/// The labels of a person's memory parts (facts, today, history), each with the id of its
/// name in the message catalogues (an offline answer shows them in the reader's language).
pub const LABELS: [(&str, &str); 3] = [
    ("Facts", "memory-facts"),
    ("Today", "memory-today"),
    ("Earlier this week", "memory-earlier"),
];

/// The parts in priority order facts → today → history, labelled, empty parts left out.
pub fn concat_merge(facts: &str, today: &str, history: &str) -> String {
    [
        (LABELS[0].0, facts),
        (LABELS[1].0, today),
        (LABELS[2].0, history),
    ]
    .iter()
    .filter(|(_, t)| !t.trim().is_empty())
    .map(|(label, t)| format!("{label}:\n{}", t.trim()))
    .collect::<Vec<_>>()
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_appends_once_with_attribution() {
        let a = remember_verbatim("", "alice", "alice", "I love Rust").unwrap();
        assert_eq!(a, "- alice: I love Rust");
        assert_eq!(
            remember_verbatim(&a, "alice", "alice", " I love Rust "),
            None
        );
        let b = remember_verbatim(&a, "alice", "bob", "she plays chess").unwrap();
        assert_eq!(
            b,
            "- alice: I love Rust\n- bob about alice: she plays chess"
        );
    }

    /// A forget typed another way than the fact was kept still finds it: "е" for "ё", a
    /// typographic apostrophe for a plain one, a decomposed accent for a composed one.
    #[test]
    fn forget_finds_what_was_typed_another_way() {
        for (kept, asked) in [
            ("- Olga: я люблю зелёный чай", "я люблю зеленый чай"),
            ("- Anne: j'aime le thé", "j’aime le thé"),
            ("- Anne: j’aime le thé", "j'aime le thé"),
            ("- Lena: ich heiße Müller", "ich heiße Mu\u{308}ller"),
        ] {
            let (left, found) = forget_matching(kept, asked);
            assert!(found && left.is_empty(), "{kept} / {asked}: {left:?}");
        }
        let (left, found) = forget_matching("- Olga: я люблю чай", "зелёный чай");
        assert!(!found && !left.is_empty(), "the negative control");
    }

    #[test]
    fn forget_removes_only_matching_units() {
        let facts =
            "- alice: I love Rust\n- alice: I live in Berlin\n- bob about alice: she likes pizza";
        let (rest, found) = forget_matching(facts, "I LOVE rust!");
        assert!(found);
        assert_eq!(
            rest,
            "- alice: I live in Berlin\n- bob about alice: she likes pizza"
        );
        let (same, found) = forget_matching(facts, "she loves golf");
        assert!(!found);
        assert_eq!(same, facts);
        let (same, found) = forget_matching(facts, "  ...  ");
        assert!(!found && same == facts);
        let (rest, found) = forget_matching("Alice loves Rust. Alice likes pizza.", "likes pizza");
        assert!(found);
        assert_eq!(rest, "Alice loves Rust.");
    }

    #[test]
    fn a_target_across_sentences_takes_the_sentences_it_touches() {
        let facts = "- alice: I am a nurse at St. Mary's\n- alice: I earn 3.5k a month. She likes tea.\n- alice: I live in Porto";
        // "St." and "3.5k" end a sentence for the splitter: the target spans two.
        let (rest, found) = forget_matching(facts, "I am a nurse at St. Mary's");
        assert!(found);
        assert_eq!(
            rest,
            "- alice: I earn 3.5k a month. She likes tea.\n- alice: I live in Porto"
        );
        let (rest, found) = forget_matching(facts, "I earn 3.5k a month");
        assert!(found);
        assert_eq!(
            rest,
            "- alice: I am a nurse at St. Mary's\nShe likes tea.\n- alice: I live in Porto"
        );
        // A whole line, as the admin page's button sends it.
        let (rest, found) = forget_matching(facts, "- alice: I earn 3.5k a month. She likes tea.");
        assert!(found);
        assert_eq!(
            rest,
            "- alice: I am a nurse at St. Mary's\n- alice: I live in Porto"
        );
        // Words of two lines side by side are no match.
        let (same, found) = forget_matching(facts, "likes tea alice I live");
        assert!(!found);
        assert_eq!(same, facts);
    }

    #[test]
    fn extractive_summary_prefers_informative_messages_and_respects_length() {
        let msgs = [
            "ok",
            "lol",
            "Finally deployed the Kubernetes cluster migration to production today",
            "yeah",
        ];
        let s = extractive_summary("alice", &msgs, 300);
        assert!(s.starts_with("alice: ") && s.contains("Kubernetes"), "{s}");
        let long = ["word ".repeat(200)];
        let refs: Vec<&str> = long.iter().map(String::as_str).collect();
        assert!(extractive_summary("a", &refs, 100).chars().count() <= 100);
        assert_eq!(extractive_summary("a", &["", "  "], 100), "");
    }

    #[test]
    fn concat_merge_keeps_priority_order_and_skips_empty_parts() {
        assert_eq!(
            concat_merge("F", "", "H"),
            "Facts:\nF\nEarlier this week:\nH"
        );
        assert_eq!(concat_merge("", "", ""), "");
    }

    #[test]
    fn clip_never_splits_characters() {
        let s = "🦀".repeat(100);
        assert!(clip_chars(&s, 10).chars().count() <= 10);
    }
}
