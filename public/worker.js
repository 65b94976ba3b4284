// Starts the inference worker: the no-modules glue defines `wasm_bindgen`, whose start function
// (the worker binary's main) installs the message handler and posts "ready".
importScripts("/pkg/worker.js");
wasm_bindgen({ module_or_path: "/pkg/worker_bg.wasm" }).catch((e) => {
  postMessage(JSON.stringify({ type: "error", kind: "download", detail: "worker wasm: " + e }));
});
