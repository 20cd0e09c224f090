"""The sparse reader gives exactly the careful parse's events, the records kept for time included.

Without unparsed records, the parser still keeps two of them as ``unparsed`` events: the file's first
timestamped record and the last timestamped record before an event that has no time of its own (a
Python warning, a uvicorn line). Those depend on lines that hold no anchor, which the sparse reader
skips; ``tests/parsers/test_sparse.py`` leaves them out of its comparison, these tests do not. They
read sparsely from the first line on (``SPARSE_HEAD`` 0), the hardest case: with and without the
literals a report keeps (``load_for_report``), in blocks so small that a look back for the record
crosses blocks, and in ranges (``events --jobs``). The careful parse is ``iter_file_events`` with
``sparse=False``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from logscope.api import iter_file_events
from logscope.digest import text_anchors
from logscope.parsers.framing import WALK_LINES, ReadStats
from tests.conftest import FIXTURES

CORPUS = Path("/work/shared/corpus")  # real engine logs, where this machine has them


def _logs() -> list[Path]:
    """Every fixture log, then the corpus logs; each content once (the corpus logs are fixtures too,
    today: a new one is checked as soon as it is there)."""
    seen: set[str] = set()
    out: list[Path] = []
    corpus = sorted(p for sub in ("generated", "variants") for p in (CORPUS / sub).rglob("*.log"))
    for p in sorted(FIXTURES.rglob("*.log")) + corpus:
        digest = hashlib.sha1(p.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            out.append(p)
    return out


LOGS = _logs()


def _name(path: Path) -> str:
    return str(path.relative_to(FIXTURES if path.is_relative_to(FIXTURES) else CORPUS.parent))


def _events(path: Path, sparse: bool, literals: tuple[str, ...]) -> tuple[list[dict], ReadStats]:  # type: ignore[type-arg]
    stats = ReadStats()
    _eng, evs = iter_file_events(
        str(path), "auto", stats=stats, keep_unparsed=False, keep_literals=literals, sparse=sparse
    )
    return [e.model_dump() for e in evs], stats


@pytest.mark.parametrize("literals", [(), text_anchors()], ids=["plain", "report"])
@pytest.mark.parametrize("path", LOGS, ids=_name)
def test_sparse_keeps_the_careful_records(
    path: Path, literals: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 0)  # skip from the first line on
    careful, s1 = _events(path, False, literals)
    sparse, s2 = _events(path, True, literals)
    # skipped lines are counted, not read: as text unless empty (these logs hold no line of blanks or junk)
    assert (s2.lines, s2.bytes, s2.text_lines, s2.junk_lines) == (
        s1.lines,
        s1.bytes,
        s1.text_lines,
        s1.junk_lines,
    )
    if "formats" in path.parts:
        # excerpts of many logs of different dates: the year roll-over guess depends on the stamps
        # seen in between, which the sparse reader skips (as in test_sparse.py)
        for e in careful + sparse:
            e.pop("t_s")
    assert [e for e in sparse if e["kind"] == "unparsed"] == [e for e in careful if e["kind"] == "unparsed"]
    assert sparse == careful


@pytest.mark.parametrize("path", LOGS, ids=_name)
def test_sparse_keeps_them_across_blocks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 1 KiB: a walk back for the timestamped line goes on into the lines skipped at the end
    of the blocks before (and a block read whole after skipped lines walks back too)."""
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 0)
    monkeypatch.setattr("logscope.parsers.framing.BLOCK", 1024)
    careful, _s1 = _events(path, False, ())
    sparse, _s2 = _events(path, True, ())
    if "formats" in path.parts:
        for e in careful + sparse:
            e.pop("t_s")
    assert sparse == careful


def _vllm_log(tmp_path: Path, untimed: int) -> Path:
    """A vLLM log where a Python warning (no time of its own) follows ``untimed`` prefix-less lines
    that hold no anchor, after the timestamped record the warning takes its time from."""
    lines = [
        f"INFO 11-30 12:05:{i // 10:02d} [core.py:{i}] step {i} of the engine's start" for i in range(100)
    ]
    lines.append("INFO 11-30 12:05:23 [launcher.py:195] Route: /v1/models, Methods: GET")
    lines += [f"    line {i} of a table printed without a prefix" for i in range(untimed)]
    lines.append("/x/y.py:12: UserWarning: Using a slow tokenizer.")
    lines.append("INFO 11-30 12:05:24 [core.py:7] the end")
    path = tmp_path / "warn.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("untimed", [0, 1, 40, WALK_LINES - 1, WALK_LINES])
def test_walk_back_bound(tmp_path: Path, untimed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to ``WALK_LINES`` lines back (here over many 1 KiB blocks) the record the warning takes its
    time from is found; past the bound the warning is handed over alone, as documented."""
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 0)
    monkeypatch.setattr("logscope.parsers.framing.BLOCK", 1024)
    path = _vllm_log(tmp_path, untimed)
    careful, s1 = _events(path, False, ())
    sparse, s2 = _events(path, True, ())
    assert (s2.lines, s2.text_lines) == (s1.lines, s1.text_lines)
    held = [e["line"] for e in careful if e["kind"] == "unparsed"]
    assert held == [1, 101]  # the file's first timestamped record, the one before the warning
    if untimed < WALK_LINES:
        assert sparse == careful
    else:
        # the last timestamped record the parser was given instead: here none but the file's first
        # (the head is line 1, read whole; the rest of its block is skipped since the head is cut
        # inside a block: ``framing._head_cut``)
        kept = [e["line"] for e in sparse if e["kind"] == "unparsed"]
        assert kept == [1]
        assert [e for e in sparse if e["kind"] != "unparsed"] == [
            e for e in careful if e["kind"] != "unparsed"
        ]


@pytest.mark.parametrize("path", [p for p in LOGS if p.stat().st_size > 4000], ids=_name)
def test_ranges_read_sparsely_keep_them(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One file in ranges (``events --jobs``), each range after the first read sparsely from its first
    line, in 1 KiB blocks: the careful parse's events and counts all the same."""
    from logscope.api import _split_file_events
    from logscope.parsers import chunks

    monkeypatch.setattr("logscope.api.SPARSE_HEAD", 0)
    monkeypatch.setattr("logscope.parsers.framing.BLOCK", 1024)
    monkeypatch.setattr(chunks, "CHUNK", max(1000, path.stat().st_size // 5))
    careful, s1 = _events(path, False, ())
    s2 = ReadStats()
    ranged = [e.model_dump() for e in _split_file_events(str(path), "auto", 1, False, s2)[1]]
    assert (s2.lines, s2.bytes, s2.text_lines, s2.junk_lines) == (
        s1.lines,
        s1.bytes,
        s1.text_lines,
        s1.junk_lines,
    )
    if "formats" in path.parts:
        for e in careful + ranged:
            e.pop("t_s")
    assert ranged == careful
