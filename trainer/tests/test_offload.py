"""Offload to NVMe: each job swaps in a folder of its own under the node's NVMe folder, which the
backend names (ONRAMP_NVME_PATH); a run that offloads there without one is refused."""

from __future__ import annotations

import pytest

from onramp_train import train
from onramp_train.errors import DeviceError


def config(optimizer: str, params: str) -> dict:
    zero = {"stage": 3}
    for key, device in (("offload_optimizer", optimizer), ("offload_param", params)):
        if device != "none":
            zero[key] = {"device": device, "nvme_path": "/local_nvme", "pin_memory": True}
    return {"train_batch_size": 8, "zero_optimization": zero}


def test_each_job_swaps_in_its_own_folder_on_the_nodes_nvme(tmp_path, monkeypatch):
    monkeypatch.setenv(train.NVME_PATH_ENV, str(tmp_path / "nvme"))
    folders = []
    for job in ("job-a", "job-b"):
        monkeypatch.setenv("ONRAMP_JOB_ID", job)
        ds = config("nvme", "nvme")
        out, folder = train.nvme_offload(ds, tmp_path / job / "out")
        assert folder == tmp_path / "nvme" / f"onramp-{job}" and folder.is_dir()
        zero = out["zero_optimization"]
        assert zero["offload_optimizer"]["nvme_path"] == str(folder)
        assert zero["offload_param"]["nvme_path"] == str(folder)
        assert zero["offload_param"]["pin_memory"] is True, "the rest of the section stays"
        assert ds["zero_optimization"]["offload_param"]["nvme_path"] == "/local_nvme", "a copy"
        folders.append(folder)
    assert folders[0] != folders[1]
    # Only what goes to NVMe moves: the CPU offload keeps its section as it is.
    out, _ = train.nvme_offload(config("nvme", "cpu"), tmp_path / "out")
    assert (
        out["zero_optimization"]["offload_param"]
        == config("nvme", "cpu")["zero_optimization"]["offload_param"]
    )


def test_a_job_id_cannot_lead_the_folder_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setenv(train.NVME_PATH_ENV, str(tmp_path / "nvme"))
    monkeypatch.setenv("ONRAMP_JOB_ID", "../../etc/x y")
    _, folder = train.nvme_offload(config("nvme", "none"), tmp_path / "out")
    assert folder == tmp_path / "nvme" / "onramp-etcxy"


def test_nothing_on_nvme_needs_no_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(train.NVME_PATH_ENV, raising=False)
    for ds in ({}, config("cpu", "none"), config("none", "cpu")):
        assert train.nvme_offload(ds, tmp_path / "out") == (ds, None)


def test_nvme_offload_without_the_backends_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(train.NVME_PATH_ENV, raising=False)
    with pytest.raises(DeviceError, match="nvme_path"):
        train.nvme_offload(config("none", "nvme"), tmp_path / "out")
