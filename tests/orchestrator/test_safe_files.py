"""``worker.safe_files``: what a bench may leave where the worker reads (a FIFO, a link to a device, a
file too large) is refused at once and named, never waited on or read without end."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from orchestrator.errors import ProtocolError
from orchestrator.worker import stream
from orchestrator.worker.safe_files import (
    NotRegularFileError,
    TooLargeError,
    read_head,
    read_regular,
    read_tail,
    remove_non_regular,
    write_regular,
)


def returns_at_once(call, *args):
    """``call(*args)``'s outcome, failing the test if it blocks (a FIFO opened without O_NONBLOCK)."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = call(*args)
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), f"{call.__name__} blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_a_fifo_is_refused_without_waiting_for_a_writer_or_a_reader(tmp_path):
    fifo = tmp_path / "result.json"
    os.mkfifo(fifo)
    for call in (read_regular, read_head, read_tail):
        with pytest.raises(NotRegularFileError, match="result.json is a FIFO, not a regular file"):
            returns_at_once(call, fifo, 10)
    with pytest.raises(NotRegularFileError, match="is a FIFO"):
        returns_at_once(write_regular, fifo, b"x")


def test_links_and_devices_are_refused(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(NotRegularFileError, match="zero is a symbolic link, not a regular file"):
        read_regular(tmp_path / "zero", 10)
    with pytest.raises(NotRegularFileError, match="/dev/null is a character device"):
        read_regular(Path("/dev/null"), 10)
    with pytest.raises(NotRegularFileError, match="is a directory"):
        read_regular(tmp_path, 10)


def test_regular_files_are_read_up_to_a_cap(tmp_path):
    path = tmp_path / "doc"
    path.write_bytes(b"0123456789")
    assert read_regular(path, 10) == b"0123456789"
    with pytest.raises(TooLargeError, match="holds more than 9 bytes"):
        read_regular(path, 9)
    assert read_head(path, 4) == b"0123" and read_tail(path, 4) == b"6789"
    assert read_regular(tmp_path / "missing", 10) is None and read_tail(tmp_path / "missing", 4) == b""
    assert write_regular(path, b"ab") and path.read_bytes() == b"ab"
    assert not write_regular(tmp_path / "missing", b"ab") and not (tmp_path / "missing").exists()


def test_what_is_neither_a_file_nor_a_directory_is_cleared_from_a_log_directory(tmp_path):
    (tmp_path / "stderr.log").write_text("kept")
    (tmp_path / "audit_site").mkdir()
    os.mkfifo(tmp_path / "argv.txt")
    (tmp_path / "stdout.log").symlink_to("/dev/zero")
    assert sorted(p.name for p in remove_non_regular(tmp_path)) == ["argv.txt", "stdout.log"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit_site", "stderr.log"]


def test_the_stream_reader_fails_on_a_fifo_and_on_an_endless_line(tmp_path, monkeypatch):
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ProtocolError, match="the bench's stream .* is a FIFO"):
        returns_at_once(lambda: list(stream.follow_lines(fifo, lambda: True)))
    monkeypatch.setattr(stream, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(stream, "READ_CHUNK_BYTES", 64)
    long = tmp_path / "long.jsonl"
    long.write_bytes(b'{"kind": "note"}\n' + b"x" * 5000)
    looks = iter([False])  # read while the bench runs, then the drain after its exit
    lines = stream.follow_lines(long, lambda: next(looks, True))
    assert next(lines) == '{"kind": "note"}'
    with pytest.raises(ProtocolError, match="a stream line is longer than 1000 bytes"):
        list(lines)
