//! mnemo's lab: the tools that measure and exercise the product without
//! being part of it — `mnemo eval` (LoCoMo retrieval through a running
//! server's API; consolidation quality and cost in process), `mnemo bench`
//! (ingest throughput, search latency, the whole pipeline under load) and
//! `mnemo dev` (a local Kafka, a deterministic OpenAI-compatible model).
//! The `mnemo` CLI links it; no service binary does, so none of this ships
//! inside a service image.
//! Every tool drives the real ports (the configured embedder, the real
//! index, the server's HTTP API) rather than stand-ins of its own.

pub mod bench;
pub mod bench_asof;
pub mod bench_dates;
pub mod bench_embed;
pub mod bench_parts;
pub mod bench_pipeline;
pub mod bench_search;
pub mod bench_searchable;
pub mod dev_kafka;
pub mod dev_llm;
pub mod eval;
pub mod eval_consolidation;
pub mod eval_messages;
