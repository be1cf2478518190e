"""The pytest plugin that runs an unchanged pytest-benchmark (or pytest-codspeed) suite in lockstep
(docs/design.md, "Suites in lockstep").

Loaded only by a lockstep sweep's command: ``-p no:benchmark -p no:codspeed -p
orchestrator.suitekit.pytest_plugin --shasweep-control=FIFO --shasweep-stream=FILE``. The real
plugins are off; their options and hooks are registered here from their own modules, so the suite's
command line and conftest hooks stay valid (and are ignored). The ``benchmark`` fixture this plugin
provides runs each benchmark's blocks as the worker commands them, inside the test, once per test:
the session collects once, runs each benchmark's fixtures once, and only benchmarks run.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from orchestrator.benchkit.bench import git_sha
from orchestrator.suitekit.channel import Channel, ChannelError
from orchestrator.suitekit.serve import FunctionTarget, Session, StepTimes, Stopwatch

TOOL = "pytest-benchmark"
# The real plugins this one stands in for: pytest's name for each, and the module whose options and
# hooks it registers when that plugin is blocked.
STOOD_IN_FOR: dict[str, str] = {"benchmark": "pytest_benchmark.plugin", "codspeed": "pytest_codspeed.plugin"}
MARKERS = ("benchmark", "codspeed_benchmark")  # pytest-benchmark's and pytest-codspeed's markers
SESSION_KEY = pytest.StashKey["_LockstepSuite"]()


class UnsupportedFixtureAPI(AttributeError):
    """A part of pytest-benchmark's fixture this plugin does not provide (``benchmark.weave``, ...)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"benchmark.{name} is not provided in a shasweep lockstep run")
        self.api = f"benchmark.{name}"


def _stood_in_modules(pluginmanager: pytest.PytestPluginManager) -> list[Any]:
    """The modules of the blocked plugins this one stands in for, where installed."""
    found = []
    for name, module in STOOD_IN_FOR.items():
        if not pluginmanager.is_blocked(name):
            continue
        try:
            found.append(importlib.import_module(module))
        except ImportError:
            continue
    return found


def _call_hook(module: Any, hook: str, **arguments: Any) -> None:
    """``module``'s own implementation of ``hook``, with the arguments its signature names."""
    function = getattr(module, hook, None)
    if function is not None:
        names = inspect.signature(function).parameters
        function(**{name: value for name, value in arguments.items() if name in names})


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    for module in _stood_in_modules(pluginmanager):
        _call_hook(module, "pytest_addhooks", pluginmanager=pluginmanager)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("shasweep", "shasweep lockstep (set by the sweep's command)")
    group.addoption("--shasweep-control", help="the worker's control FIFO")
    group.addoption("--shasweep-stream", help="the run protocol's record file")
    for module in _stood_in_modules(pluginmanager):
        _call_hook(module, "pytest_addoption", parser=parser, pluginmanager=pluginmanager)


def pytest_configure(config: pytest.Config) -> None:
    control, stream = config.getoption("shasweep_control"), config.getoption("shasweep_stream")
    if not control or not stream:
        raise pytest.UsageError("orchestrator.suitekit.pytest_plugin needs --shasweep-control and "
                                "--shasweep-stream (a shasweep lockstep sweep passes them)")
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError("a lockstep sweep runs the suite in one pytest process; drop -n "
                                "(pytest-xdist) from the sweep's command")
    for marker in MARKERS:
        config.addinivalue_line("markers", f"{marker}(**options): a benchmark (shasweep lockstep)")
    versions = {"python": sys.version.split()[0], "pytest": pytest.__version__}
    audit = {"tool": TOOL, "versions": versions, "module_file": os.getcwd(), "git_sha": git_sha(os.getcwd())}
    config.stash[SESSION_KEY] = _LockstepSuite(Session(Channel(control, stream), audit))


@dataclass
class _Case:
    """What one benchmark test did."""

    served: bool = False
    unsupported: str | None = None
    failed: str | None = None
    skipped: bool = False
    extra: dict | None = None


class _LockstepSuite:
    """The session's benchmarks and the channel they are served through."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.cases: dict[str, _Case] = {}

    def select(self, session: pytest.Session) -> None:
        """Tell the worker the benchmarks collected; keep the ones it wants, in its order."""
        items = {item.nodeid: item for item in session.items if _is_benchmark(item)}
        try:
            wanted = self.session.open(list(items))
        except ChannelError as exc:
            raise pytest.UsageError(f"shasweep control channel: {exc}") from None
        chosen = [items[name] for name in wanted]
        rest = [item for item in session.items if item.nodeid not in set(wanted)]
        if rest:
            session.config.hook.pytest_deselected(items=rest)
        session.items[:] = chosen
        self.cases = {name: _Case() for name in wanted}

    def serve(self, item: pytest.Item, target: FunctionTarget) -> Any:
        """Run ``item``'s blocks as commanded; the result of its last call."""
        self.cases[item.nodeid].served = True
        if not self.session.ended:
            self.session.serve(item.nodeid, target)
        if self.session.ended:
            item.session.shouldstop = "shasweep: the worker ended the round"
        if not target.called:  # told to move on before any call: the test still gets a result
            target.step(1)
        return target.result

    def ended(self, item: pytest.Item) -> None:
        """The test is over (teardown too): say how it ended."""
        case = self.cases.get(item.nodeid)
        if case is None:
            return
        extra = {"extra_info": case.extra} if case.extra else {}
        if case.unsupported:
            self.session.case_end(item.nodeid, "unsupported", case.unsupported, api=case.unsupported, **extra)
        elif case.failed:
            self.session.case_end(item.nodeid, "failed", case.failed, **extra)
        elif case.skipped and not case.served:
            self.session.case_end(item.nodeid, "skipped")
        elif not case.served:
            self.session.case_end(item.nodeid, "absent", "the test never called its benchmark")
        else:
            self.session.case_end(item.nodeid, "passed", **extra)


def _is_benchmark(item: pytest.Item) -> bool:
    return "benchmark" in getattr(item, "fixturenames", ()) or _marked_only(item)


def _marked_only(item: pytest.Item) -> bool:
    """A pytest-codspeed benchmark: a marked test without the fixture, the test itself called."""
    marked = any(item.get_closest_marker(name) is not None for name in MARKERS)
    return marked and isinstance(item, pytest.Function) and "benchmark" not in item.fixturenames


def _suite(config: pytest.Config) -> _LockstepSuite:
    return config.stash[SESSION_KEY]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        _suite(session.config).session.channel.write(
            kind="error", type="CollectionError", message=f"{session.testsfailed} errors during collection")
        return
    _suite(session.config).select(session)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not _marked_only(pyfuncitem) or pyfuncitem.nodeid not in _suite(pyfuncitem.config).cases:
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    _suite(pyfuncitem.config).serve(pyfuncitem, FunctionTarget(pyfuncitem.obj, (), arguments))
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    case = _suite(item.config).cases.get(item.nodeid)
    if case is None:
        return
    if call.excinfo is not None and call.excinfo.errisinstance(UnsupportedFixtureAPI):
        case.unsupported = call.excinfo.value.api
        report.outcome = "skipped"  # not the suite's failure: the case runs elsewhere, or the sweep stops
        report.longrepr = (str(item.path), 0, f"shasweep lockstep: {case.unsupported} is not provided")
    elif report.failed and case.failed is None:
        case.failed = f"{report.when}: {report.longreprtext}"
    elif report.skipped:
        case.skipped = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    yield
    _suite(item.config).ended(item)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    suite = session.config.stash.get(SESSION_KEY, None)
    if suite is None:
        return
    suite.session.finish()
    ended = suite.session.ended and not session.testsfailed
    told_to_end = exitstatus == pytest.ExitCode.INTERRUPTED and ended
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED or told_to_end:  # none asked for here, or the
        session.exitstatus = pytest.ExitCode.OK  # worker ended the round: nothing went wrong


class LockstepBenchmark:
    """The ``benchmark`` fixture in a lockstep run: pytest-benchmark's API, each call served through
    the control channel (docs/design.md, "Suites in lockstep")."""

    def __init__(self, item: pytest.Item, suite: _LockstepSuite) -> None:
        marker = item.get_closest_marker("benchmark")
        self._item, self._suite, self._used = item, suite, False
        self.name = getattr(item, "name", item.nodeid)
        self.fullname = item.nodeid
        self.group: str | None = (marker.kwargs.get("group") if marker else None)
        self.extra_info: dict[str, Any] = {}
        callspec = getattr(item, "callspec", None)
        self.param = callspec.id if callspec else None
        self.params = dict(callspec.params) if callspec else None
        self.enabled, self.disabled = True, False

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._use()
        return self._serve(FunctionTarget(fn, args, kwargs))

    def pedantic(self, target: Callable[..., Any], args: tuple = (), kwargs: dict | None = None,
                 setup: Callable[[], Any] | None = None, teardown: Callable[..., Any] | None = None,
                 rounds: int = 1, warmup_rounds: int = 0, iterations: int = 1) -> Any:
        """``target`` with ``setup`` and ``teardown`` around every call, untimed; ``iterations`` > 1
        fixes the calls per step; ``rounds`` and ``warmup_rounds`` give way to the worker's blocks."""
        self._use()
        for name, value, least in (("iterations", iterations, 1), ("rounds", rounds, 1),
                                   ("warmup_rounds", warmup_rounds, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"Must have positive int for `{name}`.")
        if iterations > 1 and setup is not None:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        fixed = iterations if iterations > 1 else None
        if setup is None and teardown is None:
            return self._serve(FunctionTarget(target, tuple(args), kwargs, fixed_calls=fixed))
        return self._serve(_SetUpTarget(target, tuple(args), dict(kwargs or {}), setup, teardown))

    def _use(self) -> None:
        if self._used:
            raise RuntimeError("the benchmark fixture can be used once per test")
        self._used = True

    def _serve(self, target: FunctionTarget | _SetUpTarget) -> Any:
        result = self._suite.serve(self._item, target)
        self._suite.cases[self._item.nodeid].extra = {"group": self.group, **self.extra_info} \
            if (self.group or self.extra_info) else None
        return result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnsupportedFixtureAPI(name)


class _SetUpTarget:
    """pedantic's ``target`` with its ``setup`` (which may return the arguments) and ``teardown``
    around every call, only the calls timed."""

    inner_loops = 1
    fixed_calls = None

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, setup: Callable[[], Any] | None,
                 teardown: Callable[..., Any] | None) -> None:
        self.fn, self.args, self.kwargs, self.setup, self.teardown = fn, args, kwargs, setup, teardown
        self.result: Any = None
        self.called = False

    def step(self, calls: int) -> StepTimes:
        watch = Stopwatch()
        for _ in range(calls):
            args, kwargs = self.args, self.kwargs
            if self.setup is not None:
                given = self.setup()
                if given:
                    if args or kwargs:
                        raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
                    args, kwargs = given
            with watch:
                self.result = self.fn(*args, **kwargs)
            if self.teardown is not None:
                self.teardown(*args, **kwargs)
        self.called = True
        return watch.times()


@pytest.fixture
def benchmark(request: pytest.FixtureRequest) -> LockstepBenchmark:
    """pytest-benchmark's fixture, served through shasweep's control channel."""
    return LockstepBenchmark(request.node, _suite(request.config))
