//! What a command is given to read: a file, or standard input for `-`.

/// The text of `path`, or of standard input when it is `-`.
pub fn read(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| cannot_read("stdin", "标准输入", &e))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| cannot_read(path, path, &e))
}

/// Why a file could not be read, in the run's language (the system's own words in English,
/// a Chinese reason for the common cases, the error code kept for the rest).
pub fn cannot_read(what: &str, what_zh: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let zh = match e.kind() {
        ErrorKind::NotFound => "文件不存在".to_string(),
        ErrorKind::PermissionDenied => "没有读取权限".to_string(),
        ErrorKind::IsADirectory => "这是一个目录".to_string(),
        ErrorKind::InvalidData => "内容不是 UTF-8 文本".to_string(),
        _ => format!("系统错误（{e}）"),
    };
    crate::say::t(
        format!("cannot read {what}: {e}"),
        format!("无法读取 {what_zh}：{zh}"),
    )
}
