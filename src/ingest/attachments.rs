//! What is kept of an attachment, pure: whether a file is text-like, its text decoded (a
//! binary or broken file is not text), split by its structure (Markdown headings, CSV rows
//! under their header, paragraphs) into pieces of bounded size, a short extractive summary,
//! the line the carrying message's text ends with ("[file#12 notes.md] …"), and whether an
//! edit leaves a message with files as it was.

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

/// Longest CSV header repeated at the start of each piece (characters); a longer first line
/// is a row like the others.
const MAX_HEADER: usize = 300;

/// The blocks a text falls into by its structure: Markdown sections (a heading and what
/// follows), CSV/TSV rows (the header apart: `csv_header`), else paragraphs (blank lines).
fn blocks<'a>(text: &'a str, ext: &str, header: Option<&str>) -> Vec<&'a str> {
    match ext {
        "md" | "markdown" => {
            let mut out = Vec::new();
            let mut start = 0;
            for (i, _) in text.match_indices('\n') {
                if text[i + 1..].starts_with('#') {
                    out.push(&text[start..=i]);
                    start = i + 1;
                }
            }
            out.push(&text[start..]);
            out
        }
        "csv" | "tsv" => {
            let skip = usize::from(header.is_some());
            text.split_inclusive('\n').skip(skip).collect()
        }
        _ => text.split_inclusive("\n\n").collect(),
    }
}

/// `text` split by its structure into pieces of at most `max_chars` characters (blocks
/// packed together while they fit, a longer block cut at its last space that fits, or mid-word
/// when there is none; a CSV's header starts every piece), blank pieces dropped, at most
/// `max_chunks`: the work stops there, whatever the size of the text.
pub fn chunks(text: &str, name: &str, max_chars: usize, max_chunks: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let header = matches!(ext.as_str(), "csv" | "tsv")
        .then(|| text.lines().next())
        .flatten()
        .filter(|h| !h.trim().is_empty() && h.chars().count() <= MAX_HEADER.min(max_chars / 2));
    let start = |current: &mut String| {
        current.clear();
        if let Some(h) = header {
            current.push_str(h);
            current.push('\n');
        }
        current.chars().count()
    };
    let mut out: Vec<String> = Vec::new();
    let push = |piece: &str, out: &mut Vec<String>| {
        let trimmed = piece.trim();
        if !trimmed.is_empty() && Some(trimmed) != header.map(str::trim) {
            out.push(trimmed.to_string());
        }
    };
    let mut current = String::new();
    let mut used = start(&mut current);
    let fresh = used;
    for block in blocks(text, &ext, header) {
        let mut rest = block;
        while !rest.is_empty() && out.len() < max_chunks {
            let room = max_chars.saturating_sub(used);
            match rest.char_indices().nth(room).map(|(i, _)| i) {
                // It fits whole.
                None => {
                    used += rest.chars().count();
                    current.push_str(rest);
                    rest = "";
                }
                // The piece has something already: the block starts the next one.
                Some(_) if used > fresh => {
                    push(&current, &mut out);
                    used = start(&mut current);
                }
                // Too long for a piece of its own: cut at its last space that fits.
                Some(end) => {
                    let cut = rest[..end]
                        .rfind(char::is_whitespace)
                        .filter(|&i| i > 0)
                        .unwrap_or(end)
                        .max(rest.chars().next().map_or(1, char::len_utf8));
                    current.push_str(&rest[..cut]);
                    push(&current, &mut out);
                    used = start(&mut current);
                    rest = &rest[cut..];
                }
            }
        }
        if out.len() >= max_chunks {
            break;
        }
    }
    if out.len() < max_chunks {
        push(&current, &mut out);
    }
    out.truncate(max_chunks);
    out
}

/// The opening of a text, on one line: its summary without a model.
pub fn summary(text: &str) -> String {
    one_line(text, SUMMARY_CHARS)
}

/// `text` on one line (runs of whitespace, newlines among them, folded to one space), at
/// most `max` characters (cut with "…").
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    line.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
}

/// Whether a file is a PDF (by type or ending).
pub fn is_pdf(name: &str, mime: Option<&str>) -> bool {
    mime.is_some_and(|m| m.eq_ignore_ascii_case("application/pdf"))
        || name.to_ascii_lowercase().ends_with(".pdf")
}

/// The text of a PDF, its pages apart; why not when it has none or cannot be read. The
/// extractor can panic on a broken file (caught: unreadable), and crash, hang or exhaust
/// memory on a hostile one: only the child process of `pdf::PdfReader` calls it.
pub fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| "not a readable PDF".to_string())?
        .map_err(|_| "not a readable PDF".to_string())?;
    let text = pages
        .iter()
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if text.is_empty() {
        return Err("no text in the PDF".into());
    }
    Ok(text)
}

/// What is kept of one attachment before it has an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// What the line says after the name: a summary, or why nothing was read.
    pub gist: String,
    /// The pieces of its text, stored and searched on their own.
    pub chunks: Vec<String>,
}

/// What can be kept of `a` without a model: a text-like file's text, or a PDF's (`pdf`, read
/// beforehand by `pdf_text`), as summary and pieces; for anything else its name only; why
/// nothing was read when the download failed or the bytes are not text.
pub fn read(
    a: &IncomingAttachment,
    pdf: Option<Result<String, String>>,
    chunk_chars: usize,
    max_chunks: usize,
) -> Read {
    let bytes = match &a.content {
        Ok(b) => b,
        Err(why) => {
            return Read {
                gist: format!("not read: {why}"),
                chunks: Vec::new(),
            };
        }
    };
    match (a.kind, pdf) {
        (_, Some(Ok(text))) => {
            return Read {
                gist: summary(&text),
                chunks: chunks(&text, "text.txt", chunk_chars, max_chunks),
            };
        }
        (_, Some(Err(why))) => {
            return Read {
                gist: format!("not read: {why}"),
                chunks: Vec::new(),
            };
        }
        _ => {}
    }
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

/// A file name as lines show it: no control characters or brackets, at most 100 characters.
pub fn clean_name(name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '[' | ']'))
        .take(100)
        .collect();
    let name = name.trim();
    if name.is_empty() {
        "file".into()
    } else {
        name.to_string()
    }
}

/// A file name as kept: secrets and link codes taken out (as of any text kept), then
/// `clean_name`.
pub fn kept_name(name: &str) -> String {
    clean_name(&super::stored_form(name))
}

/// SHA-256 of a file's bytes, hex: what a file is kept once by.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// Whether an edit leaves a stored message as it was (a platform also sends an update for a
/// pin or a resolved link preview): the author's own text (`stored_text` without its files'
/// lines) is `edited_text`, and the files are the same: none new among `incoming`, and each
/// of `kept` carried again or in a file that could not be fetched this time (a failed
/// download on a pin keeps what was kept).
pub fn unchanged(
    stored_text: &str,
    kept: &[crate::store::AttachmentRecord],
    edited_text: &str,
    incoming: &[IncomingAttachment],
) -> bool {
    let ids: Vec<i64> = kept.iter().map(|a| a.id).collect();
    let not_read: Vec<String> = incoming
        .iter()
        .filter_map(|a| {
            let why = a.content.as_ref().err()?;
            Some(line(
                a.kind,
                None,
                &kept_name(&a.name),
                &format!("not read: {why}"),
            ))
        })
        .collect();
    let (own, lineless) = own_text(stored_text, &ids, &not_read);
    let stored: std::collections::BTreeSet<&str> = kept.iter().map(|a| a.sha256.as_str()).collect();
    let carried: std::collections::BTreeSet<String> = incoming
        .iter()
        .filter_map(|a| a.content.as_deref().ok())
        .map(sha256_hex)
        .collect();
    own == edited_text
        && lineless == 0
        && carried.iter().all(|h| stored.contains(h.as_str()))
        && stored.len() <= carried.len() + not_read.len()
}

/// The part of a stored message's text its author wrote: without the lines its files added
/// at the end, each at most once: one per file kept (`kept`: its id, "[file#12 …", whatever
/// kind the line names) and one per line of a file not read (`not_read`, whole: "[file
/// big.txt] not read: …"). A line the author typed to look like one stays theirs. Also says
/// how many of `kept` had no line.
fn own_text<'a>(stored: &'a str, kept: &[i64], not_read: &[String]) -> (&'a str, usize) {
    let mut kept: Vec<i64> = kept.to_vec();
    let mut not_read: Vec<&str> = not_read.iter().map(String::as_str).collect();
    let mut is_line = |l: &str| {
        let id = line_id(l);
        if let Some(i) = kept.iter().position(|k| Some(*k) == id) {
            kept.swap_remove(i);
            true
        } else if let Some(i) = not_read.iter().position(|line| *line == l) {
            not_read.swap_remove(i);
            true
        } else {
            false
        }
    };
    let mut own = stored;
    loop {
        match own.rsplit_once('\n') {
            Some((head, last)) if is_line(last) => own = head,
            None if is_line(own) => {
                own = "";
                break;
            }
            _ => break,
        }
    }
    (own, kept.len())
}

/// The id of the kept file a line names ("[file#12 notes.md] …": 12).
fn line_id(line: &str) -> Option<i64> {
    line.strip_prefix('[')
        .and_then(|l| l.split_once(' '))
        .and_then(|(tag, _)| tag.split_once('#'))
        .and_then(|(_, id)| id.parse::<i64>().ok())
}

/// `text` (a stored message's) with each line of kept file `id` ("[image#12 shot.png]", the
/// same file may come twice under two names) saying `gist` after its name, looked for among
/// its last `files` lines (one per file it carries: the author's own text before them is
/// never touched); None when there is no such line.
pub fn with_gist(text: &str, id: i64, gist: &str, files: usize) -> Option<String> {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let first = lines.len().saturating_sub(files);
    let mut found = false;
    for l in &mut lines[first..] {
        if line_id(l) != Some(id) {
            continue;
        }
        // Names have no brackets (`clean_name`): the tag ends at the first ']'.
        let Some(end) = l.find(']') else { continue };
        *l = if gist.is_empty() {
            l[..=end].to_string()
        } else {
            format!("{} {gist}", &l[..=end])
        };
        found = true;
    }
    found.then(|| lines.join("\n"))
}

/// Whether `text` (a stored message's) has a line of kept file `id` that says nothing yet
/// after its name ("[image#12 shot.png]", "[voice#14 voice.ogg] voice note"): what a model was
/// to describe, and did not (a stop cut it off, or it failed).
pub fn is_bare(text: &str, id: i64) -> bool {
    text.split('\n').any(|l| {
        line_id(l) == Some(id)
            && l.find(']')
                .is_some_and(|end| matches!(l[end + 1..].trim(), "" | "voice note"))
    })
}

/// A piece of what was read or made of kept file `id`, as stored on its own: "[file#12
/// notes.md, part 2/5] …", "[image#13 shot.png, text] …".
pub fn piece(kind: AttachmentKind, id: i64, name: &str, label: &str, text: &str) -> String {
    format!("[{}#{id} {name}, {label}] {text}", kind.as_str())
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

/// A one-page PDF showing `text` in Helvetica, with a correct cross-reference table (what a
/// test attaches).
#[cfg(any(test, feature = "test-util"))]
pub fn pdf_with(text: &str) -> Vec<u8> {
    let stream = format!("BT /F1 18 Tf 72 700 Td ({text}) Tj ET");
    pdf_of(&[
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_string(),
    ])
}

/// A one-page PDF whose page draws `depth` levels of forms, each drawing the next twice
/// (2^`depth` draws from a file of a few hundred bytes), the last drawing the first again
/// when `looped` (without end): what a hostile member attaches.
#[cfg(any(test, feature = "test-util"))]
pub fn pdf_drawing_forms(depth: usize, looped: bool) -> Vec<u8> {
    let form = |draws: &str, next: usize| {
        format!(
            "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X {next} 0 R >> >> /Length {} >>\nstream\n{draws}\nendstream",
            draws.len()
        )
    };
    let draw = "/X Do";
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /X 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{draw}\nendstream", draw.len()),
    ];
    for level in 0..depth.max(1) {
        let id = 5 + level;
        let last = level + 1 == depth.max(1);
        match (last, looped) {
            (true, true) => objects.push(form(draw, 5)),
            (true, false) => objects.push("<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Length 0 >>\nstream\n\nendstream".to_string()),
            (false, _) => objects.push(form("/X Do /X Do", id + 1)),
        }
    }
    pdf_of(&objects)
}

/// A one-page PDF showing `text`, whose content stream is compressed (FlateDecode) and
/// inflates to `size` bytes (the text, then spaces): a few hundred KiB that inflate to
/// gigabytes is what a hostile member attaches.
#[cfg(any(test, feature = "test-util"))]
pub fn pdf_inflating_to(text: &str, size: usize) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let shown = format!("BT /F1 18 Tf 72 700 Td ({text}) Tj ET\n");
    z.write_all(shown.as_bytes()).expect("in memory");
    let spaces = vec![b' '; 1 << 20];
    let mut left = size.saturating_sub(shown.len());
    while left > 0 {
        let n = left.min(spaces.len());
        z.write_all(&spaces[..n]).expect("in memory");
        left -= n;
    }
    let stream = z.finish().expect("in memory");
    let mut contents = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        stream.len()
    )
    .into_bytes();
    contents.extend(stream);
    contents.extend(b"\nendstream");
    pdf_of_bytes(vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        contents,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_vec(),
    ])
}

/// A PDF of these objects (numbered from 1, the first the catalog), with a correct
/// cross-reference table.
#[cfg(any(test, feature = "test-util"))]
fn pdf_of(objects: &[String]) -> Vec<u8> {
    pdf_of_bytes(objects.iter().map(|o| o.as_bytes().to_vec()).collect())
}

/// `pdf_of` for objects that are bytes (a compressed stream).
#[cfg(any(test, feature = "test-util"))]
fn pdf_of_bytes(objects: Vec<Vec<u8>>) -> Vec<u8> {
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n", i + 1).bytes());
        pdf.extend(o);
        pdf.extend(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for o in offsets {
        pdf.extend(format!("{o:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    pdf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_text_leaves_out_the_lines_of_the_files() {
        let kept = [12, 13];
        let huge = vec!["[file huge.log] not read: too large (9 bytes)".to_string()];
        let stored = "notes from today\n[file#12 standup.md] # Standup Ship it\n[image#13 shot.png]\n[file huge.log] not read: too large (9 bytes)";
        assert_eq!(own_text(stored, &kept, &huge), ("notes from today", 0));
        // Only files: no text of the author's; a kept file without a line is counted.
        assert_eq!(own_text("[image#13 shot.png]", &kept, &[]), ("", 1));
        // The kind a line names does not matter (a file is kept once, as the kind it first
        // came as).
        assert_eq!(own_text("x\n[file#13 shot.png]", &[13], &[]), ("x", 0));
        // Lines that only look like a file's are the author's: another id, a file not read
        // that the edit does not carry, a second line for one file.
        for typed in [
            "see\n[file#99 x.md] fake",
            "see\n[file huge.log] not read: too large (9 bytes)",
            "see\n[image#13 typed by hand]",
        ] {
            let with_file = format!("{typed}\n[image#13 shot.png]");
            assert_eq!(own_text(&with_file, &kept, &[]), (typed, 1));
        }
        assert_eq!(
            own_text("two lines\nof text", &kept, &huge),
            ("two lines\nof text", 2)
        );
        assert_eq!(own_text("", &kept, &huge), ("", 2));
    }
    use proptest::prelude::*;

    #[test]
    fn a_line_is_bare_until_a_model_said_something() {
        let text =
            "look\n[image#12 shot.png]\n[voice#14 voice.ogg] voice note\n[image#15 b.png] a cat";
        assert!(is_bare(text, 12));
        assert!(is_bare(text, 14));
        assert!(!is_bare(text, 15), "described");
        assert!(!is_bare(text, 13), "no such line");
        assert!(!is_bare("[voice#14 voice.ogg] voice note: buy milk", 14));
        assert!(!is_bare("", 1));
    }

    #[test]
    fn a_files_line_is_replaced_and_the_authors_text_never() {
        let stored = "see [image#13 typed]\n[image#13 shot.png]\n[file#14 a.md] # A";
        assert_eq!(
            with_gist(stored, 13, "a cat", 2).as_deref(),
            Some("see [image#13 typed]\n[image#13 shot.png] a cat\n[file#14 a.md] # A")
        );
        // Again: the gist is replaced, not added to.
        let twice = with_gist(stored, 13, "a cat", 2).unwrap();
        assert_eq!(
            with_gist(&twice, 13, "a dog", 2),
            with_gist(stored, 13, "a dog", 2)
        );
        // The same file twice under two names: each line keeps its name.
        assert_eq!(
            with_gist("[image#13 a.png]\n[image#13 b.png]", 13, "a cat", 2).as_deref(),
            Some("[image#13 a.png] a cat\n[image#13 b.png] a cat")
        );
        // A line the author typed before the files' lines is theirs.
        assert_eq!(
            with_gist("[image#13 typed]\nhello\n[file#14 a.md]", 13, "x", 1),
            None
        );
        assert_eq!(with_gist(stored, 99, "x", 2), None);
        assert_eq!(with_gist(stored, 13, "x", 0), None);
    }

    #[test]
    fn a_kept_name_has_no_secret_and_no_brackets() {
        assert_eq!(kept_name("notes [draft].md"), "notes draft.md");
        let name = kept_name("key sk-proj-AbCdEfGhIjKlMnOpQrStUv12.txt");
        assert!(!name.contains("AbCdEf"), "{name}");
        // What took its place has no brackets: the file's line stays one tag.
        assert!(
            !name.contains(['[', ']']) && name.starts_with("key "),
            "{name}"
        );
        assert_eq!(kept_name("[]"), "file");
    }

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
        // Work stops at max_chunks, and a huge header is not copied into every row.
        let many = format!("a,b\n{}", "1,2\n".repeat(200_000));
        let pieces = chunks(&many, "x.csv", 50, 5);
        assert_eq!(pieces.len(), 5);
        assert!(
            pieces.iter().all(|p| p.starts_with("a,b\n1,2")),
            "{pieces:?}"
        );
        let hostile = format!("{}\n{}", "h".repeat(2_000_000), "\n".repeat(2_000_000));
        assert!(chunks(&hostile, "x.csv", 100, 3).len() <= 3);
    }

    #[test]
    fn a_pdf_gives_its_text_and_a_broken_one_a_reason() {
        let text = pdf_text(&pdf_with("Quarterly report: frobnicate the widgets")).unwrap();
        assert!(text.contains("frobnicate the widgets"), "{text}");
        assert_eq!(
            pdf_text(b"%PDF-1.4 nothing here"),
            Err("not a readable PDF".into())
        );
        assert!(is_pdf("Report.PDF", None) && is_pdf("x", Some("application/pdf")));
        let a = IncomingAttachment {
            kind: AttachmentKind::File,
            name: "report.pdf".into(),
            mime: Some("application/pdf".into()),
            content: Ok(pdf_with("Quarterly report: frobnicate the widgets")),
        };
        let r = read(&a, Some(Ok(text)), 1200, 20);
        assert!(r.gist.contains("frobnicate"), "{r:?}");
        assert_eq!(r.chunks.len(), 1);
        let r = read(&a, Some(Err("not a readable PDF".into())), 1200, 20);
        assert_eq!(r.gist, "not read: not a readable PDF");
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
        fn any_bytes_as_a_pdf_give_text_or_a_reason(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut b = b"%PDF-1.4\n".to_vec();
            b.extend(bytes);
            let _ = pdf_text(&b);
        }

        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..500)) {
            let a = IncomingAttachment {
                kind: AttachmentKind::File,
                name: "x.md".into(),
                mime: None,
                content: Ok(bytes),
            };
            let r = read(&a, None, 50, 5);
            prop_assert!(r.chunks.len() <= 5);
        }
    }
}
