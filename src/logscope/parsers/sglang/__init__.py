"""SGLang dialect: the ``[date time TAGS] `` header in every form SGLang printed from 0.3 to 0.5.x,
the custom ``date LEVEL PID [TAGS file.py:N] `` format, uvicorn and c10d lines, records glued onto
progress bars, prefix-less continuation lines, and the message grammars (``grammars.py``).

Header forms (``[`` may be followed by a space; a paste may lose the ``[`` before a date)::

    [2025-06-01 12:00:00] msg                      main process; single GPU from 0.4.7
    [2025-06-01 12:00:00.123 DP1 TP3 EP3] msg      SGLANG_LOG_MS (0.5.7+), rank tags in any order
    [12:00:00 TP0] msg                             2024 (<= 0.3.x): time only
    2025-10-18 15:00:18 INFO 5129 [ DP15 TP15 EP15 scheduler_metrics_mixin.py:131] msg
                                                   a custom logging config (SGLANG_LOGGING_CONFIG_PATH)
    [2025-06-01 12:00:00] INFO:     msg            uvicorn, with its level word
    [rank3]:[E1227 18:58:46.356042219 ProcessGroupNCCL.cpp:2648] msg    c10d (NCCL watchdog)

SGLang's own lines carry no level (INFO, WARNING and ERROR print alike), so ``level`` is None unless
the line names one; warnings and errors are recognised by their text (``grammars.WARNING``/``ERROR``).
"""

from __future__ import annotations

import re

from logscope.parsers.envelopes import Envelope, peel
from logscope.parsers.pipeline import Dialect, Header, cut_at
from logscope.parsers.sglang.grammars import GRAMMARS

__all__ = ["SglangDialect"]

_TAG = r"(?:DP|TP|EP|PP|ATTN_CP|MOE_DP)\d+|encode_server|encode_dp_worker\[\d+\]"
_LEVEL = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"

# "[" date? time ms? (" " TAG)* "] ": the "[" may be lost before a full date (a paste's first line)
_BRACKET = re.compile(
    r"[ \t]*(?:\[ ?|(?=\d{4}-\d\d-\d\d ))"
    r"(?:(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) )?(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<ms>\d{1,6}))?"
    rf"(?P<tags>(?: (?:{_TAG}))*)\] ?"
)
_CUSTOM = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<ms>\d{1,6}))? "
    rf"(?P<level>{_LEVEL}) (?P<pid>\d+) \[ ?(?P<tags>(?:(?:{_TAG}) )*)(?P<src>[^\s\[\]]+:\d+)\] ?"
)
_UVICORN = re.compile(rf"(?P<level>{_LEVEL}):\s+")
_UVICORN_HEADS = tuple(f"{w}:" for w in _LEVEL.split("|"))  # how every _UVICORN match starts
# the main process's newer form: "[2026-05-01 15:16:08] WARNING server_args.py:1248: msg"
_LEVEL_SRC = re.compile(rf"(?P<level>{_LEVEL}) (?P<src>[\w./-]+\.py:\d+): ")
_LEVEL_HEADS = _UVICORN_HEADS + tuple(f"{w} " for w in _LEVEL.split("|"))  # how _UVICORN or _LEVEL_SRC start
# a header whose start was cut (a paste, a clipped terminal): only its rank tags are left, "DP2 TP2] "
_CUT = re.compile(rf"(?P<tags>(?:{_TAG})(?: (?:{_TAG}))*)\] ")
_C10 = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?\[(?P<lvl>[EWIF])(?P<mo>\d\d)(?P<d>\d\d) "
    r"(?P<t>\d\d:\d\d:\d\d(?:\.\d+)?)(?: \d+)? (?P<src>[^\s\]]+:\d+)\] ?"
)
_C10_LEVEL = {"E": "ERROR", "W": "WARNING", "I": "INFO", "F": "FATAL"}
_TAG_RX = re.compile(r"(DP|TP)(\d+)\b")

# SGLang's own stamp where an outer-envelope peeler would take it for a collector's stamp
_OWN_STAMP = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?"
    rf"(?: (?:{_LEVEL}) \d+ \[|(?: (?:{_TAG}))*\] )"
)
# a header written into the middle of a line (a tqdm bar without its newline)
_GLUED = re.compile(
    rf"\[ ?(?:\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{1,6}})?(?: (?:{_TAG}))*"
    rf"|\d\d:\d\d:\d\d(?:\.\d{{1,6}})?(?: (?:{_TAG}))+)\] "
)

# prefix-less lines that continue an SGLang record (besides tracebacks, which the pipeline joins)
_KV_ALLOC_DETAIL = re.compile(r"Try to allocate \d|Ava(?:il|li)able tokens|self\.[\w.]+(?:\(\))?=")
_CAPTURE_HINT = re.compile(r"Possible solutions|\d\. |Open an issue on GitHub")
_PYWARN_HEAD = re.compile(r"\S+\.py:\d+: [A-Z]\w*Warning: ")
_DUMP_HEAD = re.compile(r"Pyspy dump for PID \d+|\w+ debug info:")

# line starts of the SGLang benchmark client (sglang.bench_serving) that vLLM's client never prints
_MARKERS = (
    "Backend:  ",
    "Total generated tokens (retokenized):",
    "Max reqeuest concurrency:",
    "benchmark_args=Namespace(",
    "Exception in ModelTpServer:",
)  # the last: 0.2-0.3 scheduler's crash


_Stamp = tuple[int | None, int | None, int | None, float]
_Ranks = tuple[str | None, int | None, int | None]  # process, tp_rank, dp_rank
_Fields = tuple[str, _Stamp, str | None, int | None, int | None]  # time, stamp, process, tp, dp

# Bounded caches of pure functions of a header's parts: lines share their rank tags, and lines of
# one second (of several ranks, say) their stamp. Cleared when full: caches, never a record of the log.
_CACHE_SIZE = 4096
_STAMPS: dict[str, _Stamp] = {}
_RANKS: dict[str, _Ranks] = {}


def _ranks(tags: str) -> _Ranks:
    """(process, tp_rank, dp_rank) from a header's rank tags, e.g. ``" DP1 TP3 EP3"``."""
    words = tags.split()
    tp = dp = None
    for t in words:
        tm = _TAG_RX.fullmatch(t)
        if tm is not None:
            if tm[1] == "TP":
                tp = int(tm[2])
            else:
                dp = int(tm[2])
    return " ".join(words) or None, tp, dp


def _stamp(m: re.Match[str]) -> _Stamp:
    """(year, month, day, seconds of day) of a ``_BRACKET`` or ``_CUSTOM`` match."""
    y, mo, d, h, mi, s, ms = m.group(1, 2, 3, 4, 5, 6, 7)  # the stamp's groups, in both patterns
    sod = int(h) * 3600 + int(mi) * 60 + int(s) + (int(ms) / 10 ** len(ms) if ms else 0.0)
    return (int(y), int(mo), int(d), sod) if y is not None else (None, None, None, sod)


def _fields(m: re.Match[str]) -> _Fields:
    """(time as printed, stamp, process, tp_rank, dp_rank) of a ``_BRACKET`` or ``_CUSTOM`` match."""
    y, ms, tags = m.group(1, 7, "tags")
    time = m.string[m.start(1 if y is not None else 4) : m.end(7 if ms else 6)]  # as printed
    stamp = _STAMPS.get(time)  # a pure function of the printed time
    if stamp is None:
        if len(_STAMPS) >= _CACHE_SIZE:
            _STAMPS.clear()
        stamp = _STAMPS[time] = _stamp(m)
    ranks = _RANKS.get(tags)
    if ranks is None:
        if len(_RANKS) >= _CACHE_SIZE:
            _RANKS.clear()
        ranks = _RANKS[tags] = _ranks(tags)
    process, tp, dp = ranks
    return time, stamp, process, tp, dp


class SglangDialect(Dialect):
    name = "sglang"
    markers = _MARKERS
    crlf_continues = False  # SGLang never continues a record on a prefixed line; \r\n is a Windows file

    def __init__(self) -> None:
        super().__init__(GRAMMARS)
        # the previous line's bracket header: its text, its fields and its Header (see _bracket)
        self._last: tuple[str, _Fields, Header] | None = None

    def _bracket(self, text: str) -> tuple[int, _Fields] | None:
        """(end, fields) of ``_BRACKET.match(text)``, or None.

        Lines in a row mostly start with the same header (same second, same ranks): when ``text``
        starts with the previous line's header, to the byte, the regex is skipped. That is exact
        when the header ended with its optional space: a match looks at no character past its end
        then (the tags, digits and ``]`` before it decide it alone), so it would match the same."""
        last = self._last
        if last is not None and text.startswith(last[0]):
            return len(last[0]), last[1]
        m = _BRACKET.match(text)
        if m is None:
            return None
        fields = _fields(m)
        if text[m.end() - 1] == " ":
            time, stamp, process, tp, dp = fields
            self._last = (m.group(), fields, Header(None, time, None, stamp, process, tp, dp))
        return m.end(), fields

    def header(self, text: str) -> tuple[Header, str] | None:
        # The hot path: the line starts with the previous line's bracket header (see _bracket), and
        # no uvicorn level word follows it. The Header is then the one built for that header text:
        # equal to a new one (the same pure function of the same text), and shared, as Headers are
        # never changed. The tests below it would pass as they did for the previous line: they look
        # only at the text's first characters, which are that header's.
        last = self._last
        if last is not None and text.startswith(last[0]):
            msg = text[len(last[0]) :]
            if not msg.startswith(_LEVEL_HEADS):
                return last[2], msg
        c = text[:1]
        if c in " \t" and text.lstrip(" \t")[:1] == "[":  # a paste indented the lines
            c = "["
        if c == "[" or c.isdigit():
            bracket = self._bracket(text)
            if bracket is not None:
                end, (time, stamp, process, tp, dp) = bracket
                msg = text[end:]
                level = source = None
                if msg.startswith(_LEVEL_HEADS):  # a cheap test first: "Decode batch" starts with a D too
                    u = _UVICORN.match(msg)
                    if u is not None:
                        level, source, msg = u["level"], "uvicorn", msg[u.end() :]
                    else:
                        u = _LEVEL_SRC.match(msg)
                        if u is not None:
                            level, source, msg = u["level"], u["src"], msg[u.end() :]
                return Header(level, time, source, stamp, process, tp, dp), msg
            m = _CUSTOM.match(text) if c.isdigit() else None
            if m is not None:
                time, stamp, process, tp, dp = _fields(m)
                process = f"{process} pid={m['pid']}" if process else f"pid={m['pid']}"
                return Header(m["level"], time, m["src"], stamp, process, tp, dp), text[m.end() :]
            m = _C10.match(text) if c == "[" else None
            if m is not None:
                # the c10 stamp has no year: keep it as printed, leave it out of the run's clock
                rank = m["rank"]
                return Header(
                    level=_C10_LEVEL[m["lvl"]],
                    time=f"{m['mo']}-{m['d']} {m['t']}",
                    source=m["src"],
                    stamp=None,
                    process=f"rank{rank}" if rank else None,
                ), text[m.end() :]
            return None
        if c in "DIWEC":
            u = _UVICORN.match(text)
            if u is not None:  # uvicorn before SGLang formatted it (<= 0.4.0)
                return Header(level=u["level"], time=None, source="uvicorn", stamp=None), text[u.end() :]
        if c in "DTEPAM" and "] " in text[:60]:
            m = _CUT.match(text)
            if m is not None:  # no time is left: the record is shown after the last timed one
                process, tp, dp = _ranks(" " + m["tags"])
                return Header(None, None, None, None, process, tp, dp), text[m.end() :]
        return None

    def envelope(self, text: str) -> Envelope:
        env = peel(text)
        if env.outer_time is None:
            return env
        # the peeler took a stamp: keep it when it is SGLang's own (custom format, "[" lost in a paste)
        m = _OWN_STAMP.search(text, 0, 200)
        if m is None:
            return env
        start = m.start()
        outer = peel(text[:start]) if start else Envelope("")
        if outer.text:
            return env
        return Envelope(text[start:], outer.process, outer.outer_time)

    def split_glued(self, text: str) -> list[str]:
        if len(text) < 24 or text.find("[", 1) < 0:
            return [text]
        # a header after mere indentation is the line's own, not a second record
        return cut_at(
            text, (m.start() for m in _GLUED.finditer(text, 1)), lambda before: bool(before.strip())
        )

    def may_continue(self, message: str) -> bool:
        """A superset of ``continues`` that looks only at the record (for the sparse reader)."""
        last = message[message.rfind("\n") + 1 :]
        first = message if len(last) == len(message) else message[: message.find("\n")]
        return bool(
            _DUMP_HEAD.match(first)
            or _PYWARN_HEAD.match(first)
            or _KV_ALLOC_DETAIL.match(last)
            or "Try to lower your batch size" in last
            or "Capture cuda graph failed" in last
            or _CAPTURE_HINT.match(last)
        )

    def continues(self, message: str, text: str) -> bool:
        last = message[message.rfind("\n") + 1 :]
        first = message if len(last) == len(message) else message[: message.find("\n")]
        # py-spy dumps and watchdog debug info: everything up to the next header
        if _DUMP_HEAD.match(first):
            return True
        if not text:  # the KV allocation failure message ends with a newline
            return _KV_ALLOC_DETAIL.match(last) is not None
        # KV pool allocation failure: "Try to allocate N tokens." / "Available tokens: N" / "self.x()=N"
        if _KV_ALLOC_DETAIL.match(text) and (
            "Try to lower your batch size" in last or _KV_ALLOC_DETAIL.match(last)
        ):
            return True
        # the advice SGLang appends to "Capture cuda graph failed: ..."
        if _CAPTURE_HINT.match(text) and ("Capture cuda graph failed" in last or _CAPTURE_HINT.match(last)):
            return True
        # a Python warning's indented message and source lines
        return text.startswith("  ") and _PYWARN_HEAD.match(first) is not None
