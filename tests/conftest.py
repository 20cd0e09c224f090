"""Shared test helpers: paths, golden files (``pytest --update-goldens`` rewrites them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite golden files from current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


def check_golden(path: Path, text: str, update: bool) -> None:
    """Compare ``text`` with the golden file at ``path`` (a missing golden fails unless updating)."""
    if update:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} has no golden; run pytest --update-goldens and review the diff"
    assert path.read_text(encoding="utf-8") == text, f"{path.name} differs from its golden"


def events_jsonl(events: list) -> str:  # type: ignore[type-arg]
    lines = []
    for e in events:
        d = e.model_dump(exclude={"raw", "file"}, exclude_none=True)
        lines.append(json.dumps(d, sort_keys=True, ensure_ascii=False))
    return "\n".join(lines) + "\n"
