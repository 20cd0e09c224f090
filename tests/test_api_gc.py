"""``load`` and ``Run.analyze`` raise the collector's first threshold while they run (a run keeps
every event it parses: at CPython's default the collector walked the growing heap ~1,400 times on a
100k-line log) and put back what was set before, whatever happens."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import logscope
from logscope import api
from logscope.collector import THRESHOLD, fewer_collections
from tests.conftest import FIXTURES


@pytest.fixture
def threshold() -> Iterator[None]:
    old = gc.get_threshold()
    yield
    gc.set_threshold(*old)


def test_fewer_collections_raises_then_restores(threshold: None) -> None:
    gc.set_threshold(700, 10, 10)
    with fewer_collections(50_000):
        assert gc.get_threshold() == (50_000, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections(50_000):
        raise RuntimeError
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("set_before", [(0, 10, 10), (200_000, 5, 5)])
def test_fewer_collections_leaves_a_higher_threshold_or_collection_off(
    threshold: None, set_before: tuple[int, int, int]
) -> None:
    gc.set_threshold(*set_before)
    with fewer_collections(50_000):
        assert gc.get_threshold() == set_before
    assert gc.get_threshold() == set_before


def test_load_and_analyze_put_the_threshold_back(threshold: None, monkeypatch: pytest.MonkeyPatch) -> None:
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, int, int]] = []
    real = api._load

    def spy(*args: object) -> logscope.Run:
        seen.append(gc.get_threshold())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "_load", spy)
    path = next(p for p in sorted(FIXTURES.rglob("*.log")) if "sglang" in str(p))
    run = logscope.load(str(path))
    run.analyze()
    assert seen == [(THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)
