//! onramp-runner: the embedded default backend. A small HTTP service that runs each job as a
//! child process on this machine; the edge is its only client and authenticates with a shared
//! secret.

pub mod config;
pub mod http;
