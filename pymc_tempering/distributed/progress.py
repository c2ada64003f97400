"""The progress bar of a distributed run: PyMC's, with ExchangeMC's columns.

The bar is PyMC's own (:class:`pymc.progress_bar.MCMCProgressBarManager`, as ``pm.sample``
draws it: rich in a terminal, marimo in a notebook), fed ExchangeMC's columns (swap rate,
acceptance at ``beta = 1``, round trips; :func:`pymc_tempering.engine.stats.
progressbar_config`) once per sweep by the coordinator.
"""

from pymc.progress_bar import MCMCProgressBarManager, default_progress_theme

from pymc_tempering.step_methods._progress import progress_columns

__all__ = ["SweepProgress"]


class _Columns:
    """What MCMCProgressBarManager reads from a step method: ExchangeMC's columns."""

    @staticmethod
    def _progressbar_config(n_chains=1):
        fields = [
            ("swap_rate", "Swap rate", ":0.2f", 0.0),
            ("accept", "Accept", ":0.2f", 0.0),
            ("round_trips", "Round trips", "", 0),
        ]
        return progress_columns(fields, n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        def update_stats(step_stats):
            return {k: step_stats[k] for k in ("swap_rate", "accept", "round_trips")}

        return (update_stats,)


class SweepProgress:
    """A context manager; :meth:`update` after each sweep. ``tune`` sweeps show as tuning
    (a continued run shows the sweeps it runs again there too), then ``draws``."""

    def __init__(self, progressbar, tune: int, draws: int):
        self.tune, self.total = tune, tune + draws
        self.manager = MCMCProgressBarManager(
            step_method=_Columns,
            chains=1,
            draws=draws,
            tune=tune,
            progressbar=progressbar,
            progressbar_theme=default_progress_theme,
        )
        self.count = 0

    def __enter__(self):
        self.manager.__enter__()
        return self

    def __exit__(self, *exc):
        return self.manager.__exit__(*exc)

    def update(self, stats: dict):
        """One more sweep done, with ExchangeMC's progress stats (``swap_rate``, ``accept``,
        ``round_trips``); after the last, the bar is closed as ``pm.sample`` closes it."""
        tuning = self.count < self.tune
        self.manager.update(chain_idx=0, is_last=False, draw=self.count, tuning=tuning,
                            stats=[stats])  # fmt: skip
        self.count += 1
        if self.count == self.total:
            self.manager.update(chain_idx=0, is_last=True, draw=self.count - 1, tuning=False,
                                stats=[stats])  # fmt: skip
