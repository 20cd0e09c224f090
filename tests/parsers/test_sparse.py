"""The sparse reader (anchor scan over blocks, skip the rest) gives the events of the careful path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from logscope.api import iter_file_events
from logscope.parsers import dialect
from logscope.parsers.framing import ReadStats
from logscope.parsers.scan import HyperscanScanner, PyScanner
from tests.conftest import FIXTURES

LOGS = sorted(FIXTURES.rglob("*.log"))


def _events(path: Path, sparse: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], ReadStats]:  # type: ignore[type-arg]
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 0)  # skip from the first line on: the hardest case
    stats = ReadStats()
    _eng, evs = iter_file_events(str(path), "auto", stats=stats, keep_unparsed=not sparse)
    out = [e.model_dump() for e in evs if e.kind != "unparsed" or e.candidate]
    return out, stats


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_sparse_equals_careful(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    careful, s1 = _events(path, False, monkeypatch)
    sparse, s2 = _events(path, True, monkeypatch)
    assert s1.lines == s2.lines
    if "formats" in path.parts:
        # excerpts quoted from many logs of different dates: the year roll-over guess depends on
        # the stamps seen in between, which the sparse reader skips; everything else must agree
        for e in careful + sparse:
            e.pop("t_s")
    assert sparse == careful


SAMPLE = (FIXTURES / "vllm/corpus/gen-a1_plain_c10.log").read_bytes() + (FIXTURES / "sglang/corpus").joinpath(
    "gen-a1_plain_c10.log").read_bytes()


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="hyperscan not installed")
def test_scanners_agree_on_lines() -> None:
    lits = [a.encode() for a in dialect("vllm").scan_literals()] + [b"\r", b"\x1b"]

    def lines(hits: list[int]) -> set[int]:
        return {SAMPLE.count(b"\n", 0, h) for h in hits}

    assert lines(PyScanner(lits).scan(SAMPLE)) == lines(HyperscanScanner(lits).scan(SAMPLE))


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="hyperscan not installed")
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_anchor_lookup_same_with_and_without_hyperscan(engine: str) -> None:
    from logscope.parsers.framing import read_lines

    fast, plain = dialect(engine), dialect(engine)
    plain._matcher = type("NoHyperscan", (), {"find": staticmethod(lambda _t: None)})()  # the fallback loop
    for path in LOGS[:80]:
        for ln in read_lines(str(path)):
            assert fast.candidates(ln.text) == plain.candidates(ln.text), ln.text
