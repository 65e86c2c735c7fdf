//! Mentions by account id as stored text holds them ("<@123>", "<@!123>": how the Discord
//! adapter writes a mention, and so how ingest stores it): finding them, and showing them by
//! name to a model or a person. Stored text keeps ids, so a renamed account still reads right.

use std::collections::HashMap;

/// How a mention of account `id` is written ("<@123>"; Discord also sends "<@!123>").
pub fn token(id: &str) -> String {
    format!("<@{id}>")
}

/// The account ids mentioned in `text` as "<@123>" or "<@!123>".
pub fn ids_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("<@") {
        rest = &rest[i + 2..];
        let body = rest.strip_prefix('!').unwrap_or(rest);
        let digits: String = body.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && body[digits.len()..].starts_with('>') && !out.contains(&digits) {
            out.push(digits);
        }
    }
    out
}

/// Whether `text` names an account: an "@name" or a Discord "<@id>".
pub fn names_an_account(text: &str) -> bool {
    text.split_whitespace().any(|w| w.starts_with('@')) || !ids_in(text).is_empty()
}

/// `text` with each known "<@id>" / "<@!id>" shown as "@name".
pub fn display(text: &str, names: &HashMap<String, String>) -> String {
    if names.is_empty() || !text.contains("<@") {
        return text.to_string();
    }
    let mut out = text.to_string();
    for id in ids_in(text) {
        if let Some(name) = names.get(&id) {
            let shown = format!("@{name}");
            out = out
                .replace(&format!("<@{id}>"), &shown)
                .replace(&format!("<@!{id}>"), &shown);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_show_names_and_stay_ids_elsewhere() {
        let names: HashMap<String, String> = [("123".to_string(), "Bob".to_string())]
            .into_iter()
            .collect();
        assert_eq!(ids_in("hi <@123> and <@!456>, <@x> <@789"), ["123", "456"]);
        assert_eq!(
            display("ask <@123> or <@!123>; <@456> is unknown", &names),
            "ask @Bob or @Bob; <@456> is unknown"
        );
    }
}
