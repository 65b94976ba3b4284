//! No cleartext where secrets travel: with `REQUIRE_TLS` set (`[env.production]` sets it), every
//! URL the edge sends a secret to or hands to jobs (`PUBLIC_URL`, each backend's `url`) must be
//! `https://`. Two exceptions, both named: a URL on this machine (loopback), and a backend marked
//! `"insecure_private_network": true`, for a cluster reached over a private network only.

/// Whether the deployment requires TLS (`REQUIRE_TLS` is `true` or `1`).
pub fn required(var: Option<&str>) -> bool {
    matches!(var.map(str::trim), Some("true" | "1"))
}

/// `http://` to this machine: 127.0.0.0/8, `localhost` or `[::1]`.
pub fn is_loopback(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost"
        || host == "::1"
        || host.strip_prefix("127.").is_some_and(|r| {
            r.split('.').count() == 3 && r.split('.').all(|o| o.parse::<u8>().is_ok())
        })
}

/// Refuses `url` under `REQUIRE_TLS` unless it is https or loopback; `what` names the setting.
pub fn check(what: &str, url: &str, required: bool) -> Result<(), String> {
    if !required || url.starts_with("https://") || is_loopback(url) {
        return Ok(());
    }
    Err(format!(
        "{what} {url:?} is not https://, and this deployment requires TLS (REQUIRE_TLS): secrets \
         and job tokens would cross the network in cleartext"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_this_machine_passes_when_tls_is_required() {
        for ok in [
            "https://onramp.example.com",
            "http://127.0.0.1:8788",
            "http://localhost:8787/x",
            "http://[::1]:6820",
        ] {
            assert_eq!(check("PUBLIC_URL", ok, true), Ok(()), "{ok}");
        }
        for bad in [
            "http://onramp.example.com",
            "http://10.0.0.5:6820",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example",
            "http://[::2]:80",
        ] {
            let e = check("PUBLIC_URL", bad, true).unwrap_err();
            assert!(e.contains("REQUIRE_TLS") && e.contains(bad), "{e}");
            assert_eq!(
                check("PUBLIC_URL", bad, false),
                Ok(()),
                "not required: {bad}"
            );
        }
        assert!(required(Some("true")) && required(Some(" 1 ")));
        assert!(!required(None) && !required(Some("")) && !required(Some("false")));
    }
}
