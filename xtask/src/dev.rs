//! `cargo xtask dev`: set up, build, and serve the whole local stack on one URL until Ctrl-C or
//! SIGTERM, then stop everything it started.

use crate::cmd::repo_root;
use onramp_tests::stack::{Stack, StackOptions, random_hex};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!(
            "`cargo xtask dev` takes no arguments (got {a:?}); the port comes from ONRAMP_PORT"
        ));
    }
    let port: u16 = match std::env::var("ONRAMP_PORT") {
        Ok(p) => p
            .parse()
            .map_err(|_| format!("ONRAMP_PORT={p:?} is not a port number"))?,
        Err(_) => 8787,
    };
    let admin_token = match std::env::var("ONRAMP_ADMIN_TOKEN") {
        Ok(t) if !t.is_empty() => t,
        _ => {
            let t = random_hex(24);
            eprintln!("xtask: ONRAMP_ADMIN_TOKEN is not set; this run's admin token is {t}");
            t
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
        .map_err(|e| format!("cannot install the Ctrl-C handler: {e}"))?;

    let tools = crate::setup::run()?;
    crate::build::served(&tools)?;
    // What users get: the runner (and so tiny-train's training) as a release build.
    let runner_bin = crate::build::runner_release()?;
    if stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    let mut stack = Stack::start(StackOptions {
        port: Some(port),
        state_dir: repo_root().join(".onramp/dev"),
        remove_state_on_drop: false,
        inherit_output: true,
        admin_token,
        with_runner: true,
        runner_bin,
        public_host: None,
    })?;
    println!(
        "\n  Onramp is running on {}\n  (Ctrl-C stops everything)\n",
        stack.url
    );
    while !stop.load(Ordering::SeqCst) {
        let exited = [stack.edge.as_mut(), stack.runner.as_mut()]
            .into_iter()
            .flatten()
            .find_map(|s| {
                s.exited()
                    .map(|status| format!("{} exited ({status})", s.name))
            });
        if let Some(why) = exited {
            stack.stop();
            return Err(format!("{why}; stopped the rest"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("xtask: stopping the stack");
    stack.stop();
    Ok(())
}
