"""A Parquet event store of many runs: ``ingest`` logs into it, ``open_store`` it as polars LazyFrames.

    from logscope.store import ingest, open_store
    ingest(["logs/"], "store/", jobs=2)            # or ingest_dask(..., scheduler="tcp://...")
    store = open_store("store/")
    store.runs.filter(pl.col("engine") == "vllm").collect()

``layout`` says where the store keeps what (and why a killed ingest is never half-visible),
``ingest`` how logs get in, ``open`` how they are read. This package imports polars; ``import
logscope`` does not import it (``logscope.open_store`` imports it on first call).

``logscope.store.ingest`` below is the function; its module is ``sys.modules["logscope.store.ingest"]``
(``from logscope.store.ingest import plan`` works as usual).
"""

from __future__ import annotations

from logscope.store.ingest import IngestFailed, IngestSummary, ingest, ingest_dask
from logscope.store.open import Store, open_store

__all__ = ["IngestFailed", "IngestSummary", "Store", "ingest", "ingest_dask", "open_store"]
