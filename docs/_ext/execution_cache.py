"""jupyter-cache's database, created before Sphinx's parallel read
(docs/decisions/155-ci-budget.md). Used by ``docs/conf.py``."""

__all__ = ["create_execution_cache"]


def create_execution_cache(path) -> None:
    """Create the jupyter-cache database at ``path`` (a folder) where it does not exist yet.

    MyST-NB opens the cache in each reader process of a parallel read. From an empty folder, as
    in a clean clone, two readers could both find no database and both create its tables; the
    second failed the build with "table nbproject already exists". Created once in the main
    process, before the read forks, every reader finds it."""
    from jupyter_cache import get_cache

    get_cache(path).db  # noqa: B018 (the property creates the database and its tables)
