//! A job continued on another backend: a LoRA job on the local runner that uploads its latest
//! checkpoint (`checkpoint.upload = true`), then a job on Slurm that names it in
//! `checkpoint.resume_from`. The Slurm job script finds no folder of that job on the cluster and
//! fetches the uploaded checkpoint from the edge with its own token; the training goes on from
//! step 12 to 18.

use super::{World, edge_log, steps_of, submit};
use serde_json::Value;

fn spec(name: &str, backend: &str, extra: &str) -> String {
    format!(
        "{}[checkpoint]\nevery_steps = 6\n{extra}",
        onramp_tests::specs::lora_cpu(name, backend)
    )
}

fn ended(w: &World, u: &onramp_tests::api::Client, id: &str) -> Value {
    w.wait_job(u, id, 600, false, |j| {
        !matches!(
            j["state"].as_str(),
            Some("dispatching" | "queued" | "running")
        )
    })
}

pub(super) fn continued_across_backends(w: &World) {
    let u = w.user("slurm-across");
    let (status, a) = submit(&u, &spec("across-runner", "runner", "upload = true\n"));
    assert_eq!((status, a["backend"].as_str()), (201, Some("local")), "{a}");
    let first = a["id"].as_str().unwrap().to_string();
    let job = ended(w, &u, &first);
    assert_eq!(job["state"], "succeeded", "{job}\n{}", edge_log(&u, &first));
    let listed = u.get(&format!("/api/jobs/{first}/artifacts")).json;
    let names: Vec<&str> = listed["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(
        names.contains(&"checkpoint-12/trainer_state.json")
            && !names.iter().any(|n| n.starts_with("checkpoint-6/")),
        "the latest checkpoint only: {names:?}"
    );

    let continued = spec(
        "across-slurm",
        "slurm",
        &format!("resume_from = \"{first}\"\n"),
    )
    .replace("steps = 12", "steps = 18");
    let (status, a) = submit(&u, &continued);
    assert_eq!((status, a["backend"].as_str()), (201, Some("hpc")), "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let job = ended(w, &u, &id);
    let log = edge_log(&u, &id);
    assert_eq!(job["state"], "succeeded", "{job}\n{log}\n{}", w.logs());
    assert!(
        log.contains(&format!(
            "fetched the checkpoint of job {first} from the edge: out/checkpoint-12"
        )) && log.contains("resuming from "),
        "{log}"
    );
    let steps = steps_of(&u, &id);
    assert_eq!(
        (steps.first(), steps.last()),
        (Some(&13), Some(&18)),
        "{log}"
    );
    // The continued job's token reads that checkpoint only while it runs.
    let token_gone = u.get(&format!("/api/jobs/{id}/resume"));
    assert!(
        matches!(token_gone.status, 401 | 403),
        "a user's session is not the job's token: {:?}",
        token_gone.json
    );
}
