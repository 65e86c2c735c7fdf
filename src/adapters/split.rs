//! Splitting a reply into platform-sized messages (Discord 2,000 characters, Telegram 4,096
//! UTF-16 units), for every adapter: cuts fall between paragraphs, then lines, then words,
//! never inside a word unless one word alone is too long, and a code block cut in two is
//! closed at the end of one part and opened again (same language) at the start of the next.

/// How a platform counts the length of a text.
pub type Units = fn(&str) -> usize;

/// Discord counts characters.
pub fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Telegram counts UTF-16 code units (an emoji is often two).
pub fn utf16(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `text` cut to at most `max` characters, an ellipsis marking a cut (for a short
/// description a platform takes only so long: a command menu's).
pub fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

const FENCE: &str = "```";
const CLOSE: &str = "\n```";

/// `text` in parts of at most `max` units each (`max` of at least 16), in order.
pub fn split_message(text: &str, max: usize, units: Units) -> Vec<String> {
    let max = max.max(16);
    let mut out = Vec::new();
    let mut rest = text.trim();
    // The opening fence line ("```rust") of a code block the previous part had to cut.
    let mut reopen: Option<String> = None;
    while !rest.is_empty() {
        let mut prefix = reopen.take().map(|h| h + "\n").unwrap_or_default();
        if units(&prefix) > max / 2 {
            // A fence line too long to repeat: the block reopens without its language.
            prefix = format!("{FENCE}\n");
        }
        // `max` is at least 16 and the prefix at most half of it: room is left for text and
        // a closing fence, and no part is longer than `max`.
        let budget = max - units(&prefix);
        if units(rest) <= budget {
            out.push(prefix + rest);
            break;
        }
        // Room for a closing fence, should this part end inside a code block.
        let hard = prefix_within(rest, budget.saturating_sub(units(CLOSE)), units);
        let window = &rest[..hard];
        let mut cut = best_cut(window).unwrap_or(hard);
        let open_before = fences(&prefix) % 2 == 1;
        let mut inside = (fences(&prefix) + fences(&rest[..cut])) % 2 == 1;
        if inside
            && !open_before
            && let Some(start) = last_fence_line(&rest[..cut])
            && start > 0
        {
            // The block opened in this part: it starts the next one instead.
            cut = start;
            inside = false;
        }
        let mut part = prefix + rest[..cut].trim_end();
        if inside {
            let header = last_fence_header(&part).unwrap_or(FENCE.to_string());
            part.push_str(CLOSE);
            reopen = Some(header);
        }
        out.push(part);
        rest = rest[cut..].trim_start_matches([' ', '\n', '\r']);
        if reopen.is_none() {
            rest = rest.trim_start();
        }
    }
    out
}

/// The longest prefix of `text` (a char boundary) of at most `max` units; at least one char.
fn prefix_within(text: &str, max: usize, units: Units) -> usize {
    let mut end = 0;
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let mut buf = [0u8; 4];
        let n = units(c.encode_utf8(&mut buf));
        if used + n > max {
            break;
        }
        used += n;
        end = i + c.len_utf8();
    }
    if end == 0 {
        text.chars().next().map_or(0, char::len_utf8)
    } else {
        end
    }
}

/// Where to cut `window`: after its last paragraph break, else its last line break, else its
/// last space; None when it is one unbroken word.
fn best_cut(window: &str) -> Option<usize> {
    for sep in ["\n\n", "\n", " "] {
        if let Some(i) = window.rfind(sep)
            && i > 0
        {
            return Some(i + sep.len());
        }
    }
    None
}

fn fences(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with(FENCE))
        .count()
}

/// Byte offset of the start of the last fence line in `text`.
fn last_fence_line(text: &str) -> Option<usize> {
    let mut offset = 0;
    let mut found = None;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with(FENCE) {
            found = Some(offset);
        }
        offset += line.len();
    }
    found
}

/// The last opening fence line ("```rust") of `text`.
fn last_fence_header(text: &str) -> Option<String> {
    let mut open = None;
    for line in text.lines().filter(|l| l.trim_start().starts_with(FENCE)) {
        open = match open {
            None => Some(line.trim().to_string()),
            Some(_) => None,
        };
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(parts: &[String]) -> Vec<String> {
        parts
            .iter()
            .flat_map(|p| p.split_whitespace().map(str::to_string))
            .filter(|w| w != FENCE && !w.starts_with(FENCE))
            .collect()
    }

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split_message("hello there", 2000, chars), ["hello there"]);
        assert!(split_message("   ", 2000, chars).is_empty());
    }

    #[test]
    fn parts_fit_and_no_word_is_broken() {
        let text = (0..3000)
            .map(|i| format!("word{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        for (max, units) in [(2000, chars as Units), (4096, utf16 as Units)] {
            let parts = split_message(&text, max, units);
            assert!(parts.len() > 1);
            assert!(parts.iter().all(|p| units(p) <= max));
            assert_eq!(words(&parts), text.split(' ').collect::<Vec<_>>());
        }
    }

    #[test]
    fn paragraphs_are_preferred_cut_points() {
        let para = "a ".repeat(600);
        let text = format!("{para}\n\n{para}\n\n{para}");
        // Two paragraphs would fit in 2,000 only by cutting the second one: each goes whole.
        let parts = split_message(&text, 2000, chars);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.matches('a').count() == 600));
    }

    #[test]
    fn shortened_texts_fit_and_say_so() {
        assert_eq!(shortened("short", 10), "short");
        assert_eq!(shortened("exactly10!", 10), "exactly10!");
        assert_eq!(shortened("one two three", 8), "one two…");
        let cyrillic = shortened(&"ё".repeat(300), 256);
        assert_eq!(cyrillic.chars().count(), 256);
        assert!(cyrillic.ends_with('…'));
    }

    #[test]
    fn telegram_counts_utf16_units() {
        let text = "🦀 ".repeat(3000);
        let parts = split_message(&text, 4096, utf16);
        assert!(parts.iter().all(|p| utf16(p) <= 4096));
        assert_eq!(
            parts.iter().map(|p| p.matches('🦀').count()).sum::<usize>(),
            3000
        );
    }

    #[test]
    fn one_huge_word_is_cut_hard() {
        let text = "x".repeat(4500);
        let parts = split_message(&text, 2000, chars);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.concat(), text);
    }

    #[test]
    fn code_blocks_are_closed_and_reopened() {
        let code: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here is the code:\n```rust\n{code}```\nThat's all.");
        let parts = split_message(&text, 2000, chars);
        assert!(parts.len() > 1);
        for p in &parts {
            assert!(chars(p) <= 2000, "{}", chars(p));
            assert_eq!(fences(p) % 2, 0, "unbalanced fences in part:\n{p}");
        }
        // The code block starts a part of its own, and continues in rust.
        assert_eq!(parts[0], "Here is the code:");
        assert!(parts[1].starts_with("```rust\n"));
        assert!(parts[2].starts_with("```rust\n"));
        let lines: Vec<&str> = parts
            .iter()
            .flat_map(|p| p.lines())
            .filter(|l| l.starts_with("let "))
            .collect();
        assert_eq!(lines.len(), 200);
        assert!(parts.last().unwrap().ends_with("That's all."));
    }
}
