"""Envelopes: the outer layers that whatever collected the log put around each line.

``docker logs -t`` stamps (RFC 3339), Kubernetes CRI files (``<ts> stdout F ``), journald
(``Sep 22 10:00:01 host vllm[123]: `` in any locale's month spelling), docker compose
(``vllm-1  | ``), CI stamps (``[2025-03-10T15:07:20Z] ``), and process prefixes: vLLM's
``(EngineCore_DP0 pid=456) ``, ``(Worker_TP3 pid=..)``, Ray's ``(RayWorkerWrapper pid=.., ip=..)``
(also with its opening ``(`` lost in a paste) and Ray's ``[repeated 30x across cluster]`` suffix.

The layers can nest (compose around a docker stamp around a process prefix), so they are peeled
in a loop. What is peeled is kept: the process tag, the outer time, the repeat count.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_OUTER = re.compile(
    r"""(?:
      (?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)[ \t](?:(?:stdout|stderr)\ [FP]\ )?
    | \[(?P<ci>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\][ ]
    | (?P<journal>[^\W\d_]{3,5}\.?\ {1,2}\d{1,2}\ \d\d:\d\d:\d\d)\ [\w.-]+\ [\w./@-]+\[\d+\]:[ ]
    | (?P<compose>[A-Za-z0-9][\w.-]*)\ +\|\ ?
    )""",
    re.VERBOSE,
)
# (Name pid=N) / (Name rank=0 pid=N) / (VllmWorker TP3 pid=N) / (pid=N) / (Name pid=N, ip=1.2.3.4) / (raylet)
_PROC = re.compile(
    r"\(?(?P<proc>(?:[A-Za-z_][\w.:-]*(?: [\w=.:-]+)*? )?pid=\d+(?:, ip=[0-9A-Fa-f.:]+)?|raylet)\) "
)
_REPEATED = re.compile(r"\s*\[repeated (?P<n>\d+)x across cluster\](?: \(Ray deduplicates logs[^)]*\))?\s*$")
# the last process tag of a text skipped before an engine header: "(A pid=1) (Worker_TP1 pid=9) "
_PROC_LAST = re.compile(r"\((?P<proc>[^()]*pid=\d+[^()]*)\)\s*$")
# a terminal's leftovers after a complete record: tmux's scroll position "[386/1830]" after padding
_SCROLL = re.compile(r"\s{2,}\[\d+/\d+\]$")
_RANK = re.compile(r"(?:_TP|TP| rank=|^Worker_?)(\d+)")
_DP = re.compile(r"_DP(\d+)")


@dataclass(slots=True)
class Envelope:
    """What was peeled off a line."""

    text: str
    process: str | None = None
    outer_time: str | None = None
    repeated: int = 1


# The previous ``(Name pid=N) `` prefix and its process tag: lines in a row mostly come from one
# process. ``_PROC`` matches a text that starts with that prefix the same way, so the regex is
# skipped: its match ends with ``) ``, and it never looks past that (only ``\)`` takes a ``)``, and
# the space after it ends the pattern).
_last_proc: tuple[str, str] | None = None


def peel(text: str) -> Envelope:
    """Remove outer layers from one physical line.

    Most lines have none (an engine's own line), and are let through on their first character:
    every branch of ``_OUTER`` starts with a letter or digit, or with ``[`` and a date whose ``T``
    sits at index 11 (a CI stamp); ``_PROC`` starts with ``(``, a letter or ``_``. So
    ``[2025-06-01 12:00:00 TP0] ...`` is not matched against either.
    """
    global _last_proc
    outer_time: str | None = None
    process: str | None = None
    c = text[:1]
    if c.isalnum() or (c == "[" and text[11:12] == "T"):
        for _ in range(4):
            m = _OUTER.match(text)
            if m is None:
                break
            if m.group("compose") is not None and text.startswith(("INFO", "WARNING", "ERROR", "DEBUG")):
                break  # uvicorn "INFO:  |" is not compose; never peel a level word
            outer_time = outer_time or m.group("iso") or m.group("ci") or m.group("journal")
            text = text[m.end() :]
        c = text[:1]
    if c == "(" or ((c.isalpha() or c == "_") and " pid=" in text[:80]):
        last = _last_proc
        if last is not None and text.startswith(last[0]):
            process, text = last[1], text[len(last[0]) :]
        else:
            m2 = _PROC.match(text)
            if m2 is not None:
                process = m2.group("proc")
                _last_proc = (text[: m2.end()], process)
                text = text[m2.end() :]
    if text[-1:] == "]" and text[-2:-1].isdigit() and "/" in text[-12:]:  # terminal junk after the record
        m4 = _SCROLL.search(text, max(0, len(text) - 400))
        if m4 is not None:
            text = text[: m4.start()]
    repeated = 1
    if "[repeated " in text:
        m3 = _REPEATED.search(text)
        if m3 is not None:
            repeated = int(m3.group("n")) + 1
            text = text[: m3.start()]
    return Envelope(text, process, outer_time, repeated)


def inner_process(skipped: str) -> str | None:
    """The process tag right before an engine header found inside a line (the innermost of a stack
    such as Ray Serve's ``(ServeReplica:app:D pid=1) (EngineCore pid=2) (Worker pid=3) ``), or None."""
    if "pid=" not in skipped:
        return None
    m = _PROC_LAST.search(skipped)
    return m.group("proc") if m is not None else None


@functools.lru_cache(maxsize=1024)
def ranks_of(process: str | None) -> tuple[int | None, int | None]:
    """(tp_rank, dp_rank) from a vLLM process tag such as ``Worker_DP1_TP3 pid=9``.

    Cached: a log has a handful of process tags, and every record asks (``Parser.base``)."""
    if not process:
        return None, None
    name = process.split(" pid=")[0]
    tp = dp = None
    m = _RANK.search(name)
    if m and ("TP" in name or "rank=" in name):
        tp = int(m.group(1))
    m = _DP.search(name)
    if m:
        dp = int(m.group(1))
    return tp, dp
