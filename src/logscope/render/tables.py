"""Events as a table file (CSV or Parquet): one row per event, nested fields as JSON text."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from logscope.events import Event


def rows(events: Sequence[Event], with_raw: bool) -> list[dict[str, Any]]:
    out = []
    for e in events:
        d = e.model_dump(exclude=None if with_raw else {"raw"})
        out.append({k: json.dumps(v, default=str) if isinstance(v, dict | list) else v for k, v in d.items()})
    return out


def write_table(events: Sequence[Event], fmt: str, output: str | None, *, with_raw: bool = False) -> None:
    """Write ``events`` as CSV (stdout allowed) or Parquet (needs ``-o``)."""
    import polars as pl

    from logscope.errors import LogscopeError

    data = rows(events, with_raw)
    columns: dict[str, None] = {}
    for r in data:
        columns.update(dict.fromkeys(r))
    df = pl.DataFrame([{c: r.get(c) for c in columns} for r in data], infer_schema_length=None)
    if fmt == "csv":
        if output:
            df.write_csv(output)
        else:
            sys.stdout.write(df.write_csv())
    elif fmt == "parquet":
        if not output:
            raise LogscopeError("--format parquet needs -o FILE")
        df.write_parquet(output)
