import numpy as np
import pytest

from pymc_tempering.ladder import (
    communication_barrier,
    equal_rejection_ladder,
    geometric_ladder,
    make_ladder,
    power_ladder,
    validate_betas,
)


def test_geometric_ladder_is_the_seed_papers():
    betas = geometric_ladder(32)
    assert betas.size == 32
    assert betas[0] == 0.0
    # t_l = 2^(l - L) for l = 2..L (1-based)
    for l in range(2, 33):
        assert betas[l - 1] == 2.0 ** (l - 32)
    assert betas[1] == 2.0**-30 and betas[-1] == 1.0


def test_power_ladder():
    betas = power_ladder(5, power=5)
    np.testing.assert_allclose(betas, (np.arange(5) / 4) ** 5)


@pytest.mark.parametrize(
    "betas, match",
    [
        ([0.0, 0.5, 0.5, 1.0], "strictly increasing"),
        ([0.0, 0.7, 0.3, 1.0], "strictly increasing"),
        ([-0.1, 0.5, 1.0], r"\[0, 1\]"),
        ([0.0, 0.5, 1.2], r"\[0, 1\]"),
        ([0.0, 0.5, 0.9], "end at 1"),
        ([1.0], "at least 2 rungs"),
        ([[0.0, 1.0]], "one-dimensional"),
        ([0.0, np.nan, 1.0], "finite"),
    ],
)
def test_bad_ladders_are_refused_with_a_message(betas, match):
    with pytest.raises(ValueError, match=match):
        validate_betas(betas)


@pytest.mark.parametrize("n_rungs", [1, 0, 2.5, True])
def test_bad_n_rungs(n_rungs):
    with pytest.raises(ValueError, match="n_rungs"):
        make_ladder(n_rungs=n_rungs)


def test_make_ladder_resolution():
    np.testing.assert_array_equal(make_ladder(), geometric_ladder(32))
    np.testing.assert_array_equal(make_ladder(n_rungs=8, ladder="power"), power_ladder(8))
    np.testing.assert_array_equal(make_ladder(betas=[0, 0.5, 1]), [0, 0.5, 1])
    with pytest.raises(ValueError, match="disagrees"):
        make_ladder(betas=[0, 0.5, 1], n_rungs=4)
    with pytest.raises(ValueError, match="ladder"):
        make_ladder(ladder="linear")


def test_communication_barrier_sums_rejections():
    lam = communication_barrier([0, 0.2, 0.6, 1.0], [0.1, 0.3, 0.2])
    np.testing.assert_allclose(lam, [0, 0.1, 0.4, 0.6])


def test_equal_rejection_ladder_equalises_a_known_barrier():
    # Suppose the true barrier density is lambda(beta) = 2 beta, so Lambda(beta) = beta^2 and
    # pair rejection ~ Lambda(b_{k+1}) - Lambda(b_k). Equal spacing in Lambda means b = sqrt(u).
    betas = np.linspace(0, 1, 41)
    rejection = np.diff(betas**2)
    new = equal_rejection_ladder(betas, rejection, n_rungs=6)
    np.testing.assert_allclose(new, np.sqrt(np.linspace(0, 1, 6)), atol=2e-3)
    assert new[0] == 0 and new[-1] == 1
