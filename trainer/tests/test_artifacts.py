"""The artifact pusher's own rules; the push itself is tested against the real edge
(tests/tests/e2e/edge_trainer.rs: a LoRA job on the runner pushes its adapter)."""

import hashlib

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
