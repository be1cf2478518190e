"""Observation manager: groups (e.g. ``actor``, ``critic``) of terms concatenated into float32
(N, history * dim) arrays, with per-term noise, clip and scale applied by one kernel per group.

``compute(rows)`` evaluates a subset of rows, which is how the env gets the true pre-reset
observation of done rows (``final_obs``) before resetting them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.kernels.observation import postprocess_rows
from envruntime.kernels.scalar import draw_noise_key
from envruntime.managers.terms import ObsGroupCfg, build


class _Group:
    def __init__(self, name: str, cfg: ObsGroupCfg, env: Any) -> None:
        if cfg.history_length < 1:
            raise ValueError(f"observation group {name!r}: history_length must be >= 1")
        n = env.num_envs
        self.terms: list[tuple[slice, Any]] = []
        amp, lo, hi, scale = [], [], [], []
        start = 0
        for term_name, term_cfg in cfg.terms.items():
            term = build(term_cfg, env, "observation", f"{name}.{term_name}")
            self.terms.append((slice(start, start + term.dim), term))
            start += term.dim
            clip = term_cfg.clip or (-np.inf, np.inf)
            amp += [term_cfg.noise if cfg.enable_noise else 0.0] * term.dim
            lo += [clip[0]] * term.dim
            hi += [clip[1]] * term.dim
            scale += [term_cfg.scale] * term.dim
        self.dim = start * cfg.history_length
        self.noise_amp, self.clip_lo, self.clip_hi, self.scale = (
            np.array(v, dtype=np.float64) for v in (amp, lo, hi, scale)
        )
        self.noisy = bool(np.any(self.noise_amp))
        self.raw = np.zeros((n, start))
        self.fresh = np.ones(n, dtype=np.bool_)
        self.out = np.zeros((n, self.dim), dtype=np.float32)

    def compute(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        k = rows.shape[0]
        raw = self.raw[:k]
        for cols, term in self.terms:
            term(rows, raw[:, cols])
        key = draw_noise_key(rng) if self.noisy else np.uint64(0)
        postprocess_rows(
            raw, rows, key, self.noise_amp, self.clip_lo, self.clip_hi, self.scale, self.fresh, self.out
        )


class ObservationManager:
    def __init__(self, groups: dict[str, ObsGroupCfg], env: Any) -> None:
        self._cfgs = groups
        self._env = env
        self._groups: dict[str, _Group] = {}
        self.obs: dict[str, np.ndarray] = {}
        self.dims: dict[str, int] = {}

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        for name, cfg in self._cfgs.items():
            group = _Group(name, cfg, self._env)
            self._groups[name] = group
            self.obs[name] = group.out
            self.dims[name] = group.dim

    def compute(self, rows: np.ndarray) -> None:
        """Evaluate every group for ``rows`` into ``obs`` (group by group, noise drawn per group)."""
        for group in self._groups.values():
            group.compute(rows, self._env.rng)

    def compile_one_row_path(self, row: np.ndarray) -> None:
        """Compile (or load from Numba's cache) the terms' one-row specialisation now.

        A one-row view of a group's buffers is C-contiguous, so Numba types it apart from the
        many-row path: without this, the first step that resets a lone env pays that compile inside
        a measured step (seen as a 1.5 s ``reset_done_ms`` spike in a fresh worktree). Uses a
        throwaway generator, so the env's random stream is untouched; the caller resets the row after.
        """
        scratch = np.random.default_rng(0)
        for group in self._groups.values():
            group.compute(row, scratch)

    def reset(self, rows: np.ndarray) -> None:
        """Mark ``rows`` fresh: their next frame fills the whole history."""
        for group in self._groups.values():
            group.fresh[rows] = True
