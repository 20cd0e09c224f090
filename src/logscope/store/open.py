"""Read a store: the runs table and each kind's events as polars LazyFrames.

    store = logscope.open_store("store/")
    store.runs                                   # one row per run (engine, version, headline analyses)
    store["throughput"]                          # every run's throughput events, with a ``run`` column
    (store["throughput"].join(store.runs.select("run", "engine_version"), on="run")
        .group_by("engine_version").agg(pl.col("gen_tok_s").mean()))

The store is read as it was when opened: the runs listed in ``runs.parquet`` then, and only their
partitions (a run whose ingest was killed before it was committed is not seen). Open it again to see
what a later ingest added.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from logscope.errors import LogscopeError
from logscope.events import KINDS
from logscope.store import layout

if TYPE_CHECKING:
    import polars as pl


class Store:
    """A store opened for reading (see the module's doc)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        layout.check_store(self.path)
        self._runs = layout.read_runs(self.path)
        committed = set(self._runs["run"].to_list())
        self._files: dict[str, list[Path]] = {}
        for (kind, run), f in sorted(layout.partitions(self.path).items()):
            if run in committed and f.is_file():
                self._files.setdefault(kind, []).append(f)

    @property
    def runs(self) -> pl.LazyFrame:
        """The runs table (``logscope.store.layout.RUNS_COLUMNS``), one row per run, in run order."""
        return self._runs.lazy()

    def run_ids(self) -> list[str]:
        return [str(r) for r in self._runs["run"].to_list()]

    def kinds(self) -> list[str]:
        """The event kinds that at least one run of the store has."""
        return sorted(self._files)

    def events(self, kind: str) -> pl.LazyFrame:
        """Every run's events of ``kind``: ``run``, ``kind``, ``seq`` (the order within the run), then the
        event model's fields (``frame(kind)`` of a loaded run has the same columns). Empty, with the
        columns, when no run has the kind."""
        import polars as pl

        if kind not in KINDS:
            raise LogscopeError(f"there is no event kind {kind!r} (known: {', '.join(KINDS)})")
        schema = layout.event_table_schema(kind)
        files = self._files.get(kind)
        if not files:
            return pl.LazyFrame(schema=schema)
        file_schema = layout.event_file_schema(kind)
        lf = pl.scan_parquet(
            [os.fspath(f) for f in files],
            hive_partitioning=True,
            hive_schema=layout.partition_schema(),
            schema={**file_schema, **layout.partition_schema()},
            missing_columns="insert",  # partitions written before a field was added to the model
            extra_columns="ignore",  # partitions written by a newer logscope
        )
        return lf.select(list(schema))

    def _repr_html_(self) -> str:
        from logscope.render.notebook import store_html

        return store_html(self)

    def __getitem__(self, kind: str) -> pl.LazyFrame:
        return self.events(kind)

    def __contains__(self, kind: object) -> bool:
        return kind in self._files

    def frames(self) -> dict[str, pl.LazyFrame]:
        """``runs`` and every kind the store has, by name."""
        out = {"runs": self.runs}
        out.update({k: self.events(k) for k in self.kinds()})
        return out

    def __repr__(self) -> str:
        return f"Store({os.fspath(self.path)!r}, runs={self._runs.height}, kinds={len(self._files)})"


def open_store(path: str | os.PathLike[str]) -> Store:
    """Open the store at ``path`` (made by ``logscope ingest``) for reading."""
    return Store(path)


__all__ = ["Store", "open_store"]
