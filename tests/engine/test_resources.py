"""Resource vectors (scheduler/engine/resources.py): table cases and hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.engine.resources import (
    UNLIMITED,
    ZERO,
    Limits,
    Resources,
    add,
    binding,
    copies,
    fits,
    limits_over,
    scale,
    sub,
)


@pytest.mark.parametrize("need, free, expected", [
    (Resources(8, 0, 0, 0), Resources(8, 640, 96, 2048), None),
    (Resources(9, 0, 0, 0), Resources(8, 640, 96, 2048), "gpus"),
    (Resources(8, 0, 0, 256), Resources(8, 640, 96, 120), "memory_gb"),
    (Resources(8, 0, 128, 256), Resources(8, 640, 96, 120), "cpus"),  # CPU is named before memory
    (Resources(1, 100, 0, 0), Resources(1, 80, 0, 0), "gpu_memory_gb"),
    (Resources(8, 0, 128, 4096), Limits(None, None, None, None), None),  # empty: unlimited
    (Resources(8, 0, 128, 4096), Limits(16, None, 64, None), "cpus"),
    (Resources(8, 0, 64, 4096), Limits(16, None, 64, None), None),
])
def test_binding_names_the_first_dimension_short(need, free, expected):
    assert binding(need, free) == expected
    assert fits(need, free) is (expected is None)


@pytest.mark.parametrize("need, free, expected", [
    (Resources(2, 0, 0, 0), Resources(8, 0, 0, 0), 4),
    (Resources(2, 0, 0, 512), Resources(8, 0, 0, 2048), 4),
    (Resources(2, 0, 0, 1024), Resources(8, 0, 0, 2048), 2),  # memory binds before GPUs
    (Resources(2, 0, 48, 0), Resources(8, 0, 96, 2048), 2),
    (Resources(0, 0, 0, 0), Resources(8, 0, 96, 2048), None),  # asks nothing: unbounded
    (Resources(2, 0, 0, 512), Limits(None, None, None, None), None),
])
def test_copies_is_the_smallest_quotient(need, free, expected):
    assert copies(need, free) == expected


def test_limits_over_reports_the_dimension_with_its_figures():
    assert limits_over(Resources(8, 0, 40, 100), Resources(8, 0, 32, 100), Limits(None, None, 64, None)) == (
        "cpus", 64, 40, 32)
    assert limits_over(Resources(8, 0, 40, 100), Resources(8, 0, 24, 100), Limits(None, None, 64, None)) is None
    assert limits_over(ZERO, Resources(100, 0, 0, 0), UNLIMITED) is None


amounts = st.builds(Resources, *(st.integers(0, 10_000) for _ in range(4)))


@given(amounts, amounts)
def test_add_then_sub_gives_back_the_amount(a, b):
    assert sub(add(a, b), b) == a
    assert fits(a, add(a, b)) and fits(b, add(a, b))


@given(amounts, amounts)
def test_sub_never_goes_below_zero_and_fits_what_is_left(a, b):
    left = sub(a, b)
    assert all(v >= 0 for v in left)
    assert fits(left, a)


@given(amounts, amounts)
def test_copies_of_a_need_always_fit_and_one_more_does_not(need, free):
    k = copies(need, free)
    if k is None:
        assert need == ZERO
        return
    assert fits(scale(need, k), free)
    assert not fits(scale(need, k + 1), free)
    assert binding(scale(need, k + 1), free) is not None
