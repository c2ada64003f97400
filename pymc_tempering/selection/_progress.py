"""A progress bar over models: done (computed or from the store) / running / failed, elapsed
time and the time left, drawn with ``rich`` (a PyMC dependency)."""

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["ModelProgress"]


class ModelProgress:
    """Counts of a model-selection run, shown as a bar when ``enabled``.

    ``running`` is what the executor says is running where it says so (``Future.running()``:
    ``ProcessPoolExecutor``), else the models in flight up to the executor's worker count
    (Dask's executor reports no running state).
    """

    def __init__(self, total: int, enabled: bool = True):
        self.total = total
        self.counts = {"stored": 0, "done": 0, "failed": 0, "running": 0}
        self._progress = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]models"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TextColumn("elapsed"),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
            )
            self._task = self._progress.add_task("models", total=total, counts=self._text())

    def _text(self) -> str:
        c = self.counts
        return (
            f"done {c['done']} (stored before {c['stored']}) | running {c['running']} "
            f"| failed {c['failed']}"
        )

    def __enter__(self):
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False

    def finished(self, failed: bool = False, stored: bool = False, running: int | None = None):
        """One model more has finished (``stored``: it was found in the store)."""
        self.counts["failed" if failed else "done"] += 1
        self.counts["stored"] += int(stored)
        self.set_running(running)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, counts=self._text())

    def set_running(self, running: int | None):
        if running is not None:
            self.counts["running"] = running
            if self._progress is not None:
                self._progress.update(self._task, counts=self._text())
