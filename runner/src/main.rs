//! `onramp-runner` entry point: parse the configuration and serve until told to stop.

use onramp_runner::{config, http};
use std::sync::Arc;

#[tokio::main]
async fn main() {
    let config = match config::from_args(
        std::env::args().skip(1),
        std::env::var("ONRAMP_RUNNER_SECRET").ok(),
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onramp-runner: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&config.state_dir) {
        eprintln!(
            "onramp-runner: cannot create state dir {}: {e}",
            config.state_dir.display()
        );
        std::process::exit(1);
    }
    let listener = match tokio::net::TcpListener::bind(config.addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("onramp-runner: cannot listen on {}: {e}", config.addr);
            std::process::exit(1);
        }
    };
    eprintln!("onramp-runner: listening on http://{}", config.addr);
    let app = http::router(Arc::new(http::AppState {
        secret: config.secret,
    }));
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        eprintln!("onramp-runner: server error: {e}");
        std::process::exit(1);
    }
}
