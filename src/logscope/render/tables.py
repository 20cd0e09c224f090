"""Events as a table file (CSV or Parquet): one row per event, nested fields as JSON text."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from logscope.events import Event

if TYPE_CHECKING:
    import polars as pl

# A CSV is opened in spreadsheets, which run a cell that starts with one of these as a formula
# (``=HYPERLINK(...)``, ``@SUM(...)``, ``-2+3``; tab and CR too, by OWASP's rule). Log text is written
# by whoever sends requests (a request id, a prompt, a model path), so a text cell that starts with
# one gets a leading ``'``, which spreadsheets show as text. A text cell that is a plain number
# (``-1``, ``+2.5e3``) stays as it is: a spreadsheet reads it as that number, not a formula. Number
# columns are numbers and are left alone.
FORMULA_START = r"^[=+\-@\t\r]"
PLAIN_NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"


def rows(events: Sequence[Event], with_raw: bool) -> list[dict[str, Any]]:
    out = []
    for e in events:
        d = e.model_dump(exclude=None if with_raw else {"raw"})
        out.append({k: json.dumps(v, default=str) if isinstance(v, dict | list) else v for k, v in d.items()})
    return out


def spreadsheet_safe(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with every text cell a spreadsheet would run as a formula prefixed with ``'``."""
    import polars as pl

    fixes = []
    for name, dtype in df.schema.items():
        if dtype == pl.String:
            col = pl.col(name)
            risky = col.str.contains(FORMULA_START) & ~col.str.contains(PLAIN_NUMBER)
            fixes.append(pl.when(risky).then(pl.lit("'") + col).otherwise(col).alias(name))
    return df.with_columns(fixes) if fixes else df


def write_table(events: Sequence[Event], fmt: str, output: str | None, *, with_raw: bool = False) -> None:
    """Write ``events`` as CSV (stdout allowed; formula-leading text cells neutralised: see
    ``spreadsheet_safe``) or Parquet (needs ``-o``; typed columns, values as they are)."""
    import polars as pl

    from logscope.errors import LogscopeError

    data = rows(events, with_raw)
    columns: dict[str, None] = {}
    for r in data:
        columns.update(dict.fromkeys(r))
    df = pl.DataFrame([{c: r.get(c) for c in columns} for r in data], infer_schema_length=None)
    if fmt == "csv":
        df = spreadsheet_safe(df)
        if output:
            df.write_csv(output)
        else:
            sys.stdout.write(df.write_csv())
    elif fmt == "parquet":
        if not output:
            raise LogscopeError("--format parquet needs -o FILE")
        df.write_parquet(output)
