"""Events become one polars DataFrame per kind, with an explicit schema taken from the models.

Built once per kind and per run; analyses work on these frames, never on raw lines.
"""

from __future__ import annotations

import json
import operator
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from logscope.events import EVENT_TYPES, Event

if typing.TYPE_CHECKING:
    from logscope.timebase import TimeBase

TS_COLUMNS: dict[str, pl.DataType] = {
    "ts": pl.Datetime("us"),
    "ts_source": pl.Utf8(),
}  # after the model's fields


def _dtype(annotation: Any) -> pl.DataType:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and args:
        return _dtype(args[0])
    if origin is typing.Literal:
        return pl.Utf8()
    if origin is list:
        inner = args[0] if args else str
        return pl.List(_dtype(inner))
    if origin is dict or annotation is dict:
        return pl.Utf8()  # JSON text: a dict's keys differ from row to row
    return {int: pl.Int64(), float: pl.Float64(), bool: pl.Boolean(), str: pl.Utf8()}.get(
        annotation, pl.Utf8()
    )


def schema(kind: str) -> dict[str, pl.DataType]:
    """The column types of ``kind``'s frame."""
    model = EVENT_TYPES[kind]
    return {name: _dtype(f.annotation) for name, f in model.model_fields.items()}


def _dict_fields(kind: str) -> set[str]:
    model = EVENT_TYPES[kind]
    out = set()
    for name, f in model.model_fields.items():
        ann = f.annotation
        args = typing.get_args(ann)
        if (
            ann is dict
            or typing.get_origin(ann) is dict
            or any(a is dict or typing.get_origin(a) is dict for a in args)
        ):
            out.add(name)
    return out


def _json(value: Any) -> Any:
    if type(value) is dict and not value:
        return "{}"  # what json.dumps gives, and by far the most common (SGLang's empty ``extra``)
    return json.dumps(value, default=str, sort_keys=True) if isinstance(value, dict) else value


def frame(
    events: Sequence[Event],
    kind: str,
    *,
    seq: bool = False,
    order: Sequence[int] | None = None,
    raw: bool = True,
    timebase: TimeBase | None = None,
) -> pl.DataFrame:
    """The events of ``kind`` as a DataFrame (empty, with the right columns, when there are none).

    With ``seq=True`` a first column ``seq`` holds each event's index in ``events``: the run's order,
    which stays meaningful across files (line numbers restart in each file). ``order`` (optional)
    lists those indexes when the caller already knows them (``RunData.kind_index``). ``raw=False``
    leaves out the ``raw`` column (the biggest: analyses read raw text off the events, not frames).

    Built one column at a time, each handed to polars before the next is read: the Python list
    behind a column (a pointer per event) lives only while its column is made, so building the frame
    of a million events takes little more than the frame itself.

    With ``timebase`` (``logscope.timebase``) two last columns say when: ``ts``, the wall-clock time
    (Datetime, the run's start plus ``t_s``; null when unknown) and ``ts_source``, where its date came
    from (``log``, ``file_date``, ``mtime`` or ``none``).
    """
    sch = schema(kind)
    dicts = _dict_fields(kind)
    if order is None:
        order = [i for i, e in enumerate(events) if e.kind == kind]
    rows = [events[i] for i in order]
    columns: list[pl.Series] = []
    if seq:
        columns.append(pl.Series("seq", order, dtype=pl.Int64))
    for name, dtype in sch.items():
        if name == "raw" and not raw:
            continue
        values = list(map(operator.attrgetter(name), rows))
        if name in dicts:  # JSON text: a dict's keys differ from row to row
            values = [_json(v) for v in values]
        columns.append(pl.Series(name, values, dtype=dtype))
        del values
    df = pl.DataFrame(columns)
    if timebase is not None:
        df = with_ts(df, timebase)
    return df


def with_ts(df: pl.DataFrame, timebase: TimeBase) -> pl.DataFrame:
    """``df`` (with its ``t_s``) and the ``ts`` and ``ts_source`` columns (see ``frame``)."""
    start = pl.lit(timebase.start, dtype=pl.Datetime("us"))
    micros = (pl.col("t_s") * 1e6).round().cast(pl.Int64)
    return df.with_columns(
        (start + pl.duration(microseconds=micros)).cast(pl.Datetime("us")).alias("ts"),
        pl.lit(timebase.source, dtype=pl.Utf8()).alias("ts_source"),
    )


class Frames:
    """Every kind's frame of one run, built on first use and kept (with the ``seq`` column, without
    ``raw``: on an event-dense log that column is most of a frame, and no analysis reads it).

    ``index`` (optional) gives each kind's run-order indexes (``RunData.kind_index``): then a frame
    is built without a pass over every event of the run."""

    def __init__(self, events: Sequence[Event], index: Mapping[str, Sequence[int]] | None = None) -> None:
        self.events = events
        self.index = index
        self._cache: dict[str, pl.DataFrame] = {}

    def __getitem__(self, kind: str) -> pl.DataFrame:
        if kind not in self._cache:
            order = None if self.index is None else self.index.get(kind, ())
            self._cache[kind] = frame(self.events, kind, seq=True, order=order, raw=False)
        return self._cache[kind]

    def has(self, kind: str) -> bool:
        return self[kind].height > 0
