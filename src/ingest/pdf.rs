//! Reads a PDF's text in a child process (`engram pdf-text`): a hostile file that crashes
//! the parser (forms drawing themselves without end), hangs it (forms drawing each other
//! 2^40 times) or makes it allocate without bound costs that process, never the bot's.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::warn;

/// Why a PDF's text was not kept: it cannot be read.
const UNREADABLE: &str = "not a readable PDF";
/// Why a PDF's text was not kept: it has none.
const NO_TEXT: &str = "no text in the PDF";
/// The child's exit code for a PDF without text (any other failure: unreadable).
const NO_TEXT_EXIT: i32 = 3;
/// Most text taken from a child (bytes): far more than the pieces a file may keep.
const MAX_TEXT: u64 = 4 << 20;

/// Where PDFs are read, and within what.
#[derive(Debug, Clone)]
pub struct PdfReader {
    /// The program run as `PROGRAM pdf-text --max-memory-mb N` (the engram binary); `None`:
    /// PDFs are not read (kept by name).
    program: Option<PathBuf>,
    /// Longest a child may take before it is killed.
    timeout: Duration,
    /// Most memory a child may take beyond what it starts with (MiB).
    max_memory_mb: u64,
}

impl PdfReader {
    /// Reads PDFs with `program` (`pdf-text`), each within `timeout` and `max_memory_mb`.
    pub fn new(program: PathBuf, timeout: Duration, max_memory_mb: u64) -> PdfReader {
        PdfReader {
            program: Some(program),
            timeout,
            max_memory_mb,
        }
    }

    /// PDFs are not read: each is kept by name.
    pub fn off() -> PdfReader {
        PdfReader {
            program: None,
            timeout: Duration::ZERO,
            max_memory_mb: 0,
        }
    }

    /// The text of the PDF `bytes`, its pages apart; why not when it has none, cannot be
    /// read, or takes longer than the timeout (the child is killed then).
    pub async fn read(&self, bytes: &[u8]) -> Result<String, String> {
        let Some(program) = &self.program else {
            return Err("PDFs are not read here".into());
        };
        // A few at a time: each may take its memory limit.
        static READERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);
        let Ok(_turn) = READERS.acquire().await else {
            return Err(UNREADABLE.into());
        };
        let spawned = tokio::process::Command::new(program)
            .arg("pdf-text")
            .arg("--max-memory-mb")
            .arg(self.max_memory_mb.to_string())
            // Nothing of the bot's (tokens, keys, the database) reaches the parser of a
            // hostile file.
            .env_clear()
            // And it starts once: a short run gains nothing from huge pages.
            .env(crate::huge_pages::OPT_OUT, "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                warn!(error = %e, program = %program.display(), "the PDF reader could not be started");
                return Err(UNREADABLE.into());
            }
        };
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(UNREADABLE.into());
        };
        let input = bytes.to_vec();
        let work = async move {
            // Written while the text is read: neither side waits on a full pipe.
            let write = async move {
                // A child that stops reading (it failed) closes the pipe: its exit says why.
                let _ = stdin.write_all(&input).await;
            };
            let read = async move {
                let mut text = Vec::new();
                // Dropped after: a child with more to say meets a closed pipe.
                stdout
                    .take(MAX_TEXT)
                    .read_to_end(&mut text)
                    .await
                    .map(|_| text)
            };
            let (_, text) = tokio::join!(write, read);
            let text = text?;
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, text))
        };
        match tokio::time::timeout(self.timeout, work).await {
            // The child is dropped with the work: killed.
            Err(_) => Err("the PDF took too long to read".into()),
            Ok(Err(_)) => Err(UNREADABLE.into()),
            Ok(Ok((status, text))) => match status.code() {
                Some(0) => String::from_utf8(text).map_err(|_| UNREADABLE.to_string()),
                Some(NO_TEXT_EXIT) => Err(NO_TEXT.into()),
                _ => Err(UNREADABLE.into()),
            },
        }
    }
}

/// `engram pdf-text`: reads a PDF on stdin and writes its text to stdout (exit 0), or exits
/// 3 when it has none and 2 when it cannot be read. Its address space may grow by at most
/// `max_memory_mb` MiB beyond what it has at the start (an allocation beyond ends it).
pub fn child_main(max_memory_mb: u64) -> i32 {
    limit_memory(max_memory_mb);
    let mut bytes = Vec::new();
    if std::io::stdin().read_to_end(&mut bytes).is_err() {
        return 2;
    }
    match super::attachments::pdf_text(&bytes) {
        Ok(text) => {
            // At most what the reader takes (far more than a file keeps), cut on a character.
            let mut end = text.len().min(MAX_TEXT as usize);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mut out = std::io::stdout().lock();
            match out
                .write_all(&text.as_bytes()[..end])
                .and_then(|_| out.flush())
            {
                Ok(()) => 0,
                Err(_) => 2,
            }
        }
        Err(why) if why == NO_TEXT => NO_TEXT_EXIT,
        Err(_) => 2,
    }
}

/// Caps this process's address space at its size now plus `mb` MiB.
fn limit_memory(mb: u64) {
    // statm's first field: the address space in pages.
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    // SAFETY: sysconf reads a constant; setrlimit is given a valid rlimit.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let (Some(pages), Ok(page)) = (pages, u64::try_from(page)) else {
        return;
    };
    let limit = pages
        .saturating_mul(page)
        .saturating_add(mb.saturating_mul(1 << 20));
    let rlimit = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: a valid rlimit for this process.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &rlimit);
    }
}
