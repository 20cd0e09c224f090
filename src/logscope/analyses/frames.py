"""Events become one polars DataFrame per kind, with an explicit schema taken from the models.

Built once per kind and per run; analyses work on these frames, never on raw lines.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence
from typing import Any

import polars as pl

from logscope.events import EVENT_TYPES, Event


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
    return {int: pl.Int64(), float: pl.Float64(), bool: pl.Boolean(), str: pl.Utf8()}.get(annotation, pl.Utf8())


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
        if ann is dict or typing.get_origin(ann) is dict or any(a is dict or typing.get_origin(a) is dict for a in args):
            out.add(name)
    return out


def _json(value: Any) -> Any:
    return json.dumps(value, default=str, sort_keys=True) if isinstance(value, dict) else value


def frame(events: Sequence[Event], kind: str, *, seq: bool = False) -> pl.DataFrame:
    """The events of ``kind`` as a DataFrame (empty, with the right columns, when there are none).

    With ``seq=True`` a first column ``seq`` holds each event's index in ``events``: the run's order,
    which stays meaningful across files (line numbers restart in each file).
    """
    sch = schema(kind)
    dicts = _dict_fields(kind)
    order = [i for i, e in enumerate(events) if e.kind == kind]
    rows = [events[i] for i in order]
    cols: dict[str, list[Any]] = {}
    for name in sch:
        values = [getattr(e, name) for e in rows]
        if name in dicts:  # JSON text: a dict's keys differ from row to row
            values = [_json(v) for v in values]
        cols[name] = values
    df = pl.DataFrame(cols, schema=sch)
    if seq:
        df = df.with_columns(pl.Series("seq", order, dtype=pl.Int64)).select(["seq", *sch])
    return df


class Frames:
    """Every kind's frame of one run, built on first use and kept (with the ``seq`` column)."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self._cache: dict[str, pl.DataFrame] = {}

    def __getitem__(self, kind: str) -> pl.DataFrame:
        if kind not in self._cache:
            self._cache[kind] = frame(self.events, kind, seq=True)
        return self._cache[kind]

    def has(self, kind: str) -> bool:
        return self[kind].height > 0
