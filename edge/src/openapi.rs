//! `GET /api/openapi.json`: an OpenAPI 3.1 document generated from the route table, so it cannot
//! drift from what the dispatcher serves.

use crate::routes::{Access, ROUTES};
use serde_json::{Map, Value, json};

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        let mut op = json!({
            "operationId": format!("{:?}", route.id),
            "summary": route.summary,
            "responses": {
                route.status.to_string(): {"description": "success"},
                "default": {
                    "description": "error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                }
            }
        });
        if route.path.contains("{id}") {
            op["parameters"] = json!([{
                "name": "id", "in": "path", "required": true, "schema": {"type": "string"}
            }]);
        }
        let security = match route.access {
            Access::Public => None,
            Access::User => Some(json!([{"session": []}, {"apiToken": []}])),
            Access::Admin => Some(json!([{"adminToken": []}])),
            Access::JobToken => Some(json!([{"jobToken": []}])),
        };
        if let Some(s) = security {
            op["security"] = s;
        }
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(route.method.to_ascii_lowercase(), op);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Onramp edge API", "version": crate::VERSION},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "session": {"type": "apiKey", "in": "cookie", "name": crate::auth::SESSION_COOKIE},
                "apiToken": {"type": "http", "scheme": "bearer"},
                "adminToken": {"type": "http", "scheme": "bearer"},
                "jobToken": {"type": "http", "scheme": "bearer"}
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {
                        "type": "object",
                        "required": ["code", "message", "details"],
                        "properties": {
                            "code": {"type": "string"},
                            "message": {"type": "string"},
                            "details": {}
                        }
                    }}
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_exactly_the_routes() {
        let doc = document();
        let mut from_doc: Vec<(String, String)> = Vec::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for method in ops.as_object().unwrap().keys() {
                from_doc.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
        let mut from_table: Vec<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        from_doc.sort();
        from_table.sort();
        assert_eq!(from_doc, from_table);
        assert_eq!(
            doc["paths"]["/api/jobs/{id}"]["get"]["parameters"][0]["name"],
            "id"
        );
    }
}
