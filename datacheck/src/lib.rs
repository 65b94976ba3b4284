//! datacheck: what a dataset holds before anything is paid for it.
//!
//! One checker for the CLI (`onramp datasets check`), the edge and the browser (wasm, in a Web
//! Worker over the file as a stream). It reads alpaca, chat, prompt/completion, `{"text": …}`
//! records and plain text, as JSON lines or one JSON array; it names every bad line with its
//! number and what is wrong (in zh-CN and en); and it counts examples and tokens with the
//! model's own tokenizer, rendered as onramp-train renders them, so that its count is the
//! trainer's. Without the tokenizer it estimates, and says so.
//!
//! Fed in chunks (`Checker::push`), it holds one record at a time, never the file.

pub mod check;
pub mod count;
#[cfg(feature = "hf")]
pub mod hf;
pub mod problem;
pub mod record;
pub mod scan;

pub use check::{Checker, MAX_LISTED, Report};
pub use count::{Counter, Estimate, Lengths};
pub use problem::{BadLine, Problem};
pub use record::Format;
pub use scan::Layout;

/// Checks a whole file in memory (tests, small files).
pub fn check_bytes<C: Counter>(
    name: Option<&str>,
    bytes: &[u8],
    counter: C,
    seq_len: u32,
) -> Report {
    let mut c = Checker::new(name, counter, seq_len);
    c.push(bytes);
    c.finish()
}

/// Checks what `r` reads, in chunks of `chunk` bytes, calling `progress` with the bytes read
/// after each.
#[cfg(not(target_arch = "wasm32"))]
pub fn check_reader<C: Counter>(
    name: Option<&str>,
    mut r: impl std::io::Read,
    counter: C,
    seq_len: u32,
    mut progress: impl FnMut(u64),
) -> std::io::Result<Report> {
    let mut c = Checker::new(name, counter, seq_len);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        c.push(&buf[..n]);
        progress(c.bytes());
    }
    Ok(c.finish())
}
