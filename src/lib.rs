//! Engram: a chat bot memory engine. Data flows from platform `adapters` through the
//! `ingest`or and `router` (in `bot`) to `memory` and the `responder`, which sit on the `llm`
//! provider and the `store`; `domain` types are at the bottom. `app` is the one composition root.

pub mod adapters;
pub mod app;
pub mod bench;
pub mod bot;
pub mod config;
pub mod domain;
pub mod embed;
pub mod ingest;
pub mod jobs;
pub mod llm;
pub mod memory;
pub mod responder;
pub mod retrieval;
pub mod router;
pub mod store;
