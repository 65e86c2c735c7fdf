//! What is kept of an attachment, pure: whether a file is text-like, its text decoded (a
//! binary or broken file is not text), split by its structure (Markdown headings, CSV rows
//! under their header, paragraphs) into pieces of bounded size, a short extractive summary,
//! and the line the carrying message's text ends with ("[file#12 notes.md] …").

use crate::domain::attachment::{AttachmentKind, IncomingAttachment};

/// File name endings read as text.
const TEXT_ENDINGS: &[&str] = &[
    "txt", "md", "markdown", "csv", "tsv", "json", "jsonl", "yaml", "yml", "toml", "xml", "html",
    "htm", "log", "ini", "cfg", "conf", "rs", "py", "js", "ts", "go", "java", "kt", "c", "h",
    "cpp", "hpp", "cs", "rb", "php", "sh", "sql", "swift", "scala", "lua", "r", "tex",
];
/// Longest summary (characters).
const SUMMARY_CHARS: usize = 200;

/// Whether a file is read as text: a `text/*` type, a JSON/XML/YAML type, or a known ending.
pub fn is_text_like(name: &str, mime: Option<&str>) -> bool {
    let mime = mime.unwrap_or("").to_ascii_lowercase();
    if mime.starts_with("text/")
        || ["json", "xml", "yaml", "x-sh", "javascript", "sql", "toml"]
            .iter()
            .any(|t| mime.starts_with("application/") && mime.contains(t))
    {
        return true;
    }
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| TEXT_ENDINGS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// The text of a file's bytes: UTF-8 (a byte-order mark dropped), None when it is not text
/// (invalid UTF-8, NUL bytes or other control characters).
pub fn decode_text(bytes: &[u8]) -> Option<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).ok()?;
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return None;
    }
    Some(text.replace("\r\n", "\n"))
}

/// The blocks a text falls into by its structure: Markdown sections (a heading and what
/// follows), CSV/TSV rows (each under the header line), else paragraphs (blank lines).
fn blocks(text: &str, name: &str) -> Vec<String> {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => {
            let mut out: Vec<String> = Vec::new();
            for line in text.lines() {
                if line.starts_with('#') || out.is_empty() {
                    out.push(String::new());
                }
                let last = out.last_mut().expect("pushed above");
                last.push_str(line);
                last.push('\n');
            }
            out
        }
        "csv" | "tsv" => {
            let mut lines = text.lines();
            let header = lines.next().unwrap_or_default();
            lines.map(|row| format!("{header}\n{row}\n")).collect()
        }
        _ => text.split("\n\n").map(|p| format!("{p}\n\n")).collect(),
    }
}

/// `text` split by its structure into pieces of at most `max_chars` characters (blocks
/// packed together while they fit, a longer block cut at its last space that fits, or mid-word
/// when there is none), blank pieces dropped, at most `max_chunks`.
pub fn chunks(text: &str, name: &str, max_chars: usize, max_chunks: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let push = |piece: &mut String, out: &mut Vec<String>| {
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            out.push(trimmed.to_string());
        }
        piece.clear();
    };
    let is_csv =
        name.to_ascii_lowercase().ends_with(".csv") || name.to_ascii_lowercase().ends_with(".tsv");
    for block in blocks(text, name) {
        // CSV rows share their header: a piece holds it once, at its start.
        let row = match block.split_once('\n') {
            Some((_, row)) if is_csv => row.to_string(),
            _ => block.clone(),
        };
        let block = if current.is_empty() {
            block
        } else if current.chars().count() + row.chars().count() > max_chars {
            push(&mut current, &mut out);
            block
        } else {
            row
        };
        let mut rest = block.as_str();
        while rest.chars().count() > max_chars {
            // At the last space that keeps the piece within bounds, else mid-word.
            let end = rest
                .char_indices()
                .nth(max_chars)
                .map_or(rest.len(), |(i, _)| i);
            let cut = rest[..end]
                .rfind(char::is_whitespace)
                .filter(|&i| i > 0)
                .unwrap_or(end);
            let mut piece = rest[..cut].to_string();
            push(&mut piece, &mut out);
            rest = &rest[cut..];
        }
        current.push_str(rest);
    }
    push(&mut current, &mut out);
    out.truncate(max_chunks);
    out
}

/// The opening of a text, on one line: its summary without a model.
pub fn summary(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= SUMMARY_CHARS {
        return line;
    }
    line.chars().take(SUMMARY_CHARS - 1).collect::<String>() + "…"
}

/// What is kept of one attachment before it has an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// What the line says after the name: a summary, or why nothing was read.
    pub gist: String,
    /// The pieces of its text, stored and searched on their own.
    pub chunks: Vec<String>,
}

/// What can be kept of `a` without a model: a text-like file's text (summary and pieces), or
/// for anything else its name only; why nothing was read when the download failed or the
/// bytes are not text.
pub fn read(a: &IncomingAttachment, chunk_chars: usize, max_chunks: usize) -> Read {
    let bytes = match &a.content {
        Ok(b) => b,
        Err(why) => {
            return Read {
                gist: format!("not read: {why}"),
                chunks: Vec::new(),
            };
        }
    };
    match a.kind {
        AttachmentKind::File if is_text_like(&a.name, a.mime.as_deref()) => {
            match decode_text(bytes) {
                Some(text) => Read {
                    gist: summary(&text),
                    chunks: chunks(&text, &a.name, chunk_chars, max_chunks),
                },
                None => Read {
                    gist: "not read: not text".into(),
                    chunks: Vec::new(),
                },
            }
        }
        AttachmentKind::Voice => Read {
            gist: "voice note".into(),
            chunks: Vec::new(),
        },
        _ => Read {
            gist: String::new(),
            chunks: Vec::new(),
        },
    }
}

/// The line for an attachment in its message's text: kind, id (when it was kept), name, gist.
pub fn line(kind: AttachmentKind, id: Option<i64>, name: &str, gist: &str) -> String {
    let tag = match id {
        Some(id) => format!("[{}#{id} {name}]", kind.as_str()),
        None => format!("[{} {name}]", kind.as_str()),
    };
    if gist.is_empty() {
        tag
    } else {
        format!("{tag} {gist}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn text_files_are_known_by_type_or_ending() {
        assert!(is_text_like("notes.MD", None));
        assert!(is_text_like("data", Some("application/json")));
        assert!(is_text_like("x.bin", Some("text/plain")));
        assert!(!is_text_like("photo.jpg", Some("image/jpeg")));
        assert!(!is_text_like("report.pdf", Some("application/pdf")));
    }

    #[test]
    fn binary_is_not_text() {
        assert_eq!(
            decode_text(b"\xEF\xBB\xBFhello\r\nworld").as_deref(),
            Some("hello\nworld")
        );
        assert_eq!(decode_text(b"\x89PNG\r\n\x1a\n\0\0"), None);
        assert_eq!(decode_text(&[0xff, 0xfe, 0x41]), None);
    }

    #[test]
    fn markdown_splits_at_headings_and_csv_keeps_its_header() {
        let md = "# Setup\ninstall it\n\n# Errors\nImportError: no module named foo\n";
        assert_eq!(
            chunks(md, "n.md", 50, 10),
            vec![
                "# Setup\ninstall it",
                "# Errors\nImportError: no module named foo"
            ]
        );
        let csv = "name,city\nana,Lisbon\nben,Porto\ncarl,Faro\n";
        let pieces = chunks(csv, "people.csv", 32, 10);
        assert!(pieces.len() >= 2, "{pieces:?}");
        assert!(
            pieces.iter().all(|p| p.starts_with("name,city\n")),
            "{pieces:?}"
        );
        assert_eq!(chunks(csv, "people.csv", 1000, 10), vec![csv.trim()]);
    }

    proptest! {
        #[test]
        fn chunks_are_bounded_and_keep_every_word(text in "\\PC{0,2000}", max in 1usize..300) {
            let pieces = chunks(&text, "a.txt", max, usize::MAX);
            for p in &pieces {
                prop_assert!(p.chars().count() <= max);
                prop_assert!(!p.trim().is_empty());
            }
            // Only whitespace is lost at the cuts: every other character is kept, in order.
            let kept: String = pieces.concat().chars().filter(|c| !c.is_whitespace()).collect();
            let given: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            prop_assert_eq!(kept, given);
        }

        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..500)) {
            let a = IncomingAttachment {
                kind: AttachmentKind::File,
                name: "x.md".into(),
                mime: None,
                content: Ok(bytes),
            };
            let r = read(&a, 50, 5);
            prop_assert!(r.chunks.len() <= 5);
        }
    }
}
