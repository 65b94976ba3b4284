//! The dataset checker's Web Worker entry point: built with `wasm-bindgen --target no-modules`
//! and started by `public/datacheck.js`; all of it lives in the library
//! (`app::dataset_worker`). Apart from the inference worker, so that the tokenizer and template
//! code counting needs is downloaded only by a page that checks a dataset.

#[cfg(target_arch = "wasm32")]
fn main() {
    app::dataset_worker::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "the dataset checker's worker is a wasm32 program: build it with `cargo xtask build`"
    );
}
