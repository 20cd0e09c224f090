"""Finding the lines that can matter, over whole blocks of bytes, before any per-line Python work.

Why: Python spends ~1 µs on each line it touches; a 10 GB request-heavy log has 100 M lines and a
few thousand that any grammar wants. Every grammar declares anchors (literals every line of its kind
contains); a scanner finds all anchor occurrences in a block in one pass, and only the lines that
hold one (plus the lines a record in progress asks for) are decoded and parsed. The others are only
counted, with ``bytes.count``.

Three scanners find the same lines (a test checks that they agree): Hyperscan (a default dependency
wherever it has wheels; all literals in one pass, about 0.7 GB/s of CPU here on a vLLM log's 89
literals); where it is missing, polars' Aho-Corasick (``str.find_many``: one pass over the block,
about 0.19 GB/s; polars is a dependency anyway); and ``bytes.find`` per literal (one pass per
literal, about 0.035 GB/s with 89 of them), for a block that is not valid UTF-8 (polars takes text)
and as the last resort. Measured on the same 100 MB of a request-heavy vLLM log, one process, CPU
time: ``ahocorasick_rs`` 0.32 GB/s (but wheels only where Hyperscan has them too), one ``re``
alternation 0.009 GB/s, ``pyahocorasick`` (text only) 0.04 GB/s.

A scanner returns offsets, each inside a line that holds a literal, at least one for every such line
(literals hold no ``\n``, so a match never spans two lines): the reader only asks which lines hold a
hit, never which literal or how many.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

# Bytes that change how a line is numbered or cleaned: a lone \r starts a line (str.splitlines), ESC
# starts colour codes, the other separators are line breaks for str.splitlines too. A line holding
# one is always decoded, so numbering is the same as on the careful path.
SPECIAL = (
    b"\r",
    b"\x1b",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x1d",
    b"\x1e",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xe2\x80\xa9",
)


def _shortest(literals: Iterable[bytes]) -> list[bytes]:
    """The literals without those that contain a shorter one (which add no line)."""
    kept: list[bytes] = []
    for lit in sorted(set(literals), key=len):
        if not any(k in lit for k in kept):
            kept.append(lit)
    return kept


class PyScanner:
    """``bytes.find`` per literal. Returns sorted offsets (one per hit, duplicates removed)."""

    name = "python"

    def __init__(self, literals: Iterable[bytes]) -> None:
        self.literals = _shortest(literals)

    empty = False  # after ``scan``: does the block hold "\\n\\n" (an empty line)?

    def scan(self, block: bytes) -> list[int]:
        self.empty = b"\n\n" in block
        hits: list[int] = []
        for lit in self.literals:
            find = block.find
            i = find(lit)
            while i >= 0:
                hits.append(i)
                # one hit per line is enough: jump to the end of this line
                j = block.find(b"\n", i)
                if j < 0:
                    break
                i = find(lit, j)
        hits.sort()
        return hits


class HyperscanScanner:
    """All literals in one Hyperscan pass."""

    name = "hyperscan"

    def __init__(self, literals: Iterable[bytes]) -> None:
        import hyperscan

        lits = sorted(set(literals))
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        exprs = [b"".join(b"\\x%02x" % c for c in lit) for lit in lits]  # every byte as \xHH
        # and "\n\n" (an empty line: ``empty``) in the same pass, reported once a block, not as a hit
        # (a search for it apart cost ~1 ms a MiB of log: a two-byte search starting at a byte every line has)
        self._empty_id = len(exprs)
        self._db.compile(
            expressions=[*exprs, b"\\x0a\\x0a"],
            ids=list(range(len(exprs) + 1)),
            elements=len(exprs) + 1,
            flags=[0] * len(exprs) + [hyperscan.HS_FLAG_SINGLEMATCH],
        )
        self._hits: list[int] = []
        self.empty = False  # after ``scan``: does the block hold "\\n\\n" (an empty line)?

    def _on(self, id_: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
        if id_ == self._empty_id:
            self.empty = True
        else:
            self._hits.append(to - 1)

    def scan(self, block: bytes) -> list[int]:
        self._hits = []
        self.empty = False
        self._db.scan(block, match_event_handler=self._on)
        hits = self._hits
        hits.sort()
        return hits


class PolarsScanner:
    """All literals in one pass of polars' Aho-Corasick (``str.find_many``) over the block as text:
    the fallback where Hyperscan has no wheel. A block that is not valid UTF-8 goes to ``bytes.find``
    (``PyScanner``): polars takes text only, and decoding with replacement would move the offsets."""

    name = "polars"

    def __init__(self, literals: Iterable[bytes]) -> None:
        import polars as pl

        kept = _shortest(literals)
        self._series = pl.Series
        self._patterns = [lit.decode("utf-8") for lit in kept]  # (every literal is UTF-8 text)
        self._fallback = PyScanner(kept)
        self._series(["x"]).str.find_many(self._patterns)  # fails here, not mid-read, on a polars without it

    empty = False  # after ``scan``: does the block hold "\\n\\n" (an empty line)?

    def scan(self, block: bytes) -> list[int]:
        self.empty = b"\n\n" in block
        try:
            text = str(block, "utf-8")
        except UnicodeDecodeError:
            return self._fallback.scan(block)
        # byte offsets of the match starts, non-overlapping, in order
        hits: list[int] = self._series([text]).str.find_many(self._patterns).to_list()[0]
        return hits


Scanner = PyScanner | PolarsScanner | HyperscanScanner
_ORDER: dict[str, tuple[type[Scanner], ...]] = {
    "auto": (HyperscanScanner, PolarsScanner, PyScanner),
    "hyperscan": (HyperscanScanner,),
    "polars": (PolarsScanner,),
    "python": (PyScanner,),
}


def scanner(literals: Iterable[str | bytes], prefer: str = "auto") -> Scanner:
    """The fastest scanner available for ``literals`` (plus the special bytes); ``prefer`` names one
    (``hyperscan``, ``polars``, ``python``), which then must build."""
    lits = [x.encode("utf-8") if isinstance(x, str) else x for x in literals]
    lits += list(SPECIAL)
    *first, last = _ORDER[prefer]
    for kind in first:
        try:
            return kind(lits)
        except Exception:  # noqa: BLE001, S112 - no wheel for this platform, a failing build, an older polars
            continue
    return last(lits)


@functools.lru_cache(maxsize=8)
def cached_scanner(literals: tuple[str, ...]) -> Scanner:
    """``scanner(literals)``, built once per set of literals (a Hyperscan database takes a while)."""
    return scanner(literals)
