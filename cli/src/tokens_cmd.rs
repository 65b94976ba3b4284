//! `onramp tokens`: the account's API tokens, and revoking one (a leaked token dies at once, not
//! only by logging out with it).

use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::Edge;
use crate::say::{pad, t};
use api::{TokenList, TokenRevoked};
use std::process::ExitCode;

/// `onramp tokens [--revoke ID] [--json] [--edge URL]`.
pub fn run(
    revoke: Option<String>,
    remote: crate::args::Remote,
    json: crate::args::Json,
) -> Result<ExitCode, String> {
    let args = Args {
        edge: remote.edge,
        json: json.json,
        ..Default::default()
    };
    tokens(args, revoke)
}

fn tokens(args: Args, revoke: Option<String>) -> Result<ExitCode, String> {
    let edge = edge_for(&args)?;
    if let Some(id) = revoke {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!(
                "`{id}` is not a token id (onramp tokens lists them)"
            ));
        }
        return done(
            edge.expect_ok(edge.call("DELETE", &format!("/api/tokens/{id}"), None, &[]))
                .and_then(|v| {
                    if args.json {
                        print_value(&v);
                        return Ok(());
                    }
                    let r: TokenRevoked = Edge::typed(&v)?;
                    println!(
                        "{}",
                        t(
                            format!("token {} revoked: it signs nobody in any more", r.id),
                            format!("令牌 {} 已吊销：它不能再用于登录", r.id),
                        )
                    );
                    Ok(())
                }),
        );
    }
    done(edge.expect_ok(edge.get("/api/tokens")).and_then(|v| {
        if args.json {
            print_value(&v);
            return Ok(());
        }
        let list = Edge::typed::<TokenList>(&v)?.tokens;
        if list.is_empty() {
            println!(
                "{}",
                t(
                    "no API tokens: onramp login makes one".into(),
                    "没有 API 令牌：onramp login 会创建一个".into(),
                )
            );
        }
        for k in &list {
            println!("{}  {}  {}", k.id, pad(&k.created_at, 24), k.name);
        }
        Ok(())
    }))
}
