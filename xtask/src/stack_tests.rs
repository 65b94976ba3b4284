//! The stack tests, two at a time, each in a process of its own, each one's output printed whole
//! when it ends with how long it took.
//!
//! Two at a time: they keep this 2-core machine busy (real processes: wrangler dev, the runner,
//! Chromium, Slurm, the trainer). A process each: a test that aborts, hangs past its own limits
//! or leaves something in its process behind takes no other test with it, and two tests' lines
//! never interleave.
//!
//! The order: the longest tests ([`LONGEST`]) first, one at a time, the rest in name order beside
//! them (as libtest would run them). In name order alone the Slurm journey, the longest by far,
//! came last and ran alone for its last three minutes while the other slot had nothing left
//! (754 s in a CI run here; 651 s in this order, on the same machine the next day). One at a
//! time: the order of the last run's times alone was tried (692 s, its tests' times adding up to
//! 1383 s, against 645 s and 1122 s in name order the same day): it started the two longest
//! together, the Slurm journey and the LoRA job from the browser, each of which keeps both cores
//! busy with the trainer's threads, and each took far longer beside the other (215 s for the
//! LoRA job instead of 86 s). A name in [`LONGEST`] the binary no longer has is skipped; a long test
//! missing from it only runs in its name's turn.

use std::collections::VecDeque;
use std::process::Command;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// How many tests run at once.
const AT_ONCE: usize = 2;

/// The longest tests, longest first (a CI run here: 223 s, 109, 97, 89 and 60), which start
/// before the others and never run beside each other.
const LONGEST: &[&str] = &[
    "slurm_edge::slurm_jobs_through_the_edge",
    "slurm_cluster::multi_rank_jobs_share_a_node_and_span_two",
    "app_trainer::a_lora_job_from_the_submit_button_trains_and_draws_its_loss_curve",
    "slurm_edge::node_death::a_job_whose_node_dies_is_requeued_resumed_and_billed_for_both_attempts",
    "edge_benchmarks::a_benchmark_of_the_runners_task_folder_is_scored_before_and_after_and_shared",
];

/// The tests still to start, in the order they start, and how many of [`LONGEST`] run now.
struct Queue {
    waiting: VecDeque<String>,
    long_running: usize,
}

impl Queue {
    /// [`LONGEST`] first (those the binary has), then the rest in name order.
    fn new(mut names: Vec<String>) -> Queue {
        names.sort();
        let mut waiting: VecDeque<String> = LONGEST
            .iter()
            .filter(|l| names.iter().any(|n| n == *l))
            .map(|l| l.to_string())
            .collect();
        waiting.extend(names.into_iter().filter(|n| !LONGEST.contains(&n.as_str())));
        Queue {
            waiting,
            long_running: 0,
        }
    }

    /// The next test to start: the first waiting, unless it is one of [`LONGEST`] while another
    /// runs, in which case the first waiting that is not; [`Next::Wait`] while only long tests
    /// wait and one runs (the slot waits for a test to end, [`take`]); [`Next::Done`] when
    /// nothing is left to start.
    fn next(&mut self) -> Next {
        let long = |n: &String| LONGEST.contains(&n.as_str());
        let at = if self.long_running == 0 {
            (!self.waiting.is_empty()).then_some(0)
        } else {
            self.waiting.iter().position(|n| !long(n))
        };
        match at.and_then(|i| self.waiting.remove(i)) {
            Some(name) => {
                if long(&name) {
                    self.long_running += 1;
                }
                Next::Run(name)
            }
            None if self.waiting.is_empty() => Next::Done,
            None => Next::Wait,
        }
    }

    fn ended(&mut self, name: &str) {
        if LONGEST.contains(&name) {
            self.long_running -= 1;
        }
    }
}

#[derive(Debug, PartialEq)]
enum Next {
    Run(String),
    Wait,
    Done,
}

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
    let names = list(binary)?;
    if names.is_empty() {
        return Err("the stack tests' binary listed no test".to_string());
    }
    for long in LONGEST.iter().filter(|l| !names.iter().any(|n| n == *l)) {
        eprintln!("xtask: {long} is named in stack_tests::LONGEST but the binary has no such test");
    }
    let queue = Mutex::new(Queue::new(names));
    // A slot that waits for a long test to end is woken when any test ends.
    let ended = Condvar::new();
    let results = Mutex::new((Vec::new(), done));
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE {
            scope.spawn(|| {
                while let Some(name) = take(&queue, &ended) {
                    // Its output comes whole at its end: a test that hangs is named here.
                    eprintln!("xtask: stack test {name}: started");
                    let one = run_one(binary, &name);
                    if let Ok(mut q) = queue.lock() {
                        q.ended(&name);
                    }
                    ended.notify_all();
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

/// The next test for a slot, waiting while only long tests are left and one runs; `None` when
/// none is left to start (or the queue's lock was poisoned by a panicking slot).
fn take(queue: &Mutex<Queue>, ended: &Condvar) -> Option<String> {
    let mut q = queue.lock().ok()?;
    loop {
        match q.next() {
            Next::Run(name) => return Some(name),
            Next::Done => return None,
            Next::Wait => q = ended.wait(q).ok()?,
        }
    }
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

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    /// The long tests start first, longest first, never two at once; the rest in name order.
    #[test]
    fn the_longest_start_first_and_never_beside_each_other() {
        let mut q = Queue::new(names(&["b::x", LONGEST[2], "a::y", LONGEST[0], "c::z"]));
        let run = |n: &str| Next::Run(n.to_string());
        assert_eq!(q.next(), run(LONGEST[0]));
        // Beside it, the short ones in name order, not the other long one.
        assert_eq!(q.next(), run("a::y"));
        q.ended("a::y");
        assert_eq!(q.next(), run("b::x"));
        q.ended("b::x");
        assert_eq!(q.next(), run("c::z"));
        q.ended("c::z");
        assert_eq!(q.next(), Next::Wait);
        q.ended(LONGEST[0]);
        assert_eq!(q.next(), run(LONGEST[2]));
        assert_eq!(q.next(), Next::Done);
        // Without any long test, plain name order.
        let mut q = Queue::new(names(&["b::x", "a::y"]));
        assert_eq!(q.next(), run("a::y"));
        assert_eq!(q.next(), run("b::x"));
        assert_eq!(q.next(), Next::Done);
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
