//! Logs that jobs push to the edge (`POST /api/jobs/{id}/log?offset=N`), for backends that
//! cannot serve their jobs' output (Slurm's slurmrestd serves none): how a chunk joins what is
//! stored, how stored text is read back from a byte offset, and the limits.
//!
//! Offsets are byte offsets in the job's output, as the job counts them. Stored text keeps every
//! byte's place: a byte that is not valid UTF-8 (a character cut by the job's chunking, or binary
//! output) is stored as one `?`, so offsets stay exact on both sides.

use crate::backends::adapter::LogChunk;
use crate::error::{ApiError, ErrorCode};

/// The most one push may carry (the job script sends 64 KiB at a time).
pub const MAX_CHUNK_BYTES: usize = 64 * 1024;
/// The most the edge keeps of one job's log; a job's own Slurm log file keeps everything.
pub const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;
/// The most one read returns.
pub const MAX_READ_BYTES: usize = 64 * 1024;

/// A stored piece takes more pushed bytes while it stays at most this long: pushes of a few bytes
/// each join one row instead of a row each (a log's rows stay under 2 × MAX_LOG_BYTES / this).
pub const JOIN_UP_TO_BYTES: u64 = 16 * 1024;

/// Whether `take` pushed bytes join the last stored piece of `last_bytes` rather than start a new
/// one: while the two together stay within [`JOIN_UP_TO_BYTES`].
pub fn joins_last(last_bytes: u64, take: usize) -> bool {
    last_bytes.saturating_add(take as u64) <= JOIN_UP_TO_BYTES
}

/// What to store of a pushed chunk: `skip` bytes the edge already has (a retry), then `take`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Append {
    pub offset: u64,
    pub skip: usize,
    pub take: usize,
    /// Bytes dropped because the log reached [`MAX_LOG_BYTES`].
    pub dropped: usize,
}

/// Decides what of a chunk pushed at `offset` joins a log that has `stored` bytes. A chunk that
/// starts past the end would leave a hole: refused (409) with where to resume.
pub fn plan_append(stored: u64, offset: u64, chunk_len: usize) -> Result<Append, ApiError> {
    if chunk_len > MAX_CHUNK_BYTES {
        return Err(ApiError::new(
            ErrorCode::TooLarge,
            format!("a log chunk may carry at most {MAX_CHUNK_BYTES} bytes (got {chunk_len})"),
        ));
    }
    if offset > stored {
        return Err(ApiError::new(
            ErrorCode::LogGap,
            format!(
                "the edge has {stored} bytes of this log; a chunk at {offset} would leave a gap"
            ),
        )
        .with_details(serde_json::json!({"next_offset": stored})));
    }
    let skip = usize::try_from(stored - offset)
        .unwrap_or(usize::MAX)
        .min(chunk_len);
    let room = usize::try_from(MAX_LOG_BYTES.saturating_sub(stored)).unwrap_or(usize::MAX);
    let rest = chunk_len - skip;
    let take = rest.min(room);
    Ok(Append {
        offset: stored,
        skip,
        take,
        dropped: rest - take,
    })
}

/// The bytes as text with each invalid byte replaced by `?`, so the text has exactly as many
/// bytes as the input.
pub fn to_text(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                out.extend(std::iter::repeat_n('?', bad));
                bytes = &rest[bad..];
            }
        }
    }
}

/// Reads up to [`MAX_READ_BYTES`] from `offset` out of stored pieces (offset, text), which are
/// contiguous and in order. The read ends on a character boundary; `eof` when the job has ended
/// and nothing more is stored.
pub fn read(pieces: &[(u64, String)], offset: u64, job_ended: bool) -> LogChunk {
    let mut text = String::new();
    let mut at = offset;
    for (start, piece) in pieces {
        if start + piece.len() as u64 <= at {
            continue;
        }
        if *start > at {
            // A hole (never stored): stop rather than invent a join.
            break;
        }
        // An offset inside a character starts at the next whole one.
        let mut from = usize::try_from(at - start).unwrap_or(usize::MAX);
        while from < piece.len() && !piece.is_char_boundary(from) {
            from += 1;
        }
        let mut take = (piece.len() - from).min(MAX_READ_BYTES - text.len());
        while !piece.is_char_boundary(from + take) {
            take -= 1;
        }
        text.push_str(&piece[from..from + take]);
        at = start + (from + take) as u64;
        if from + take < piece.len() {
            break;
        }
    }
    let stored_end = pieces
        .last()
        .map_or(0, |(s, p)| s + p.len() as u64)
        .max(offset);
    LogChunk {
        offset,
        next_offset: at,
        text,
        eof: job_ended && at >= stored_end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tiny_pushes_join_one_row() {
        assert!(joins_last(0, 1));
        assert!(joins_last(JOIN_UP_TO_BYTES - 1, 1));
        assert!(!joins_last(JOIN_UP_TO_BYTES, 1));
        assert!(!joins_last(10, MAX_CHUNK_BYTES));
        // A whole log pushed a byte at a time makes one row per JOIN_UP_TO_BYTES.
        let (mut rows, mut last) = (0u64, None::<u64>);
        for _ in 0..MAX_LOG_BYTES / 64 {
            match last {
                Some(b) if joins_last(b, 64) => last = Some(b + 64),
                _ => {
                    rows += 1;
                    last = Some(64);
                }
            }
        }
        assert_eq!(rows, MAX_LOG_BYTES / JOIN_UP_TO_BYTES);
    }

    #[test]
    fn retries_overlap_and_gaps_are_refused() {
        assert_eq!(
            plan_append(0, 0, 10).unwrap(),
            Append {
                offset: 0,
                skip: 0,
                take: 10,
                dropped: 0
            }
        );
        // The job resent a chunk the edge already had half of.
        assert_eq!(
            plan_append(15, 10, 10).unwrap(),
            Append {
                offset: 15,
                skip: 5,
                take: 5,
                dropped: 0
            }
        );
        assert_eq!(plan_append(15, 0, 10).unwrap().take, 0);
        let e = plan_append(15, 20, 10).unwrap_err();
        assert_eq!((e.status, e.code), (409, ErrorCode::LogGap));
        assert_eq!(e.details["next_offset"], 15);
        assert_eq!(
            plan_append(0, 0, MAX_CHUNK_BYTES + 1).unwrap_err().status,
            413
        );
        let full = plan_append(MAX_LOG_BYTES - 3, MAX_LOG_BYTES - 3, 10).unwrap();
        assert_eq!((full.take, full.dropped), (3, 7));
    }

    #[test]
    fn invalid_bytes_keep_their_place() {
        assert_eq!(to_text("步 ok".as_bytes()), "步 ok");
        // A character cut in two by the job's chunking: each half keeps its byte count.
        let b = "步".as_bytes();
        assert_eq!(to_text(&b[..2]), "??");
        assert_eq!(to_text(&[b'a', 0xff, b'b']), "a?b");
    }

    #[test]
    fn reads_from_an_offset_across_pieces() {
        let pieces = vec![(0, "hello ".to_string()), (6, "world\n".to_string())];
        let c = read(&pieces, 3, false);
        assert_eq!(
            (c.text.as_str(), c.next_offset, c.eof),
            ("lo world\n", 12, false)
        );
        let c = read(&pieces, 12, true);
        assert_eq!((c.text.as_str(), c.next_offset, c.eof), ("", 12, true));
        let c = read(&pieces, 0, true);
        assert!(c.eof);
        // A job's small pieces (one per 2-second round) come back together.
        let small: Vec<(u64, String)> = (0..40).map(|i| (i * 4, format!("l{i:02}\n"))).collect();
        let c = read(&small, 0, true);
        assert_eq!((c.text.len(), c.eof), (160, true));
        assert!(c.text.ends_with("l39\n"));
        let big = "步".repeat(MAX_READ_BYTES / 3 + 10);
        let c = read(&[(0, big)], 0, true);
        assert!(c.text.len() <= MAX_READ_BYTES && c.text.len().is_multiple_of(3));
        assert!(!c.eof);
    }

    proptest! {
        #[test]
        fn text_keeps_the_byte_length(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(to_text(&bytes).len(), bytes.len());
        }

        #[test]
        fn reads_never_panic(text in "\\PC{0,80}", offset in 0u64..400, cut in 0usize..80) {
            let cut = (0..=cut.min(text.len())).rev().find(|c| text.is_char_boundary(*c)).unwrap_or(0);
            let (a, b) = text.split_at(cut);
            let pieces = vec![(0, a.to_string()), (a.len() as u64, b.to_string())];
            let c = read(&pieces, offset, true);
            prop_assert!(c.next_offset >= c.offset);
        }
    }
}
