"""How many threads the row kernels of each env step run on, chosen step by step from what they cost.

Numba runs every kernel over rows as a fork-join region on ``numba.get_num_threads()`` threads: the
rows are split statically, the idle workers sleep (``envruntime.kernels.parallel``) and are woken
for each region, and a region ends when every member of the team has done its share. When other
processes hold the CPUs, a woken worker waits for one, and so does every region it belongs to: on
the 2-core VM with two CPU-bound neighbours, the Go2 manager env's ``update_state_ms`` at N=256 was
6.0x its 1-thread time at 2 threads, and 2.4x at N=1024, while at N=2048-4096 the second thread
still halved it. No thread count is right on every host, load and N, so an env measures it:

* the counts are the rungs ``1, 2, 4, ...`` up to ``ceiling`` (the backend's threads, the bench's
  ``--threads``, at most Numba's pool). The first steps run on 1 thread, where a busy host costs least:
  a step on too many threads can cost far more (100-900x at N=64 on the VM at load 11) than one on
  too few (at most ``ceiling`` x);
* each step's cost is what its kernels took: ``apply_action_ms + update_state_ms + reset_done_ms``,
  the env's work outside physics. Interference only slows a step down, so a rung's cost is the
  fastest of its last 6 steps;
* at most every 4 steps one step tries a neighbouring rung (one below, then one above, alternately),
  and the env moves there when that step cost less than 0.9x the current rung's cost. A try that
  lost wasted what it cost beyond the current rung's cost; the next try waits until the kernels
  spent 20x that (tries waste at most 5 % of the kernels' time);
* three steps in a row 1.5x slower than the rung's cost before them mean the host changed: the
  next step tries one rung down at once, against those three.

Results do not depend on the thread count (each row is computed by the same serial code), so
moving between rungs changes times only. ``ENVRUNTIME_KERNEL_THREADS=fixed`` keeps every step on
``ceiling``, as before this rule.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable

import numba

POLICY_ENV = "ENVRUNTIME_KERNEL_THREADS"
POLICIES: tuple[str, ...] = ("adaptive", "fixed")
WINDOW = 6  # the current rung's recent steps a probe is compared with
MIN_INTERVAL = 4  # steps on the current rung between two probes, at least
SWITCH_BELOW = 0.9  # a probe wins when it cost less than this share of the current rung's fastest
                    # recent step
WASTE_SHARE = 0.05  # what probes that lost may cost, as a share of the kernels' time
SLOWER, SLOW_RUN = 1.5, 3  # that many steps in a row this many times slower than the steps before
                           # them on the current rung: the next step tries one rung down


def policy_from_env() -> str:
    """``ENVRUNTIME_KERNEL_THREADS`` (default ``adaptive``); ValueError naming it when unknown."""
    policy = os.environ.get(POLICY_ENV, "adaptive")
    if policy not in POLICIES:
        raise ValueError(f"{POLICY_ENV} must be one of {', '.join(POLICIES)}, got {policy!r}")
    return policy


def kernel_ms(timings: dict[str, float]) -> float:
    """What a step's row kernels cost: the env's own work outside physics, from its ``timings``."""
    return timings["apply_action_ms"] + timings["update_state_ms"] + timings["reset_done_ms"]


def rungs(ceiling: int) -> tuple[int, ...]:
    """``1, 2, 4, ...`` up to ``ceiling`` (which ends it), e.g. 12 -> (1, 2, 4, 8, 12)."""
    counts = [1]
    while counts[-1] < ceiling:
        counts.append(min(2 * counts[-1], ceiling))
    return tuple(counts)


class KernelThreads:
    """Picks each step's thread count for the row kernels (see the module docstring)."""

    def __init__(self, ceiling: int, policy: str = "adaptive",
                 apply: Callable[[int], None] = numba.set_num_threads) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown kernel thread policy {policy!r}; valid: {', '.join(POLICIES)}")
        self.policy, self._apply = policy, apply
        self.rungs = rungs(ceiling) if policy == "adaptive" else (max(1, ceiling),)
        self.current = 0  # index into rungs: 1 thread first, where a busy host costs nothing
        self.recent = {k: deque(maxlen=WINDOW) for k in self.rungs}
        self.used: Counter[int] = Counter()  # steps run per thread count
        self.last = self.rungs[0]
        self._since_probe, self._probes, self._down_next = 0, 0, False
        self._owed_ms = 0.0  # kernel time to spend on the current rung before the next probe

    @classmethod
    def from_env(cls, threads: int | None) -> KernelThreads:
        """``threads`` (None: all) of Numba's threads as the ceiling, the policy from
        ``ENVRUNTIME_KERNEL_THREADS``."""
        pool = numba.config.NUMBA_NUM_THREADS
        return cls(min(threads or pool, pool), policy_from_env())

    def begin(self) -> int:
        """Set Numba's thread count for the step about to run and return it."""
        threads = self._choose()
        self._apply(threads)
        self.last = threads
        return threads

    def end(self, threads: int, cost_ms: float) -> None:
        """Record what the step run on ``threads`` cost in its row kernels (``kernel_ms``)."""
        self.used[threads] += 1
        self.recent[threads].append(cost_ms)
        current = self.rungs[self.current]
        best = min(self.recent[current])  # interference only slows a step: the fastest is the cost
        if threads == current:
            self._owed_ms -= cost_ms
            recent = list(self.recent[current])
            if (self.current > 0 and len(recent) == WINDOW
                    and min(recent[-SLOW_RUN:]) > SLOWER * min(recent[:-SLOW_RUN])):
                # the last steps far slower than those before: the host changed, so the next step
                # tries fewer threads (at most ``ceiling`` x the work) against these steps alone
                self._down_next = True
                self.recent[current] = deque(recent[-SLOW_RUN:], maxlen=WINDOW)
            return
        if cost_ms < SWITCH_BELOW * best:
            self.current, self._owed_ms = self.rungs.index(threads), 0.0
            self.recent[threads] = deque([cost_ms], maxlen=WINDOW)  # its older steps are of another host
        else:  # lost: wait until the kernels spent 1 / WASTE_SHARE times what it cost extra
            self._owed_ms = max(0.0, cost_ms - best) / WASTE_SHARE

    def _choose(self) -> int:
        current = self.rungs[self.current]
        self._since_probe += 1
        if self._down_next:
            self._since_probe, self._down_next = 0, False
            return self.rungs[self.current - 1]
        if len(self.rungs) == 1 or self._since_probe < MIN_INTERVAL or self._owed_ms > 0.0:
            return current
        self._since_probe = 0
        self._probes += 1
        neighbours = [self.rungs[i] for i in (self.current + 1, self.current - 1) if 0 <= i < len(self.rungs)]
        return neighbours[self._probes % len(neighbours)]
