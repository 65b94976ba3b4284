//! One sample of each wire type, as the edge or the runner would send it: the golden files under
//! `golden/` pin their JSON, and the schema tests (here and in the edge) check them against the
//! generated schemas.

mod accounts;
mod base;
mod jobs;

pub use base::{Sample, job};

/// Every sample, one per wire type.
pub fn all() -> Vec<Sample> {
    [
        accounts::errors(),
        accounts::accounts_samples(),
        accounts::reset_samples(),
        accounts::password_samples(),
        accounts::token_samples(),
        accounts::credits_samples(),
        accounts::refund_samples(),
        jobs::backends_samples(),
        jobs::jobs_samples(),
        jobs::job_progress_samples(),
        jobs::experiments_samples(),
        jobs::runner_samples(),
        jobs::artifact_samples(),
        jobs::dataset_samples(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn golden_json_pins_every_wire_shape() {
        for s in super::all() {
            assert!(s.round_trips, "{} does not read back as itself", s.name);
            let text = serde_json::to_string_pretty(&s.json).unwrap_or_default() + "\n";
            expect_test::expect_file![format!("../../golden/{}.json", s.name)].assert_eq(&text);
        }
    }
}
