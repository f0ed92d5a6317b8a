"""resources.py: vector arithmetic is exact, immutable and zero-normalised."""

import pytest

from scheduler.engine import resources as r

H = ("gpu-a", "H100-80G")
A = ("gpu-a", "A100-40G")


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ({}, {}, {}),
        ({H: 4}, {H: 4}, {H: 8}),
        ({H: 4}, {A: 2}, {H: 4, A: 2}),
        ({H: 4}, {H: -4}, {}),
    ],
)
def test_add(a, b, expected):
    assert r.add(a, b) == expected


def test_sub_drops_zero_and_allows_negative():
    assert r.sub({H: 4, A: 2}, {H: 4}) == {A: 2}
    assert r.sub({H: 1}, {H: 3}) == {H: -2}


def test_inputs_are_not_mutated():
    a = {H: 1}
    r.add(a, {H: 1})
    r.sub(a, {H: 1})
    assert a == {H: 1}


@pytest.mark.parametrize(
    "request_, available, expected",
    [
        ({H: 4}, {H: 4}, True),
        ({H: 5}, {H: 4}, False),
        ({H: 1}, {A: 8}, False),
        ({}, {}, True),
        ({H: 0}, {}, True),
        ({H: 2, A: 2}, {H: 8, A: 1}, False),
    ],
)
def test_fits(request_, available, expected):
    assert r.fits(request_, available) is expected


def test_shortfall_lists_only_missing_parts():
    assert r.shortfall({H: 8, A: 1}, {H: 3, A: 4}) == {H: 5}
    assert r.shortfall({H: 2}, {H: -1}) == {H: 2}


@pytest.mark.parametrize(
    "usage, capacity, expected",
    [
        ({}, {H: 8}, 0.0),
        ({H: 4}, {H: 8}, 0.5),
        ({H: 4, A: 3}, {H: 8, A: 4}, 0.75),
        ({H: 1}, {}, float("inf")),
        ({H: 0}, {}, 0.0),
    ],
)
def test_dominant_share(usage, capacity, expected):
    assert r.dominant_share(usage, capacity) == expected


def test_total():
    assert r.total({H: 3, A: 5}) == 8
