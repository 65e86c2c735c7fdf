//! Engram: a Discord and Telegram chat bot with tiered, privacy-aware long-term memory.
//!
//! # Layout
//!
//! Read the table from the top to follow a message: from the platform, through the bot, to
//! memory, retrieval, the model and the store. `app` (the one composition root) builds each
//! part with what it needs.
//!
//! | module | what it owns |
//! |---|---|
//! | [`service`] | the HTTP listener for operators and programs: `/healthz`, `/readyz`, `/metrics`, the JSON API and MCP over the memory engine |
//! | [`adapters`] | the platforms: console, Discord (serenity), Telegram (teloxide); each turns events into [`domain::IncomingMessage`]s for the bot and sends replies back, split to the platform's size |
//! | [`bot`] | one message end to end: ingest, route, a memory command or the responder, store the reply; `bot::replies` words its answers to commands |
//! | [`ingest`] | stores every message (and its mentions) before anything else may fail |
//! | [`linking`] | joining a person's accounts on two platforms: one-time link codes, the wrong-code limit, unlinking |
//! | [`router`] | reads what an addressed message asks for: memory commands, remember / forget forms |
//! | [`responder`] | conversation that is not a command: the memory context, the reply prompt packed within its token budget (`prompt`), the model's answer |
//! | [`memory`] | the memory tier: facts, hearsay, structured entries (kept in step with the facts in `entry_facts`) and their extraction, day and history summaries, context assembly (the responder packs it into the token budget), forgetting, caches, the memory tools |
//! | [`retrieval`] | hybrid search (BM25 and vectors fused), time expressions, the background indexer |
//! | [`llm`] | the chat-model seam: the OpenAI-compatible client, spending limits, the prompts |
//! | [`embed`] | the embedding seam: local all-MiniLM-L6-v2 (ONNX Runtime, int8 or f32) or an OpenAI-compatible API |
//! | [`store`] | all of the product's SQL, one file per concern: statements written once for SQLite and PostgreSQL + pgvector (`on_both_backends!`), what differs (BM25 over messages, bulk inserts, postings, vectors) in `sqlite` and `postgres`; BM25 terms, backend-to-backend copy |
//! | [`jobs`] | scheduled work (daily extraction, maintenance), run once across any number of processes |
//! | [`telemetry`] | the metrics every part records (the `metrics` facade) and the Prometheus recorder `/metrics` renders |
//! | [`domain`] | the types at the bottom: people, places, privacy scopes, entries, commands, mentions, clock, budgets, link codes, secrets, platform status |
//! | [`config`] | settings and secrets: defaults, file, environment, checked before start |
//! | [`app`] | the composition root: config, store, model, embedder, clock and memory wired into a bot, each part built once (`build_memory`, `build_bot`), and the background work started (`start_scheduler`, `start_indexer`) |
//! | [`bench`] | `engram bench …`: benchmarks that print JSON |
//! | [`huge_pages`] | start-up: the process starts again in place with malloc on transparent huge pages |
//!
//! The `engram` binary (`src/main.rs`) parses the command line, calls into these, and runs the
//! commands that read or write a deployment offline (export, import, migrate, extract).
//! With the `test-util` feature (on for the tests) the crate also carries the fakes that stand
//! in for what is across the network: `llm::fake` (an OpenAI-compatible server),
//! `adapters::fake_discord` and `adapters::fake_telegram`, all real HTTP servers on 127.0.0.1.

#![warn(missing_docs)]

pub mod adapters;
pub mod app;
pub mod bench;
pub mod bot;
pub mod config;
pub mod domain;
pub mod embed;
pub mod huge_pages;
pub mod ingest;
pub mod jobs;
pub mod linking;
pub mod llm;
pub mod memory;
pub mod responder;
pub mod retrieval;
pub mod router;
pub mod service;
pub mod store;
pub mod telemetry;
