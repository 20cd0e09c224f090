"""Finding the lines that can matter, over whole blocks of bytes, before any per-line Python work.

Why: Python spends ~1 µs on each line it touches; a 10 GB request-heavy log has 100 M lines and a
few thousand that any grammar wants. Every grammar declares anchors (literals every line of its kind
contains); a scanner finds all anchor occurrences in a block in one pass, and only the lines that
hold one (plus the lines a record in progress asks for) are decoded and parsed. The others are only
counted, with ``bytes.count``.

Two scanners give the same offsets: Hyperscan (``pip install logscope[fast]``; all literals in one
pass at about 1 GB/s) and a pure-Python fallback (``bytes.find`` per literal, about 0.05-0.25 GB/s
depending on the number of anchors). A test checks that both agree.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

# Bytes that change how a line is numbered or cleaned: a lone \r starts a line (str.splitlines), ESC
# starts colour codes, the other separators are line breaks for str.splitlines too. A line holding
# one is always decoded, so numbering is the same as on the careful path.
SPECIAL = (b"\r", b"\x1b", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")


class PyScanner:
    """``bytes.find`` per literal. Returns sorted offsets (one per hit, duplicates removed)."""

    name = "python"

    def __init__(self, literals: Iterable[bytes]) -> None:
        lits = sorted(set(literals), key=len)
        # a literal that contains a shorter one adds no line: keep the shorter only
        kept: list[bytes] = []
        for lit in lits:
            if not any(k in lit for k in kept):
                kept.append(lit)
        self.literals = kept

    def scan(self, block: bytes) -> list[int]:
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
        self._db.compile(
            expressions=exprs,
            ids=list(range(len(exprs))),
            elements=len(exprs),
            flags=[0] * len(exprs),
        )
        self._hits: list[int] = []

    def _on(self, _id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
        self._hits.append(to - 1)

    def scan(self, block: bytes) -> list[int]:
        self._hits = []
        self._db.scan(block, match_event_handler=self._on)
        hits = self._hits
        hits.sort()
        return hits


def scanner(literals: Iterable[str | bytes], prefer: str = "auto") -> PyScanner | HyperscanScanner:
    """The fastest scanner available for ``literals`` (plus the special bytes)."""
    lits = [x.encode("utf-8") if isinstance(x, str) else x for x in literals]
    lits += list(SPECIAL)
    if prefer in ("auto", "hyperscan"):
        try:
            return HyperscanScanner(lits)
        except Exception:  # noqa: BLE001 - no wheel for this platform, or a failing build
            if prefer == "hyperscan":
                raise
    return PyScanner(lits)


@functools.lru_cache(maxsize=8)
def cached_scanner(literals: tuple[str, ...]) -> PyScanner | HyperscanScanner:
    """``scanner(literals)``, built once per set of literals (a Hyperscan database takes a while)."""
    return scanner(literals)
