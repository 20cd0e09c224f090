"""vLLM dialect: the ``LEVEL MM-DD HH:MM:SS [file.py:N] `` header (and V0's form without ``[``),
uvicorn's ``INFO:     `` lines, records glued into each other, and the message grammars."""

from __future__ import annotations

import re

from logscope.parsers.pipeline import Dialect, Header, cut_at
from logscope.parsers.vllm.grammars import GRAMMARS

_HEADER = re.compile(
    r"(?:\[[^\]\n]{1,40}\] )?"  # VLLM_LOGGING_PREFIX, e.g. "[Stage-0] "
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mon>\d\d)-(?P<day>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"
    r"(?:[.,]\d+)? \[?(?P<src>[^\s\]\[:]+:\d+)\] ?"
)
_UVICORN = re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
# a second record starting inside a line (a paste that lost its newlines, a tqdm bar without one)
_GLUED = re.compile(
    r"(?:\(?[A-Za-z_][\w]*(?: [\w=.-]+)*? pid=\d+(?:, ip=[\d.]+)?\) )?(?:\[[^\]\n]{1,40}\] )?"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[^\s\]\[:]+:\d+\]"
)
_LEVEL_WORDS = ("INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL ")


class VllmDialect(Dialect):
    name = "vllm"

    def __init__(self) -> None:
        super().__init__(GRAMMARS)

    def header(self, text: str) -> tuple[Header, str] | None:
        m = _HEADER.match(text)
        if m is not None:
            sod = int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"])
            hdr = Header(
                level=m["level"],
                time=f"{m['mon']}-{m['day']} {m['h']}:{m['m']}:{m['s']}",
                source=m["src"],
                stamp=(None, int(m["mon"]), int(m["day"]), float(sod)),
            )
            return hdr, text[m.end():]
        if text[:1] in "DIWEC":
            m = _UVICORN.match(text)
            if m is not None:
                return Header(level=m["level"], time=None, source="uvicorn", stamp=None), text[m.end():]
        return None

    def split_glued(self, text: str) -> list[str]:
        if len(text) < 40 or not any(text.find(w, 1) > 0 for w in _LEVEL_WORDS):
            return [text]
        own = _HEADER.match(text)  # the line's own header (with a "[Stage-0] " prefix) is no glue
        return cut_at(text, (m.start() for m in _GLUED.finditer(text, own.end() if own else 1)))
