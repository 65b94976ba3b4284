//! A download's body read with a bound on silence: ureq's timeouts bound a whole body or none of
//! it, and a download of any size must neither be cut off for taking long nor hang for ever on a
//! connection that went quiet mid-body. The partial file stays, so the same command resumes it.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Duration;

/// How long a download may go without receiving a byte.
pub const IDLE: Duration = Duration::from_secs(60);

/// `inner`, read on a thread of its own a chunk at a time; a read that waits longer than `idle`
/// for the next chunk fails with `TimedOut`. The thread ends with the body, or when this reader
/// is dropped and its next chunk has nowhere to go (a body that never answers keeps it blocked
/// until the process ends, which the failed download's command does).
pub struct IdleLimited {
    chunks: Receiver<io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    at: usize,
    ended: bool,
    idle: Duration,
}

impl IdleLimited {
    pub fn new(mut inner: Box<dyn Read + Send>, idle: Duration) -> IdleLimited {
        let (tx, chunks) = sync_channel(4);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let chunk = match inner.read(&mut buf) {
                    Ok(n) => Ok(buf[..n].to_vec()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let last = !matches!(&chunk, Ok(c) if !c.is_empty());
                if tx.send(chunk).is_err() || last {
                    return;
                }
            }
        });
        IdleLimited {
            chunks,
            pending: Vec::new(),
            at: 0,
            ended: false,
            idle,
        }
    }
}

impl Read for IdleLimited {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.pending.len() {
            if self.ended {
                return Ok(0);
            }
            match self.chunks.recv_timeout(self.idle) {
                Ok(Ok(chunk)) if chunk.is_empty() => {
                    self.ended = true;
                    return Ok(0);
                }
                Ok(Ok(chunk)) => (self.pending, self.at) = (chunk, 0),
                Ok(Err(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        crate::say::t(
                            format!("nothing arrived for {} s", self.idle.as_secs()),
                            format!("{} 秒内没有收到任何数据", self.idle.as_secs()),
                        ),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("the download's reader ended"));
                }
            }
        }
        let n = out.len().min(self.pending.len() - self.at);
        out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that sends its first bytes and then nothing, on a connection left open.
    fn silent_after(first: &'static [u8]) -> (Box<dyn Read + Send>, std::net::TcpStream) {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server.write_all(first).unwrap();
        (Box::new(client), server)
    }

    #[test]
    fn a_body_gone_silent_mid_way_fails_after_the_idle_limit() {
        let (body, _open) = silent_after(b"first bytes");
        let mut r = IdleLimited::new(body, Duration::from_millis(200));
        let mut got = vec![0u8; 64];
        let n = r.read(&mut got).unwrap();
        assert_eq!(&got[..n], b"first bytes");
        let e = r.read(&mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    }

    #[test]
    fn a_whole_body_reads_through_unchanged_in_small_reads() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = IdleLimited::new(Box::new(io::Cursor::new(data.clone())), IDLE);
        let mut got = Vec::new();
        let mut small = [0u8; 1000];
        loop {
            let n = r.read(&mut small).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&small[..n]);
        }
        assert_eq!(got, data);
        assert_eq!(r.read(&mut small).unwrap(), 0);
    }

    #[test]
    fn an_error_of_the_body_is_passed_on() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let mut r = IdleLimited::new(Box::new(Broken), IDLE);
        let e = r.read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
    }
}
