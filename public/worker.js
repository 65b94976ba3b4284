// Starts the inference worker: the no-modules glue defines `wasm_bindgen`, whose start function
// (the worker binary's main) installs the message handler, posts "ready" and loads the default
// model. What can start before the wasm runs starts here, at once.

// The default model (ModelSource::stories260k in app/src/worker_proto.rs). The page puts the name
// of the models' Cache API cache (MODEL_CACHE there) into this script's fragment once it has
// loaded that model before. Without it nothing can be cached yet: the download starts now, while
// the wasm below loads, without first opening the Cache API (which alone can take a few hundred
// milliseconds on a fresh profile), and inference.rs takes the responses over. With it,
// inference.rs looks in the cache first, so a second visit downloads nothing. A unit test keeps
// these names in step with the Rust side.
const MODEL_CACHE = "onramp-models-v1";
const DEFAULT_MODEL = ["/models/stories260K.bin", "/models/tok512.bin"];
const probablyCached = self.location.hash === "#" + MODEL_CACHE;
self.onrampPrefetch = {
  cache: MODEL_CACHE,
  responses: probablyCached ? {} : Object.fromEntries(DEFAULT_MODEL.map((url) => [url,
    // On failure inference.rs takes its ordinary path and reports what went wrong.
    fetch(url).catch(() => null)])),
};

// The wasm downloads while importScripts fetches the glue.
const wasm = fetch("/pkg/worker_bg.wasm");
importScripts("/pkg/worker.js");
wasm_bindgen({ module_or_path: wasm }).catch((e) => {
  postMessage(JSON.stringify({ type: "error", kind: "download", detail: "worker wasm: " + e }));
});
