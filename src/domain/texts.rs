//! The bot's own texts per language: message catalogues in Fluent's syntax (`phrases/*.ftl`,
//! one file per language, built in; `phrases.dir` adds languages or replaces messages), and
//! the choice per message with English as the fallback for a language or a message a
//! catalogue lacks. Pure: the caller reads the files.

use super::language::Language;
use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use std::collections::HashMap;

/// The catalogues built into the binary: (file name, text).
const BUILT_IN: [(&str, &str); 6] = [
    ("en.ftl", include_str!("../../phrases/en.ftl")),
    ("ru.ftl", include_str!("../../phrases/ru.ftl")),
    ("de.ftl", include_str!("../../phrases/de.ftl")),
    ("es.ftl", include_str!("../../phrases/es.ftl")),
    ("fr.ftl", include_str!("../../phrases/fr.ftl")),
    ("pt.ftl", include_str!("../../phrases/pt.ftl")),
];

/// A catalogue that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("message catalogue {file}: {reason}")]
pub struct TextsError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Every language's catalogue.
pub struct Texts {
    bundles: HashMap<String, FluentBundle<FluentResource>>,
}

impl std::fmt::Debug for Texts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Texts")
            .field("languages", &self.languages())
            .finish()
    }
}

impl Texts {
    /// The built-in catalogues.
    pub fn built_in() -> Texts {
        Texts::with_files(&[]).expect("the built-in catalogues are valid (a unit test reads them)")
    }

    /// The built-in catalogues and `files` (name `xx.ftl`, text) over them: a file's messages
    /// replace the same messages of its language, or start a language.
    pub fn with_files(files: &[(String, String)]) -> Result<Texts, TextsError> {
        let mut texts = Texts {
            bundles: HashMap::new(),
        };
        for (name, text) in BUILT_IN {
            texts.add(name, text)?;
        }
        for (name, text) in files {
            texts.add(name, text)?;
        }
        Ok(texts)
    }

    /// Adds one catalogue file (`xx.ftl`: its language is the name's stem).
    fn add(&mut self, name: &str, text: &str) -> Result<(), TextsError> {
        let refuse = |reason: String| TextsError {
            file: name.to_string(),
            reason,
        };
        let stem = name
            .strip_suffix(".ftl")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| refuse("the name must be <language>.ftl".into()))?;
        // Only a language messages are detected in can be chosen ("pt-BR" is "pt").
        let code = Language::from_code(stem)
            .ok_or_else(|| {
                refuse(format!(
                    "\"{stem}\" is not one of the languages Engram tells apart ({})",
                    Language::all()
                        .map(Language::code)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?
            .code();
        let resource = FluentResource::try_new(text.to_string()).map_err(|(_, errors)| {
            refuse(
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let locale = code
            .parse()
            .map_err(|_| refuse(format!("\"{code}\" is not a language code")))?;
        let bundle = self.bundles.entry(code.to_string()).or_insert_with(|| {
            let mut b = FluentBundle::new_concurrent(vec![locale]);
            // Chat text: no Unicode isolation marks around the variables.
            b.set_use_isolating(false);
            b
        });
        bundle.add_resource_overriding(resource);
        Ok(())
    }

    /// The languages with a catalogue, sorted.
    pub fn languages(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = self.bundles.keys().map(String::as_str).collect();
        codes.sort();
        codes
    }

    /// Whether `language`'s own catalogue has message `id` (no fallback).
    pub fn has(&self, language: &str, id: &str) -> bool {
        self.bundles
            .get(language)
            .is_some_and(|b| b.has_message(id))
    }

    /// Message `id` (without variables) in each language whose own catalogue has it, English
    /// first: for what a platform shows per language itself (command menus).
    pub fn in_each_language(&self, id: &str) -> Vec<(Language, String)> {
        Language::all()
            .filter(|l| self.has(l.code(), id))
            .map(|l| (l, self.say(Some(l), id, &[])))
            .collect()
    }

    /// Message `id` in `language` (English when that catalogue lacks it or the language is
    /// not known), with `args` filled in. An id no catalogue has comes back as itself (a
    /// unit test keeps every id the bot uses in the English file).
    pub fn say(&self, language: Option<Language>, id: &str, args: &[(&str, Arg)]) -> String {
        let own = language.and_then(|l| self.bundles.get(l.code()));
        let bundle = own
            .filter(|b| b.has_message(id))
            .or_else(|| self.bundles.get("en"));
        let Some(pattern) = bundle
            .and_then(|b| b.get_message(id))
            .and_then(|m| m.value())
        else {
            return id.to_string();
        };
        let bundle = bundle.expect("a pattern comes from a bundle");
        let mut fluent_args = FluentArgs::new();
        for (name, value) in args {
            let v: FluentValue = match value {
                Arg::Text(t) => t.clone().into(),
                Arg::Number(n) => (*n).into(),
            };
            fluent_args.set(*name, v);
        }
        let mut errors = Vec::new();
        let text = bundle
            .format_pattern(pattern, Some(&fluent_args), &mut errors)
            .into_owned();
        if !errors.is_empty() {
            // A catalogue naming a variable the bot does not give ({ $nmae }): said as is.
            tracing::warn!(id, errors = ?errors, "a catalogue message did not render cleanly");
        }
        text
    }
}

/// A value for a message's variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// Text, as is.
    Text(String),
    /// A count (selects plural forms).
    Number(i64),
}

impl From<&str> for Arg {
    fn from(t: &str) -> Arg {
        Arg::Text(t.to_string())
    }
}

impl From<String> for Arg {
    fn from(t: String) -> Arg {
        Arg::Text(t)
    }
}

impl From<usize> for Arg {
    fn from(n: usize) -> Arg {
        Arg::Number(n as i64)
    }
}

impl From<i64> for Arg {
    fn from(n: i64) -> Arg {
        Arg::Number(n)
    }
}

/// The texts of one message's answer: the catalogues and the language to answer in.
#[derive(Debug, Clone, Copy)]
pub struct Say<'a> {
    texts: &'a Texts,
    language: Option<Language>,
}

impl<'a> Say<'a> {
    /// Answers in `language` (English when `None`).
    pub fn new(texts: &'a Texts, language: Option<Language>) -> Say<'a> {
        Say { texts, language }
    }

    /// The language answered in.
    pub fn language(&self) -> Option<Language> {
        self.language
    }

    /// Message `id`, without variables.
    pub fn text(&self, id: &str) -> String {
        self.texts.say(self.language, id, &[])
    }

    /// Message `id` with `args`.
    pub fn with(&self, id: &str, args: &[(&str, Arg)]) -> String {
        self.texts.say(self.language, id, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_falls_back_to_english_per_message() {
        let t = Texts::built_in();
        for code in ["en", "ru", "de", "es", "fr", "pt"] {
            assert!(t.languages().contains(&code), "{code}");
        }
        let ru = Some(Language::Russian);
        assert_eq!(t.say(ru, "captured", &[]), "Понял, запомню.");
        // A message a language's file lacks is said in English (a community's Czech file
        // with one message); a language without a file likewise.
        let files = [("cs.ftl".to_string(), "captured = Rozumím.\n".to_string())];
        let cs = Texts::with_files(&files).unwrap();
        let czech = Some(Language::Czech);
        assert_eq!(cs.say(czech, "captured", &[]), "Rozumím.");
        assert!(!cs.has("cs", "unknown-memory-command"));
        assert!(
            cs.say(czech, "unknown-memory-command", &[("word", "x".into())])
                .starts_with("I don't know \"/memory x\"")
        );
        assert_eq!(
            t.say(Some(Language::Turkish), "captured", &[]),
            "Got it, I'll remember that."
        );
        assert_eq!(t.say(None, "captured", &[]), "Got it, I'll remember that.");
        // Variables, without isolation marks; plural forms by the language's rules.
        assert_eq!(
            t.say(None, "forgot-entries", &[("n", 1usize.into())]),
            "Done, I've forgotten 1 entry."
        );
        assert_eq!(
            t.say(None, "forgot-entries", &[("n", 3usize.into())]),
            "Done, I've forgotten 3 entries."
        );
        assert_eq!(t.say(None, "no-such-message", &[]), "no-such-message");
    }

    #[test]
    fn multi_line_messages_keep_their_lines() {
        let t = Texts::built_in();
        let help = t.say(None, "help", &[]);
        assert!(
            help.starts_with(
                "I remember things about the people here. Try:\nremember that I love Rust\n"
            ),
            "{help}"
        );
        assert!(help.ends_with("\nAnything else is conversation."), "{help}");
        let asked = t.say(
            None,
            "confirm-changes",
            &[("text", "Sure.".into()), ("list", "- a\n- b".into())],
        );
        assert_eq!(
            asked,
            "Sure.\n\nBefore I change your memory: should I\n- a\n- b\nReply \"yes\" to do it or \"no\" to keep it as it is."
        );
    }

    #[test]
    fn a_community_file_adds_a_language_or_replaces_messages() {
        let files = [
            (
                "cs.ftl".to_string(),
                "captured = Rozumím, zapamatuji si to.\n".to_string(),
            ),
            (
                "en.ftl".to_string(),
                "already-knew = Knew it already!\n".to_string(),
            ),
        ];
        let t = Texts::with_files(&files).unwrap();
        assert_eq!(
            t.say(Some(Language::Czech), "captured", &[]),
            "Rozumím, zapamatuji si to."
        );
        assert_eq!(t.say(None, "already-knew", &[]), "Knew it already!");
        // The rest of English stays.
        assert_eq!(t.say(None, "captured", &[]), "Got it, I'll remember that.");
        // A regional name is its language's.
        let files = [("pt-BR.ftl".to_string(), "captured = Beleza!\n".to_string())];
        let t = Texts::with_files(&files).unwrap();
        assert_eq!(
            t.say(Some(Language::Portuguese), "captured", &[]),
            "Beleza!"
        );
        for bad in [
            ("x.txt", "a = b"),
            (".ftl", "a = b"),
            ("uk.ftl", "a = b"),
            ("de.ftl", "this is not fluent {"),
        ] {
            let files = [(bad.0.to_string(), bad.1.to_string())];
            assert!(Texts::with_files(&files).is_err(), "{bad:?}");
        }
    }
}
