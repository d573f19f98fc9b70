//! API tests: the embedded application on a random port with a fresh data
//! dir, driven over real HTTP.

mod asof;
mod backpressure;
mod bad_input;
mod canary;
mod compact;
mod episodes;
mod erasure;
mod helpers;
mod injection;
mod jwt;
mod limits;
mod llm;
mod mcp;
mod memories;
mod messages;
mod openapi;
mod pipeline;
mod postgres;
mod reindex;
mod review;
mod roles;
mod tenancy;
mod verify_erasure;
