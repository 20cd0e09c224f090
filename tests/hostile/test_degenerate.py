"""Degenerate input: stretches of blank lines, NUL runs and undecodable bytes go at buffer speed.

A 2 MB ``.gz`` can hold 512 MiB of empty lines; read line by line that is half a billion trips
through the parser. The sparse reader counts such stretches in bulk (``framing._Empty``, the head cut
inside its block, empty ``\\r\\n`` lines no scanner hit). These tests pin what must not change: the
events, line numbers and counts are those of the careful read (every line decoded and parsed), with
the stretches between real log lines; and the lines handed to the parser stay few, whatever the
number of blank ones (the work per line is what makes a degenerate file slow)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from logscope.api import iter_file_events, nothing_read
from logscope.parsers import framing
from logscope.parsers.framing import ReadStats
from tests.conftest import FIXTURES

REAL = (FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log").read_bytes().splitlines(keepends=True)
SGLANG = (FIXTURES / "sglang/corpus/gen-a1_plain_c10.log").read_bytes().splitlines(keepends=True)

# stretches a hostile or unlucky file holds between real lines, each shorter than the sparse reader's
# look back (``framing.WALK_LINES``: past it, an untimed event may take its time from an older record)
STRETCHES = {
    "empty": b"\n" * 250,
    "empty-crlf": b"\r\n" * 250,
    "mixed-empty": b"\n\r\n\n\n\r\n\r\n" * 40,
    "nul-run": b"\x00" * 70000 + b"\n",
    "nul-lines": (b"\x00" * 100 + b"\n") * 200,
    "undecodable": (b"\xff\xfe" * 40 + b"\n") * 200,
}


def _mixed(real: list[bytes], stretch: bytes, every: int = 37) -> bytes:
    out = bytearray()
    for i, line in enumerate(real):
        out += line
        if i % every == every - 1:
            out += stretch
    return bytes(out)


def _read(path: Path, sparse: bool) -> tuple[list[dict], ReadStats]:  # type: ignore[type-arg]
    stats = ReadStats()
    _eng, evs = iter_file_events(str(path), "auto", stats=stats, keep_unparsed=False, sparse=sparse)
    return [e.model_dump() for e in evs], stats


@pytest.mark.parametrize("head", [3000, 40, 0])
@pytest.mark.parametrize("name", sorted(STRETCHES))
@pytest.mark.parametrize("real", [REAL, SGLANG], ids=["vllm", "sglang"])
def test_sparse_equals_careful_around_degenerate_stretches(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    head: int,
    real: list[bytes],
) -> None:
    monkeypatch.setattr("logscope.api.SPARSE_HEAD", head)
    monkeypatch.setattr(framing, "BLOCK", 16384)  # many blocks, the head ending inside one
    path = tmp_path / "mixed.log.gz"
    path.write_bytes(gzip.compress(_mixed(real, STRETCHES[name])))
    careful, s1 = _read(path, False)
    sparse, s2 = _read(path, True)
    assert s2.lines == s1.lines and s2.bytes == s1.bytes
    if name.startswith(("empty", "mixed")):
        # blank stretches: the same text count as reading every line (junk is judged only when read)
        assert (s2.text_lines, s2.junk_lines) == (s1.text_lines, s1.junk_lines)

    # the records kept only for their time (unparsed, no candidate) are left out, as in
    # tests/parsers/test_sparse.py: next to blank stretches the sparse reader may keep another one of
    # the same second (as it did before these stretches were counted in bulk)
    def kept(evs: list[dict]) -> list[dict]:  # type: ignore[type-arg]
        return [e for e in evs if e["kind"] != "unparsed" or e["candidate"]]

    assert kept(sparse) == kept(careful)
    assert len(kept(careful)) > 10


class _Counting:
    """Counts the lines ``read_lines`` hands to the parser."""

    def __init__(self) -> None:
        self.n = 0
        self._read = framing.read_lines

    def __call__(self, *a, **k):  # type: ignore[no-untyped-def]
        for line in self._read(*a, **k):
            self.n += 1
            yield line


@pytest.mark.parametrize(
    "name", ["empty", "empty-crlf", "mixed-empty", "nul-run", "nul-lines", "undecodable"]
)
def test_degenerate_file_hands_few_lines_to_the_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """8 MiB of one stretch after a real head: the parser sees the head's lines and a handful more,
    not one per blank line; every line is still counted."""
    stretch = STRETCHES[name]
    body = stretch * ((8 << 20) // len(stretch))
    path = tmp_path / "junk.log.gz"
    path.write_bytes(gzip.compress(b"".join(REAL[:50]) + body, compresslevel=1))
    counting = _Counting()
    monkeypatch.setattr("logscope.api.read_lines", counting)
    evs, stats = _read(path, True)
    assert stats.lines == 50 + len(body.splitlines())
    # the head twice (engine detection, then the sparse read takes it whole) and the few lines asked for
    # (a first block holding NUL or invalid bytes is read whole, so that its junk is judged as it
    # always was: ``framing._head_cut``; one block, whatever the file's size)
    whole = 0 if name.startswith(("empty", "mixed")) else body[: framing.BLOCK].count(b"\n")
    assert counting.n <= 2 * 3000 + 100 + whole
    assert evs and evs[-1]["line"] <= 50
    if name.startswith(("empty", "mixed")):
        assert stats.text_lines == sum(1 for ln in REAL[:50] if ln.strip())


def test_file_of_only_empty_lines_is_nothing_read(tmp_path: Path) -> None:
    for unit in (b"\n", b"\r\n"):
        path = tmp_path / "blank.log.gz"
        path.write_bytes(gzip.compress(unit * (4 << 20), compresslevel=1))
        evs, stats = _read(path, True)
        assert evs == [] and stats.lines == 4 << 20 and stats.text_lines == 0
        assert nothing_read(stats, 0)
