//! Prints the plan of a spec file: `cargo run -p jobspec --example plan -- SPEC.toml`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: plan SPEC.toml");
        std::process::exit(2);
    };
    let Ok(src) = std::fs::read_to_string(&path) else {
        eprintln!("cannot read {path}");
        std::process::exit(2);
    };
    let plan = jobspec::plan_toml(&src);
    print!(
        "{}",
        jobspec::report::render_text(&plan, jobspec::Lang::En, false)
    );
}
