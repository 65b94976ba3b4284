//! `onramp-runner` entry point: serve the API, or (`onramp-runner tiny-train …`) be a training
//! job's process.

use clap::Parser;
use onramp_runner::assets::Assets;
use onramp_runner::jobs::Runner;
use onramp_runner::sandbox::{Mode, Sandbox};
use onramp_runner::store::Store;
use onramp_runner::{config, http, tiny_train};
use std::sync::Arc;

/// Training allocates and frees tensors of megabytes every step; glibc's allocator hands such
/// blocks back to the kernel as they are freed, and the next step takes a page fault on every
/// 4 KiB of them again (most of tiny-train's system time). mimalloc keeps freed memory for reuse.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // --help, --version and usage errors (exit 2) are clap's.
    let cli = config::Cli::parse();
    if let Some(config::Command::TinyTrain(args)) = cli.command {
        tiny_train::exec_tuned();
        if let Err(e) = tiny_train::run(args) {
            eprintln!("onramp-runner tiny-train: {e}");
            std::process::exit(1);
        }
        return;
    }
    let mut args = cli.serve;
    if args.secret_file.is_none() {
        args.secret_file = std::env::var_os("ONRAMP_RUNNER_SECRET_FILE").map(Into::into);
    }
    let config = match args.config(std::env::var("ONRAMP_RUNNER_SECRET").ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onramp-runner: {e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => fail(&format!("cannot start the async runtime: {e}")),
    };
    rt.block_on(serve(config));
}

fn fail(msg: &str) -> ! {
    eprintln!("onramp-runner: {msg}");
    std::process::exit(1);
}

/// The sandbox jobs run in, as `--sandbox` asks and as this machine allows.
fn sandbox(config: &config::Config, assets: &Assets) -> Option<Sandbox> {
    if config.sandbox == Mode::Off {
        eprintln!("onramp-runner: jobs run without a sandbox (--sandbox off)");
        return None;
    }
    let s = Sandbox::new(
        &config.state_dir,
        &assets.root,
        config.secret_file.as_deref(),
    );
    match s.probe() {
        Ok(()) => {
            eprintln!(
                "onramp-runner: jobs run in a sandbox: each sees its own folder and the assets"
            );
            Some(s)
        }
        Err(e) if config.sandbox == Mode::Auto => {
            eprintln!(
                "onramp-runner: warning: no sandbox for jobs here ({e}); they run as this user, \
                 with this user's access (--sandbox on refuses to start without one)"
            );
            None
        }
        Err(e) => fail(&format!(
            "--sandbox on, but the sandbox does not work here: {e}"
        )),
    }
}

/// Removes the folders of jobs that ended more than `retention` ago, at start and then a few
/// times per retention (at least every second, at most every ten minutes).
async fn sweep_folders(runner: Arc<Runner>, retention: std::time::Duration) {
    let every = (retention / 4).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(600),
    );
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        for id in runner.sweep_folders(retention, std::time::SystemTime::now()) {
            eprintln!(
                "onramp-runner: job {id} ended more than the retention ago: its folder is removed"
            );
        }
    }
}

async fn serve(config: config::Config) {
    if let Err(e) = std::fs::create_dir_all(&config.state_dir) {
        fail(&format!(
            "cannot create state dir {}: {e}",
            config.state_dir.display()
        ));
    }
    let store = Store::open(&config.state_dir).unwrap_or_else(|e| fail(&e));
    let (mut assets, missing) =
        Assets::install(&config.shared, &config.state_dir).unwrap_or_else(|e| fail(&e));
    assets.eval_tasks = config.eval_tasks.clone();
    for m in missing {
        eprintln!(
            "onramp-runner: warning: {m} is missing; tiny-train jobs that need it will be refused"
        );
    }
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| fail(&format!("cannot find the runner's own executable: {e}")));
    let sandbox = sandbox(&config, &assets);
    let (runner, problems) = Runner::open(store, assets, exe, config.cards, sandbox);
    for p in problems {
        eprintln!("onramp-runner: warning: unreadable job record {p}");
    }
    tokio::spawn(sweep_folders(runner.clone(), config.retention));
    let listener = match tokio::net::TcpListener::bind(config.addr).await {
        Ok(l) => l,
        Err(e) => fail(&format!("cannot listen on {}: {e}", config.addr)),
    };
    eprintln!("onramp-runner: listening on http://{}", config.addr);
    let app = http::router(Arc::new(http::AppState {
        secret: config.secret,
        runner: runner.clone(),
    }));
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    // Jobs do not outlive the runner that supervises them: stop them and record them as lost.
    runner.shutdown().await;
    if let Err(e) = served {
        fail(&format!("server error: {e}"));
    }
}
