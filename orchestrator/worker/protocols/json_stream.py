"""Reading a suite's result document incrementally: only what its reader needs is built.

A *shape* says what to build of a JSON document, so that memory follows the numbers kept, not the
file's size (docs/design.md, "Suites"):

- ``KEEP``: the value, built whole;
- ``SAMPLES``: a list of numbers, read into ``samples.Samples`` (count, mean, bounded step rows);
- a dict ``{key: shape}``: an object whose listed keys are built by their shapes; the values of
  other keys are read past, never built;
- a one-item list ``[shape]``: a list whose every item is built by ``shape``.

A value of another kind than its shape expects is built whole, for the reader to name it.

The document is parsed with ijson's C backend (yajl), in strict JSON. What it refuses (``NaN`` and
``Infinity`` tokens, which Google Benchmark writes for some counters; an integer beyond 64 bits; a
number beyond a double; a byte-order mark; the escape of a lone UTF-16 surrogate) is read again
whole with Python's ``json`` as before, when the file holds at most ``WHOLE_READ_BYTES``, and shaped
the same way (a lone surrogate written as its escape: ``surrogates``); a larger one fails naming the
file and what the parser said.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import ijson

from orchestrator.worker.protocols import surrogates
from orchestrator.worker.protocols.samples import Samples
from orchestrator.worker.safe_files import NotRegularFileError, TooLargeError, read_regular, regular_file

KEEP = "keep"
SAMPLES = "samples"
MAX_DEPTH = 256  # containers nested deeper are refused (Python's json stops near 1000)
WHOLE_READ_BYTES = 64 * 2**20  # a document the streaming parser refuses is read whole up to this size
READ_BUFFER = 2**20


class DocumentError(ValueError):
    """A result document that is missing, too large or not JSON; the message names the file."""


_Events = Iterator[tuple[str, object]]


def read_shaped(path: Path, shape: object, *, max_bytes: int, samples_limit: int) -> object:
    """The document at ``path`` (``{result}``) built as ``shape`` says, ``SAMPLES`` lists as
    ``Samples`` keeping at most ``samples_limit`` rows; ``DocumentError`` naming the file when it is
    missing, not a regular file, over ``max_bytes``, not JSON or nested more than ``MAX_DEPTH``."""
    try:
        with regular_file(path) as file:  # a FIFO or a link to /dev/zero is refused
            if file is None:
                raise DocumentError(f"bench exited 0 without writing its result document {path} ({{result}})")
            size = os.fstat(file.fileno()).st_size
            if size > max_bytes:
                raise DocumentError(too_large(path, max_bytes))
            try:
                events = ijson.basic_parse(file, use_float=True, buf_size=READ_BUFFER)
                return _Builder(events, samples_limit).document(shape)
            except (_TooDeep, RecursionError):
                raise DocumentError(f"result document {path} is nested too deeply to parse") from None
            except (ijson.JSONError, UnicodeDecodeError) as exc:  # the latter: a lone surrogate's escape
                refused = " ".join(str(exc).split())[:200]
    except NotRegularFileError as exc:
        raise DocumentError(f"result document: {exc}") from None
    if size > WHOLE_READ_BYTES:
        raise DocumentError(f"result document {path} is not strict JSON ({refused}); only a document of at "
                            f"most {WHOLE_READ_BYTES // 2**20} MiB is read as Python's json reads it (NaN, "
                            "Infinity, numbers beyond 64 bits)")
    return shaped(read_whole(path, WHOLE_READ_BYTES), shape, samples_limit)


def read_whole(path: Path, max_bytes: int) -> object:
    """The document at ``path`` parsed whole by Python's ``json`` (``NaN`` and ``Infinity`` tokens parse
    as floats: each reader refuses them where a number must be finite); ``DocumentError`` naming the
    file when it is missing, not a regular file, over ``max_bytes`` or not JSON."""
    try:
        text = read_regular(path, max_bytes)
    except NotRegularFileError as exc:
        raise DocumentError(f"result document: {exc}") from None
    except TooLargeError:
        raise DocumentError(too_large(path, max_bytes)) from None
    if text is None:
        raise DocumentError(f"bench exited 0 without writing its result document {path} ({{result}})")
    try:
        document = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and an int of too many digits
        raise DocumentError(f"result document {path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise DocumentError(f"result document {path} is nested too deeply to parse") from None
    return surrogates.escaped(document) if surrogates.may_hold(text) else document


def shaped(value: object, shape: object, samples_limit: int) -> object:
    """A document already read whole, as ``read_shaped`` would have built it."""
    if shape == SAMPLES and isinstance(value, list):
        return Samples.of(value, samples_limit)
    if isinstance(shape, dict) and isinstance(value, dict):
        return {key: shaped(item, shape[key], samples_limit) for key, item in value.items() if key in shape}
    if isinstance(shape, list) and isinstance(value, list):
        return [shaped(item, shape[0], samples_limit) for item in value]
    return value


class _Builder:
    """Builds one document from ijson's ``basic_parse`` events."""

    def __init__(self, events: _Events, samples_limit: int) -> None:
        self.events = iter(events)
        self.samples_limit = samples_limit
        self.path = ""

    def document(self, shape: object) -> object:
        event, value = next(self.events)
        document = self.value(event, value, shape, 0)
        for _ in self.events:  # trailing garbage raises in the parser
            pass
        return document

    def value(self, event: str, value: object, shape: object, depth: int) -> object:
        if event == "start_map":
            return self.object(shape if isinstance(shape, dict) else None, depth + 1)
        if event == "start_array":
            if shape == SAMPLES:
                return self.samples(depth + 1)
            return self.list(shape[0] if isinstance(shape, list) else KEEP, depth + 1)
        return value

    def object(self, shape: dict | None, depth: int) -> dict:
        _check_depth(depth)
        built: dict = {}
        for event, key in self.events:
            if event == "end_map":
                return built
            event, value = next(self.events)
            if shape is None or key in shape:
                built[key] = self.value(event, value, KEEP if shape is None else shape[key], depth)
            else:
                self.skip(event, depth)
        raise DocumentError("the document ends inside an object")  # the parser says so first

    def list(self, shape: object, depth: int) -> list:
        _check_depth(depth)
        built = []
        for event, value in self.events:
            if event == "end_array":
                return built
            built.append(self.value(event, value, shape, depth))
        raise DocumentError("the document ends inside a list")

    def samples(self, depth: int) -> Samples:
        _check_depth(depth)
        samples = Samples(self.samples_limit)
        add = samples.add
        for event, value in self.events:
            if event == "number":
                add(value)  # type: ignore[arg-type]  # an int or a float (use_float)
            elif event == "end_array":
                return samples
            else:
                samples.refuse(self.value(event, value, KEEP, depth))
        raise DocumentError("the document ends inside a list")

    def skip(self, event: str, depth: int) -> None:
        """Read past the value that ``event`` starts."""
        if event not in ("start_map", "start_array"):
            return
        level = depth + 1
        for event, _ in self.events:
            if event in ("start_map", "start_array"):
                level += 1
                _check_depth(level)
            elif event in ("end_map", "end_array"):
                level -= 1
                if level == depth:
                    return


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _TooDeep()


class _TooDeep(Exception):
    """Containers nested more than ``MAX_DEPTH`` deep."""


def too_large(path: Path, max_bytes: int) -> str:
    return (f"result document {path} holds more than max_result_mib={max_bytes // 2**20} MiB; have the bench "
            "write less, or raise the sweep key max_result_mib")
