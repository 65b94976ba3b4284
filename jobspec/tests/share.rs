//! Golden tests for the share-link codec: the exact strings are pinned, so any change to the
//! format fails here and must come with a new version tag (and a reader for the old one).

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use jobspec::share::{Playground, ShareError, SharePayload, decode, encode};

fn sample() -> SharePayload {
    SharePayload {
        spec: "name = \"demo\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n# 注释\n".to_string(),
        playground: Some(Playground {
            prompt: "Once upon a time".to_string(),
            temperature: 0.8,
            top_p: 0.9,
            seed: 42,
            max_tokens: 256,
        }),
    }
}

/// A v1 link written by this version: it must always decode to the same payload.
const GOLDEN_V1: &str = "1.HcxNCsIwEIbhq4RxW4sU60_AM3iBQIntINJmZkxSVErXgidx750Eb2Ha3cfDxztAEKxBA1mH6qAMNOjYgKFoQztDx95O4LjBbpbrDanIy-X2NPlCfT_v3_NlCDKQzj7OnntqQA8gnp3EVD9SjaoXJmVVvDhMz4hO0NvYewS9yndJWCqZ9j6DgJgK6yIDZ-9V5BYpgC7KzTj-AQ";

#[test]
fn v1_golden_encode() {
    assert_eq!(encode(&sample()), GOLDEN_V1);
}

#[test]
fn v1_golden_decode() {
    assert_eq!(decode(GOLDEN_V1), Ok(sample()));
    assert_eq!(decode(&format!("#{GOLDEN_V1}")), Ok(sample()));
}

#[test]
fn round_trip_without_playground() {
    let p = SharePayload {
        spec: jobspec::templates()[0].toml.to_string(),
        playground: None,
    };
    let s = encode(&p);
    assert!(s.starts_with("1."));
    assert!(
        s.len() < p.spec.len(),
        "compression should pay off: {} vs {}",
        s.len(),
        p.spec.len()
    );
    assert_eq!(decode(&s), Ok(p));
}

#[test]
fn bad_links_are_errors_not_panics() {
    assert_eq!(decode(""), Err(ShareError::NoVersion));
    assert_eq!(decode("9.abc"), Err(ShareError::UnknownVersion("9".into())));
    assert_eq!(decode("1.@@@"), Err(ShareError::BadBase64));
    assert_eq!(decode("1.AAAA"), Err(ShareError::BadCompression));
    assert!(matches!(
        decode(&"1.".repeat(40_000)),
        Err(ShareError::TooLong)
    ));
    // A decompression bomb: 10 MB of zeros compresses to a few KB but is refused.
    let bomb = miniz_oxide_bomb();
    assert_eq!(decode(&bomb), Err(ShareError::BadCompression));
}

fn miniz_oxide_bomb() -> String {
    use base64::Engine;
    let zeros = vec![b' '; 10_000_000];
    let c = miniz_oxide::deflate::compress_to_vec(&zeros, 9);
    format!(
        "1.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c)
    )
}

#[test]
fn only_a_fragment_that_starts_with_a_version_is_taken_for_a_share_link() {
    use jobspec::share::is_share_fragment;
    for link in [GOLDEN_V1, "#1.abc", "2.newer", "1", "#1."] {
        assert!(is_share_fragment(link), "{link}");
    }
    for other in ["", "#", "#main", "main", "section-2", "#top"] {
        assert!(!is_share_fragment(other), "{other}");
    }
}
