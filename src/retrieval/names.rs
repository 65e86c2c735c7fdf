//! Who a question names, and the question as the named person would ask it. Messages do not
//! carry their author's name ("I adopted a pup"), questions do ("What did James adopt?"): the
//! name goes to the author side of the ranking, and the vector side searches with the question
//! in the first person ("What did I adopt?"). Pure functions.

use crate::domain::PersonId;
use crate::store::{is_stop_word, plain_words};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The shortest name word matched: shorter ones ("Al", "Jo") are too often other words.
const MIN_NAME_CHARS: usize = 3;

/// Names of people that are ordinary words too: a question's "may" or "hope" names no one.
/// (Stop words such as "will" never name anyone either: `is_stop_word`.)
const COMMON_WORDS: &[&str] = &[
    "may", "bill", "mark", "rose", "pat", "art", "sue", "joy", "hope", "grace", "faith", "jack",
    "rob", "sky", "ray", "dawn", "summer", "april", "june", "august",
];

/// The words of a display name that can name its person in a question.
fn name_words(name: &str) -> impl Iterator<Item = String> + '_ {
    plain_words(name).into_iter().filter(|w| {
        w.chars().count() >= MIN_NAME_CHARS
            && w.chars().any(char::is_alphabetic)
            && !is_stop_word(w)
            && !COMMON_WORDS.contains(&w.as_str())
    })
}

/// The people among `authors` (id and display name) whose name has a word of `question`, with
/// the words that matched. Names are matched whole and case-blind ("john" and "John's" name
/// John).
pub fn named<'a>(
    question: &str,
    authors: impl IntoIterator<Item = (PersonId, &'a str)>,
) -> HashMap<PersonId, BTreeSet<String>> {
    let asked: HashSet<String> = plain_words(question).into_iter().collect();
    let mut out: HashMap<PersonId, BTreeSet<String>> = HashMap::new();
    for (person, name) in authors {
        for w in name_words(name).filter(|w| asked.contains(w)) {
            out.entry(person).or_default().insert(w);
        }
    }
    out
}

/// Authors as `named` takes them, from (id, display name) pairs.
pub fn of(authors: &[(PersonId, String)]) -> impl Iterator<Item = (PersonId, &str)> {
    authors.iter().map(|(p, n)| (*p, n.as_str()))
}

/// `question` with each run of the `names` words said in the first person: "James's" and
/// "James'" become "my", "James" and "John Smith" become "I". Everything else is kept as it
/// was written.
pub fn in_first_person(question: &str, names: &BTreeSet<String>) -> String {
    if names.is_empty() {
        return question.to_string();
    }
    let tokens = tokens(question);
    let is_name = |t: &Token| matches!(t, Token::Word(w) if names.contains(&w.to_lowercase()));
    let mut out = String::with_capacity(question.len());
    let mut i = 0;
    while i < tokens.len() {
        if !is_name(&tokens[i]) {
            out.push_str(tokens[i].text());
            i += 1;
            continue;
        }
        // A run of name words apart only by spaces is one person ("John Smith").
        let mut last = i;
        while let (Some(Token::Gap(g)), Some(next)) = (tokens.get(last + 1), tokens.get(last + 2)) {
            if g.chars().all(|c| c == ' ') && is_name(next) {
                last += 2;
            } else {
                break;
            }
        }
        let name = tokens[last].text();
        let after = tokens.get(last + 1).map(Token::text).unwrap_or("");
        let apostrophe = after.starts_with(['\'', '’']);
        let apostrophe_len = after.chars().next().map_or(0, char::len_utf8);
        let s_follows =
            matches!(tokens.get(last + 2), Some(Token::Word(w)) if w.eq_ignore_ascii_case("s"));
        if apostrophe && after.len() == apostrophe_len && s_follows {
            // "James's": the apostrophe and the s go.
            out.push_str("my");
            i = last + 3;
        } else if apostrophe && name.ends_with(['s', 'S']) && !s_follows {
            // "James'": the apostrophe goes, what follows it stays.
            out.push_str("my");
            out.push_str(&after[apostrophe_len..]);
            i = last + 2;
        } else {
            out.push('I');
            i = last + 1;
        }
    }
    out
}

/// A piece of text: a run of letters and digits, or of anything else.
enum Token<'a> {
    Word(&'a str),
    Gap(&'a str),
}

impl<'a> Token<'a> {
    fn text(&self) -> &'a str {
        match self {
            Token::Word(t) | Token::Gap(t) => t,
        }
    }
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(first) = rest.chars().next() {
        let word = first.is_alphanumeric();
        let len = rest
            .find(|c: char| c.is_alphanumeric() != word)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(len);
        out.push(if word {
            Token::Word(piece)
        } else {
            Token::Gap(piece)
        });
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn finds_the_people_a_question_names() {
        let (john, james, will) = (PersonId(1), PersonId(2), PersonId(3));
        let authors = [(john, "John Smith"), (james, "James"), (will, "Will")];
        let found = named("What did john say about James's dogs?", authors);
        assert_eq!(found[&john], set(&["john"]));
        assert_eq!(found[&james], set(&["james"]));
        // A name that is a common word names no one; neither does a part of another word.
        assert!(!found.contains_key(&will));
        assert!(named("Will you tell me about Johnny?", authors).is_empty());
        assert!(named("", authors).is_empty());
    }

    #[test]
    fn says_the_question_in_the_first_person() {
        let names = set(&["james", "john", "smith"]);
        assert_eq!(
            in_first_person("What did James adopt in April?", &names),
            "What did I adopt in April?"
        );
        assert_eq!(
            in_first_person("What is James's dog called? And James' cat?", &names),
            "What is my dog called? And my cat?"
        );
        assert_eq!(
            in_first_person("Where did John Smith go?", &names),
            "Where did I go?"
        );
        assert_eq!(
            in_first_person("Did John and James meet?", &names),
            "Did I and I meet?"
        );
        assert_eq!(
            in_first_person("John Smith's new job", &names),
            "my new job"
        );
        // Only whole words: "Johnson" stays.
        assert_eq!(in_first_person("Johnson, James", &names), "Johnson, I");
        assert_eq!(in_first_person("no names here", &names), "no names here");
        assert_eq!(in_first_person("", &names), "");
        assert_eq!(in_first_person("James", &BTreeSet::new()), "James");
    }
}
