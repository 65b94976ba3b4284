//! Turning handler results into HTTP responses, so every error has the same JSON shape.

use crate::error::ApiError;
use serde::Serialize;
use worker::{Request, Response, RouteContext};

/// The result every handler produces before it becomes a response.
pub type ApiResult<T> = Result<T, ApiError>;

/// A JSON response with the given status, or the error's JSON with its status.
pub fn respond<T: Serialize>(status: u16, result: ApiResult<T>) -> worker::Result<Response> {
    match result {
        Ok(value) => Ok(Response::from_json(&value)?.with_status(status)),
        Err(e) => error_response(&e),
    }
}

pub fn error_response(e: &ApiError) -> worker::Result<Response> {
    let mut resp = Response::ok(e.to_body())?.with_status(e.status);
    resp.headers_mut().set("content-type", "application/json")?;
    Ok(resp)
}

/// Any `/api/*` path without a route.
pub async fn no_route(req: Request, _ctx: RouteContext<()>) -> worker::Result<Response> {
    error_response(
        &ApiError::not_found(format!("no route for {} {}", req.method(), req.path()))
            .with_details(serde_json::json!({ "path": req.path() })),
    )
}
