//! The share-link codec: a spec (and playground settings) ⇄ a URL-fragment string.
//!
//! Format `v1`: `"1." + base64url_nopad(deflate_raw(json))`, where the JSON is
//! `{"spec": "<TOML text>", "playground": {...}?}`. The spec travels as the user's TOML text,
//! comments and mistakes included, so a half-written spec can be shared too. The version tag
//! comes first; `decode` keeps a reader for every version ever written, and golden tests pin
//! the exact strings so a change of format cannot go unnoticed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

/// The version `encode` writes.
pub const CURRENT_VERSION: u32 = 1;
/// Longest fragment `decode` accepts (browsers cope with far more; specs never need it).
pub const MAX_ENCODED_LEN: usize = 64 * 1024;
/// Largest payload `decode` inflates to: guards against decompression bombs.
pub const MAX_DECODED_LEN: usize = 256 * 1024;

/// What a share link carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharePayload {
    /// The spec as TOML text.
    pub spec: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub playground: Option<Playground>,
}

/// The playground's sampling settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Playground {
    pub prompt: String,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    pub max_tokens: u32,
}

/// Why a fragment could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShareError {
    TooLong,
    /// No `N.` version prefix.
    NoVersion,
    /// A version this build does not know (a link from a newer Onramp).
    UnknownVersion(String),
    BadBase64,
    BadCompression,
    BadJson(String),
}

impl core::fmt::Display for ShareError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShareError::TooLong => write!(f, "share link is too long"),
            ShareError::NoVersion => write!(f, "share link has no version tag"),
            ShareError::UnknownVersion(v) => {
                write!(f, "share link version {v} is newer than this Onramp")
            }
            ShareError::BadBase64 => write!(f, "share link is not valid base64url"),
            ShareError::BadCompression => write!(f, "share link data is corrupt"),
            ShareError::BadJson(e) => write!(f, "share link content is invalid: {e}"),
        }
    }
}

impl std::error::Error for ShareError {}

/// Encodes a payload in the current version.
pub fn encode(payload: &SharePayload) -> String {
    let json = serde_json::to_vec(payload).unwrap_or_default();
    let compressed = miniz_oxide::deflate::compress_to_vec(&json, 9);
    format!("{CURRENT_VERSION}.{}", URL_SAFE_NO_PAD.encode(compressed))
}

/// Whether a URL fragment is meant as a share link (its version number first, `1.…`): another
/// fragment (`#main`, a section of a page) is nobody's broken link.
pub fn is_share_fragment(fragment: &str) -> bool {
    let s = fragment.trim().trim_start_matches('#');
    s.starts_with(|c: char| c.is_ascii_digit())
}

/// Decodes a fragment of any known version (a leading `#` is ignored).
pub fn decode(fragment: &str) -> Result<SharePayload, ShareError> {
    let s = fragment.trim().trim_start_matches('#');
    if s.len() > MAX_ENCODED_LEN {
        return Err(ShareError::TooLong);
    }
    let (version, body) = s.split_once('.').ok_or(ShareError::NoVersion)?;
    match version {
        "1" => decode_v1(body),
        other => Err(ShareError::UnknownVersion(other.chars().take(16).collect())),
    }
}

fn decode_v1(body: &str) -> Result<SharePayload, ShareError> {
    let compressed = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| ShareError::BadBase64)?;
    let json = miniz_oxide::inflate::decompress_to_vec_with_limit(&compressed, MAX_DECODED_LEN)
        .map_err(|_| ShareError::BadCompression)?;
    serde_json::from_slice(&json).map_err(|e| ShareError::BadJson(e.to_string()))
}
