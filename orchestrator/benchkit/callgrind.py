"""Callgrind's client requests from Python (docs/design.md, "Instruction counts"): collection on just
around the measured calls, a dump of the counts after each measured block.

A client request is a sequence of instructions that does nothing on a real CPU (four rotations of a
register by 128 bits in all, then ``xchg rbx, rbx``) and that valgrind recognises as a request whose
arguments lie at the address in ``rax`` (valgrind.h documents the sequence for each machine). Python
cannot execute it, so ``_request_function`` writes a tiny function holding it into a page of its own,
makes that page executable and calls it through ``ctypes``. x86-64 only. Outside valgrind every
request returns its default: the marks cost a ``ctypes`` call each and count nothing.

``marks()`` is what the in-process drivers of a bench use (``suitekit.serve``, the bench helper):
``Marks`` when the worker started this process instrumented (``SHASWEEP_INSTRUMENT=callgrind``),
else ``NoMarks``. The standard library only.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform

INSTRUMENT_VAR = "SHASWEEP_INSTRUMENT"  # set by the worker in an instrumented process's environment
CALLGRIND = "callgrind"
MACHINES = ("x86_64", "amd64")
# callgrind's requests: VG_USERREQ_TOOL_BASE('C', 'T') + n
_TOOL_BASE = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS_AT, TOGGLE_COLLECT = _TOOL_BASE + 3, _TOOL_BASE + 2
ZERO_STATS = _TOOL_BASE + 1
RUNNING_ON_VALGRIND = 0x1001
# size_t request(size_t *args /* rdi */, size_t default /* rsi */)
_CODE = bytes.fromhex(
    "4889f8"  # mov rax, rdi: the request's arguments
    "4889f2"  # mov rdx, rsi: the default result
    "48c1c703" "48c1c70d" "48c1c73d" "48c1c733"  # rol rdi, 3 / 13 / 61 / 51: the preamble
    "4887db"  # xchg rbx, rbx: the request; valgrind leaves its result in rdx
    "4889d0"  # mov rax, rdx
    "c3")  # ret


def supported() -> bool:
    """Whether this machine can make the requests (x86-64)."""
    return platform.machine().lower() in MACHINES


class Marks:
    """Client requests to a callgrind this process runs under."""

    def __init__(self) -> None:
        self._call, self._page = _request_function()
        self._args = (ctypes.c_size_t * 6)()
        self._address = ctypes.addressof(self._args)

    def request(self, code: int, argument: int = 0, default: int = 0) -> int:
        self._args[0], self._args[1] = code, argument
        return int(self._call(self._address, default))

    def on_valgrind(self) -> bool:
        return self.request(RUNNING_ON_VALGRIND) > 0

    def start(self) -> None:
        """Collect from here (collection starts off: ``--collect-atstart=no``)."""
        self.request(TOGGLE_COLLECT)

    def stop(self) -> None:
        self.request(TOGGLE_COLLECT)

    def dump(self, name: str) -> None:
        """Write the counts collected since the last dump to a file of their own, described as ``name``
        (valgrind zeroes its counters after a dump)."""
        text = ctypes.create_string_buffer(name.encode("ascii", "replace")[:200])
        self.request(DUMP_STATS_AT, ctypes.addressof(text))

    def zero(self) -> None:
        self.request(ZERO_STATS)


class NoMarks:
    """No instrumentation: every mark does nothing."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def dump(self, name: str) -> None:
        pass

    def zero(self) -> None:
        pass


def marks() -> Marks | NoMarks:
    """``Marks`` in a process the worker started instrumented, else ``NoMarks``."""
    return Marks() if os.environ.get(INSTRUMENT_VAR) == CALLGRIND else NoMarks()


def _request_function() -> tuple[ctypes._CFuncPtr, mmap.mmap]:
    """The request function, written into a page of its own made executable (never writable and
    executable at once), and the page (kept alive as long as the function)."""
    if not supported():
        raise OSError(f"callgrind's client requests are written for x86-64, not {platform.machine()}")
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(address, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
        raise OSError(ctypes.get_errno(), "mprotect: cannot make the client request's page executable")
    return ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)(address), page
