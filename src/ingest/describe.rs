//! What a vision model and a speech-to-text model add to a kept image or recording: its type
//! read from its bytes (not from the platform's word), one request, the answer checked whole,
//! and the surrogate kept of it: the gist its line in the message shows ("[image#12 shot.png]
//! a screenshot of an ImportError") and the pieces stored and searched with the message (the
//! detailed description, the text the image shows, the transcript).

use super::attachments::{chunks, one_line, summary};
use crate::domain::attachment::{AttachmentKind, IncomingAttachment};
use crate::domain::budget::current_payer;
use crate::llm::transcribe::{Recording, Transcriber};
use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError, parse_json_answer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Longest short description kept (characters): what the message's line shows.
const SHORT_CHARS: usize = 150;
/// Longest detailed description kept (characters).
pub const DETAILED_CHARS: usize = 800;

/// What a model made of one attachment, kept with it (JSON) and reused when the same file
/// comes again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Surrogate {
    /// What the attachment's line says after its name.
    pub gist: String,
    /// Pieces stored and searched with the message: (label, text), e.g. ("description", …),
    /// ("text 1/2", …), ("transcript", …).
    pub pieces: Vec<(String, String)>,
}

/// Why an attachment got no surrogate (never shown in a chat).
#[derive(Debug, thiserror::Error)]
pub enum DescribeError {
    /// Its bytes are not of a kind the model reads.
    #[error("not read: {0}")]
    NotReadable(&'static str),
    /// The model failed or answered something unusable.
    #[error("the model gave nothing usable: {0}")]
    Model(#[from] LlmError),
}

impl DescribeError {
    /// Why, for the log: the kind of failure only, never what the model wrote (an unusable
    /// answer quotes it, and it is about someone's private file).
    pub fn reason(&self) -> String {
        match self {
            DescribeError::NotReadable(why) => format!("not read: {why}"),
            DescribeError::Model(LlmError::BadResponse(_)) => "an unusable answer".into(),
            DescribeError::Model(e) => e.to_string(),
        }
    }
}

/// The image type of `bytes` by their signature (PNG, JPEG, GIF, WebP): what vision models take.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xFF\xD8\xFF") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The audio type of `bytes` by their signature (Ogg, MP3, WAV, FLAC, MP4/M4A, WebM).
pub fn audio_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"OggS") {
        Some("audio/ogg")
    } else if bytes.starts_with(b"ID3")
        || (bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0)
    {
        Some("audio/mpeg")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WAVE" {
        Some("audio/wav")
    } else if bytes.starts_with(b"fLaC") {
        Some("audio/flac")
    } else if bytes.len() >= 8 && &bytes[4..8] == b"ftyp" {
        Some("audio/mp4")
    } else if bytes.starts_with(b"\x1A\x45\xDF\xA3") {
        Some("audio/webm")
    } else {
        None
    }
}

/// The file name a recording of type `mime` (`audio_type`) is sent under.
fn audio_name(mime: &str) -> &'static str {
    match mime {
        "audio/ogg" => "audio.ogg",
        "audio/mpeg" => "audio.mp3",
        "audio/wav" => "audio.wav",
        "audio/flac" => "audio.flac",
        "audio/mp4" => "audio.m4a",
        _ => "audio.webm",
    }
}

/// A vision model's answer.
#[derive(Debug, Deserialize)]
struct ImageAnswer {
    short: String,
    detailed: String,
    #[serde(default)]
    text: String,
}

/// Pieces labelled `label` ("text", "transcript"): one as it is, several numbered ("text 2/3").
fn labelled(label: &str, pieces: Vec<String>) -> Vec<(String, String)> {
    let n = pieces.len();
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let label = if n == 1 {
                label.to_string()
            } else {
                format!("{label} {}/{n}", i + 1)
            };
            (label, p)
        })
        .collect()
}

/// The surrogate of an image from a vision model's answer, checked whole: JSON with a short
/// description that says something, a detailed one, and the text it shows (may be empty);
/// anything else is an error and nothing is kept. The text is split like a file's
/// (`chunk_chars`, `max_chunks`).
pub fn image_surrogate(
    answer: &str,
    chunk_chars: usize,
    max_chunks: usize,
) -> Result<Surrogate, LlmError> {
    let value: serde_json::Value = parse_json_answer(answer)?;
    if !value.is_object() {
        return Err(LlmError::BadResponse("not a JSON object".into()));
    }
    let a: ImageAnswer = serde_json::from_value(value).map_err(|e| {
        LlmError::BadResponse(format!("not a description: {}", crate::llm::json_error(&e)))
    })?;
    let short = one_line(&a.short, SHORT_CHARS);
    if short.is_empty() {
        return Err(LlmError::BadResponse("no short description".into()));
    }
    let detailed = one_line(&a.detailed, DETAILED_CHARS);
    let mut pieces = Vec::new();
    if !detailed.is_empty() && detailed != short {
        pieces.push(("description".to_string(), detailed));
    }
    let text = super::sanitize(&a.text);
    pieces.extend(labelled(
        "text",
        chunks(&text, "text.txt", chunk_chars, max_chunks),
    ));
    Ok(Surrogate {
        gist: short,
        pieces,
    })
}

/// The surrogate of a recording from its transcript: the line says what kind it is and the
/// start of what was said; a transcript longer than that is also kept in pieces.
pub fn transcript_surrogate(
    kind: AttachmentKind,
    transcript: &str,
    chunk_chars: usize,
    max_chunks: usize,
) -> Surrogate {
    let what = if kind == AttachmentKind::Voice {
        "voice note"
    } else {
        "audio"
    };
    let said = super::sanitize(transcript);
    let start = summary(&said);
    if start.is_empty() {
        return Surrogate {
            gist: format!("{what}, nothing said"),
            pieces: Vec::new(),
        };
    }
    let pieces = if start == one_line(&said, usize::MAX) {
        Vec::new()
    } else {
        labelled(
            "transcript",
            chunks(&said, "text.txt", chunk_chars, max_chunks),
        )
    };
    Surrogate {
        gist: format!("{what}: {start}"),
        pieces,
    }
}

/// Describes images with a vision model and transcribes recordings, when configured.
pub struct Describer {
    /// The chat model images are shown to (it sends them to `llm.vision_model`), with the
    /// `describe_image.md` prompt.
    vision: Option<(Arc<dyn ChatModel>, String)>,
    transcriber: Option<Arc<dyn Transcriber>>,
    chunking: (usize, usize),
}

impl Describer {
    /// A describer with `vision` (a chat model that takes images, and the prompt) and
    /// `transcriber`, each optional; long texts split into pieces of `chunking` (characters,
    /// most pieces).
    pub fn new(
        vision: Option<(Arc<dyn ChatModel>, String)>,
        transcriber: Option<Arc<dyn Transcriber>>,
        chunking: (usize, usize),
    ) -> Option<Describer> {
        (vision.is_some() || transcriber.is_some()).then_some(Describer {
            vision,
            transcriber,
            chunking,
        })
    }

    /// The kinds of file it has a model for.
    pub fn kinds(&self) -> Vec<AttachmentKind> {
        let mut out = Vec::new();
        if self.vision.is_some() {
            out.push(AttachmentKind::Image);
        }
        if self.transcriber.is_some() {
            out.extend([AttachmentKind::Voice, AttachmentKind::Audio]);
        }
        out
    }

    /// Whether it has something to make of `a` (an image with a vision model, a recording
    /// with a transcriber), whose bytes were read.
    pub fn reads(&self, a: &IncomingAttachment) -> bool {
        a.content.is_ok() && self.kinds().contains(&a.kind)
    }

    /// What the model makes of `a` (one call): of its bytes alone (not its caption or name,
    /// so the same bytes get the same surrogate wherever they are sent, and nobody's words
    /// shape what another's copy says). Bytes that are not an image or a recording are not
    /// sent. A call made for someone's answer that may not spend is refused
    /// (`LlmError::Limited`).
    pub async fn describe(&self, a: &IncomingAttachment) -> Result<Surrogate, DescribeError> {
        let Ok(bytes) = &a.content else {
            return Err(DescribeError::NotReadable("not downloaded"));
        };
        if current_payer().is_some_and(|p| !p.may_spend) {
            return Err(LlmError::Limited.into());
        }
        let (chars, max) = self.chunking;
        match a.kind {
            AttachmentKind::Image => {
                let Some((model, prompt)) = &self.vision else {
                    return Err(DescribeError::NotReadable("no vision model"));
                };
                let mime = image_type(bytes).ok_or(DescribeError::NotReadable("not an image"))?;
                use base64::Engine as _;
                let url = format!(
                    "data:{mime};base64,{}",
                    base64::engine::general_purpose::STANDARD.encode(bytes)
                );
                let request = ChatRequest {
                    task: "describe_image",
                    messages: vec![
                        ChatMessage::system(
                            prompt.replace("{{max_chars}}", &DETAILED_CHARS.to_string()),
                        ),
                        ChatMessage::user_with_images("The image:", vec![url]),
                    ],
                    temperature: 0.0,
                    json: true,
                    // Room for a page of text in a screenshot: a cut answer is not JSON.
                    max_tokens: Some(4096),
                    tools: Vec::new(),
                };
                let answer = model.complete(&request).await?;
                Ok(image_surrogate(&answer.content, chars, max)?)
            }
            AttachmentKind::Voice | AttachmentKind::Audio => {
                let Some(transcriber) = &self.transcriber else {
                    return Err(DescribeError::NotReadable("no transcription model"));
                };
                let mime =
                    audio_type(bytes).ok_or(DescribeError::NotReadable("not a recording"))?;
                // Named by its type only: the provider reads the format from the ending, and
                // the name its sender gave it is none of the provider's business.
                let transcript = transcriber
                    .transcribe(Recording {
                        name: audio_name(mime),
                        mime,
                        bytes,
                    })
                    .await?;
                Ok(transcript_surrogate(a.kind, &transcript, chars, max))
            }
            AttachmentKind::File => Err(DescribeError::NotReadable("a file")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn types_are_read_from_the_bytes() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(b"\xFF\xD8\xFF\xE0"), Some("image/jpeg"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(image_type(b"<html>not an image"), None);
        assert_eq!(image_type(b""), None);
        assert_eq!(audio_type(b"OggS\0\x02"), Some("audio/ogg"));
        assert_eq!(audio_type(b"RIFF\0\0\0\0WAVEfmt "), Some("audio/wav"));
        assert_eq!(audio_type(b"\0\0\0\x20ftypM4A "), Some("audio/mp4"));
        assert_eq!(audio_type(b"ID3\x04"), Some("audio/mpeg"));
        assert_eq!(audio_type(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(audio_type(b"x"), None);
    }

    #[test]
    fn an_image_answer_is_checked_whole() {
        let s = image_surrogate(
            r#"{"short": "a screenshot of an ImportError", "detailed": "A terminal with a Python traceback.", "text": "Traceback\nImportError: no module named frobnitz"}"#,
            1200,
            20,
        )
        .unwrap();
        assert_eq!(s.gist, "a screenshot of an ImportError");
        assert_eq!(
            s.pieces,
            vec![
                (
                    "description".to_string(),
                    "A terminal with a Python traceback.".to_string()
                ),
                (
                    "text".to_string(),
                    "Traceback\nImportError: no module named frobnitz".to_string()
                ),
            ]
        );
        // A long text is split into numbered pieces; no text, no piece.
        let long = format!(
            r#"{{"short": "a page", "detailed": "a page", "text": "{}"}}"#,
            "word ".repeat(100)
        );
        let s = image_surrogate(&long, 100, 20).unwrap();
        assert!(s.pieces.len() > 1 && s.pieces[0].0 == format!("text 1/{}", s.pieces.len()));
        // Garbled, empty or mistyped answers are errors: nothing is kept.
        for bad in [
            "Sure! It is a cat.",
            r#"{"short": "", "detailed": "x"}"#,
            r#"{"short": "   ", "detailed": "x"}"#,
            r#"{"short": 5, "detailed": "x"}"#,
            r#"{"detailed": "x"}"#,
            r#"["a", "b"]"#,
        ] {
            assert!(image_surrogate(bad, 1200, 20).is_err(), "{bad}");
        }
        // A long or multi-line short description is one line, cut.
        let s = image_surrogate(
            &format!(r#"{{"short": "a\nb {}", "detailed": ""}}"#, "x".repeat(500)),
            1200,
            20,
        )
        .unwrap();
        assert!(s.gist.starts_with("a b ") && s.gist.chars().count() == SHORT_CHARS);
        assert!(s.pieces.is_empty());
    }

    #[test]
    fn a_transcript_is_the_line_and_when_long_the_pieces() {
        let s = transcript_surrogate(AttachmentKind::Voice, "buy oat milk", 1200, 20);
        assert_eq!(s.gist, "voice note: buy oat milk");
        assert!(s.pieces.is_empty());
        let s = transcript_surrogate(AttachmentKind::Audio, "  ", 1200, 20);
        assert_eq!(s.gist, "audio, nothing said");
        let long = "and then we talked about the trip ".repeat(20);
        let s = transcript_surrogate(AttachmentKind::Voice, &long, 300, 20);
        assert!(s.gist.ends_with('…'), "{}", s.gist);
        assert!(s.pieces.len() >= 2 && s.pieces[0].0.starts_with("transcript 1/"));
    }

    proptest! {
        #[test]
        fn any_model_answer_gives_a_surrogate_or_an_error(answer in "(\\PC|\\s){0,400}", short in "(\\PC|\\s){0,300}", text in "(\\PC|\\s){0,300}") {
            // Anything at all: an answer or an error, never a panic.
            let _ = image_surrogate(&answer, 50, 5);
            let json = serde_json::json!({"short": short, "detailed": answer, "text": text}).to_string();
            let said = !short.split_whitespace().collect::<String>().is_empty();
            match image_surrogate(&json, 50, 5) {
                Ok(s) => {
                    prop_assert!(said);
                    prop_assert!(!s.gist.is_empty() && s.gist.chars().count() <= SHORT_CHARS);
                    // One line: the file's line in its message stays one line.
                    prop_assert!(!s.gist.contains(['\n', '\r']));
                    prop_assert!(s.pieces.len() <= 6);
                }
                Err(_) => prop_assert!(!said, "a well-formed answer was refused: {json}"),
            }
            let t = transcript_surrogate(AttachmentKind::Voice, &answer, 50, 5);
            prop_assert!(!t.gist.contains('\n') && t.pieces.len() <= 5);
        }
    }
}
