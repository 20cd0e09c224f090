"""The sparse reader (anchor scan over blocks, skip the rest) gives the events of the careful path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from logscope.api import iter_file_events
from logscope.parsers import dialect
from logscope.parsers.framing import ReadStats
from logscope.parsers.scan import SPECIAL, HyperscanScanner, PolarsScanner, PyScanner
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
    "gen-a1_plain_c10.log"
).read_bytes()


# every special byte, a literal at a line's start and end, two literals in one line, a literal cut by a
# line break, invalid UTF-8 (polars takes text: that block goes to bytes.find), U+0085 and U+2028
ODD = (
    b"Added request x\nno anchor here\nx Added request \nAdded req\nuest\nAvg prompt throughput Added request \n"
    b"a\rb\n\x1b[0m\n\x0bv\x0cf\n\x1c\x1d\x1e\nnel\xc2\x85\nls\xe2\x80\xa8\nps\xe2\x80\xa9\n\n\nlast"
)


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="hyperscan not installed")
@pytest.mark.parametrize(
    "block", [SAMPLE, ODD, ODD + b"\xff\xfe Added request \n"], ids=["corpus", "odd", "not-utf8"]
)
def test_scanners_agree_on_lines(block: bytes) -> None:
    lits = [a.encode() for a in dialect("vllm").scan_literals()] + list(SPECIAL)

    def lines(hits: list[int]) -> set[int]:
        return {block.count(b"\n", 0, h) for h in hits}

    want = lines(HyperscanScanner(lits).scan(block))
    assert len(want) > 3
    assert lines(PyScanner(lits).scan(block)) == want
    assert lines(PolarsScanner(lits).scan(block)) == want


@pytest.mark.parametrize("prefer", ["polars", "python"])
def test_sparse_equals_careful_with_the_fallback_scanners(
    prefer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sparse read with each fallback scanner (an install without Hyperscan) gives the careful events."""
    from logscope.parsers import scan

    build = scan.scanner
    monkeypatch.setattr(scan, "cached_scanner", lambda lits: build(lits, prefer=prefer))
    monkeypatch.setattr("logscope.api.cached_scanner", lambda lits: build(lits, prefer=prefer))
    for path in [p for p in LOGS if "corpus" in p.parts][:12]:
        careful, s1 = _events(path, False, monkeypatch)
        sparse, s2 = _events(path, True, monkeypatch)
        assert (s1.lines, sparse) == (s2.lines, careful), path


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="hyperscan not installed")
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_anchor_lookup_same_with_and_without_hyperscan(engine: str) -> None:
    from logscope.parsers.framing import read_lines

    fast, plain = dialect(engine), dialect(engine)
    plain._matcher = type("NoHyperscan", (), {"find": staticmethod(lambda _t: None)})()  # the fallback loop
    for path in LOGS[:80]:
        for ln in read_lines(str(path)):
            assert fast.candidates(ln.text) == plain.candidates(ln.text), ln.text
