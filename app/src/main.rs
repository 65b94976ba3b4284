//! Mounts the app; everything else lives in the library so tests can mount it too.

#[cfg(target_arch = "wasm32")]
fn main() {
    leptos::mount::mount_to_body(app::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the app is a wasm32 program: build it with `cargo xtask dev`");
}
