//! The inference Web Worker's entry point: built with `wasm-bindgen --target no-modules` and
//! started by `public/worker.js`; all of it lives in the library (`app::inference`). A crate of
//! its own only for its build profile (see the root `Cargo.toml`).

#[cfg(target_arch = "wasm32")]
fn main() {
    app::inference::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the inference worker is a wasm32 program: build it with `cargo xtask build`");
}
