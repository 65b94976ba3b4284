//! HTTP/1.1 by hand, for what a client library will not send: a chunked body past a route's
//! limit, an upload that stalls or stops midway, a method nobody defined (`QUERY`).

/// One request on a connection of its own, its body sent whole (chunked in 16 KiB chunks, or
/// with its length), and its answer read to the end its framing gives (wrangler dev keeps a
/// connection open for seconds after answering, `Connection: close` or not): `(status, body)`,
/// or why there was none.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    body: &[u8],
    chunked: bool,
) -> Result<(u16, String), String> {
    use std::io::Write;
    let mut tcp = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_string()
    } else {
        format!("Content-Length: {}", body.len())
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Idempotency-Key: k-{}\r\n{framing}\r\n\r\n",
        crate::stack::random_hex(6)
    );
    let mut out = head.into_bytes();
    if chunked {
        for part in body.chunks(16 * 1024) {
            out.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            out.extend_from_slice(part);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(body);
    }
    // The edge may answer (and close) before it has all of it: a failed write is not the test.
    let _ = tcp.write_all(&out);
    read_answer_of(&mut tcp, method != "HEAD")
}

/// An HTTP/1.1 answer, read as far as its `Content-Length` or its last chunk.
pub fn read_answer(tcp: &mut std::net::TcpStream) -> Result<(u16, String), String> {
    read_answer_of(tcp, true)
}

/// [`read_answer`]; the answer to a HEAD has no body, whatever its `Content-Length` says.
fn read_answer_of(tcp: &mut std::net::TcpStream, body: bool) -> Result<(u16, String), String> {
    use std::io::Read;
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut more = |data: &mut Vec<u8>| -> Result<bool, String> {
        let n = tcp
            .read(&mut buf)
            .map_err(|e| format!("no whole answer ({} bytes so far): {e}", data.len()))?;
        data.extend_from_slice(&buf[..n]);
        Ok(n > 0)
    };
    let end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if !more(&mut data)? {
            return Err(format!("the answer ended in its head: {data:?}"));
        }
    };
    let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok());
    let done = |data: &[u8]| match length {
        _ if !body => true,
        Some(n) => data.len() >= end + 4 + n,
        None => data.ends_with(b"0\r\n\r\n"),
    };
    while !done(&data) {
        if !more(&mut data)? {
            return Err(format!(
                "the answer ended early: {:?}",
                String::from_utf8_lossy(&data)
            ));
        }
    }
    let rest = String::from_utf8_lossy(&data[end + 4..]).into_owned();
    // A chunked answer has its JSON between the chunk sizes.
    let body = match (rest.find('{'), rest.rfind('}')) {
        (Some(a), Some(b)) if b >= a => rest[a..=b].to_string(),
        _ => rest,
    };
    Ok((status, body))
}
