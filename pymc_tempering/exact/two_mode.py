r"""A well-separated two-mode target in 2-D whose evidence is a sum of two Gaussian
convolutions: the bimodal test bed of ExchangeMC against plain Metropolis.
"""

import numpy as np
from scipy import stats

#: Mode weights and centres of :func:`two_mode_model`: 10 standard deviations apart per axis.
TWO_MODE_WEIGHTS = (0.3, 0.7)
TWO_MODE_MEANS = ((-5.0, -5.0), (5.0, 5.0))


def two_mode_model(weights=TWO_MODE_WEIGHTS, means=TWO_MODE_MEANS, prior_sd=20.0):
    r"""PyMC model: prior :math:`x \sim N(0, s^2 I_2)`, likelihood the mixture
    :math:`\sum_k w_k N(x; \mu_k, I)` (a Potential).

    With the symmetric default means the prior density is equal at both modes, so the posterior
    mode weights are ``weights`` (up to the modes' negligible overlap), and plain Metropolis
    started between them sticks to one. The exact evidence is :func:`two_mode_log_evidence`.

    Parameters
    ----------
    weights : sequence of float, default TWO_MODE_WEIGHTS
        The mixture weights :math:`w_k`, summing to 1 (:data:`TWO_MODE_WEIGHTS`: 0.3, 0.7).
    means : sequence of sequence of float, default TWO_MODE_MEANS
        The modes :math:`\mu_k`, one row each (:data:`TWO_MODE_MEANS`: (-5, -5) and (5, 5)).
    prior_sd : float, default 20.0
        :math:`s`, the prior's standard deviation per axis.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    means = np.asarray(means, dtype=float)
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, prior_sd, shape=means.shape[1])
        comps = [
            np.log(w) + pm.logp(pm.MvNormal.dist(mu, np.eye(mu.size)), x)
            for w, mu in zip(weights, means, strict=True)
        ]
        pm.Potential("mixture", pm.math.logsumexp(pm.math.stack(comps)))
    return model


def two_mode_log_evidence(weights=TWO_MODE_WEIGHTS, means=TWO_MODE_MEANS, prior_sd=20.0):
    r"""Exact :math:`\log Z = \log \sum_k w_k N(\mu_k; 0, (s^2 + 1) I)` of
    :func:`two_mode_model` (a Gaussian convolution per component).

    Parameters
    ----------
    weights : sequence of float, default TWO_MODE_WEIGHTS
        The mixture weights :math:`w_k` of :func:`two_mode_model`, summing to 1
        (:data:`TWO_MODE_WEIGHTS`: 0.3, 0.7).
    means : sequence of sequence of float, default TWO_MODE_MEANS
        The modes :math:`\mu_k`, one row each (:data:`TWO_MODE_MEANS`: (-5, -5) and (5, 5)).
    prior_sd : float, default 20.0
        :math:`s`, the prior's standard deviation per axis.

    Returns
    -------
    float

    Examples
    --------
    >>> round(two_mode_log_evidence(), 4)
    -7.8942
    """
    means = np.asarray(means, dtype=float)
    cov = (prior_sd**2 + 1.0) * np.eye(means.shape[1])
    logs = [
        np.log(w) + stats.multivariate_normal(np.zeros(mu.size), cov).logpdf(mu)
        for w, mu in zip(weights, means, strict=True)
    ]
    return float(np.logaddexp.reduce(logs))
