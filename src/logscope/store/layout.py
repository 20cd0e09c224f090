"""Where a store keeps what, and the schemas of its tables.

    STORE/
      store.json                              format name and layout version
      runs.parquet                            one row per run (the commit point: see below)
      events/kind=K/run=R/part-0.parquet      the events of kind K of run R (hive partitions)
      _staging/                               work in progress, never read; cleared by the next ingest
      .lock                                   held by the one ingest that writes

A partition is written whole into ``_staging`` and renamed into ``events/`` (a directory rename is
atomic), so a reader never sees half a file. A run counts once its row is in ``runs.parquet``, which
is itself replaced atomically; readers (``open_store``) read only the partitions of the runs listed
there, so the partitions of a run whose ingest was killed before its row was written stay invisible,
and the next ingest deletes them and parses the run again.

Partition files hold the event model's fields less ``kind`` (the path gives ``kind`` and ``run``),
with a first column ``seq``: the event's index in the run (the run's order across its files).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from logscope.errors import LogscopeError
from logscope.events import KINDS

if TYPE_CHECKING:
    import polars as pl

FORMAT = "logscope-store"
VERSION = 1
MANIFEST = "store.json"
RUNS_FILE = "runs.parquet"
EVENTS_DIR = "events"
STAGING_DIR = "_staging"
LOCK_FILE = ".lock"
PART_FILE = "part-0.parquet"
COMPRESSION: Literal["zstd"] = "zstd"

# One row per run: column -> type. Extend, never rename (readers of older stores get nulls for newer
# columns). Types are named here and made polars types by ``runs_schema`` (this module imports polars
# only when it reads or writes: ``import logscope.store`` starts no thread, so worker processes can be
# forked before it does).
RUNS_COLUMNS: dict[str, str] = {
    "run": "str",
    "name": "str",
    "path": "str",
    "engine": "str",
    "engine_version": "str",
    "model": "str",
    "files": "list[str]",
    "content_hashes": "list[str]",
    "sizes": "list[int]",
    "bytes": "int",
    "lines": "int",
    "events": "int",
    "unparsed": "int",
    "start_time": "datetime",
    "end_time": "datetime",
    "ts_source": "str",
    "duration_s": "float",
    "config": "str",
    "config_args": "str",
    "max_model_len": "int",
    "tensor_parallel": "int",
    "decode_mean_tok_s": "float",
    "decode_median_tok_s": "float",
    "decode_max_tok_s": "float",
    "decode_running": "int",
    "decode_per_request_tok_s": "float",
    "context_tokens": "float",
    "context_source": "str",
    "prefill_mean_tok_s": "float",
    "kv_tokens": "int",
    "max_concurrency": "float",
    "cold_start_s": "float",
    "spec_acceptance_rate_pct": "float",
    "spec_mean_acceptance_length": "float",
    "findings_error": "int",
    "findings_warning": "int",
    "findings_info": "int",
    "finding_codes": "list[str]",
    "notes": "list[str]",
    "report": "str",
    "logscope_version": "str",
}

PARTITION_KEYS = ("kind", "run")


def _dtype(name: str) -> pl.DataType:
    import polars as pl

    base = {"str": pl.String(), "int": pl.Int64(), "float": pl.Float64(), "datetime": pl.Datetime("us")}
    if name.startswith("list[") and name.endswith("]"):
        return pl.List(base[name[5:-1]])
    return base[name]


def runs_schema() -> dict[str, pl.DataType]:
    """The runs table's polars schema."""
    return {name: _dtype(t) for name, t in RUNS_COLUMNS.items()}


def partition_schema() -> dict[str, pl.DataType]:
    """The hive keys' types: strings (a run id is never read as a number)."""
    import polars as pl

    return {k: pl.String() for k in PARTITION_KEYS}


def event_file_schema(kind: str) -> dict[str, pl.DataType]:
    """The columns of a partition file of ``kind``: ``seq``, then the model's fields less ``kind``."""
    import polars as pl

    from logscope.analyses.frames import TS_COLUMNS
    from logscope.analyses.frames import schema as event_model_schema

    out: dict[str, pl.DataType] = {"seq": pl.Int64()}
    out.update({k: v for k, v in event_model_schema(kind).items() if k != "kind"})
    out.update(TS_COLUMNS)
    return out


def event_table_schema(kind: str) -> dict[str, pl.DataType]:
    """The columns ``open_store`` gives for ``kind``: the partition keys, then the file's columns."""
    import polars as pl

    return {"run": pl.String(), "kind": pl.String(), **event_file_schema(kind)}


# -- names ------------------------------------------------------------------------------------------

_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A run name safe in a path and a hive key: ``vllm-200k.log`` -> ``vllm-200k``."""
    base = name
    for suffix in (".gz", ".log"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    out = _SLUG_BAD.sub("_", base).strip("._-")[:60]
    return out or "run"


def run_id(name: str, hashes: list[str]) -> str:
    """``<slug>-<12 hex>``: a file's own content hash, or the hash of a group's sorted file hashes.

    Never all digits (a hive reader would take it for a number) and the same for the same content.
    """
    if len(hashes) == 1:
        digest = hashes[0]
    else:
        digest = hashlib.sha256("\n".join(sorted(hashes)).encode()).hexdigest()
    return f"{slug(name)}-{digest[:12]}"


def file_digest(path: str | os.PathLike[str], limit: int | None = None) -> tuple[str, int]:
    """(sha256 hex, bytes hashed) of a file's bytes as stored (a ``.gz`` is hashed compressed);
    with ``limit``, of its first ``limit`` bytes only."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        while True:
            want = 1 << 20 if limit is None else min(1 << 20, limit - n)
            if want <= 0:
                break
            chunk = fh.read(want)
            if not chunk:
                break
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


# -- paths ------------------------------------------------------------------------------------------


def partition_dir(store: Path, kind: str, run: str) -> Path:
    return store / EVENTS_DIR / f"kind={kind}" / f"run={run}"


def partitions(store: Path) -> dict[tuple[str, str], Path]:
    """(kind, run) -> the partition's file, for every partition directory in ``events/``."""
    out: dict[tuple[str, str], Path] = {}
    root = store / EVENTS_DIR
    if not root.is_dir():
        return out
    for kdir in sorted(root.iterdir()):
        if not (kdir.is_dir() and kdir.name.startswith("kind=")):
            continue
        kind = kdir.name[len("kind=") :]
        for rdir in sorted(kdir.iterdir()):
            if rdir.is_dir() and rdir.name.startswith("run="):
                out[(kind, rdir.name[len("run=") :])] = rdir / PART_FILE
    return out


# -- the manifest and the runs table ----------------------------------------------------------------


def is_store(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def check_store(path: Path) -> None:
    """Raise a one-sentence error unless ``path`` is a store this version can read."""
    if not path.is_dir():
        raise LogscopeError(f"{path}: no such store (make one with `logscope ingest LOGS --out {path}`)")
    if not is_store(path):
        raise LogscopeError(f"{path}: is not a logscope store (it has no {MANIFEST})")
    try:
        meta = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LogscopeError(f"{path / MANIFEST}: cannot be read ({exc})") from exc
    if meta.get("format") != FORMAT:
        raise LogscopeError(
            f"{path}: is not a logscope store ({MANIFEST} names format {meta.get('format')!r})"
        )
    if int(meta.get("version", 0)) > VERSION:
        raise LogscopeError(
            f"{path}: was written by a newer logscope (store layout {meta.get('version')}, "
            f"this one reads up to {VERSION}); upgrade logscope"
        )


def create_store(path: Path) -> None:
    """Make ``path`` a store (an existing store is checked, an empty or missing directory set up)."""
    if path.exists() and not path.is_dir():
        raise LogscopeError(f"{path}: exists and is not a directory; --out takes a directory")
    if is_store(path):
        check_store(path)
        return
    # what a first ingest killed before writing the manifest leaves does not count as content
    leftovers = {LOCK_FILE, STAGING_DIR}
    if path.is_dir() and any(
        p.name not in leftovers and not (p.name == EVENTS_DIR and p.is_dir() and not any(p.iterdir()))
        for p in path.iterdir()
    ):
        raise LogscopeError(f"{path}: is a directory that is neither empty nor a logscope store")
    try:
        (path / EVENTS_DIR).mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(
            path,
            path / MANIFEST,
            (json.dumps({"format": FORMAT, "version": VERSION}, indent=2) + "\n").encode(),
        )
    except OSError as exc:
        raise LogscopeError(f"{path}: the store cannot be created ({exc.strerror or exc})") from exc


def read_runs(store: Path) -> pl.DataFrame:
    """The runs table (empty, with every column, before the first run)."""
    import polars as pl

    schema = runs_schema()
    f = store / RUNS_FILE
    if not f.is_file():
        return pl.DataFrame(schema=schema)
    df = pl.read_parquet(f)
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in schema.items() if c not in df.columns]
    # a store written before start/end_time were typed holds them as printed: a date with a year is
    # read as one, a vLLM ``MM-DD HH:MM:SS`` (no year) as null (ingest the run again for its ts)
    retyped = [
        pl.col(c).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False).cast(schema[c]).alias(c)
        for c in ("start_time", "end_time")
        if c in df.columns and df.schema[c] == pl.String()
    ]
    return df.with_columns(missing + retyped) if missing or retyped else df


def read_runs_rows(store: Path) -> list[dict[str, Any]]:
    """The runs table's rows as dicts (none before the first run)."""
    if not (store / RUNS_FILE).is_file():
        return []
    return read_runs(store).to_dicts()


def runs_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The runs table of ``rows``, in run order, with the table's schema."""
    import polars as pl

    ordered = sorted(rows, key=lambda r: str(r["run"]))
    names = [r.get("name") for r in ordered]
    shared = {n for n in names if n is not None and names.count(n) > 1}
    cols = {c: [r.get(c) for r in ordered] for c in RUNS_COLUMNS}
    # names are unique: runs that share one (a file rewritten with other content) get their id's hash
    cols["name"] = [
        f"{n} #{str(r['run']).rsplit('-', 1)[-1]}" if n in shared else n
        for n, r in zip(names, ordered, strict=True)
    ]
    return pl.DataFrame(cols, schema=runs_schema())


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """The one way the store writes Parquet (same data, same bytes)."""
    df.write_parquet(path, compression=COMPRESSION, statistics=True)


def write_runs(store: Path, rows: list[dict[str, Any]]) -> None:
    """Replace the runs table atomically (written beside, then renamed over)."""
    tmp = staging(store) / f"runs-{uuid.uuid4().hex}.parquet"
    write_parquet(runs_frame(rows), tmp)
    os.replace(tmp, store / RUNS_FILE)


def staging(store: Path) -> Path:
    d = store / STAGING_DIR
    d.mkdir(parents=True, exist_ok=True)
    return d


def atomic_write_bytes(store: Path, target: Path, data: bytes) -> None:
    tmp = staging(store) / f"{target.name}.{uuid.uuid4().hex}"
    tmp.write_bytes(data)
    os.replace(tmp, target)


def remove_tree(path: Path) -> None:
    """Delete ``path``: first renamed into staging (one atomic step for readers), then removed."""
    if not path.exists():
        return
    store = _store_of(path)
    trash = staging(store) / f"trash-{uuid.uuid4().hex}"
    os.rename(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _store_of(path: Path) -> Path:
    for parent in path.parents:
        if is_store(parent):
            return parent
    raise LogscopeError(f"{path}: is not inside a logscope store")


def publish(store: Path, staged: Path, kind: str, run: str) -> None:
    """Move a staged partition directory into ``events/`` (replacing a stale one)."""
    target = partition_dir(store, kind, run)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        remove_tree(target)
    os.rename(staged, target)


@contextlib.contextmanager
def writer_lock(store: Path) -> Iterator[None]:
    """Hold the store's write lock (one ingest at a time); fail at once when another holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    fh = open(store / LOCK_FILE, "a+b")  # noqa: SIM115 - closed below
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LogscopeError(
                f"{store}: another ingest is writing to this store; wait for it to finish"
            ) from None
        yield
    finally:
        fh.close()  # releases the lock


def known_kind(kind: str) -> bool:
    return kind in KINDS


__all__ = [
    "EVENTS_DIR",
    "FORMAT",
    "MANIFEST",
    "PARTITION_KEYS",
    "PART_FILE",
    "RUNS_COLUMNS",
    "RUNS_FILE",
    "STAGING_DIR",
    "VERSION",
    "check_store",
    "create_store",
    "event_file_schema",
    "event_table_schema",
    "file_digest",
    "known_kind",
    "partition_dir",
    "partition_schema",
    "partitions",
    "publish",
    "read_runs",
    "read_runs_rows",
    "remove_tree",
    "run_id",
    "runs_frame",
    "runs_schema",
    "slug",
    "staging",
    "write_parquet",
    "write_runs",
    "writer_lock",
]
