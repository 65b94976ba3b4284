//! The edge's own public URL (`PUBLIC_URL`): what jobs report to and push their logs to.
//!
//! It is configuration, never read from a request: a caller who controls the `Host` header must
//! not be able to make a backend send a job's token to another server.

/// Checks `PUBLIC_URL`: `http(s)://host[:port]` with an optional path prefix, no query, no
/// fragment, no credentials; the trailing slash is dropped.
pub fn parse(var: Option<&str>, require_tls: bool) -> Result<String, String> {
    let url = var.map(str::trim).unwrap_or_default();
    if url.is_empty() {
        return Err("PUBLIC_URL is not set: the edge needs its own public URL (e.g. https://onramp.example.com) to tell jobs where to report".into());
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("PUBLIC_URL {url:?} is not an http(s) URL"))?;
    let host = rest.split('/').next().unwrap_or_default();
    let clean = |c: char| c.is_ascii_alphanumeric() || "-._~/:[]%".contains(c);
    if host.is_empty() || host.contains('@') || !rest.chars().all(clean) {
        return Err(format!(
            "PUBLIC_URL {url:?} must be scheme://host[:port][/path] with no credentials, query or fragment"
        ));
    }
    crate::tls::check("PUBLIC_URL", url, require_tls)?;
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn parse_any(var: Option<&str>) -> Result<String, String> {
        parse(var, false)
    }

    #[test]
    fn with_tls_required_only_https_or_loopback() {
        assert!(parse(Some("https://onramp.example.com"), true).is_ok());
        assert!(parse(Some("http://127.0.0.1:8787"), true).is_ok());
        let e = parse(Some("http://onramp.example.com"), true).unwrap_err();
        assert!(e.contains("REQUIRE_TLS"), "{e}");
    }

    #[test]
    fn accepts_plain_urls_and_refuses_the_rest() {
        assert_eq!(
            parse_any(Some("https://onramp.example.com/")).as_deref(),
            Ok("https://onramp.example.com")
        );
        assert_eq!(
            parse_any(Some("http://127.0.0.1:8787")).as_deref(),
            Ok("http://127.0.0.1:8787")
        );
        assert_eq!(
            parse_any(Some("https://example.com/onramp")).as_deref(),
            Ok("https://example.com/onramp")
        );
        for bad in [
            None,
            Some(""),
            Some("ftp://x"),
            Some("onramp.example.com"),
            Some("https://"),
            Some("https://user:pw@example.com"),
            Some("https://example.com/?x=1"),
            Some("https://example.com/#f"),
            Some("https://exa mple.com"),
            Some("https://exa\nmple.com"),
        ] {
            assert!(parse_any(bad).is_err(), "{bad:?}");
        }
    }
}
