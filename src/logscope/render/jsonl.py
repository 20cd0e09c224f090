"""Events as JSON lines (``logscope events --format jsonl``): one compact JSON object per event.

An event's ``__dict__`` holds its fields in model order, and the events hold only what JSON can
say (a test checks ``__dict__ == model_dump()`` on every fixture), so a line is orjson's encoding
of that dict (``raw`` left out unless asked for), written as bytes: ~15k instructions an SGLang
batch event where ``json.dumps`` of a dict copy into a text file took ~80k (callgrind), a fifth of
``logscope events``' cost on an event-dense log.

Values orjson does not write are written as before: other types (a set or bytes from a config
line) as ``str()``. Three cases fall back to ``json`` for that one line, with the same values:
an int beyond 64 bits, a dict key that is not a string (a nested config dict; written as ``json``
writes it), a lone surrogate (a file name that is not UTF-8; escaped as ``\\udcxx``). A float
that is not finite (a ``nan`` the log printed) is ``null``, as in ``analyze --format json``;
the JSON stays standard.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable
from typing import IO, Any

import orjson

from logscope.events import Event

# datetimes and dataclasses (never in an event today) go to ``default=str``, as with ``json.dumps``
_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def event_dict(ev: Event, with_raw: bool = False) -> dict[str, Any]:
    """The event's fields in model order: what ``model_dump()`` returns, at a fraction of its cost.
    With ``with_raw`` the event's own ``__dict__`` (not to be changed), else a copy without ``raw``."""
    d = ev.__dict__
    if not with_raw:
        d = d.copy()
        del d["raw"]
    return d


def event_line(ev: Event, with_raw: bool = False) -> bytes:
    """One event as a JSON line (UTF-8, ending in a newline)."""
    d = event_dict(ev, with_raw)
    try:
        return orjson.dumps(d, default=str, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return _json_line(d)


_NUMBERS = re.compile(rb',"line":-?\d+,"end_line":(?:-?\d+|null)')


class NumberedLines:
    """Events as JSON lines written by a worker that parses a range of a file, before the lines ahead
    of the range are counted (``parsers.chunks``): the worker renders each event with the range's
    line numbers, the parent puts the file's in (``renumber``), so the parent does not rebuild and
    re-encode every event. Picklable: it travels to the workers with their job.

    The numbers are found by their keys: ``"line"`` and ``"end_line"`` follow each other in every
    event's fields, and no string in a line can hold ``,"line":`` (JSON escapes a quote inside a
    string), so the first such text is the field. Its value is an integer or null, so the patched
    line is the line the serial run writes, byte for byte."""

    def __init__(self, with_raw: bool = False) -> None:
        self.with_raw = with_raw

    def render(self, ev: Event) -> bytes:
        return event_line(ev, self.with_raw)

    @staticmethod
    def renumber(line: bytes, shift: int) -> bytes:
        """``line`` (a ``render``ed event) with its line numbers moved by ``shift``."""
        m = _NUMBERS.search(line)
        if m is None:  # not an event's line (never, by the fields' order): a change would be unseen
            raise ValueError("no line numbers in an event's JSON line")
        num, _, end = m.group()[len(b',"line":') :].partition(b',"end_line":')
        end_text = b"null" if end == b"null" else b"%d" % (int(end) + shift)
        return b'%s,"line":%d,"end_line":%s%s' % (
            line[: m.start()],
            int(num) + shift,
            end_text,
            line[m.end() :],
        )


def _json_line(d: dict[str, Any]) -> bytes:
    """What orjson refuses, through ``json``: same separators, non-finite floats as null."""
    plain = _plain(d)
    text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: JSON's \u escape keeps the value
        return json.dumps(plain, separators=(",", ":"), default=str, allow_nan=False).encode("ascii") + b"\n"


def _plain(v: Any) -> Any:
    """``v`` with non-finite floats as None, and dict keys ``json`` takes (others as ``str()``, which
    is also what ``json`` writes for a float key)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k if isinstance(k, str | int | None) else str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def write_jsonl(events: Iterable[Event], output: str | None, *, with_raw: bool = False) -> None:
    """Write ``events`` as JSON lines to the file ``output``, or to stdout."""
    write_lines((event_line(ev, with_raw) for ev in events), output)


def write_lines(lines: Iterable[bytes], output: str | None) -> None:
    """Write encoded lines to the file ``output``, or to stdout."""
    if output:
        with open(output, "wb") as fh:
            _write(lines, fh)
        return
    sys.stdout.flush()
    buffer: IO[bytes] | None = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        _write(lines, buffer)
        buffer.flush()
    else:  # a text-only stream in place of stdout
        for line in lines:
            sys.stdout.write(line.decode("utf-8"))


def _write(lines: Iterable[bytes], fh: IO[bytes]) -> None:
    write = fh.write
    for line in lines:
        write(line)


__all__ = ["NumberedLines", "event_dict", "event_line", "write_jsonl", "write_lines"]
