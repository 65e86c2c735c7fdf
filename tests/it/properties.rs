//! Property tests: every function that reads text from people or models takes any Unicode
//! without panicking, and keeps its own promises (cuts on character boundaries, parts within
//! the platform's limit, at most the asked number of query words, …). The strings mix
//! arbitrary characters with the ones that have broken text code before: characters whose
//! lowercase has another byte length ('İ', the Kelvin sign, 'ẞ'), combining marks, emoji,
//! controls, and the words the parsers look for ("Engram,", "remember that", "<@123>", "```").

use chrono::{DateTime, TimeZone, Utc};
use engram::adapters::discord::own_mentions;
use engram::adapters::split::{chars, split_message, utf16};
use engram::adapters::telegram::command_of;
use engram::domain::PersonId;
use engram::domain::mention;
use engram::domain::{Scope, link, secret};
use engram::ingest::{
    find_ignore_case, message_text, prefix_len_ignore_case, sanitize, strip_address,
};
use engram::llm::openai::parse_retry_after;
use engram::llm::parse_json_answer;
use engram::llm::prompts::{escape, unescape};
use engram::memory::entries::{
    key_for, looks_like_code, never_kept, parse_daily, parse_daily_blocks, parse_export_md,
    parse_memory_md,
};
use engram::memory::extraction::parse_answer;
use engram::memory::forgetting::is_forgotten;
use engram::memory::offline::{
    clip_chars, contains_words, extractive_summary, forget_matching, remember_verbatim,
    removed_sentences,
};
use engram::memory::tokens::TokenCounter;
use engram::retrieval::asks_what_the_bot_said;
use engram::retrieval::names::{in_first_person, named};
use engram::retrieval::time::{Side, anchored, asks_when, told_time, window};
use engram::retrieval::topics::opens_with_marker;
use engram::router::parse_command;
use engram::store::terms::{WordPairs, plain_words};
use engram::store::{document_terms, document_terms_in, query_terms};
use proptest::prelude::*;
use serenity::all::UserId;
use std::collections::HashMap;

/// Pieces that have tripped text code, and the words the parsers react to.
const PIECES: &[&str] = &[
    "İ",
    "\u{212A}",
    "ẞ",
    "ß",
    "ﬃ",
    "Σ",
    "ς",
    "i\u{307}",
    "e\u{301}",
    "👩‍👩‍👧",
    "🦀",
    "\u{200B}",
    "\u{202E}",
    "\u{0}",
    "\u{1b}",
    "\r\n",
    "\n",
    "\t",
    " ",
    ",",
    ":",
    "@",
    "'s",
    "Engram",
    "engram",
    "ENGRAM",
    "@Engram",
    "@engram_bot",
    "@ENGRAM_BOT",
    "remember that ",
    "remember this about @",
    "forget ",
    "forget everything about ",
    "what do you know about ",
    "/memory ",
    "/memory@engram_bot",
    "/start",
    "yes",
    "note that ",
    "I ",
    "my ",
    "<@123>",
    "<@!42>",
    "```",
    "```rust\n",
    "## Key Facts\n",
    "- ",
    "# User Memory\n",
    "last week",
    "3 days ago",
    "400 years ago",
    "in May",
    "May 2023",
    "yesterday",
    "the week before ",
    "400 days after ",
    " the trip",
    "k7qm-x2pd",
    "{\"memory_updates\": [",
    "\"confidence\": 1e308",
    "}",
    "&amp;",
    "<",
    "🙂",
    "James",
    "james's ",
    "JAMES’",
    "John Smith",
    "'",
    "’",
    "?",
    "? ",
    "by the way",
    "кстати",
    "When did ",
    "what did you recommend",
];

/// Text as people and models write it, at its worst.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => proptest::sample::select(PIECES).prop_map(str::to_string),
        2 => any::<char>().prop_map(String::from),
        1 => "\\PC{0,6}",
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
}

fn now() -> impl Strategy<Value = DateTime<Utc>> {
    // 1970 to 2200, any second.
    (0i64..7_258_118_400).prop_map(|s| Utc.timestamp_opt(s, 0).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn addressing_and_commands_take_any_text(t in text(), name in prop_oneof![Just("Engram".to_string()), text()]) {
        let clean = sanitize(&t);
        prop_assert!(!clean.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        if let Some(rest) = strip_address(&t, &name) {
            let _ = parse_command(&rest);
        }
        let _ = parse_command(&t);
        let _ = parse_command(&format!("Engram, {t}"));
    }

    #[test]
    fn case_blind_matches_cut_on_character_boundaries(t in text(), needle in text(), from in 0usize..64) {
        if let Some(n) = prefix_len_ignore_case(&t, &needle) {
            prop_assert!(t.is_char_boundary(n));
        }
        let from = from.min(t.len());
        if let Some((a, b)) = find_ignore_case(&t, &needle, from) {
            prop_assert!(a <= b && b <= t.len());
            prop_assert!(t.is_char_boundary(a) && t.is_char_boundary(b));
        }
    }

    #[test]
    fn a_name_in_any_case_is_stripped(t in text()) {
        // Positive control beside the no-panic checks: the address itself always comes off.
        for name in ["Engram", "İstanbul", "\u{212A}elvin"] {
            let upper = name.to_uppercase();
            let said = format!("{upper}, hello {t}");
            let rest = strip_address(&said, name);
            prop_assert!(rest.is_some(), "{said:?} addresses {name}");
        }
    }

    #[test]
    fn platform_mentions_take_any_text(t in text(), token in text()) {
        let _ = command_of(&t, "engram_bot");
        let mut msg = engram::adapters::console::console_message(
            &engram::adapters::console::ConsoleOptions::private("a"), "a", &t, 0, Utc::now(), false);
        msg.mentions = own_mentions(&t, UserId::new(123), "Engram");
        let _ = parse_command(&message_text(&msg, "Engram"));
        // A self mention whose token is any text (a platform's entity) never breaks the text.
        msg.mentions.push(engram::domain::Mention {
            external_id: "1".into(),
            display_name: "Engram".into(),
            username: None,
            token,
            is_self: true,
        });
        let _ = parse_command(&message_text(&msg, "Engram"));
        let ids = mention::ids_in(&t);
        let names: HashMap<String, String> = ids.iter().map(|id| (id.clone(), "Bob".to_string())).collect();
        let _ = mention::display(&t, &names);
    }

    #[test]
    fn replies_split_within_the_platform_limit(t in text(), max in 16usize..300) {
        for units in [chars as fn(&str) -> usize, utf16] {
            let parts = split_message(&t, max, units);
            for p in &parts {
                prop_assert!(units(p) <= max, "{} > {max}: {p:?}", units(p));
            }
            prop_assert_eq!(parts.is_empty(), t.trim().is_empty());
        }
    }

    #[test]
    fn search_terms_take_any_text(t in text(), max in 0usize..40) {
        let doc = document_terms(&t);
        // The length counts every word (at least 1, BM25 divides by it).
        let words = doc.terms.iter().map(|(_, n)| *n as usize).sum::<usize>();
        prop_assert_eq!(doc.len as usize, words.max(1));
        let q = query_terms(&t, max);
        prop_assert!(q.len() <= max);
        let _ = plain_words(&t);
        let pairs = WordPairs::of(&t);
        let _ = pairs.shared_with(&t, engram::domain::language::detect(&t));
        // Read in any language, a text's length still counts its terms.
        for language in engram::domain::language::Language::all() {
            let doc = document_terms_in(&t, Some(language));
            let words = doc.terms.iter().map(|(_, n)| *n as usize).sum::<usize>();
            prop_assert_eq!(doc.len as usize, words.max(1));
        }
    }

    #[test]
    fn time_expressions_name_a_forward_window(t in text(), at in now()) {
        if let Some(w) = window(&t, at) {
            prop_assert!(w.from < w.to, "{t:?} at {at}: {w:?}");
        }
    }

    #[test]
    fn times_named_by_events_name_a_forward_window(q in text(), told in text(), at in now()) {
        if let Some(event) = anchored(&q) {
            prop_assert!(!event.event.trim().is_empty(), "{q:?}: {event:?}");
            let w = event.around(&told, at);
            prop_assert!(w.from < w.to, "{q:?}, told {told:?} at {at}: {w:?}");
            // The span asked for, ending no later than the telling for "before".
            let (span, ends_by_then) = match event.side {
                Side::Before(span) => (span, w.to <= at),
                Side::After(span) => (span, true),
            };
            prop_assert!(w.to - w.from == span && ends_by_then, "{q:?}, told {told:?} at {at}: {w:?}");
        }
    }

    #[test]
    fn secrets_are_found_on_character_boundaries_and_redacted(t in text()) {
        for (range, _) in secret::secret_spans(&t) {
            prop_assert!(range.start < range.end && range.end <= t.len());
            prop_assert!(t.is_char_boundary(range.start) && t.is_char_boundary(range.end));
        }
        let redacted = secret::redact_secrets(&t);
        // Redacting again changes nothing more than the marker itself can.
        prop_assert!(secret::secret_spans(&redacted).iter().all(|(r, _)| !redacted[r.clone()].contains(secret::REDACTED)));
        let _ = never_kept(&t);
        // A password said in any text is gone from what is stored.
        let said = format!("{t} my password is Hunter22 ok");
        prop_assert!(!secret::redact_secrets(&said).contains("Hunter22"), "{said:?}");
    }

    #[test]
    fn exports_read_back_take_any_file(t in text()) {
        let _ = parse_export_md(&t);
        let _ = parse_daily_blocks("2026-11-20.md", &format!("# 2026-11-20\n{t}"));
    }

    #[test]
    fn memory_md_and_daily_notes_import_takes_any_file(t in text(), name in text()) {
        if let Ok(entries) = parse_memory_md(&t) {
            prop_assert!(entries.iter().all(|(_, v)| !v.trim().is_empty()));
        }
        let _ = parse_daily(&name, &t);
        let _ = parse_daily("2026-11-20.md", &t);
        let phrases = engram::domain::phrases::Phrases::built_in();
        let _ = phrases.section(&t);
        let _ = key_for(&phrases, &t);
        // A key names an entry: never empty, whatever was said.
        prop_assert!(!key_for(&phrases, &t).is_empty());
        let _ = looks_like_code(&t);
    }

    #[test]
    fn model_answers_take_any_text(t in text()) {
        let _ = parse_answer(&t);
        let _ = parse_json_answer::<serde_json::Value>(&t);
        let _ = parse_retry_after(&t);
        if let Ok(answer) = parse_answer(&format!("{{\"memory_updates\": [], \"daily_notes\": {}}}", serde_json::Value::String(t.clone()))) {
            prop_assert!(answer.updates.is_empty());
        }
    }

    #[test]
    fn model_json_with_absurd_numbers_is_refused_or_bounded(
        confidence in prop_oneof![Just("1e308".to_string()), Just("-1e308".to_string()), Just("1e999".to_string()), any::<f64>().prop_map(|f| format!("{f:e}"))],
        value in text(),
        key in text(),
    ) {
        let answer = format!(
            "{{\"memory_updates\": [{{\"category\": \"user_preferences\", \"key\": {}, \"value\": {}, \"action\": \"add\", \"confidence\": {confidence}}}], \"daily_notes\": \"\"}}",
            serde_json::Value::String(key),
            serde_json::Value::String(value),
        );
        if let Ok(parsed) = parse_answer(&answer) {
            for u in parsed.updates {
                prop_assert!((0.0..=1.0).contains(&u.confidence));
                prop_assert!(!u.key.is_empty() && u.key.chars().count() <= 64);
            }
        }
    }

    #[test]
    fn offline_memory_text_functions_take_any_text(facts in text(), t in text(), max in 0usize..200) {
        let _ = remember_verbatim(&facts, "alice", "bob", &t);
        let (kept, _) = forget_matching(&facts, &t);
        let _ = removed_sentences(&facts, &kept);
        let _ = contains_words(&facts, &t);
        let clipped = clip_chars(&t, max);
        prop_assert!(clipped.chars().count() <= max.max(1), "{clipped:?} for {max}");
        let summary = extractive_summary("alice", &[t.as_str(), facts.as_str()], max);
        let _ = summary;
        let _ = is_forgotten(&facts, &t, "alice");
    }

    #[test]
    fn link_codes_and_prompt_escaping_take_any_text(t in text()) {
        for (_, range) in link::code_spans(&t) {
            prop_assert!(t.is_char_boundary(range.start) && t.is_char_boundary(range.end));
        }
        let _ = link::redact(&t);
        prop_assert_eq!(unescape(&escape(&t)), t.clone());
        let _ = Scope::parse(&t);
    }

    #[test]
    fn token_budgets_hold_for_any_text(t in text(), max in 0usize..50) {
        let counter = TokenCounter::new("cl100k_base").unwrap();
        let cut = counter.truncate(&t, max);
        prop_assert!(counter.count(&cut) <= max, "{cut:?}");
    }

    #[test]
    fn names_in_a_question_take_any_text(q in text(), name in text()) {
        let found = named(&q, [(PersonId(1), name.as_str())]);
        let asked = plain_words(&q);
        let own = plain_words(&name);
        for words in found.values() {
            for w in words {
                prop_assert!(asked.contains(w) && own.contains(w), "{w:?}: {q:?} / {name:?}");
            }
        }
        let names = found.get(&PersonId(1)).cloned().unwrap_or_default();
        let _ = in_first_person(&q, &names);
        // No name: the question as it was written.
        prop_assert_eq!(in_first_person(&q, &Default::default()), q.clone());
        // Positive control: a name asked about last is said as "I", whatever came before.
        let james = named(&format!("{q} James?"), [(PersonId(2), "James")]);
        prop_assert!(james.contains_key(&PersonId(2)));
        let said = in_first_person(&format!("{q} James?"), &james[&PersonId(2)]);
        prop_assert!(said.ends_with("I?"), "{q:?}: {said:?}");
    }

    #[test]
    fn what_a_question_asks_of_time_and_topics_takes_any_text(q in text(), m in text(), at in now()) {
        let _ = asks_when(&q);
        let _ = asks_what_the_bot_said(&q);
        if let Some(w) = told_time(&m, at) {
            prop_assert!(w.from < w.to, "{m:?} at {at}: {w:?}");
        }
        if let Some(w) = window(&q, at) {
            // A message sent inside the window is about it, whatever it says.
            prop_assert!(w.is_about(&m, w.from));
            let _ = w.is_about(&m, at);
        }
        let markers = ["by the way".to_string(), "кстати".to_string(), "i\u{307}".to_string()];
        let _ = opens_with_marker(&m, &markers);
        // Positive control: a marker in any case opens the text, whatever follows a space.
        let (english, russian) = (format!("By The Way {m}"), format!("...КСТАТИ, {m}"));
        prop_assert!(opens_with_marker(&english, &markers), "{english:?}");
        prop_assert!(opens_with_marker(&russian, &markers), "{russian:?}");
    }
}
