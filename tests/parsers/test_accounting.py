"""Every line is accounted for: the raw text of all events (unparsed included) rebuilds the input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logscope
from logscope.errors import UnreadableInput
from tests.conftest import FIXTURES

LOGS = sorted(FIXTURES.rglob("*.log"))


def _rebuild(run: logscope.Run) -> dict[int, str]:
    lines: dict[int, list[str]] = {}
    seen: set[tuple[int, str]] = set()
    for e in run.events:
        if (e.line, e.raw) in seen:  # one record can give several events
            continue
        seen.add((e.line, e.raw))
        for i, part in enumerate(e.raw.split("\n")):
            lines.setdefault(e.line + i, []).append(part)
    return {n: "".join(parts) for n, parts in lines.items()}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_raw_text_rebuilds_every_line(path: Path) -> None:
    run = logscope.load(path)
    got = _rebuild(run)
    want = path.read_text(encoding="utf-8", errors="replace").splitlines()
    assert len(got) == len(want) == run.stats.lines
    import re

    ansi = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
    for n, text in enumerate(want, 1):
        assert got[n] == ansi.sub("", text), n


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=3000) | st.text(max_size=2000).map(lambda s: s.encode("utf-8", "surrogatepass"))
)
def test_never_raises_on_any_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    p = tmp_path_factory.mktemp("h") / "x.log"
    p.write_bytes(data)
    try:
        run = logscope.load(p)
    except UnreadableInput:
        return
    assert sum(1 for _ in run.events) >= 1
