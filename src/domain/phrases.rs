//! Memory phrases per language, read from the files of `phrases/` (one TOML file per language:
//! what opens a "remember", a "forget", a yes or a no): data, so a community adds its own
//! language or lines without touching code. Pure: the caller reads the files.

use super::command::{Command, Subject};
use serde::Deserialize;

/// One language's phrases (a `phrases/*.toml` file).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LanguagePhrases {
    /// Its code ("ru", "de", …).
    pub language: String,
    /// Phrases that open a fact to keep where it is said ("запомни, что").
    #[serde(default)]
    pub remember: Vec<String>,
    /// Phrases that open a fact to be known everywhere.
    #[serde(default)]
    pub remember_everywhere: Vec<String>,
    /// Phrases that open a fact taken back ("забудь, что").
    #[serde(default)]
    pub forget: Vec<String>,
    /// Whole requests to forget everything about the speaker ("забудь всё обо мне").
    #[serde(default)]
    pub forget_everything: Vec<String>,
    /// Whole answers that say yes to the bot's question.
    #[serde(default)]
    pub yes: Vec<String>,
    /// Whole answers that say no.
    #[serde(default)]
    pub no: Vec<String>,
    /// Phrases that open a message on a new topic ("кстати"): it starts a new episode.
    #[serde(default)]
    pub markers: Vec<String>,
}

/// Why a phrases file was refused.
#[derive(Debug, thiserror::Error)]
#[error("phrases file {file}: {reason}")]
pub struct PhrasesError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The phrases of every language, merged (a language named by two files gets both's lines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phrases {
    languages: Vec<LanguagePhrases>,
}

/// The built-in files (the repository's `phrases/`), by name.
pub const BUILT_IN: [(&str, &str); 6] = [
    ("en.toml", include_str!("../../phrases/en.toml")),
    ("ru.toml", include_str!("../../phrases/ru.toml")),
    ("de.toml", include_str!("../../phrases/de.toml")),
    ("es.toml", include_str!("../../phrases/es.toml")),
    ("fr.toml", include_str!("../../phrases/fr.toml")),
    ("pt.toml", include_str!("../../phrases/pt.toml")),
];

impl Phrases {
    /// The built-in phrases.
    pub fn built_in() -> Phrases {
        Phrases::with_files(&[]).expect("the built-in phrase files are valid")
    }

    /// The built-in files, where a file of the same name in `files` (name, text) replaces
    /// one, and the other `files` added.
    pub fn with_files(files: &[(String, String)]) -> Result<Phrases, PhrasesError> {
        let mut phrases = Phrases::default();
        for (name, text) in BUILT_IN {
            if !files.iter().any(|(f, _)| f == name) {
                phrases.add(name, text)?;
            }
        }
        for (name, text) in files {
            phrases.add(name, text)?;
        }
        Ok(phrases)
    }

    /// Adds the phrases of one file (`name` for errors): checked whole, or nothing is added.
    pub fn add(&mut self, name: &str, text: &str) -> Result<(), PhrasesError> {
        let refuse = |reason: String| PhrasesError {
            file: name.to_string(),
            reason,
        };
        let mut file: LanguagePhrases = toml::from_str(text).map_err(|e| refuse(e.to_string()))?;
        if file.language.trim().is_empty() {
            return Err(refuse("no language".into()));
        }
        for list in file.lists_mut() {
            for phrase in list.iter_mut() {
                *phrase = phrase.trim().to_lowercase();
                if phrase.is_empty() {
                    return Err(refuse("an empty phrase".into()));
                }
            }
            // Longest first: "запомни, что" before "запомни".
            list.sort_by_key(|p| std::cmp::Reverse(p.chars().count()));
        }
        match self
            .languages
            .iter_mut()
            .find(|l| l.language == file.language)
        {
            Some(known) => {
                for (into, from) in known.lists_mut().into_iter().zip(file.lists_mut()) {
                    for phrase in from.drain(..) {
                        if !into.contains(&phrase) {
                            into.push(phrase);
                        }
                    }
                    into.sort_by_key(|p| std::cmp::Reverse(p.chars().count()));
                }
            }
            None => self.languages.push(file),
        }
        Ok(())
    }

    /// The topic-shift markers of every language.
    pub fn markers(&self) -> Vec<String> {
        self.languages
            .iter()
            .flat_map(|l| l.markers.iter().cloned())
            .collect()
    }

    /// The languages it has phrases for.
    pub fn languages(&self) -> Vec<&str> {
        self.languages.iter().map(|l| l.language.as_str()).collect()
    }

    /// What `text` (the bot's name already taken off) asks for by one of these phrases, if it
    /// opens with one: a fact to keep or take back, forget everything, yes or no. A question
    /// (ending with "?") keeps nothing.
    pub fn read(&self, text: &str) -> Option<Command> {
        let text = text.trim().trim_start_matches([',', ':', '!', ' ']);
        let whole = text.trim_end_matches(['.', '!', ' ']).to_lowercase();
        for l in &self.languages {
            if l.yes.contains(&whole) {
                return Some(Command::Confirm(true));
            }
            if l.no.contains(&whole) {
                return Some(Command::Confirm(false));
            }
            if l.forget_everything.contains(&whole) {
                return Some(Command::ForgetEverything {
                    subject: Subject::Speaker,
                });
            }
        }
        if text.trim_end().ends_with('?') {
            return None;
        }
        for l in &self.languages {
            if let Some(fact) = opened_by(text, &l.remember_everywhere) {
                return Some(Command::RememberEverywhere {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
        }
        for l in &self.languages {
            if let Some(fact) = opened_by(text, &l.remember) {
                return Some(Command::Remember {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
            if let Some(fact) = opened_by(text, &l.forget) {
                return Some(Command::Forget {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
        }
        None
    }
}

impl LanguagePhrases {
    fn lists_mut(&mut self) -> [&mut Vec<String>; 7] {
        [
            &mut self.markers,
            &mut self.remember,
            &mut self.remember_everywhere,
            &mut self.forget,
            &mut self.forget_everything,
            &mut self.yes,
            &mut self.no,
        ]
    }

    /// Who a fact is about: someone it names with @, else the speaker (in these languages a
    /// fact without a name is the speaker's own).
    fn subject_of(&self, fact: &str) -> Subject {
        let first = fact.split_whitespace().next().unwrap_or("");
        match first.strip_prefix('@') {
            Some(name) if !name.is_empty() => {
                Subject::Named(name.trim_end_matches([',', ':', '\'', '’']).to_string())
            }
            _ => Subject::Speaker,
        }
    }
}

/// The rest of `text` after the first of `phrases` that opens it (case aside, ending at a word
/// boundary), without the punctuation between; None when none does or nothing follows.
fn opened_by<'a>(text: &'a str, phrases: &[String]) -> Option<&'a str> {
    for phrase in phrases {
        let Some(len) = super::prefix_len_ignore_case(text, phrase) else {
            continue;
        };
        let rest = &text[len..];
        if rest.chars().next().is_some_and(char::is_alphanumeric) {
            continue;
        }
        let rest = rest
            .trim_start_matches([' ', ':', ',', '\t', '\n', '—', '-'])
            .trim();
        if !rest.is_empty() {
            return Some(rest);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(text: &str) -> Option<String> {
        match Phrases::built_in().read(text) {
            Some(Command::Remember {
                subject: Subject::Speaker,
                fact,
            }) => Some(fact),
            _ => None,
        }
    }

    fn takes_back(text: &str) -> Option<String> {
        match Phrases::built_in().read(text) {
            Some(Command::Forget {
                subject: Subject::Speaker,
                fact,
            }) => Some(fact),
            _ => None,
        }
    }

    #[test]
    fn capture_in_each_language() {
        for (said, fact) in [
            ("запомни, что я люблю зелёный чай", "я люблю зелёный чай"),
            ("Запомни: мой кот Мурзик", "мой кот Мурзик"),
            ("Merk dir, dass ich grünen Tee mag", "ich grünen Tee mag"),
            ("recuerda que me gusta el té verde", "me gusta el té verde"),
            ("Souviens-toi que j'aime le thé vert", "j'aime le thé vert"),
            ("lembre que eu gosto de chá verde", "eu gosto de chá verde"),
        ] {
            assert_eq!(keeps(said).as_deref(), Some(fact), "{said}");
        }
    }

    #[test]
    fn forget_in_each_language() {
        for (said, fact) in [
            ("забудь, что я люблю зелёный чай", "я люблю зелёный чай"),
            ("Vergiss, dass ich grünen Tee mag", "ich grünen Tee mag"),
            ("olvida que me gusta el té verde", "me gusta el té verde"),
            ("oublie que j'aime le thé vert", "j'aime le thé vert"),
            ("esqueça que eu gosto de chá verde", "eu gosto de chá verde"),
        ] {
            assert_eq!(takes_back(said).as_deref(), Some(fact), "{said}");
        }
    }

    #[test]
    fn answers_questions_and_chatter() {
        let p = Phrases::built_in();
        for yes in ["да", "Ja", "sí", "oui!", "sim"] {
            assert_eq!(p.read(yes), Some(Command::Confirm(true)), "{yes}");
        }
        for no in ["нет", "nein", "non", "não"] {
            assert_eq!(p.read(no), Some(Command::Confirm(false)), "{no}");
        }
        assert_eq!(
            p.read("забудь всё обо мне"),
            Some(Command::ForgetEverything {
                subject: Subject::Speaker
            })
        );
        // Positive controls above; these keep nothing: questions, chatter, a word that only
        // starts like a phrase, a phrase with nothing after it.
        for chatter in [
            "запомни, когда мы встречались?",
            "я люблю зелёный чай",
            "забудьте",
            "recuerdas el viaje",
            "da capo",
        ] {
            assert_eq!(p.read(chatter), None, "{chatter}");
        }
        assert!(matches!(
            p.read("запомни, что @bob играет в шахматы"),
            Some(Command::Remember {
                subject: Subject::Named(n),
                ..
            }) if n == "bob"
        ));
    }

    #[test]
    fn a_community_file_adds_lines_and_bad_files_are_refused() {
        let mut p = Phrases::built_in();
        assert_eq!(p.read("zapamatuj si, že mám rád čaj"), None);
        p.add(
            "cs.toml",
            "language = \"cs\"\nremember = [\"zapamatuj si, že\"]\n",
        )
        .unwrap();
        p.add(
            "ru-extra.toml",
            "language = \"ru\"\nremember = [\"зафиксируй\"]\n",
        )
        .unwrap();
        assert!(matches!(
            p.read("zapamatuj si, že mám rád čaj"),
            Some(Command::Remember { .. })
        ));
        assert!(matches!(
            p.read("зафиксируй: мой день рождения 5 мая"),
            Some(Command::Remember { .. })
        ));
        assert!(matches!(
            p.read("запомни, что я здесь"),
            Some(Command::Remember { .. })
        ));
        assert!(
            p.add("x.toml", "language = \"xx\"\nremmeber = [\"a\"]\n")
                .is_err()
        );
        assert!(p.add("y.toml", "remember = [\"a\"]\n").is_err());
        assert!(
            p.add("z.toml", "language = \"zz\"\nforget = [\" \"]\n")
                .is_err()
        );
    }
}
