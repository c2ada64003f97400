"""Columns of PyMC's progress bar for our step methods."""

from rich.progress import TextColumn
from rich.table import Column

__all__ = ["progress_columns"]


def progress_columns(fields, n_chains: int):
    """PyMC's ``(columns, stats)`` pair for a step method's ``_progressbar_config``.

    ``fields`` holds one ``(stat name, column header, format spec, initial value)`` per column;
    the step method's update function returns the current values under the same names.
    """
    columns = [
        TextColumn(f"{{task.fields[{name}]{spec}}}", table_column=Column(header, ratio=1))
        for name, header, spec, _ in fields
    ]
    return columns, {name: [initial] * n_chains for name, _, _, initial in fields}
