//! The stack tests, two at a time, each in a process of its own, in name order (as libtest
//! would run them), each one's output printed whole when it ends with how long it took.
//!
//! Two at a time: they keep this 2-core machine busy (real processes: wrangler dev, the runner,
//! Chromium, Slurm, the trainer). A process each: a test that aborts, hangs past its own limits
//! or leaves something in its process behind takes no other test with it, and two tests' lines
//! never interleave. Name order, not longest first: the order of the last run's durations was
//! tried (a CI run here: 692 s, its tests' times adding up to 1383 s, against 645 s and 1122 s
//! in name order the same day): it started the two longest together, the Slurm journey and the
//! LoRA job from the browser, each of which keeps both cores busy with the trainer's threads,
//! and each took far longer beside the other (215 s for the LoRA job instead of 86 s).

use std::collections::VecDeque;
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// How many tests run at once.
const AT_ONCE: usize = 2;

/// A test's run: its name, whether it passed, how long it took, and what it printed.
pub struct Done {
    pub name: String,
    pub passed: bool,
    pub seconds: f64,
    pub output: String,
}

/// Runs every ignored test of the binary that `binary` makes a command for, [`AT_ONCE`] at a
/// time, calling `done` (one at a time) as each ends. Returns the names of those that failed.
pub fn run(
    binary: &(dyn Fn() -> Command + Sync),
    done: &mut (dyn FnMut(&Done) + Send),
) -> Result<Vec<String>, String> {
    let mut names = list(binary)?;
    if names.is_empty() {
        return Err("the stack tests' binary listed no test".to_string());
    }
    names.sort();
    let queue = Mutex::new(VecDeque::from(names));
    let results = Mutex::new((Vec::new(), done));
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE {
            scope.spawn(|| {
                while let Some(name) = queue.lock().map(|mut q| q.pop_front()).ok().flatten() {
                    // Its output comes whole at its end: a test that hangs is named here.
                    eprintln!("xtask: stack test {name}: started");
                    let one = run_one(binary, &name);
                    if let Ok(mut guard) = results.lock() {
                        let (all, done) = &mut *guard;
                        done(&one);
                        all.push(one);
                    }
                }
            });
        }
    });
    let (all, _) = results
        .into_inner()
        .map_err(|_| "a stack test's thread panicked".to_string())?;
    Ok(all
        .into_iter()
        .filter(|d| !d.passed)
        .map(|d| d.name)
        .collect())
}

/// The binary's ignored tests (`--list --format terse`: `name: test`).
fn list(binary: &dyn Fn() -> Command) -> Result<Vec<String>, String> {
    let out = binary()
        .args(["--ignored", "--list", "--format", "terse"])
        .output()
        .map_err(|e| format!("cannot list the stack tests: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot list the stack tests: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(String::from)
        .collect())
}

/// One test in a process of its own; its output (standard output, then error) kept whole, so
/// that two tests' lines do not interleave.
fn run_one(binary: &dyn Fn() -> Command, name: &str) -> Done {
    let started = Instant::now();
    let out = binary()
        .args(["--ignored", "--exact", name, "--test-threads=1"])
        // What the journeys measure is printed by passing tests too.
        .arg("--show-output")
        .output();
    let seconds = started.elapsed().as_secs_f64();
    match out {
        Ok(out) => {
            let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
            output.push_str(&String::from_utf8_lossy(&out.stderr));
            // A binary that ran no test (a name it no longer has) has not passed one.
            let ran = output.contains("test result: ") && !output.contains(" 0 passed; 0 failed");
            Done {
                name: name.to_string(),
                passed: out.status.success() && ran,
                seconds,
                output,
            }
        }
        Err(e) => Done {
            name: name.to_string(),
            passed: false,
            seconds,
            output: format!("cannot start the stack test {name}: {e}\n"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the test binary that prints one harness line.
    fn printing(line: &'static str) -> impl Fn() -> Command {
        move || {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("echo '{line}'"), "sh"]);
            c
        }
    }

    /// A name the binary does not have runs no test: not a pass.
    #[test]
    fn a_test_that_did_not_run_has_not_passed() {
        let echo = printing("test result: ok. 0 passed; 0 failed; 0 ignored");
        let done = run_one(&echo, "no::such_test");
        assert!(!done.passed, "{}", done.output);
        let ok = printing("test result: ok. 1 passed; 0 failed; 0 ignored");
        assert!(run_one(&ok, "m::t").passed);
    }
}
