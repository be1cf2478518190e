"""The host record and CPU-list helpers."""

from __future__ import annotations

import json
import os
from importlib import metadata

import pytest

from orchestrator.contract import HostRecord
from orchestrator.worker.hostinfo import VERSIONED_PACKAGES, collect_host, format_cpus, parse_cpus


def test_record_has_every_field_with_its_type():
    record = collect_host(env={"OMP_NUM_THREADS": "3"}, cpus={0})
    assert isinstance(record, HostRecord) and set(record.as_dict()) == set(HostRecord.__dataclass_fields__)
    assert all(value is not None for name, value in record.as_dict().items()
               if name in ("hostname", "cpu_model", "cpu_logical", "os", "python", "affinity", "id"))
    assert record.cpu_logical == os.cpu_count() and record.ram_gib > 0
    assert record.python.count(".") == 2 and record.kernel
    assert json.loads(record.threads)["OMP_NUM_THREADS"] == "3"
    assert json.loads(record.threads)["MKL_NUM_THREADS"] is None
    assert json.loads(record.versions)["numpy"]  # from metadata
    assert record.affinity == "0"


def test_gpu_fields_from_nvidia_smi_or_all_null():
    record = collect_host()
    gpu = (record.gpu_name, record.gpu_memory_mib, record.gpu_driver)
    assert all(v is None for v in gpu) or all(v is not None for v in gpu)


def test_cpu_lists_round_trip():
    assert format_cpus({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert parse_cpus("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    with pytest.raises(ValueError, match="'x' is not N or N-M"):
        parse_cpus("0,x")


def test_gpu_fields_parsed_from_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    line = "echo 'NVIDIA H200, 143771, 570.86.15'\n"
    fake.write_text("#!/bin/sh\n" + line * 2)  # two GPUs: the first is recorded
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    record = collect_host()
    assert (record.gpu_name, record.gpu_memory_mib, record.gpu_driver) == (
        "NVIDIA H200", 143771, "570.86.15")


def test_failing_nvidia_smi_gives_null_gpu(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    record = collect_host()
    assert (record.gpu_name, record.gpu_memory_mib, record.gpu_driver) == (None, None, None)


def test_package_versions_are_read_again_only_when_a_path_directory_changed(tmp_path, monkeypatch):
    calls: list[str] = []
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: calls.append(name) or real(name))
    monkeypatch.syspath_prepend(str(tmp_path))
    first = collect_host()
    asked = len(calls)
    assert asked == len(VERSIONED_PACKAGES), "read once for this sys.path"
    assert collect_host().versions == first.versions and len(calls) == asked, "then cached"
    dist = tmp_path / "motrixsim-9.9.9.dist-info"  # a package installed into a directory on sys.path
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: motrixsim\nVersion: 9.9.9\n")
    changed = os.stat(tmp_path).st_mtime_ns + 10**9  # past the file system's clock granularity
    os.utime(tmp_path, ns=(changed, changed))
    assert json.loads(collect_host().versions)["motrixsim"] == "9.9.9"
    assert len(calls) == 2 * asked
