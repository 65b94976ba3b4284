//! `Coordinator`, a SQLite-backed Durable Object: one instance per name serialises the work that
//! must not race (credits, promotion codes). For now it answers the health probe with a real
//! write and read of its own storage.

use worker::{DurableObject, Env, Request, Response, State, durable_object};

#[durable_object]
pub struct Coordinator {
    state: State,
}

impl DurableObject for Coordinator {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        match req.path().as_str() {
            "/probe" => {
                let sql = self.state.storage().sql();
                sql.exec(
                    "CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, hits INTEGER NOT NULL)",
                    None,
                )?;
                sql.exec(
                    "INSERT INTO probe (id, hits) VALUES (1, 1) \
                     ON CONFLICT(id) DO UPDATE SET hits = hits + 1",
                    None,
                )?;
                #[derive(serde::Deserialize)]
                struct Row {
                    hits: i64,
                }
                let row: Row = sql
                    .exec("SELECT hits FROM probe WHERE id = 1", None)?
                    .one()?;
                Response::ok(format!("{}", row.hits))
            }
            other => Response::error(format!("no such coordinator route {other}"), 404),
        }
    }
}
