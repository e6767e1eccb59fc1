"""The oracle itself, checked against values worked out by hand (and torch where installed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import implicit_dim, log_softmax_ref, softmax_ref

INF = np.inf
NAN = np.nan


def test_softmax_of_known_values():
    e = math.e
    np.testing.assert_allclose(
        softmax_ref(np.array([0.0, 1.0]), 0), [1 / (1 + e), e / (1 + e)], rtol=1e-15
    )
    np.testing.assert_allclose(softmax_ref(np.array([5.0, 5.0, 5.0, 5.0]), 0), [0.25] * 4)
    np.testing.assert_allclose(
        log_softmax_ref(np.array([0.0, 0.0]), 0), [-math.log(2)] * 2, rtol=1e-15
    )


def test_softmax_is_shift_invariant_and_exact_for_huge_values():
    x = np.array([1000.0, 1001.0, 999.0])
    np.testing.assert_allclose(softmax_ref(x, 0), softmax_ref(x - 1000.0, 0), rtol=1e-15)
    np.testing.assert_array_equal(softmax_ref(np.array([1e308, -1e308]), 0), [1.0, 0.0])
    np.testing.assert_array_equal(log_softmax_ref(np.array([1e308, 0.0]), 0), [0.0, -1e308])


def test_reference_reduces_along_the_given_dim():
    x = np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 3.0]])
    np.testing.assert_allclose(softmax_ref(x, 1).sum(axis=1), [1.0, 1.0])
    np.testing.assert_allclose(softmax_ref(x, 0).sum(axis=0), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(softmax_ref(x, -1), softmax_ref(x, 1))
    np.testing.assert_allclose(softmax_ref(x, -2), softmax_ref(x, 0))


@pytest.mark.parametrize(
    ("row", "softmax", "log_softmax"),
    [
        ([NAN, 1.0], [NAN, NAN], [NAN, NAN]),
        ([-INF, -INF], [NAN, NAN], [NAN, NAN]),
        ([INF, 1.0], [NAN, NAN], [NAN, NAN]),
        ([INF, -INF], [NAN, NAN], [NAN, NAN]),
        ([-INF, 0.0, -INF], [0.0, 1.0, 0.0], [-INF, 0.0, -INF]),
        ([-INF, 0.0, 0.0], [0.0, 0.5, 0.5], [-INF, -math.log(2), -math.log(2)]),
    ],
)
def test_reference_follows_pytorch_for_special_values(row, softmax, log_softmax):
    with np.errstate(all="raise"):  # the oracle silences its own warnings
        np.testing.assert_array_equal(softmax_ref(np.array(row), 0), softmax)
        np.testing.assert_allclose(log_softmax_ref(np.array(row), 0), log_softmax, rtol=1e-15)


def test_reference_of_0d_is_one_and_zero():
    assert softmax_ref(np.float64(-3.0), 0) == 1.0
    assert log_softmax_ref(np.float64(7.0), -1) == 0.0
    assert softmax_ref(np.float64(2.0), 0).shape == ()


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4)])
def test_reference_of_empty_input_is_empty(shape):
    for dim in range(len(shape)):
        assert softmax_ref(np.zeros(shape), dim).shape == shape
        assert log_softmax_ref(np.zeros(shape), dim).shape == shape


def test_implicit_dim_rule():
    assert [implicit_dim(n) for n in range(6)] == [0, 0, 1, 0, 1, 1]


def test_reference_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4, 5)) * 10
    x[0, 0, 0] = -INF
    for dim in range(3):
        t = torch.from_numpy(x)
        np.testing.assert_allclose(softmax_ref(x, dim), torch.softmax(t, dim).numpy(), rtol=1e-12)
        np.testing.assert_allclose(
            log_softmax_ref(x, dim), torch.log_softmax(t, dim).numpy(), rtol=1e-12
        )
