"""The artifact pusher's own rules, and its resumption (a part cut off, a push started again)
against a stand-in of the upload contract; the push itself is tested against the real edge
(tests/tests/e2e/edge_trainer.rs: a LoRA job on the runner pushes its adapter)."""

import hashlib
import json

import pytest

from onramp_train import artifacts


def test_the_artifacts_url_is_the_report_urls_job():
    assert (
        artifacts.base_from_report_url("http://127.0.0.1:8787/api/jobs/ab12/report")
        == "http://127.0.0.1:8787/api/jobs/ab12/artifacts"
    )
    with pytest.raises(artifacts.PushError):
        artifacts.base_from_report_url("http://x/api/jobs/ab12/log")


def test_names_are_one_path_segment(tmp_path):
    p = artifacts.Pusher("http://edge/api/jobs/j/artifacts/", "t")
    assert (
        p._url("adapter/a b.json", "?part=2")
        == "http://edge/api/jobs/j/artifacts/adapter%2Fa%20b.json?part=2"
    )
    f = tmp_path / "x"
    f.write_bytes(b"abc" * 1000)
    assert artifacts.sha256_of(f) == hashlib.sha256(b"abc" * 1000).hexdigest()


def test_without_a_token_nothing_is_pushed(monkeypatch):
    monkeypatch.delenv("ONRAMP_REPORT_TOKEN", raising=False)
    monkeypatch.setenv("ONRAMP_REPORT_URL", "http://x/api/jobs/j/report")
    assert artifacts.from_env() is None
    assert artifacts.main(["folder", "adapter"]) == 2


def test_the_log_is_the_wrappers_else_the_runners(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.delenv("ONRAMP_JOB_LOG", raising=False)
    assert artifacts.job_log(out) is None
    (tmp_path / "output.log").write_text("runner\n")
    assert artifacts.job_log(out) == tmp_path / "output.log"
    slurm = tmp_path / "onramp-7.1.log"
    slurm.write_text("slurm\n")
    monkeypatch.setenv("ONRAMP_JOB_LOG", str(slurm))
    assert artifacts.job_log(out) == slurm
    monkeypatch.setenv("ONRAMP_JOB_LOG", str(tmp_path / "gone.log"))
    assert artifacts.job_log(out) is None


def test_a_long_log_goes_as_its_last_whole_lines(tmp_path):
    log = tmp_path / "log"
    lines = [f"line {n}\n".encode() for n in range(1000)]
    log.write_bytes(b"".join(lines))
    assert artifacts.log_tail(log, tmp_path / "tail", limit=10_000) == log
    tail = artifacts.log_tail(log, tmp_path / "tail", limit=100)
    assert tail == tmp_path / "tail"
    note, *kept = tail.read_bytes().splitlines(keepends=True)
    assert kept == lines[-len(kept) :] and 0 < len(kept) < 100
    assert sum(map(len, kept)) <= 100
    left_out = sum(map(len, lines)) - sum(map(len, kept))
    assert note.decode() == f"onramp-train: the first {left_out} bytes of this log are left out\n"


class _Recorder:
    """A pusher that records what it was asked to push."""

    def __init__(self):
        self.files: list[str] = []

    def push_file(self, path, name):
        self.files.append(name)

    def push_folder(self, folder, prefix):
        files = [p for p in folder.rglob("*") if p.is_file()]
        names = sorted(f"{prefix}/{p.relative_to(folder).as_posix()}" for p in files)
        self.files += names
        return names


def test_the_latest_whole_checkpoint_goes_only_when_the_run_asks(tmp_path):
    out = tmp_path / "out"
    (out / "final").mkdir(parents=True)
    (out / "final" / "adapter_config.json").write_text("{}")
    for step, whole in [(6, True), (12, True), (18, False)]:
        ck = out / f"checkpoint-{step}"
        ck.mkdir()
        (ck / "adapter_model.safetensors").write_bytes(b"w")
        if whole:
            (ck / "trainer_state.json").write_text("{}")
    run = out / "final" / "onramp-run.json"
    for asks, expected in [(False, []), (True, ["checkpoint-12/adapter_model.safetensors"])]:
        run.write_text(json.dumps({"plan": {"upload_checkpoint": asks}}))
        p = _Recorder()
        names = artifacts.push_outputs(p, out)
        got = sorted(n for n in names if n.startswith("checkpoint-"))
        assert got == sorted(expected + ["checkpoint-12/trainer_state.json"] * asks)


class _Edge:
    """A stand-in for the edge's upload contract (the real one is tested through wrangler dev):
    parts of `part_size` in order, what arrived kept; `drop` names the part numbers whose first
    arrival is cut off (the connection closed before an answer)."""

    def __init__(self, part_size: int, received: int = 0, drop=(), expire=()):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.part_size, self.drop, self.sent = part_size, set(drop), []
        # Part numbers at whose first arrival storage has ended the upload (R2's lifecycle): the
        # edge forgets what arrived and answers 409 upload_expired, as it does.
        self.expire = set(expire)
        self.data, self.size, self.received = b"", 0, received
        edge = self

        class Handler(BaseHTTPRequestHandler):
            def state(self):
                parts = max(1, -(-edge.size // edge.part_size))
                return {
                    "received": edge.received,
                    "part_size": edge.part_size,
                    "parts": parts,
                    "complete": edge.received == parts,
                }

            def answer(self, doc):
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                declared = json.loads(self.rfile.read(int(self.headers["content-length"])))
                edge.size = declared["size"]
                self.answer(self.state())

            def do_PUT(self):
                n = int(self.path.rsplit("=", 1)[1])
                chunk = self.rfile.read(int(self.headers["content-length"]))
                edge.sent.append(n)
                if n in edge.drop:
                    edge.drop.discard(n)
                    self.close_connection = True
                    self.connection.close()
                    return
                if n in edge.expire:
                    edge.expire.discard(n)
                    edge.data, edge.received = b"", 0
                    body = b'{"error":{"code":"upload_expired","message":"declare it again"}}'
                    self.send_response(409)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if n == edge.received + 1:
                    edge.data = edge.data[: (n - 1) * edge.part_size] + chunk
                    edge.received = n
                self.answer(self.state())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/api/jobs/j/artifacts"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_part_cut_off_is_sent_again_and_a_push_resumes_after_what_arrived(tmp_path):
    f = tmp_path / "adapter_model.safetensors"
    data = bytes(range(256)) * 41  # 10496 bytes: 3 parts of 4096, the last short
    f.write_bytes(data)
    # The second part's connection drops before its answer: only it goes again.
    edge = _Edge(4096, drop={2})
    try:
        up = artifacts.Pusher(edge.url, "t").push_file(f, "adapter/adapter_model.safetensors")
    finally:
        edge.close()
    assert up["complete"] and edge.data == data
    assert edge.sent == [1, 2, 2, 3]
    # A push started again after a crash (the edge holds 2 parts of the same file): only the
    # rest is sent.
    edge = _Edge(4096, received=2)
    edge.data = data[: 2 * 4096]
    try:
        up = artifacts.Pusher(edge.url, "t").push_file(f, "adapter/adapter_model.safetensors")
    finally:
        edge.close()
    assert up["complete"] and edge.data == data
    assert edge.sent == [3]


def test_an_upload_storage_ended_is_declared_again_and_sent_whole(tmp_path):
    f = tmp_path / "model.safetensors"
    data = bytes(range(256)) * 41
    f.write_bytes(data)
    # Storage ended the upload as part 3 came: what arrived is gone, and every part goes again.
    edge = _Edge(4096, expire={3})
    try:
        up = artifacts.Pusher(edge.url, "t").push_file(f, "model.safetensors")
    finally:
        edge.close()
    assert up["complete"] and edge.data == data
    assert edge.sent == [1, 2, 3, 1, 2, 3]
