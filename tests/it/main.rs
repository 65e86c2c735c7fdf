//! Engram's integration tests, linked into one test binary (each file below is a module, and
//! `common` holds what they share: the harnesses, the fake servers' set-up, the row readers).
//! Run one file's tests with a filter: `cargo test --test it forgetting::`.

#[macro_use]
mod common;

mod admin;
mod adversarial;
mod api;
mod bad_input;
mod cli;
mod concurrency;
mod crash;
mod discord;
mod embed;
mod embedding_models;
mod episodes;
mod extraction;
mod facts;
mod first_hour;
mod forgetting;
mod languages;
mod limits;
mod linking;
mod llm_failures;
mod memory_entries;
mod memory_tools;
mod multi_process;
mod privacy;
mod properties;
mod readme;
mod retrieval;
mod service;
mod store_contract;
mod telegram;
mod transient;
mod upgrade;
