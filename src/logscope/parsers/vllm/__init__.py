"""vLLM dialect: the ``LEVEL MM-DD HH:MM:SS [file.py:N] `` header (and V0's form without ``[``),
uvicorn's ``INFO:     `` lines, records glued into each other, and the message grammars."""

from __future__ import annotations

import re

from logscope.parsers.pipeline import Dialect, Header, cut_at
from logscope.parsers.vllm.grammars import GRAMMARS

_HEADER = re.compile(
    r"(?:\[[^\]\n]{1,40}\] )?"  # VLLM_LOGGING_PREFIX, e.g. "[Stage-0] "
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<mon>\d\d)-(?P<day>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    # (a source without ":N": a JSON record that named no line, see parsers.structured)
    r"(?P<frac>[.,]\d+)? \[?(?P<src>[^\s\]\[:]+(?::\d+)?)\] ?"
)
_UVICORN = re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
# a second record starting inside a line (a paste that lost its newlines, a tqdm bar without one)
_GLUED = re.compile(
    # (bounded: searched over a whole line, an unbounded name and words went back over the rest of the
    # line from every letter: a 1 MiB request-logging line took minutes)
    r"(?:\(?[A-Za-z_]\w{0,63}+(?: [\w=.-]{1,64}+){0,8}? pid=\d+(?:, ip=[\d.]+)?\) )?(?:\[[^\]\n]{1,40}\] )?"
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[^\s\]\[:]+:\d+\]"
)
# every _GLUED match holds ":MM:SS " (its clock has no fraction): one pass over a line rules glue out
_CLOCK = re.compile(r":\d\d:\d\d ")
# ... and its level and "MM-DD HH:MM:SS ": the second check, for lines that hold a clock of another
# form (an SGLang line's "[2026-10-18 18:01:45 TP0]", where _GLUED's search alone costs ~70 µs)
_LEVEL_CLOCK = re.compile(r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ")
# What may stand before a header without being a record of its own (``split_glued`` keeps it with the
# record, ``seek_header`` skips it): a markdown bullet, times, [bracketed] and (parenthesised) tags, a
# "name |" column, as a job runner, a log shipper or a stack of Ray process prefixes print them.
_WRAPPER = re.compile(
    r"(?:[-*>] |\S{0,12}\d\d:\d\d:\d\d\S{0,12} |\[[^\]\n]{0,80}\] ?|\([^()\n]{0,120}\) ?|[\w.-]+ +\| ?)+"
)
_WRAPPER_MAX = 300

_Stamp = tuple[int | None, int | None, int | None, float]
# The stamp of each printed "MM-DD HH:MM:SS" (a pure function of it): consecutive lines mostly share
# their second. Cleared when full: a cache, never a record of the log.
_STAMPS: dict[str, _Stamp] = {}
_CACHE_SIZE = 4096
# The Header of each header text (``_HEADER``'s whole match): a log repeats a few sources within a
# second, so a header text recurs (35 lines a text on a request-heavy log). The Header is a pure
# function of the matched text: each group's bounds within it are forced (the level is one of fixed
# words, the stamp has fixed widths, the source name holds no ``:``, no space and no bracket, so its
# first ``:`` and the ``]`` after the digits end it; a leading ``[`` is the prefix's, as no level
# starts with one). Headers are shared, never changed (see ``Header``). Cleared when full.
_HEADERS: dict[str, Header] = {}


def _is_wrapper(before: str) -> bool:
    """Is ``before`` (the text before a header inside a line) only a wrapper's tags (``_WRAPPER``)?"""
    return len(before) <= _WRAPPER_MAX and _WRAPPER.fullmatch(before) is not None


class VllmDialect(Dialect):
    name = "vllm"

    def __init__(self) -> None:
        super().__init__(GRAMMARS)
        self._last_match: tuple[str, re.Match[str] | None] = ("", None)

    def _own_header(self, text: str) -> re.Match[str] | None:
        """``_HEADER.match(text)``, kept for the last text: ``split_glued`` asks about a line, then
        ``header`` asks again about the same string (the line's only piece, almost always)."""
        last_text, m = self._last_match
        if last_text is not text:
            m = _HEADER.match(text)
            self._last_match = (text, m)
        return m

    def header(self, text: str) -> tuple[Header, str] | None:
        m = self._own_header(text)
        if m is not None:
            end = m.end()
            head = text[:end]
            hdr = _HEADERS.get(head)
            if hdr is None:
                # "MM-DD HH:MM:SS", as printed, with the fraction a logging config may add
                # ("%(asctime)s.%(msecs)03d"): a window's ends then hold to the millisecond
                time = text[m.start("mon") : m.end("frac") if m["frac"] else m.end("s")]
                stamp = _STAMPS.get(time)
                if stamp is None:
                    if len(_STAMPS) >= _CACHE_SIZE:
                        _STAMPS.clear()
                    mon, day, h, mi, s, frac = m.group("mon", "day", "h", "m", "s", "frac")
                    stamp = _STAMPS[time] = (
                        None,
                        int(mon),
                        int(day),
                        int(h) * 3600 + int(mi) * 60 + int(s) + (float("0." + frac[1:]) if frac else 0.0),
                    )
                if len(_HEADERS) >= _CACHE_SIZE:
                    _HEADERS.clear()
                level = m["level"]
                hdr = _HEADERS[head] = Header("WARNING" if level == "WARN" else level, time, m["src"], stamp)
            return hdr, text[end:]
        if text[:1] in "DIWEC":
            m = _UVICORN.match(text)
            if m is not None:
                return Header(level=m["level"], time=None, source="uvicorn", stamp=None), text[m.end() :]
        return None

    def seek_header(self, text: str) -> int:
        # anchored on the level word and the clock that every header holds; only a wrapper may
        # stand before it (else the line is some other text that quotes a header)
        if len(text) < 24 or _CLOCK.search(text, 0, _WRAPPER_MAX + 30) is None:
            return -1
        m = _LEVEL_CLOCK.search(text, 1, _WRAPPER_MAX + 30)
        if m is None or not _is_wrapper(text[: m.start()]) or _HEADER.match(text, m.start()) is None:
            return -1
        return m.start()

    def split_glued(self, text: str) -> list[str]:
        if len(text) < 40:
            return [text]
        own = self._own_header(text)  # the line's own header (with a "[Stage-0] " prefix) is no glue
        start = own.end() if own else 1
        if _CLOCK.search(text, start) is None or _LEVEL_CLOCK.search(text, start) is None:
            return [text]
        starts = [m.start() for m in _GLUED.finditer(text, start)]
        if own is None and starts and _is_wrapper(text[: starts[0]]):
            del starts[0]  # a wrapper before the first header is no record of its own: no cut there
        return cut_at(text, starts)
