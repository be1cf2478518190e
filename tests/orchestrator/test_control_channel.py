"""The control channel's two ends (``worker.control_channel`` and ``benchkit.channel.read_commands``)
over a real FIFO: a command of any length arrives whole and in order, every FIFO write stays within
the pipe's atomic size and never blocks (a longer command travels in a 0600 file written before its
envelope), and a bench refuses an envelope that names anything but a file of its own channel."""

from __future__ import annotations

import json
import os
import select
import stat
import threading

import pytest

from orchestrator.benchkit.channel import read_commands
from orchestrator.worker.control_channel import ControlChannel

LONG_CASES = [f"bench/test_{i}.py::test_structure[{'x' * 120}-{i}]" for i in range(300)]  # ~45 kB


def fifo_lines(channel: ControlChannel, count: int) -> list[bytes]:
    """The next ``count`` lines as the FIFO carries them (read by the bench's end, raw)."""
    fd = os.open(channel.path, os.O_RDONLY)
    try:
        data = b""
        while data.count(b"\n") < count:
            data += os.read(fd, 65536)
        return data.splitlines()
    finally:
        os.close(fd)


def test_a_command_far_over_pipe_buf_arrives_whole_in_order_through_a_0600_file(tmp_path):
    channel = ControlChannel(tmp_path / "control.fifo")
    sent = [{"cmd": "cases", "cases": LONG_CASES}, {"cmd": "calibrate", "case": "c" * 9000, "target_ms": 5.0},
            {"cmd": "next"}, {"cmd": "run", "case": "é" * 3000, "steps": 2, "block": 0, "warmup": False,
                              "calls": 7}, {"cmd": "end"}]
    assert len(json.dumps(sent[0])) > 10 * select.PIPE_BUF
    assert all(channel.try_send(command) for command in sent)
    spilled = sorted(tmp_path.glob("control.fifo.*.json"))
    assert [p.name for p in spilled] == ["control.fifo.0.json", "control.fifo.1.json", "control.fifo.2.json"]
    assert {stat.S_IMODE(p.stat().st_mode) for p in spilled} == {0o600}
    commands = read_commands(str(channel.path))
    assert [next(commands) for _ in sent] == sent
    channel.close()
    assert not list(tmp_path.iterdir()), "the FIFO and its spilled files go with the channel"


def test_each_fifo_write_fits_the_atomic_size_and_names_its_file(tmp_path):
    channel = ControlChannel(tmp_path / "control.fifo")
    assert channel.try_send({"cmd": "cases", "cases": LONG_CASES}) and channel.try_send({"cmd": "next"})
    envelope, short = fifo_lines(channel, 2)
    assert len(envelope) < select.PIPE_BUF and json.loads(short) == {"cmd": "next"}
    assert json.loads(envelope) == {"cmd": "cases", "spilled": "control.fifo.0.json",
                                    "bytes": (tmp_path / "control.fifo.0.json").stat().st_size}
    channel.close()


def test_a_full_fifo_takes_a_long_command_later_without_spilling_it_twice_and_keeps_the_order(tmp_path):
    channel = ControlChannel(tmp_path / "control.fifo")
    filler = 0
    while channel.try_send({"cmd": "run", "block": filler, "steps": 1, "warmup": True}):  # never blocks
        filler += 1
    big = {"cmd": "cases", "cases": LONG_CASES}
    assert not any(channel.try_send(big) for _ in range(5)), "no room: nothing written"
    assert len(list(tmp_path.glob("control.fifo.*.json"))) == 1, "spilled once, however often it is retried"
    commands = read_commands(str(channel.path))
    received = [next(commands) for _ in range(filler)]  # room again
    assert channel.try_send(big)
    assert next(commands) == big
    assert [c["block"] for c in received] == list(range(filler))
    channel.close()


SIZE = "the spilled file's size"


@pytest.mark.parametrize("spilled, size, words", [
    ("../../etc/passwd", SIZE, "not a file of its FIFO"),
    ("other.fifo.0.json", SIZE, "not a file of its FIFO"),
    ("control.fifo.9.json", SIZE, "No such file"),
    ("control.fifo.1.json", SIZE, "Too many levels of symbolic links"),  # a link to the real file
    ("control.fifo.0.json", 2**40, "is not 1.."),
    ("control.fifo.0.json", None, "is not 1.."),
    ("control.fifo.0.json", 5, "does not hold"),
])
def test_a_bench_refuses_an_envelope_naming_anything_but_its_own_file_as_announced(tmp_path, spilled, size,
                                                                                   words):
    channel = ControlChannel(tmp_path / "control.fifo")
    assert channel.try_send({"cmd": "cases", "cases": LONG_CASES})
    real = tmp_path / "control.fifo.0.json"
    os.symlink(real, tmp_path / "control.fifo.1.json")
    announced = real.stat().st_size if size == SIZE else size
    assert channel.try_send({"cmd": "cases", "spilled": spilled, "bytes": announced})
    commands = read_commands(str(channel.path))
    assert next(commands)["cases"] == LONG_CASES
    with pytest.raises(ValueError, match=words):
        next(commands)
    channel.close()


def test_a_spilled_file_holding_another_command_is_refused(tmp_path):
    channel = ControlChannel(tmp_path / "control.fifo")
    assert channel.try_send({"cmd": "cases", "cases": LONG_CASES})
    size = (tmp_path / "control.fifo.0.json").stat().st_size
    assert channel.try_send({"cmd": "end", "spilled": "control.fifo.0.json", "bytes": size})
    commands = read_commands(str(channel.path))
    next(commands)
    with pytest.raises(ValueError, match="does not hold the 'end' command"):
        next(commands)
    channel.close()


def test_a_reader_blocked_on_the_fifo_gets_a_spilled_command_sent_later(tmp_path):
    channel = ControlChannel(tmp_path / "control.fifo")
    got: list[dict] = []
    reader = threading.Thread(target=lambda: got.append(next(read_commands(str(channel.path)))))
    reader.start()
    assert channel.try_send({"cmd": "cases", "cases": LONG_CASES})
    reader.join(30)
    assert got == [{"cmd": "cases", "cases": LONG_CASES}]
    channel.close()
