"""The docs build's jupyter-cache database, made before the parallel read
(docs/_ext/execution_cache.py, decision 155): a reader then never creates its tables."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("jupyter_cache", reason="the docs extra (pip install '.[docs]')")
from jupyter_cache.cache import db  # noqa: E402

PATH = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "execution_cache.py"
_spec = importlib.util.spec_from_file_location("execution_cache", PATH)
execution_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execution_cache)


def _readers_must_not_create_tables(monkeypatch):
    def create_all(*args, **kwargs):
        raise AssertionError("a reader created the cache's tables: two readers can race")

    monkeypatch.setattr(db.OrmBase.metadata, "create_all", create_all)


def test_a_reader_finds_the_database_made_before_the_read(tmp_path, monkeypatch):
    cache = tmp_path / "_build" / ".jupyter_cache"  # not there yet, as in a clean clone
    execution_cache.create_execution_cache(cache)
    _readers_must_not_create_tables(monkeypatch)
    engine = db.create_db(cache)  # what each reader's get_cache(path).db does
    assert db.NbProjectRecord.records_all(engine) == []
    execution_cache.create_execution_cache(cache)  # a second build: the database is kept


def test_without_it_a_reader_creates_the_tables(tmp_path, monkeypatch):
    """The check above can fail: from an empty folder a reader creates the tables itself."""
    _readers_must_not_create_tables(monkeypatch)
    with pytest.raises(AssertionError, match="two readers can race"):
        db.create_db(tmp_path)
