//! The console adapter: a chat on stdin/stdout. Interactive mode talks to the bot directly;
//! script mode plays lines like `alice: remember that I love Rust` (optionally prefixed with
//! `[2026-11-20 14:05]` to set the clock), so tests and demos can stage several people in one
//! space, including chatter not addressed to the bot.

use super::ReplySink;
use crate::bot::{Bot, Reply};
use crate::domain::{Clock, IncomingMessage, ManualClock, Mention, Platform, Privacy, SpaceKind};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// Who speaks where.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Who speaks (a console user name).
    pub speaker: String,
    /// A group space by name; None means a private chat with the bot.
    pub space: Option<String>,
    /// The channel of the group chat (ignored in a private chat).
    pub channel: String,
    /// The channel is visible only to some members.
    pub restricted: bool,
    /// Whether the speaker is a moderator of the space.
    pub moderator: bool,
}

impl ConsoleOptions {
    /// A private chat with the bot, as `speaker`.
    pub fn private(speaker: &str) -> ConsoleOptions {
        ConsoleOptions {
            speaker: speaker.to_string(),
            space: None,
            channel: "general".to_string(),
            restricted: false,
            moderator: false,
        }
    }
}

/// Prints replies as `Engram: text`.
pub struct ConsoleSink<W> {
    out: Mutex<W>,
    bot_name: String,
}

impl<W: AsyncWrite + Unpin + Send> ConsoleSink<W> {
    /// Replies written to `out`, each prefixed with the bot's name.
    pub fn new(out: W, bot_name: &str) -> Self {
        ConsoleSink {
            out: Mutex::new(out),
            bot_name: bot_name.to_string(),
        }
    }

    async fn write(&self, text: &str) -> std::io::Result<()> {
        let mut out = self.out.lock().await;
        out.write_all(text.as_bytes()).await?;
        out.flush().await
    }
}

#[async_trait]
impl<W: AsyncWrite + Unpin + Send> ReplySink for ConsoleSink<W> {
    async fn send(&self, reply: &Reply) -> std::io::Result<()> {
        self.write(&format!("{}: {}\n", self.bot_name, reply.text))
            .await
    }
}

/// Builds the message `speaker` types in the console. `@name` words become mentions.
pub fn console_message(
    opts: &ConsoleOptions,
    speaker: &str,
    text: &str,
    seq: u64,
    at: DateTime<Utc>,
    addressed: bool,
) -> IncomingMessage {
    let (space_id, kind, title, channel, privacy) = match &opts.space {
        None => (
            format!("dm:{speaker}"),
            SpaceKind::Private,
            format!("{speaker} (private)"),
            format!("dm:{speaker}"),
            Privacy::Dm,
        ),
        Some(space) => (
            space.clone(),
            SpaceKind::Group,
            space.clone(),
            opts.channel.clone(),
            if opts.restricted {
                Privacy::ChannelRestricted
            } else {
                Privacy::GuildPublic
            },
        ),
    };
    let mentions = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-'))
        .filter(|w| !w.is_empty())
        .map(|w| Mention {
            external_id: w.to_string(),
            display_name: w.to_string(),
            username: None,
            token: format!("@{w}"),
            is_self: false,
        })
        .collect();
    IncomingMessage {
        platform: Platform::Console,
        space_external_id: space_id,
        space_kind: kind,
        space_title: title,
        channel_external_id: channel,
        channel_privacy: privacy,
        author_external_id: speaker.to_string(),
        author_display_name: speaker.to_string(),
        author_username: None,
        author_is_bot: false,
        external_id: format!("{}-{seq}", at.timestamp_millis()),
        text: text.to_string(),
        sent_at: at,
        reply_to_external_id: None,
        // Interactive console lines are a conversation with the bot.
        replies_to_bot: addressed,
        mentions,
        attachments: Vec::new(),
        author_is_moderator: opts.moderator,
        private_answer: false,
        // Typed commands are read from the text, as on every platform.
        command: None,
    }
}

/// One parsed script line: optional time, speaker, text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLine {
    /// When it was said (`[time]` prefix); none: now.
    pub at: Option<DateTime<Utc>>,
    /// Who said it.
    pub speaker: String,
    /// What was said.
    pub text: String,
}

/// Parses `[YYYY-MM-DD HH:MM] name: text` (time optional). Comments (`#`) and blank lines are
/// None; anything else malformed is an error naming the problem.
pub fn parse_script_line(line: &str) -> Result<Option<ScriptLine>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (at, rest) = match line.strip_prefix('[') {
        Some(rest) => {
            let (stamp, rest) = rest.split_once(']').ok_or("missing ']' after the time")?;
            let stamp = stamp.trim();
            let parsed = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M")
                .or_else(|_| NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S"))
                .map_err(|_| format!("bad time {stamp:?}: use [YYYY-MM-DD HH:MM]"))?;
            (Some(parsed.and_utc()), rest.trim())
        }
        None => (None, line),
    };
    let (speaker, text) = rest.split_once(':').ok_or("expected 'name: text'")?;
    let speaker = speaker.trim();
    if speaker.is_empty() || speaker.contains(char::is_whitespace) {
        return Err(format!("bad speaker name {speaker:?}: one word before ':'"));
    }
    Ok(Some(ScriptLine {
        at,
        speaker: speaker.to_string(),
        text: text.trim().to_string(),
    }))
}

/// Interactive chat: each line is said by the current speaker to the bot.
/// `/as NAME` switches speaker, `/quit` ends.
pub async fn run_interactive<R, S>(
    bot: &Arc<Bot>,
    opts: ConsoleOptions,
    clock: Arc<dyn Clock>,
    input: R,
    sink: &ConsoleSink<S>,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    S: AsyncWrite + Unpin + Send,
{
    let mut opts = opts;
    let mut lines = input.lines();
    let name = bot.name().to_string();
    let where_ = match &opts.space {
        None => "a private chat".to_string(),
        Some(s) => format!(
            "#{} in {s} (a group: only lines that address me, \"{name}, …\" or \"@{name} …\", get an answer; the rest is chatter, kept and summarized)",
            opts.channel
        ),
    };
    let offline = if bot.has_model() {
        ""
    } else {
        " (offline: no language model configured)"
    };
    let address = if opts.space.is_some() {
        format!("{name}, ")
    } else {
        String::new()
    };
    sink.write(&format!(
        "{name} is listening in {where_} as {}{offline}. Try \"{address}remember that I love Rust\", then \"{address}what do you know about me\". /as NAME switches speaker, /quit ends.\n",
        opts.speaker
    ))
    .await?;
    let mut seq = 0u64;
    loop {
        sink.write(&format!("{}> ", opts.speaker)).await?;
        let Some(line) = lines.next_line().await? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/quit" || line == "/exit" {
            break;
        }
        if let Some(name) = line.strip_prefix("/as ") {
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) {
                sink.write("Usage: /as NAME (one word)\n").await?;
            } else {
                opts.speaker = name.to_string();
            }
            continue;
        }
        seq += 1;
        // As in a real group: a line is for the bot when it addresses it (in a private chat,
        // every line is).
        let msg = console_message(&opts, &opts.speaker.clone(), line, seq, clock.now(), false);
        deliver(bot, &msg, sink).await?;
    }
    Ok(())
}

/// Script mode: plays `name: text` lines; only lines that address the bot (or any line in a
/// private chat) get a reply. Timestamps set the manual clock; others advance it a second.
pub async fn run_script<R, S>(
    bot: &Arc<Bot>,
    opts: ConsoleOptions,
    clock: Arc<ManualClock>,
    input: R,
    sink: &ConsoleSink<S>,
) -> std::io::Result<usize>
where
    R: AsyncBufRead + Unpin,
    S: AsyncWrite + Unpin + Send,
{
    let mut lines = input.lines();
    let mut seq = 0u64;
    let mut played = 0;
    while let Some(line) = lines.next_line().await? {
        seq += 1;
        let parsed = match parse_script_line(&line) {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(why) => {
                sink.write(&format!("(line {seq} skipped: {why})\n"))
                    .await?;
                continue;
            }
        };
        match parsed.at {
            Some(at) => clock.set(at),
            None => clock.advance(chrono::Duration::seconds(1)),
        }
        sink.write(&format!("{}: {}\n", parsed.speaker, parsed.text))
            .await?;
        let msg = console_message(
            &opts,
            &parsed.speaker,
            &parsed.text,
            seq,
            clock.now(),
            false,
        );
        deliver(bot, &msg, sink).await?;
        played += 1;
    }
    Ok(played)
}

async fn deliver<S: AsyncWrite + Unpin + Send>(
    bot: &Arc<Bot>,
    msg: &IncomingMessage,
    sink: &ConsoleSink<S>,
) -> std::io::Result<()> {
    // In a task of its own, like a platform event: a bug that panics on one line skips that
    // line, and the chat goes on.
    let (handler, line) = (bot.clone(), msg.clone());
    let handled =
        crate::adapters::isolated(
            msg.platform,
            "line",
            async move { handler.handle(&line).await },
        )
        .await;
    match handled {
        Some(Ok(Some(reply))) => sink.send(&reply).await,
        Some(Ok(None)) => Ok(()),
        Some(Err(e)) => {
            tracing::error!(error = %e, "could not store the message");
            sink.write(&format!("(not saved: {e})\n")).await
        }
        None => {
            sink.write("(something went wrong with that line; it was skipped)\n")
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_lines_parse() {
        assert_eq!(parse_script_line("  # note").unwrap(), None);
        assert_eq!(parse_script_line("").unwrap(), None);
        let l = parse_script_line("alice: Engram, remember that I love Rust")
            .unwrap()
            .unwrap();
        assert_eq!(
            (l.speaker.as_str(), l.text.as_str(), l.at),
            ("alice", "Engram, remember that I love Rust", None)
        );
        let l = parse_script_line("[2026-11-20 14:05] bob: hi: there")
            .unwrap()
            .unwrap();
        assert_eq!(l.at.unwrap().to_rfc3339(), "2026-11-20T14:05:00+00:00");
        assert_eq!(l.text, "hi: there");
        assert!(parse_script_line("no colon here").is_err());
        assert!(parse_script_line("[2026-13-01 10:00] a: x").is_err());
        assert!(parse_script_line("two words: x").is_err());
    }

    #[test]
    fn mentions_come_from_at_words() {
        let opts = ConsoleOptions::private("alice");
        let m = console_message(
            &opts,
            "alice",
            "what do you know about @bob?",
            1,
            Utc::now(),
            true,
        );
        assert_eq!(m.mentions.len(), 1);
        assert_eq!(m.mentions[0].external_id, "bob");
        assert_eq!(m.channel_privacy, Privacy::Dm);
    }
}
