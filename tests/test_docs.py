"""Generated documentation must match the code."""

from __future__ import annotations

from logscope.render.reference import event_reference
from tests.conftest import ROOT, check_golden


def test_event_reference_is_current(update_goldens: bool) -> None:
    check_golden(ROOT / "docs" / "events.md", event_reference(), update_goldens)


def test_readme_starts_with_two_commands() -> None:
    head = (ROOT / "README.md").read_text().splitlines()[:12]
    cmds = [ln for ln in head if "pip install" in ln]
    assert len(cmds) >= 2
    assert any("logscope analyze engine_logs/" in c for c in cmds)
    assert any("pytest" in c for c in cmds)
