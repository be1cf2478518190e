"""The row kernels' thread count, chosen step by step (``envruntime.envs.kernel_threads``): on simulated
hosts where more threads cost more (a busy host), less (an idle one), or each by turns (a bursty
neighbour), over many seeds, against an oracle that always knows the cheapest count; and on a real env,
where moving between counts every step must not change a single result."""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
import pytest

from envruntime.envs.kernel_threads import POLICY_ENV, KernelThreads, policy_from_env, rungs
from envruntime.tasks import make_env

SEEDS = range(20)
Cost = Callable[[int, int], float]  # (step, threads) -> ms without interference


def simulate(cost: Cost, steps: int, ceiling: int, seed: int,
             heavy: bool = False) -> tuple[np.ndarray, np.ndarray, KernelThreads]:
    """Step a chooser on ``cost`` under interference that only slows steps (log-normal s.d. 0.1, one step
    in 20 slowed 1-4x; ``heavy``: also one in 5 slowed 1-20x); returns the costs it paid, an oracle's
    (always the cheapest count) under the same interference, and the chooser."""
    rng = np.random.default_rng(seed)
    chooser = KernelThreads(ceiling, apply=lambda _: None)
    paid, oracle = np.empty(steps), np.empty(steps)
    for step in range(steps):
        noise = np.exp(rng.normal(0.0, 0.1)) * (1.0 + (rng.random() < 0.05) * rng.uniform(0.0, 3.0))
        if heavy:
            noise *= 1.0 + (rng.random() < 0.2) * rng.uniform(0.0, 19.0)
        threads = chooser.begin()
        paid[step] = cost(step, threads) * noise
        oracle[step] = min(cost(step, k) for k in chooser.rungs) * noise
        chooser.end(threads, paid[step])
    return paid, oracle, chooser


def busy(_: int, threads: int) -> float:
    return 1.0 if threads == 1 else 6.0  # the Go2 manager env at N=256 with two CPU-bound neighbours


def swamped(_: int, threads: int) -> float:
    return 1.0 if threads == 1 else 300.0  # the VM at load 11


def idle(_: int, threads: int) -> float:
    return 1.0 if threads == 1 else 0.55


def spells(busy_cost: Cost) -> tuple[Cost, int]:
    """Spells of 20-300 steps, ``busy_cost`` and ``idle`` by turns; the cost and the steps they last."""
    ends = np.cumsum(np.random.default_rng(7).integers(20, 300, 60))

    def cost(step: int, threads: int) -> float:
        return (busy_cost if int(np.searchsorted(ends, step, side="right")) % 2 else idle)(step, threads)
    return cost, int(ends[-1])


def test_rungs_double_up_to_the_ceiling() -> None:
    assert rungs(2) == (1, 2) and rungs(12) == (1, 2, 4, 8, 12) and rungs(16) == (1, 2, 4, 8, 16)
    assert rungs(1) == (1,) and rungs(0) == (1,)


def test_on_a_busy_host_it_keeps_to_one_thread() -> None:
    for seed in SEEDS:
        paid, oracle, chooser = simulate(busy, 1000, 2, seed)
        assert np.median(paid) <= 1.02 * np.median(oracle) and paid.mean() <= 1.1 * oracle.mean(), seed
        assert chooser.used[2] <= 20, (seed, chooser.used)  # a fixed 2 threads pays 6x


def test_a_swamped_host_costs_one_step_on_two_threads() -> None:
    for seed in SEEDS:
        paid, oracle, chooser = simulate(swamped, 1000, 2, seed)
        assert chooser.used[2] == 1 and np.median(paid) <= 1.01 * np.median(oracle), (seed, chooser.used)


def test_on_an_idle_host_it_keeps_every_thread() -> None:
    for seed in SEEDS:
        paid, oracle, chooser = simulate(idle, 1000, 2, seed)
        assert np.median(paid) <= 1.03 * np.median(oracle) and paid.mean() <= 1.1 * oracle.mean(), seed
        assert chooser.used[2] >= 900, (seed, chooser.used)
        paid, oracle, chooser = simulate(idle, 1000, 2, seed, heavy=True)
        assert paid.mean() <= 1.3 * oracle.mean() and chooser.used[2] >= 700, (seed, chooser.used)


@pytest.mark.parametrize(("busy_cost", "most"), [(busy, 1.3), (swamped, 1.8)])
def test_it_follows_a_bursty_neighbour(busy_cost: Cost, most: float) -> None:
    cost, steps = spells(busy_cost)
    ratios = [paid.mean() / oracle.mean() for paid, oracle, _ in (simulate(cost, steps, 2, s) for s in SEEDS)]
    fixed = np.mean([cost(s, 2) for s in range(steps)]) / np.mean([cost(s, 1) for s in range(steps)])
    assert max(ratios) <= most < fixed, (ratios, fixed)  # fixed 2 threads: 3.2x (busy), 144x (swamped)


def test_with_many_cores_it_climbs_to_the_cheapest_count() -> None:
    costs = {16: 3.0, 8: 1.5, 4: 0.5, 2: 0.7, 1: 1.2}  # half the cores taken by neighbours
    for seed in SEEDS:
        paid, oracle, chooser = simulate(lambda _, k: costs[k], 600, 16, seed)
        assert chooser.rungs[chooser.current] == 4, seed
        assert chooser.used[4] >= 500 and paid.mean() <= 1.2 * oracle.mean(), (seed, chooser.used)


def test_the_fixed_policy_never_moves() -> None:
    chooser = KernelThreads(4, policy="fixed", apply=lambda _: None)
    for _ in range(200):
        threads = chooser.begin()
        chooser.end(threads, 1.0 if threads == 1 else 9.0)
    assert chooser.rungs == (4,) and chooser.used == {4: 200}


def test_the_policy_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POLICY_ENV, raising=False)
    assert policy_from_env() == "adaptive"
    monkeypatch.setenv(POLICY_ENV, "fixed")
    assert policy_from_env() == "fixed"
    monkeypatch.setenv(POLICY_ENV, "spin")
    with pytest.raises(ValueError, match=f"{POLICY_ENV} must be one of adaptive, fixed, got 'spin'"):
        policy_from_env()


class EveryRungInTurn(KernelThreads):
    """Moves to the next rung every step, whatever the steps cost."""

    def _choose(self) -> int:
        self.current = (self.current + 1) % len(self.rungs)
        return self.rungs[self.current]


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_moving_between_thread_counts_changes_no_result(variant: str) -> None:
    """Two envs from one seed, one on every thread Numba has, the other moving between counts each step:
    every observation, reward, flag and done row is bitwise the same (rows end, so the done-row
    kernels run on subsets too)."""
    ceiling = numba.config.NUMBA_NUM_THREADS
    if ceiling < 2:
        pytest.skip("needs 2 of Numba's threads")
    fixed, moving = (make_env("go2_joystick_flat", "mujoco", variant, 64, 1) for _ in range(2))
    fixed.kernel_threads = KernelThreads(ceiling, policy="fixed")
    moving.kernel_threads = EveryRungInTurn(ceiling)
    try:
        rng = np.random.default_rng(0)
        for env in (fixed, moving):
            env.reset(3)
        ended = 0
        for _ in range(40):
            action = rng.uniform(-3.0, 3.0, (64, fixed.action_dim)).astype(np.float32)
            a, b = fixed.step(action), moving.step(action)
            for group in a.obs:
                np.testing.assert_array_equal(a.obs[group], b.obs[group])
                np.testing.assert_array_equal(a.final_obs[group], b.final_obs[group])
            for name in ("reward", "terminated", "truncated", "done_rows"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
            ended += len(a.done_rows)
        assert ended > 0 and len(moving.kernel_threads.used) == len(moving.kernel_threads.rungs) > 1
    finally:
        fixed.close()
        moving.close()
