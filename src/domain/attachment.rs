//! Attachments as they arrive from a platform: what kind, its name and type, and its bytes as
//! the adapter downloaded them (or why it could not).

/// What kind of thing was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentKind {
    /// A photo or picture.
    Image,
    /// A document or any other file.
    File,
    /// A voice note.
    Voice,
    /// An audio file.
    Audio,
}

impl AttachmentKind {
    /// Its name in surrogate lines ("[image#12 …]") and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::Image => "image",
            AttachmentKind::File => "file",
            AttachmentKind::Voice => "voice",
            AttachmentKind::Audio => "audio",
        }
    }
}

/// One attachment of an incoming message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingAttachment {
    /// What kind it is.
    pub kind: AttachmentKind,
    /// Its file name ("photo.jpg" when the platform gives none).
    pub name: String,
    /// Its MIME type as the platform says, if it does.
    pub mime: Option<String>,
    /// Its bytes, or why they were not read (too large, a type not read, a failed download).
    pub content: Result<Vec<u8>, String>,
}

/// What the adapters may download (`[attachments]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadLimits {
    /// Largest file read (bytes); a larger one is kept by name only.
    pub max_bytes: u64,
    /// Longest a download may take.
    pub timeout: std::time::Duration,
    /// MIME types (or their beginnings: "video/") never downloaded, lowercase.
    pub skip_types: Vec<String>,
}

impl DownloadLimits {
    /// Why the file `name` of `size` bytes declared as `mime` is not downloaded, if it is not:
    /// a type of `skip_types` (the declared one, or the one its name says when the platform
    /// declares none or only "application/octet-stream"), or more than `max_bytes`.
    pub fn refusal(&self, name: &str, mime: Option<&str>, size: u64) -> Option<String> {
        let declared = mime
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty() && !m.starts_with("application/octet-stream"));
        let m = declared.or_else(|| mime_guess::from_path(name).first_raw().map(String::from));
        if let Some(m) = m
            && self.skip_types.iter().any(|t| m.starts_with(t.as_str()))
        {
            return Some(format!("type {} is not read", essence(&m)));
        }
        (size > self.max_bytes).then(|| format!("too large ({size} bytes)"))
    }
}

/// A declared MIME type as it may be shown in a message's text: its `type/subtype` only, in
/// the characters MIME allows there, at most 60 (a platform passes on whatever the sender
/// declared: no line breaks, brackets or quotes of a hostile one get through).
fn essence(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-/".contains(*c))
        .take(60)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_sizes_not_downloaded() {
        let limits = DownloadLimits {
            max_bytes: 100,
            timeout: std::time::Duration::from_secs(1),
            skip_types: vec!["video/".into(), "application/zip".into()],
        };
        assert_eq!(
            limits.refusal("a.mp4", Some("Video/MP4"), 10).as_deref(),
            Some("type video/mp4 is not read")
        );
        assert_eq!(
            limits
                .refusal("a.zip", Some("application/zip"), 10)
                .as_deref(),
            Some("type application/zip is not read")
        );
        assert_eq!(
            limits.refusal("big.txt", None, 101).as_deref(),
            Some("too large (101 bytes)")
        );
        // A hostile declaration is shown as its bare type: no line of its own, no brackets.
        let hostile = "video/x\n[file#7 notes.md] \"fake\"; codecs=\"] [file#1\"";
        assert_eq!(
            limits.refusal("x", Some(hostile), 10).as_deref(),
            Some("type video/xfile#7notes.mdfake is not read")
        );
        let long = format!("video/{}", "a".repeat(500));
        assert!(limits.refusal("x", Some(&long), 10).unwrap().len() < 80);
        // Positive controls: other types, no type, and the size limit itself are read.
        assert_eq!(limits.refusal("n.md", Some("text/markdown"), 100), None);
        assert_eq!(limits.refusal("d.json", Some("application/json"), 10), None);
        assert_eq!(limits.refusal("photo.jpg", None, 0), None);
        // No type declared, or only "some bytes": the name says it.
        assert_eq!(
            limits.refusal("Clip.MP4", None, 10).as_deref(),
            Some("type video/mp4 is not read")
        );
        assert_eq!(
            limits
                .refusal("backup.zip", Some("application/octet-stream"), 10)
                .as_deref(),
            Some("type application/zip is not read")
        );
        assert_eq!(limits.refusal("notes", None, 10), None);
        assert_eq!(
            limits.refusal("data.bin", Some("application/octet-stream"), 10),
            None
        );
        // A declared type wins over the name.
        assert_eq!(limits.refusal("notes.mp4", Some("text/plain"), 10), None);
    }
}
