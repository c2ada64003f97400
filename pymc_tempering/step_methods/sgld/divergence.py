"""What counts as a divergence of SGLD, and what SGLD tells the user about it.

SGLD keeps every move it makes, so it must itself refuse a move to a state whose value, log
density or gradient is not finite (a zero-density region, or a chain blowing up), and, on the
full data, a fall of the log density that only an unstable step makes (:data:`BLOWUP_NATS`).
"""

import math

import numpy as np

__all__ = ["BLOWUP_NATS", "finite", "nonfinite_state_message", "divergence_message"]

BLOWUP_NATS = 1000.0  # a fall of the full-data log density that only an unstable step makes


def finite(x, logp, grad_logprior, grad_loglik) -> bool:
    """Whether the state, its log density and both gradients are all finite."""
    # one sum carries any NaN or infinity (it overflows only for values near 1e308, a
    # blow-up anyway): a third of the cost of three isfinite(...).all() per step
    total = np.add.reduce(x) + np.add.reduce(grad_logprior) + np.add.reduce(grad_loglik)
    return math.isfinite(logp) and math.isfinite(total)


def nonfinite_state_message(own: dict, names: list, logp: float, first: bool) -> str:
    """Why SGLD cannot start (``first``) or go on from the state ``own`` of ``names``."""
    where = f"log density {logp:.4g} (log prior + (minibatch) log-likelihood) or its gradient"
    if first:
        return (
            f"SGLD cannot start the chain at {own}: the {where} is not finite there. "
            "pm.sample starts every chain at the model's initial point unless told "
            "otherwise; pass starting values inside the support, e.g. "
            f"pm.sample(step=..., initvals={{{names[0]!r}: ...}}) for {names}."
        )
    return (
        f"SGLD cannot move from {own}: the {where} is not finite there. Other step "
        f"methods have moved the variables that SGLD does not sample to values where the "
        f"density of {names} is zero or not finite. Check the model."
    )


def divergence_message(x_new, logp_new, eps, iteration) -> tuple[str, str]:
    """``(kind, message)`` of a discarded move to ``x_new``: ``"zero_density"`` when the log
    density is -inf at a state of moderate size, else ``"diverging"`` (each warned once per
    chain)."""
    kept = "the move was discarded: the draw repeats the last state and is marked `diverging`"
    finite_state = bool(np.all(np.isfinite(x_new)))
    # -inf at a state of moderate size: a zero-density region; at |state| > 1e100, the
    # log density overflowed because the chain is blowing up
    if finite_state and logp_new == -np.inf and np.max(np.abs(x_new)) <= 1e100:
        return "zero_density", (
            f"SGLD entered a region of zero density at iteration {iteration} "
            f"(step_size={eps:.4g}; log density -inf at the new state, whose largest "
            f"|value| is {np.max(np.abs(x_new)):.3g}); {kept}. SGLD follows only the "
            "gradient of the log density, which cannot see hard constraints (bounds that "
            "depend on parameters, a Potential that is -inf somewhere) or jumps of the "
            "density, so its draws near them are wrong: sample this model with pmt.MALA "
            "or pmt.ExchangeMC, whose accept/reject step evaluates the density. (If the "
            "log density overflowed, the chain is unstable instead: reduce `step_size`.)"
        )
    return "diverging", (
        f"SGLD diverged at iteration {iteration} (step_size={eps:.4g}): the move "
        f"led to a non-finite or huge state (largest |value| "
        f"{np.max(np.abs(x_new)):.3g}), log density ({logp_new:.4g}) or gradient; {kept}. "
        "Reduce `step_size` (and `final_step_size`): for a posterior of precision P, "
        "SGLD needs step_size * P well below 4."
    )
