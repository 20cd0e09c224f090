"""Every literal a rule greps for is declared (``Rule.anchors``), so the sparse reader keeps its lines."""

from __future__ import annotations

from typing import Any

import pytest

import logscope
from logscope.digest import text_anchors
from logscope.digest.context import Context
from tests.conftest import FIXTURES


def test_rules_grep_only_declared_anchors(monkeypatch: pytest.MonkeyPatch) -> None:
    used: set[str] = set()
    real = Context.grep

    def spy(self: Context, pattern: Any, anchors: Any, *args: Any, **kwargs: Any) -> Any:
        anchors = tuple(anchors)
        used.update(anchors)
        return real(self, pattern, anchors, *args, **kwargs)

    monkeypatch.setattr(Context, "grep", spy)
    for path in sorted([*FIXTURES.glob("case/*.log"), *FIXTURES.glob("digest/*/*.log")]):
        logscope.load(path).analyze()
    assert used, "no rule grepped: the spy is not wired"
    assert used <= set(text_anchors()), sorted(used - set(text_anchors()))
