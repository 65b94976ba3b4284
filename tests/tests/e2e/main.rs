//! The stack tests, as one test binary (each module was a test target of its own, linked on its
//! own against the stack's library and its dependencies, which cost CI minutes).
//! They need the built stack (app, worker, runner) and installed tools, so every test is
//! `#[ignore]`d in a plain `cargo test`; `cargo xtask test` builds everything and runs them with
//! `--ignored`. One module alone: `cargo test -p onramp-tests --test e2e -- --ignored slurm_edge::`.

mod app_support;

mod app_account;
mod app_compare;
mod app_dataset;
mod app_dataset_train;
mod app_job_notify;
mod app_jobs;
mod app_lang;
mod app_onboarding;
mod app_plan;
mod app_plan_layout;
mod app_plan_tools;
mod app_playground;
mod app_reset;
mod app_share;
mod app_trainer;
mod app_try;
mod attack;
mod cli_edge;
mod contract_fuzz;
mod edge_api;
mod edge_artifacts;
mod edge_benchmarks;
mod edge_credits;
mod edge_deadlines;
mod edge_jobs;
mod edge_refunds;
mod edge_trainer;
mod edge_verify;
mod hf_model;
mod runner_api;
mod runner_edge;
mod runner_sandbox;
mod runner_tiny_train;
mod runner_trainer;
mod slurm_backend;
mod slurm_cluster;
mod slurm_edge;
mod slurm_jwt;
mod stack;
