// Starts the Plan page's dataset checker (app/src/dataset_worker.rs): the no-modules glue defines
// `wasm_bindgen`, whose start function (the datacheck binary's main) installs the message
// handler and posts "ready". A worker of its own, apart from the inference worker (worker.js),
// so that the tokenizer code it carries never slows the first page a newcomer opens.

// The wasm downloads while importScripts fetches the glue.
const wasm = fetch("/pkg/datacheck_bg.wasm");
importScripts("/pkg/datacheck.js");
wasm_bindgen({ module_or_path: wasm }).catch((e) => {
  postMessage(JSON.stringify({ type: "error", kind: "download", detail: "datacheck wasm: " + e }));
});
