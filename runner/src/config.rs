//! Command-line configuration of the runner.

use std::net::SocketAddr;
use std::path::PathBuf;

/// How the runner was asked to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; loopback by default because the edge is the only client.
    pub addr: SocketAddr,
    /// Where jobs' working directories and the runner's own state live.
    pub state_dir: PathBuf,
    /// The shared secret the edge sends as `Authorization: Bearer <secret>`.
    pub secret: String,
    /// The cards (CPU here) this runner declares to the edge (`"cards": {"cpu": N}` in its
    /// `BACKENDS` entry): every job takes one, so at most this many run at once and the rest
    /// wait as `queued`.
    pub cards: usize,
    /// The shared reference data (models, corpora) copied into the state dir at start.
    pub shared: PathBuf,
}

/// The cards a runner declares by default, as the local stack's `BACKENDS` does: one training
/// job at a time gets the machine's cores to itself (two at once halve each other's speed).
pub const DEFAULT_CARDS: usize = 1;

/// Parses `--addr HOST:PORT --state-dir DIR [--cards N] [--shared DIR]` (`--max-jobs` is the old
/// name of `--cards`); the secret comes from `ONRAMP_RUNNER_SECRET` so that it never shows up in
/// a process listing.
pub fn from_args(
    args: impl IntoIterator<Item = String>,
    secret: Option<String>,
) -> Result<Config, String> {
    let mut addr: SocketAddr = ([127, 0, 0, 1], 8788).into();
    let mut state_dir = PathBuf::from(".onramp/runner");
    let mut cards = DEFAULT_CARDS;
    let mut shared = crate::assets::Assets::shared_default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => {
                let value = args
                    .next()
                    .ok_or("--addr needs a value such as 127.0.0.1:8788")?;
                addr = value
                    .parse()
                    .map_err(|e| format!("--addr {value:?} is not HOST:PORT: {e}"))?;
            }
            "--state-dir" => {
                state_dir = args.next().ok_or("--state-dir needs a directory")?.into();
            }
            "--cards" | "--max-jobs" => {
                let value = args.next().ok_or(format!("{arg} needs a number"))?;
                cards = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("{arg} {value:?} is not a positive number"))?;
            }
            "--shared" => {
                shared = args.next().ok_or("--shared needs a directory")?.into();
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    let secret = secret
        .filter(|s| !s.is_empty())
        .ok_or("ONRAMP_RUNNER_SECRET must be set: the edge authenticates with it")?;
    Ok(Config {
        addr,
        state_dir,
        secret,
        cards,
        shared,
    })
}

pub const USAGE: &str = "usage: onramp-runner [--addr 127.0.0.1:8788] [--state-dir DIR] \
    [--cards N] [--shared DIR]   (secret in ONRAMP_RUNNER_SECRET)
       onramp-runner tiny-train --help";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_addr_and_state_dir() {
        let c = from_args(
            args(&["--addr", "127.0.0.1:9000", "--state-dir", "/tmp/x"]),
            Some("s".into()),
        )
        .unwrap();
        assert_eq!(c.addr.port(), 9000);
        assert_eq!(c.state_dir, PathBuf::from("/tmp/x"));
    }

    #[test]
    fn refuses_missing_secret_and_bad_addr() {
        assert!(
            from_args(args(&[]), None)
                .unwrap_err()
                .contains("ONRAMP_RUNNER_SECRET")
        );
        let err = from_args(args(&["--addr", "nope"]), Some("s".into())).unwrap_err();
        assert!(err.contains("not HOST:PORT"), "{err}");
        assert!(from_args(args(&["--frob"]), Some("s".into())).is_err());
        let err = from_args(args(&["--max-jobs", "0"]), Some("s".into())).unwrap_err();
        assert!(err.contains("--max-jobs"), "{err}");
    }

    #[test]
    fn a_runner_declares_one_card_unless_told() {
        assert_eq!(from_args(args(&[]), Some("s".into())).unwrap().cards, 1);
        let c = from_args(args(&["--cards", "3"]), Some("s".into())).unwrap();
        assert_eq!(c.cards, 3);
        let err = from_args(args(&["--cards", "x"]), Some("s".into())).unwrap_err();
        assert!(err.contains("--cards \"x\""), "{err}");
    }
}
