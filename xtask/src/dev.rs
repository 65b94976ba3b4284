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

    let mut runner_bin = None;
    crate::setup::run_then(|build| {
        crate::build::served(build)?;
        // What users get: the runner (and so tiny-train's training) as a release build.
        runner_bin = Some(crate::build::runner_release()?);
        Ok(())
    })?;
    let runner_bin = runner_bin.ok_or("the runner was not built")?;
    if stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    let state_dir = repo_root().join(".onramp/dev");
    let runner_eval_tasks = tasks_in(&state_dir.join("eval-tasks"));
    let mut stack = Stack::start(StackOptions {
        port: Some(port),
        state_dir,
        remove_state_on_drop: false,
        inherit_output: true,
        admin_token,
        with_runner: true,
        runner_bin,
        public_host: None,
        runner_eval_tasks,
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

/// The lm-evaluation-harness tasks whose YAMLs a developer put in the dev runner's task folder
/// (`task: NAME` lines), which the runner's backend then lists, so that specs scoring them are
/// accepted; none when the folder is empty or absent.
fn tasks_in(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut tasks: Vec<String> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("task:"))
                .map(|t| {
                    let t = t.split(" #").next().unwrap_or_default();
                    t.trim().trim_matches(['"', '\'']).to_string()
                })
                .collect::<Vec<_>>()
        })
        .filter(|t| jobspec::eval_spec::is_task_name(t))
        .collect();
    tasks.sort();
    tasks.dedup();
    tasks
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_dev_runner_lists_the_tasks_of_its_folder() {
        let dir = std::env::temp_dir().join(format!("onramp-dev-tasks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "task: sky\ndataset_path: json\n").unwrap();
        std::fs::write(dir.join("b.yml"), "task: \"sea\"  # the sea's colour\n").unwrap();
        std::fs::write(dir.join("c.yaml"), "task: not a name\n").unwrap();
        std::fs::write(dir.join("d.jsonl"), "task: data\n").unwrap();
        assert_eq!(super::tasks_in(&dir), ["sea", "sky"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(super::tasks_in(&dir).is_empty());
    }
}
