"""kernel_args: a direct variant names its fused kernels' arrays once, and they arrive in order."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from envruntime.envs.direct_base import kernel_args


@njit(cache=False)
def _kernel(rows: np.ndarray, out: np.ndarray, lo: np.ndarray, hi: np.ndarray, scale: float) -> None:
    for i in range(rows.shape[0]):
        out[i] = (hi[rows[i]] - lo[rows[i]]) * scale


def test_named_arrays_arrive_in_parameter_order_after_the_leading_ones() -> None:
    lo, hi = np.array([0.0, 1.0, 2.0]), np.array([5.0, 5.0, 5.0])
    args = kernel_args(_kernel, leading=2, scale=2.0, hi=hi, lo=lo)  # any order of names
    assert args[0] is lo and args[1] is hi and args[2] == 2.0
    out = np.zeros(2)
    _kernel(np.array([2, 0]), out, *args)
    np.testing.assert_array_equal(out, [6.0, 10.0])


def test_a_missing_or_unknown_name_is_an_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"_kernel: missing arguments \['hi'\], unknown \['high'\]"):
        kernel_args(_kernel, leading=2, lo=np.zeros(3), high=np.zeros(3), scale=1.0)
    with pytest.raises(TypeError, match=r"missing arguments \['out'\]"):
        kernel_args(_kernel, leading=1, lo=np.zeros(3), hi=np.zeros(3), scale=1.0)
