//! Files inside a job's folder, as the runner opens them: outside any sandbox, with the runner's
//! rights, in a folder the job writes to. A job may replace any name there with a link (its log
//! with one to `/proc/self/environ`, which the runner would resolve as its own, secret and all;
//! its `spec.toml` with one to a file of the runner's user). So every component below the
//! folder is opened without following links (`O_NOFOLLOW`, one `openat` per folder), and only a
//! regular file is accepted: never a link, a FIFO (whose open would block) or a device.

use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// To read; it must exist.
    Read,
    /// To append, created (owner-only) when missing: the job's log.
    Append,
    /// Created new (owner read/write, others read), whatever was at its name removed first:
    /// a file the runner writes for the job.
    Replace,
}

/// Opens `rel` (relative, plain names only) inside the folder `dir` (the runner's own, trusted)
/// without following a link at any component, and only when it is a regular file.
pub fn open(dir: &Path, rel: &Path, how: How) -> io::Result<File> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, folders)) = names.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    let base = OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
    let mut at: OwnedFd = File::open(dir)?.into();
    for name in folders {
        at = openat(
            &at,
            *name,
            base | OFlag::O_DIRECTORY | OFlag::O_RDONLY,
            Mode::empty(),
        )?;
    }
    // Not blocking on a FIFO's open; a regular file's reads ignore the flag.
    let (flags, mode) = match how {
        How::Read => (OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty()),
        How::Append => (
            OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT | OFlag::O_NONBLOCK,
            Mode::from_bits_truncate(0o600),
        ),
        How::Replace => {
            match nix::unistd::unlinkat(&at, *last, nix::unistd::UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(nix::errno::Errno::ENOENT) => {}
                Err(e) => return Err(e.into()),
            }
            (
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
                Mode::from_bits_truncate(0o644),
            )
        }
    };
    let file = File::from(openat(&at, *last, base | flags, mode)?);
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", rel.display()),
        ));
    }
    // Blocking again (the log becomes the job's output; its programs expect a plain file).
    let keep = if how == How::Append {
        OFlag::O_APPEND
    } else {
        OFlag::empty()
    };
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(keep))?;
    Ok(file)
}

/// Writes `bytes` as the new file `rel` in `dir` (see [`How::Replace`]).
pub fn write(dir: &Path, rel: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    open(dir, rel, How::Replace)?.write_all(bytes)
}

/// Whether `rel` in `dir` is a regular file reached without links.
pub fn is_file(dir: &Path, rel: &Path) -> bool {
    open(dir, rel, How::Read).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn folder() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/f"), b"inside").unwrap();
        d
    }

    #[test]
    fn a_regular_file_is_read_and_a_link_at_any_component_is_not_followed() {
        let d = folder();
        let mut s = String::new();
        open(d.path(), Path::new("sub/f"), How::Read)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "inside");
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("log")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("ckpt")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", d.path().join("env")).unwrap();
        for rel in ["log", "ckpt/secret", "env"] {
            for how in [How::Read, How::Append] {
                assert!(
                    open(d.path(), Path::new(rel), how).is_err(),
                    "{rel} {how:?}"
                );
            }
            assert!(!is_file(d.path(), Path::new(rel)), "{rel}");
        }
        for rel in ["../x", "/etc/passwd", "", "sub/../sub/f"] {
            assert!(open(d.path(), Path::new(rel), How::Read).is_err(), "{rel}");
        }
        // Appending through the link did not reach the file outside.
        assert_eq!(
            std::fs::read(outside.path().join("secret")).unwrap(),
            b"secret"
        );
    }

    #[test]
    fn a_fifo_or_a_folder_is_refused_without_blocking() {
        let d = folder();
        nix::unistd::mkfifo(&d.path().join("pipe"), Mode::from_bits_truncate(0o600)).unwrap();
        assert!(open(d.path(), Path::new("pipe"), How::Read).is_err());
        assert!(open(d.path(), Path::new("pipe"), How::Append).is_err());
        assert!(open(d.path(), Path::new("sub"), How::Read).is_err());
    }

    #[test]
    fn replace_removes_a_link_and_writes_a_new_file_in_its_place() {
        let d = folder();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("spec.toml")).unwrap();
        write(d.path(), Path::new("spec.toml"), b"name = \"x\"\n").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let meta = std::fs::symlink_metadata(d.path().join("spec.toml")).unwrap();
        assert!(meta.is_file());
        assert_eq!(
            std::fs::read(d.path().join("spec.toml")).unwrap(),
            b"name = \"x\"\n"
        );
        // And an ordinary file is replaced too.
        write(d.path(), Path::new("spec.toml"), b"again").unwrap();
        assert_eq!(std::fs::read(d.path().join("spec.toml")).unwrap(), b"again");
    }
}
