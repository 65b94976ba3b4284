//! onramp-runner: the embedded default backend. A small HTTP service that runs each job as a
//! child process on this machine; the edge is its only client and authenticates with a shared
//! secret. Its built-in task, tiny-train, is the runner itself started as
//! `onramp-runner tiny-train`, training model-tiny on this machine's cores.

pub mod assets;
pub mod clock;
pub mod config;
pub mod confined;
pub mod error;
pub mod http;
pub mod jobs;
pub mod push;
pub mod report;
pub mod sandbox;
pub mod store;
pub mod supervise;
pub mod tiny_args;
pub mod tiny_train;
pub mod trainer;
pub mod wire;
