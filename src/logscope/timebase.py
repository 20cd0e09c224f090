"""Wall-clock time of a run's events (``ts``), and where its date came from (``ts_source``).

Events carry the time as printed (``time``) and ``t_s``, seconds since the run's first stamp (year and
day roll-over handled, files of one run aligned: ``parsers.pipeline.Clock``, ``api._align_clocks``).
A datetime per event is the run's start plus ``t_s``; the start is the first timed event's printed
time less its ``t_s``. SGLang prints full dates; vLLM prints ``MM-DD HH:MM:SS`` with no year, which
is then taken, in this order, from:

- ``log``: the printed stamps carry the year (SGLang, or a dated prefix);
- ``file_date``: a full date elsewhere in the file's first ``HEAD_BYTES`` with the same month and day
  (a collector's stamp: ``docker logs -t``, journald, a CI prefix);
- ``mtime``: the file's modification time (the year of it; the one before when the printed month-day
  falls after the mtime's, a run that began last December);
- ``none``: no date at all (a time alone, stdin, nothing timed); ``ts`` is null, never guessed.

The clock's calendar has no leap day: a run that spans 29 February reads one day late after it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

HEAD_BYTES = 256 * 1024  # read from a file's start when looking for a full date
SOURCES = ("log", "file_date", "mtime", "none")

_STAMP = re.compile(r"(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
_FULL_DATE = re.compile(rb"\b(\d{4})-(\d\d)-(\d\d)[ T]\d\d:\d\d:\d\d")


@dataclass(frozen=True)
class TimeBase:
    """``start``: the wall-clock time at ``t_s == 0`` (naive: the log prints no time zone), or None;
    ``source``: one of ``SOURCES``; ``note``: why, in words."""

    start: datetime | None
    source: str
    note: str

    def at(self, t_s: float | None) -> datetime | None:
        if self.start is None or t_s is None:
            return None
        return self.start + timedelta(seconds=t_s)


def _parts(time: str) -> tuple[int | None, int, int, int, int, int, int] | None:
    m = _STAMP.search(time)
    if m is None:
        return None
    frac = m.group(7) or "0"
    micro = int(frac.ljust(6, "0")[:6])
    return (
        int(m.group(1)) if m.group(1) else None,
        int(m.group(2)),
        int(m.group(3)),
        int(m.group(4)),
        int(m.group(5)),
        int(m.group(6)),
        micro,
    )


def _file_year(path: str, month: int, day: int) -> int | None:
    """The year of a full date with this month and day (or the day before or after: a stamp near
    midnight) in the file's head; None when there is none."""
    if path in ("", "-") or not os.path.isfile(path):
        return None
    try:
        if path.endswith(".gz"):
            import gzip

            with gzip.open(path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
        else:
            with open(path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
    except (OSError, EOFError):
        return None
    for m in _FULL_DATE.finditer(head):
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if mo == month and abs(d - day) <= 1:
            return y
    return None


def _mtime_year(path: str, month: int, day: int) -> int | None:
    try:
        mt = datetime.fromtimestamp(os.stat(path).st_mtime)
    except (OSError, ValueError):
        return None
    return mt.year - 1 if (month, day) > (mt.month, mt.day) else mt.year


def timebase(events: Sequence[Any]) -> TimeBase:
    """The ``TimeBase`` of a run's events (see the module's doc)."""
    first = next((e for e in events if e.t_s is not None and e.time), None)
    if first is None:
        return TimeBase(None, "none", "no timestamped line in the log")
    parts = _parts(first.time)
    if parts is None:
        return TimeBase(None, "none", f"the log prints no date ({first.time!r}): ts is unknown")
    year, month, day, hh, mm, ss, us = parts
    source, note = "log", "the printed stamps carry the date"
    if year is None:
        year = _file_year(first.file, month, day)
        source, note = (
            "file_date",
            f"year from a full date in {os.path.basename(first.file)} (the log prints none)",
        )
        if year is None:
            year = _mtime_year(first.file, month, day)
            source = "mtime"
            note = f"year from the modification time of {os.path.basename(first.file)} (the log prints none)"
        if year is None:
            return TimeBase(
                None, "none", "the log prints no year and its file has no date or mtime to take it from"
            )
    try:
        at_first = datetime(year, month, day, hh, mm, ss, us)
    except ValueError:
        return TimeBase(None, "none", f"the first stamp {first.time!r} is not a valid date")
    return TimeBase(at_first - timedelta(seconds=first.t_s), source, note)
