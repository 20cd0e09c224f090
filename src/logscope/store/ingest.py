"""Parse many logs into a store: plan (what is new), run the per-run work, commit.

    from logscope.store import ingest, ingest_dask
    ingest(["logs/"], "store/", jobs=2)                          # local processes
    ingest_dask(["logs/"], "store/", scheduler="tcp://host:8786")  # the same work as Dask tasks

The work of one run (parse, analyse, write its partitions into the store's staging area) is
``ingest_one``: a plain function of picklable arguments, run in-process (``jobs=1``), in a pool of
local processes, or as a Dask task. Only the coordinator touches what readers see: it moves each
finished run's partitions into ``events/`` and rewrites the runs table. Whatever runs the work, the
store's bytes are the same: every file written depends only on the logs' content and paths.

Incremental: a file whose content hash is already in the store is skipped. A file that grew since it
was ingested (the stored content is a prefix of the new content) is parsed again and its new run
replaces the old one; any other file is a new run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logscope.errors import LogscopeError, UnreadableInput
from logscope.store import layout
from logscope.version import __version__

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from logscope.analyses.base import RunData
    from logscope.analyses.report import Report
    from logscope.api import Run

PathLike = str | os.PathLike[str]
GROUPS = ("file", "dir")
Progress = Callable[[int, int, "RunResult"], None]

RUNS_FLUSH_S = 2.0  # rewrite the runs table at most this often while results arrive (and at the end)
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class RunSpec:
    """One run to ingest: its files (absolute paths) with the content hashes the plan saw."""

    run: str
    name: str
    files: tuple[str, ...]
    hashes: tuple[str, ...]
    sizes: tuple[int, ...]
    engine: str | None = "auto"
    path: str = ""  # the file, or the directory with group="dir" (absolute)


@dataclass
class RunResult:
    """What the work of one run gives back: its staged partitions and its runs-table row, or an error."""

    run: str
    files: tuple[str, ...]
    staged: str | None = None
    row: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass
class Plan:
    specs: list[RunSpec] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (file, why): could not even be hashed
    supersedes: dict[str, list[str]] = field(default_factory=dict)  # new run -> the runs it replaces


@dataclass
class IngestSummary:
    """What an ingest did."""

    store: str
    runs: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (files, error)
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def text(self) -> str:
        """One sentence for the command line."""
        mb = self.bytes / 1e6
        parts = [
            f"ingested {len(self.runs)} run(s) from {self.files} file(s), {mb:.1f} MB, "
            f"in {self.seconds:.1f} s into {self.store}"
        ]
        if self.skipped:
            parts.append(f"skipped {len(self.skipped)} file(s) already in the store")
        if self.superseded:
            parts.append(f"replaced {len(self.superseded)} run(s) whose log grew")
        if self.failed:
            parts.append(f"{len(self.failed)} run(s) failed")
        return "; ".join(parts)


class IngestFailed(LogscopeError):
    """Some runs could not be ingested (``ingest(..., check=True)``, the default). The others are in the
    store all the same; ``summary`` says what was done and ``summary.failed`` what failed and why."""

    def __init__(self, summary: IngestSummary) -> None:
        self.summary = summary
        shown = "; ".join(f"{files}: {error}" for files, error in summary.failed[:3])
        more = f"; and {len(summary.failed) - 3} more" if len(summary.failed) > 3 else ""
        super().__init__(
            f"{len(summary.failed)} run(s) failed: {shown}{more} ({summary.text()}; "
            "ingest(..., check=False) returns the summary instead of raising)"
        )


def _checked(summary: IngestSummary, check: bool) -> IngestSummary:
    if check and summary.failed:
        raise IngestFailed(summary)
    return summary


# -- input files ------------------------------------------------------------------------------------


def expand(paths: Sequence[PathLike]) -> list[str]:
    """Absolute paths of the files to ingest, sorted: files as given, directories walked for their
    ``*.log*`` files (hidden directories skipped), globs (``**`` recursive) expanded."""
    found: set[str] = set()
    for p in paths:
        s = os.fspath(p)
        if s == "-":
            raise LogscopeError("ingest reads files, not standard input")
        if not os.path.exists(s) and _GLOB_CHARS & set(s):
            matches = sorted(glob.glob(s, recursive=True))
            if not matches:
                raise UnreadableInput(f"{s}: no file matches")
            for m in matches:
                found.update(_files_of(m))
        elif os.path.exists(s):
            files = _files_of(s)
            if not files:
                raise UnreadableInput(f"{s}: directory holds no *.log* files")
            found.update(files)
        else:
            raise UnreadableInput(f"{s}: no such file")
    return sorted(found)


def _files_of(path: str) -> list[str]:
    if os.path.isfile(path):
        return [os.path.abspath(path)]
    out: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not layout.is_store(Path(root) / d))
        out.extend(
            os.path.abspath(os.path.join(root, f)) for f in files if ".log" in f and not f.startswith(".")
        )
    return out


# -- the plan ---------------------------------------------------------------------------------------


def plan(
    paths: Sequence[PathLike],
    store: PathLike,
    *,
    engine: str | None = "auto",
    group: str = "file",
    existing: Sequence[dict[str, Any]] | None = None,
) -> Plan:
    """Which runs to parse, which files to skip (already stored) and which stored runs to replace."""
    if group not in GROUPS:
        raise LogscopeError(f"group must be one of {', '.join(GROUPS)}, not {group!r}")
    store_path = Path(store)
    rows = list(existing) if existing is not None else layout.read_runs_rows(store_path)
    out = Plan()
    digests: dict[str, tuple[str, int]] = {}
    for f in expand(paths):
        try:
            digests[f] = layout.file_digest(f)
        except OSError as exc:
            out.failed.append((f, f"cannot be read ({exc.strerror or exc})"))
    files = list(digests)
    groups: dict[str, list[str]] = {}
    if group == "file":
        for f in files:
            groups[f] = [f]
    else:
        for f in files:
            groups.setdefault(os.path.dirname(f), []).append(f)
    stored_hash = {h: str(r["run"]) for r in rows for h in (r.get("content_hashes") or [])}
    stored_runs = {str(r["run"]) for r in rows}
    rows_by_path: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        for f in r.get("files") or []:
            rows_by_path.setdefault(str(f), []).append(r)
    planned: dict[str, str] = {}  # hash -> file, within this ingest
    for key, members in groups.items():
        hashes = [digests[f][0] for f in members]
        if all(h in stored_hash for h in hashes):
            out.skipped.extend(
                (f, f"already in the store (run {stored_hash[h]})")
                for f, h in zip(members, hashes, strict=True)
            )
            continue
        if group == "file" and hashes[0] in planned:
            out.skipped.append((members[0], f"same content as {planned[hashes[0]]}"))
            continue
        name = os.path.basename(key)
        rid = layout.run_id(name, hashes)
        if rid in stored_runs:  # pragma: no cover - the content of every file is stored already
            continue
        for f, h in zip(members, hashes, strict=True):
            planned.setdefault(h, f)
        spec = RunSpec(
            run=rid,
            name=name,
            files=tuple(members),
            hashes=tuple(hashes),
            sizes=tuple(digests[f][1] for f in members),
            engine=engine,
            path=key,
        )
        out.specs.append(spec)
        candidates = {str(r["run"]): r for f in members for r in rows_by_path.get(f, [])}
        replaced = [run for run, r in sorted(candidates.items()) if _covers(spec, r)]
        if replaced:
            out.supersedes[rid] = replaced
    # the biggest runs first: the pool finishes the long ones early, not last
    out.specs.sort(key=lambda s: (-sum(s.sizes), s.run))
    return out


def _covers(spec: RunSpec, row: dict[str, Any]) -> bool:
    """Does the new run hold all of a stored run's content (the same files, maybe grown)?"""
    old_files = list(row.get("files") or [])
    old_hashes = list(row.get("content_hashes") or [])
    old_sizes = list(row.get("sizes") or [])
    if not old_files or not set(old_files) & set(spec.files):
        return False
    new = set(spec.hashes)
    by_path = dict(zip(spec.files, spec.sizes, strict=True))
    for path, h, size in zip(old_files, old_hashes, old_sizes, strict=True):
        if h in new:
            continue
        if path not in by_path or by_path[path] < size:
            return False
        if layout.file_digest(path, limit=size)[0] != h:
            return False
    return True


# -- the work of one run ----------------------------------------------------------------------------


def ingest_one(spec: RunSpec, store: str) -> RunResult:
    """Parse and analyse one run and write its partitions into the store's staging area.

    Runs anywhere that sees the logs and the store (a worker process, a Dask worker): it never touches
    what readers see. Errors come back in the result (one failing log does not stop an ingest).
    """
    t0 = time.perf_counter()
    try:
        from logscope.api import load

        run = load(list(spec.files), spec.engine)
        data, report = analyze(run)
        for f, h in zip(spec.files, spec.hashes, strict=True):
            if layout.file_digest(f)[0] != h:
                raise LogscopeError(f"{f}: changed while it was being ingested; ingest it again later")
        staged = Path(store) / layout.STAGING_DIR / f"{spec.run}.{uuid.uuid4().hex}"
        staged.mkdir(parents=True)
        for kind in sorted({e.kind for e in run.events}):
            d = staged / kind
            d.mkdir()
            # the stored events keep their raw text (the analyses' frames leave it out)
            from logscope.analyses.frames import frame

            table = frame(
                run.events, kind, seq=True, order=data.kind_index.get(kind, ()), timebase=run.timebase()
            )
            layout.write_parquet(table.drop("kind"), d / layout.PART_FILE)
        row = run_row(spec, run, report, data)
    except LogscopeError as exc:
        return RunResult(spec.run, spec.files, error=str(exc), seconds=time.perf_counter() - t0)
    except Exception as exc:  # a bug on one log must not lose the others: reported, not raised
        return RunResult(
            spec.run,
            spec.files,
            error=f"internal error: {type(exc).__name__}: {exc}",
            seconds=time.perf_counter() - t0,
        )
    return RunResult(spec.run, spec.files, staged=str(staged), row=row, seconds=time.perf_counter() - t0)


def analyze(run: Run) -> tuple[RunData, Report]:
    """``run.analyze()``, with the report and the rules sharing one ``RunData``: its frames (the ones
    the partitions are written from) are built once."""
    from logscope.analyses.base import RunData
    from logscope.analyses.report import build_report
    from logscope.digest import run_rules

    data = RunData.of(run)  # with the read statistics ``build_report`` counts lines from
    report = build_report(data)
    report.findings = run_rules(data, report)
    return data, report


def run_row(spec: RunSpec, run: Run, report: Report, data: RunData | None = None) -> dict[str, Any]:
    """The runs-table row of one run: what it is, when, its configuration and headline analyses."""
    import json

    from logscope.analyses.base import RunData
    from logscope.analyses.compare import _contexts  # the context-length estimates ``compare`` uses
    from logscope.analyses.settings import settings_of

    events = run.events
    settings = settings_of(events)
    tb = run.timebase()
    t_first = min((e.t_s for e in events if e.t_s is not None), default=None)
    t_last = max((e.t_s for e in events if e.t_s is not None), default=None)
    model = next(
        (getattr(e, "model", None) for e in events if e.kind == "version" and getattr(e, "model", None)), None
    )
    if model is None:
        for key in ("model", "model_path", "served_model_name"):
            value = settings.raw.get(key)
            if isinstance(value, str) and value not in ("", "None"):
                model = value
                break
    sd, pf, kv, cs, sp = (
        report.stable_decode,
        report.prefill,
        report.kv_pool,
        report.cold_start,
        report.spec_decode,
    )
    severities = [f.severity for f in report.findings]
    contexts = _contexts(data if data is not None else RunData.of(run), report)
    context_source, context_tokens = next(iter(contexts.items()), (None, None))
    return {
        "run": spec.run,
        "name": run_name(run.engine, report.engine_version, spec.path or spec.name),
        "path": spec.path or None,
        "engine": run.engine,
        "engine_version": report.engine_version,
        "model": model,
        "files": list(spec.files),
        "content_hashes": list(spec.hashes),
        "sizes": list(spec.sizes),
        "bytes": sum(spec.sizes),
        "lines": report.lines,
        "events": len(events),
        "unparsed": report.coverage.unparsed,
        "start_time": tb.at(t_first),
        "end_time": tb.at(t_last),
        "ts_source": tb.source,
        "duration_s": t_last,
        "config": json.dumps(settings.values, sort_keys=True, default=str),
        "config_args": json.dumps(settings.raw, sort_keys=True, default=str),
        "max_model_len": settings.int("max_model_len"),
        "tensor_parallel": settings.int("tensor_parallel"),
        "decode_mean_tok_s": sd.mean_tok_s if sd else None,
        "decode_median_tok_s": sd.median_tok_s if sd else None,
        "decode_max_tok_s": sd.max_tok_s if sd else None,
        "decode_running": sd.concurrency if sd else None,
        "decode_per_request_tok_s": sd.per_request_tok_s if sd else None,
        "context_tokens": round(context_tokens, 1) if context_tokens is not None else None,
        "context_source": context_source,
        "prefill_mean_tok_s": pf.mean_tok_s if pf else None,
        "kv_tokens": kv.tokens if kv else None,
        "max_concurrency": kv.max_concurrency if kv else None,
        "cold_start_s": cs.total_s if cs else None,
        "spec_acceptance_rate_pct": sp.acceptance_rate_pct if sp else None,
        "spec_mean_acceptance_length": sp.mean_acceptance_length if sp else None,
        "findings_error": severities.count("error"),
        "findings_warning": severities.count("warning"),
        "findings_info": severities.count("info"),
        "finding_codes": sorted({f.code for f in report.findings}),
        "notes": list(run.stats.notes),
        "report": report.to_json(indent=None),
        "logscope_version": __version__,
    }


def run_name(engine: str | None, version: str | None, path: str) -> str:
    """A run's name in the runs table: engine, version and path (``vllm 0.32.0 /logs/a1.log``): the same
    file name under two directories, or of two engines, gives two names. ``layout.runs_frame`` tells
    apart the runs that still share one (a file rewritten with other content)."""
    return f"{engine or 'unknown-engine'} {version or 'unknown-version'} {path}"


# -- executors: where the work of each run happens --------------------------------------------------


class Executor:
    """Runs ``ingest_one`` over the specs and gives the results as they come (any order).

    ``start`` is called first thing, before the coordinator reads anything (``ProcessExecutor`` forks
    its workers then, while this process has a single thread); ``close`` last."""

    def start(self) -> None:
        pass

    def run(self, specs: list[RunSpec], store: str) -> Iterator[RunResult]:
        for spec in specs:
            yield ingest_one(spec, store)

    def close(self) -> None:
        pass


SerialExecutor = Executor


def _warm_up() -> int:
    """Import what the work needs (in a worker, while the coordinator plans)."""
    import logscope.analyses.compare  # noqa: F401
    import logscope.analyses.report  # noqa: F401
    import logscope.digest  # noqa: F401

    return os.getpid()


class ProcessExecutor(Executor):
    """The work over ``jobs`` local processes.

    Forked when this process has one thread (the command line: nothing has imported polars yet, which
    starts threads), so the workers start at once with what is already imported; spawned otherwise
    (a fork does not carry polars' threads over, and a process that has them must not be forked),
    without running the caller's main module again (``logscope.pools``).
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.method = ""
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        from logscope.pools import process_pool, start_method

        self.method = start_method()
        self._pool = process_pool(self.jobs, self.method)  # all workers started now (a fork: before polars)
        for _ in range(self.jobs):
            self._pool.submit(_warm_up)

    def run(self, specs: list[RunSpec], store: str) -> Iterator[RunResult]:
        from concurrent.futures import as_completed

        if self._pool is None:
            self.start()
        assert self._pool is not None
        futures = {self._pool.submit(ingest_one, s, store): s for s in specs}
        try:
            for fut in as_completed(futures):
                spec = futures[fut]
                try:
                    yield fut.result()
                except Exception as exc:  # the worker process died (killed, out of memory)
                    yield RunResult(spec.run, spec.files, error=f"worker failed: {type(exc).__name__}: {exc}")
        finally:
            for f in futures:
                f.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskExecutor(Executor):
    """The work as Dask tasks on ``client``'s cluster (its workers must see the logs and the store)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, specs: list[RunSpec], store: str) -> Iterator[RunResult]:
        from distributed import as_completed

        if not specs:
            return
        token = uuid.uuid4().hex[:8]
        futures = [
            self.client.submit(ingest_one, s, store, key=f"logscope-ingest-{s.run}-{token}", pure=False)
            for s in specs
        ]
        by_key = {f.key: s for f, s in zip(futures, specs, strict=True)}
        try:
            # results come with their futures, gathered in batches (not one round trip each)
            done = as_completed(futures, with_results=True, raise_errors=False)  # type: ignore[no-untyped-call]
            for fut, result in done:
                spec = by_key[fut.key]
                if isinstance(result, RunResult):
                    yield result
                else:  # the task failed on the worker (or the worker died): ``result`` is the exception
                    yield RunResult(
                        spec.run, spec.files, error=f"dask task failed: {type(result).__name__}: {result}"
                    )
        finally:
            self.client.cancel([f for f in futures if not f.done()])


# -- the coordinator --------------------------------------------------------------------------------


def run_ingest(
    paths: Sequence[PathLike],
    out: PathLike,
    executor: Executor,
    *,
    engine: str | None = "auto",
    group: str = "file",
    progress: Progress | None = None,
) -> IngestSummary:
    """Plan, run the work with ``executor``, and commit each finished run (see the module's doc)."""
    t0 = time.perf_counter()
    store = Path(out).absolute()
    layout.create_store(store)
    summary = IngestSummary(store=str(out))
    executor.start()  # before the lock (a forked worker must not hold it) and before polars is imported
    with contextlib.ExitStack() as stack:
        stack.callback(executor.close)  # also when the lock or the plan fails
        stack.enter_context(layout.writer_lock(store))
        rows = {str(r["run"]): r for r in layout.read_runs_rows(store)}
        _collect_garbage(store, set(rows))
        p = plan(paths, store, engine=engine, group=group, existing=list(rows.values()))
        summary.skipped = p.skipped
        summary.failed = list(p.failed)
        summary.files = sum(len(s.files) for s in p.specs)
        summary.bytes = sum(sum(s.sizes) for s in p.specs)
        doomed: list[str] = []  # replaced runs: their partitions go once the runs table no longer lists them
        dirty = False
        last_flush = time.monotonic()
        try:
            for done, res in enumerate(executor.run(p.specs, str(store)), start=1):
                if res.error is not None or res.staged is None or res.row is None:
                    summary.failed.append((", ".join(res.files), res.error or "no result"))
                else:
                    _publish_run(store, Path(res.staged), res.run)
                    rows[res.run] = res.row
                    summary.runs.append(res.run)
                    for old in p.supersedes.get(res.run, []):
                        if rows.pop(old, None) is not None:
                            doomed.append(old)
                            summary.superseded.append(old)
                    dirty = True
                    if time.monotonic() - last_flush >= RUNS_FLUSH_S:
                        layout.write_runs(store, list(rows.values()))
                        _remove_runs(store, doomed)
                        dirty, last_flush = False, time.monotonic()
                if progress is not None:
                    progress(done, len(p.specs), res)
        finally:
            executor.close()  # tasks still running end before their staging area is cleared
            if dirty:
                layout.write_runs(store, list(rows.values()))
            _remove_runs(store, doomed)
            shutil.rmtree(store / layout.STAGING_DIR, ignore_errors=True)
    summary.runs.sort()
    summary.seconds = time.perf_counter() - t0
    return summary


def _publish_run(store: Path, staged: Path, run: str) -> None:
    for kind_dir in sorted(staged.iterdir()):
        layout.publish(store, kind_dir, kind_dir.name, run)
    staged.rmdir()


def _remove_runs(store: Path, runs: list[str]) -> None:
    if not runs:
        return
    gone = set(runs)
    for (_kind, run), f in layout.partitions(store).items():
        if run in gone:
            layout.remove_tree(f.parent)
    runs.clear()


def _collect_garbage(store: Path, committed: set[str]) -> None:
    """Clear what a killed ingest left: its staging area and the partitions of runs never committed."""
    shutil.rmtree(store / layout.STAGING_DIR, ignore_errors=True)
    for (_kind, run), f in layout.partitions(store).items():
        if run not in committed:
            layout.remove_tree(f.parent)


def ingest(
    paths: Sequence[PathLike] | PathLike,
    out: PathLike,
    *,
    jobs: int = 1,
    engine: str | None = "auto",
    group: str = "file",
    progress: Progress | None = None,
    check: bool = True,
) -> IngestSummary:
    """Parse ``paths`` (files, directories, globs, ``.gz``) into the store ``out``, with ``jobs`` local
    processes. ``group="dir"`` makes the files of one directory one run (ranks, nodes, rotated parts);
    by default each file is a run. When a run fails, the others are stored all the same, then
    ``IngestFailed`` is raised (with ``check=False`` the summary is returned: see its ``failed``).
    Works from a script without a ``__main__`` guard and from a notebook (``ProcessExecutor``)."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    executor = Executor() if jobs <= 1 else ProcessExecutor(jobs)
    return _checked(run_ingest(items, out, executor, engine=engine, group=group, progress=progress), check)


def ingest_dask(
    paths: Sequence[PathLike] | PathLike,
    out: PathLike,
    *,
    scheduler: str | None = None,
    client: Any = None,
    engine: str | None = "auto",
    group: str = "file",
    progress: Progress | None = None,
    connect_timeout_s: float = 30.0,
    check: bool = True,
) -> IngestSummary:
    """``ingest`` with the work of each run as a Dask task: on ``client``, or on a client connected to
    ``scheduler`` (an address such as ``tcp://10.0.0.5:8786``). The store is the same as ``ingest``'s.

    The workers must see the logs and the store at the same paths as this process (a shared file
    system); they write the runs' partitions into the store's staging area, this process publishes them.
    Failed runs: as ``ingest`` (``IngestFailed`` unless ``check=False``).
    """
    try:
        import distributed
    except ImportError:
        raise LogscopeError("the Dask path needs the dask extra: pip install 'logscope[dask]'") from None
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    own = client is None
    if own:
        if not scheduler:
            raise LogscopeError("ingest_dask needs a scheduler address or a distributed.Client")
        try:
            client = distributed.Client(scheduler, timeout=f"{connect_timeout_s}s")  # type: ignore[no-untyped-call]
        except OSError as exc:
            raise LogscopeError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from exc
    try:
        summary = run_ingest(items, out, DaskExecutor(client), engine=engine, group=group, progress=progress)
    finally:
        if own:
            client.close()
    return _checked(summary, check)


__all__ = [
    "DaskExecutor",
    "Executor",
    "IngestFailed",
    "IngestSummary",
    "Plan",
    "ProcessExecutor",
    "RunResult",
    "RunSpec",
    "SerialExecutor",
    "analyze",
    "expand",
    "ingest",
    "ingest_dask",
    "ingest_one",
    "plan",
    "run_ingest",
    "run_row",
]
