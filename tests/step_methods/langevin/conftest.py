"""Fixtures of the ULA / MALA tests."""

import pytest
from helpers import normal_model


@pytest.fixture(scope="module")
def small_model():
    """The small model (mu, sigma) of :func:`helpers.normal_model`, built once per module."""
    return normal_model()
