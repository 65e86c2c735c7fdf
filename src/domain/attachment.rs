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
}
