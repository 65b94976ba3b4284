//! What a command is given to read: a file, or standard input for `-`.

/// The text of `path`, or of standard input when it is `-`.
pub fn read(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))
}
