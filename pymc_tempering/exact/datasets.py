"""Small public data sets that the examples, tests and exact references use, shipped in the code
so that they work after ``pip install`` (no data files).
"""

from typing import NamedTuple

import numpy as np

__all__ = ["CoalMiningDisasters", "coal_mining_disasters"]

# Annual counts 1851-1962 (112 years, 191 disasters), as tabulated by Carlin, Gelfand & Smith
# (1992); ten per line from 1851.
_COAL_COUNTS = (
    (4, 5, 4, 1, 0, 4, 3, 4, 0, 6),  # 1851-1860
    (3, 3, 4, 0, 2, 6, 3, 3, 5, 4),  # 1861-1870
    (5, 3, 1, 4, 4, 1, 5, 5, 3, 4),  # 1871-1880
    (2, 5, 2, 2, 3, 4, 2, 1, 3, 2),  # 1881-1890
    (2, 1, 1, 1, 1, 3, 0, 0, 1, 0),  # 1891-1900
    (1, 1, 0, 0, 3, 1, 0, 3, 2, 2),  # 1901-1910
    (0, 1, 1, 1, 0, 1, 0, 1, 0, 0),  # 1911-1920
    (0, 2, 1, 0, 0, 0, 1, 1, 0, 2),  # 1921-1930
    (3, 3, 1, 1, 2, 1, 1, 1, 1, 2),  # 1931-1940
    (4, 2, 0, 0, 0, 1, 4, 0, 0, 0),  # 1941-1950
    (1, 0, 0, 0, 0, 0, 1, 0, 0, 1),  # 1951-1960
    (0, 1),  # 1961-1962
)


class CoalMiningDisasters(NamedTuple):
    """Years and annual disaster counts of :func:`coal_mining_disasters`."""

    years: np.ndarray
    counts: np.ndarray


def coal_mining_disasters():
    """Annual counts of British coal-mining disasters (10 or more deaths), 1851-1962.

    Returns
    -------
    CoalMiningDisasters
        ``years`` (int64, 1851..1962) and ``counts`` (int64, 112 values summing to 191); fresh
        arrays on every call.

    Notes
    -----
    The disasters are the 191 explosions between 15 March 1851 and 22 March 1962 listed as
    intervals by Maguire, Pearson & Wynn (1952), corrected by Jarrett (1979) and Raftery & Akman
    (1986). The yearly counts are those of Carlin, Gelfand & Smith (1992), the series most
    change-point analyses use. Cross-check: tabulating the 191 decimal dates of R's
    ``boot::coal`` (Hand et al. 1994, *A Handbook of Small Data Sets*, data set 204; the copy in
    the Rdatasets collection, ``csv/boot/coal.csv``) by ``floor(date)`` gives the same count in
    110 of the 112 years and the same total; it gives 3 and 3 for 1941 and 1942 where this
    series has 4 and 2, because one disaster is dated 1942.0007, a quarter of a day past the
    year boundary on the 365.25-day calendar those dates use (31 December 1941 or 1 January
    1942).

    PyMC's getting-started notebook uses a different transcription: 111 values labelled
    1851-1961, with 1854 and 1855 swapped and one zero of the 1940s missing (so every later
    count sits one year early), and two values replaced by NaN to show imputation. The exact
    references of :mod:`pymc_tempering.exact.change_point` use this series.

    References
    ----------
    Jarrett, R. G. (1979). A note on the intervals between coal-mining disasters. *Biometrika*
    66, 191-193. Raftery, A. E. and Akman, V. E. (1986). Bayesian analysis of a Poisson process
    with a change-point. *Biometrika* 73, 85-89. Carlin, B. P., Gelfand, A. E. and Smith,
    A. F. M. (1992). Hierarchical Bayesian analysis of changepoint problems. *Applied
    Statistics* 41, 389-405.

    Examples
    --------
    >>> years, counts = coal_mining_disasters()
    >>> int(years[0]), int(years[-1]), int(counts.sum())
    (1851, 1962, 191)
    """
    counts = np.array([c for decade in _COAL_COUNTS for c in decade], dtype=np.int64)
    return CoalMiningDisasters(np.arange(1851, 1851 + counts.size, dtype=np.int64), counts)
