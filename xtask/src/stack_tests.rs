//! The stack tests, two at a time, each in a process of its own, the longest first.
//!
//! They keep this 2-core machine busy (real processes: wrangler dev, the runner, Chromium,
//! Slurm, the trainer), so two run at once. libtest starts a binary's tests in name order, which
//! put the longest (the Slurm journey, over 3 minutes) last, alone, with one core idle while it
//! ran. Here the e2e binary runs one test per process (`--exact NAME`), in the order of the
//! durations the last run took, longest first (the first fit of the longest-first rule); tests
//! with no duration yet (new ones, or a first run) go first, in name order. The durations are kept
//! in the target folder, beside the builds they belong to.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// How many tests run at once.
const AT_ONCE: usize = 2;

/// The last run's durations, one `name<TAB>seconds` per line.
const TIMES: &str = "stack-test-times.tsv";

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
    let times_path = crate::cmd::target_dir().join(TIMES);
    let mut times = read_times(&times_path);
    let queue = Mutex::new(order(names, &times));
    let results = Mutex::new((Vec::new(), done));
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE {
            scope.spawn(|| {
                while let Some(name) = queue.lock().map(|mut q| q.pop_front()).ok().flatten() {
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
    for d in &all {
        times.insert(d.name.clone(), d.seconds);
    }
    write_times(&times_path, &times);
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

/// Tests without a duration first (in name order), then the rest longest first.
fn order(mut names: Vec<String>, times: &BTreeMap<String, f64>) -> VecDeque<String> {
    names.sort();
    names.sort_by(|a, b| {
        let (ta, tb) = (times.get(a), times.get(b));
        match (ta, tb) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.total_cmp(x),
        }
    });
    names.into()
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

fn read_times(path: &Path) -> BTreeMap<String, f64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (name, s) = l.split_once('\t')?;
            Some((name.to_string(), s.parse().ok()?))
        })
        .collect()
}

/// Writes the durations (best effort: only the next run's order depends on them).
fn write_times(path: &Path, times: &BTreeMap<String, f64>) {
    let text: String = times
        .iter()
        .map(|(name, s)| format!("{name}\t{s:.1}\n"))
        .collect();
    let tmp = path.with_extension("tsv.tmp");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_tests_go_first_then_the_longest() {
        let times = BTreeMap::from([
            ("b".to_string(), 5.0),
            ("c".to_string(), 200.0),
            ("d".to_string(), 30.0),
        ]);
        let names = ["d", "z", "c", "a", "b"].map(String::from).to_vec();
        assert_eq!(
            Vec::from(order(names, &times)),
            ["a", "z", "c", "d", "b"].map(String::from).to_vec()
        );
    }

    #[test]
    fn durations_round_trip_and_bad_lines_are_skipped() {
        let dir = std::env::temp_dir().join(format!("onramp-times-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(TIMES);
        let times = BTreeMap::from([("m::t".to_string(), 12.34)]);
        write_times(&path, &times);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("no tab here\nx\tnot a number\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(
            read_times(&path),
            BTreeMap::from([("m::t".to_string(), 12.3)])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
