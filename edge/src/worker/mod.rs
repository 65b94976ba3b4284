//! Everything that runs only inside the Workers runtime: the fetch entry point, the routes, and
//! the Durable Object classes.

mod coordinator;
mod health;
mod http;

use worker::{Context, Env, Request, Response, Router, event};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    Router::new()
        .get_async("/api/health", health::get)
        .or_else_any_method_async("/api/*rest", http::no_route)
        .run(req, env)
        .await
}
