"""The Parquet store: what ``ingest`` writes is what ``load`` gives, incremental by content, the same
bytes however the work is spread, and never half-visible to readers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.cli import main
from logscope.errors import LogscopeError
from logscope.store import ingest, layout, open_store
from logscope.store.ingest import IngestFailed, expand
from tests.conftest import FIXTURES, ROOT
from tests.store.helpers import CASE, SERVER_LOGS, log_set, tree_digest


@pytest.fixture(scope="module")
def case_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("case") / "store"
    summary = ingest([CASE], store)
    assert len(summary.runs) == 4 and not summary.failed
    return store


def test_runs_table_holds_the_headline_analyses(case_store: Path) -> None:
    store = open_store(case_store)
    runs = store.runs.collect()
    assert runs.height == 4 and list(runs.columns) == list(layout.RUNS_COLUMNS)
    for path in SERVER_LOGS:
        run = logscope.load(str(path))
        report = run.analyze()
        row = runs.filter(pl.col("files").list.first() == str(path.absolute())).row(0, named=True)
        assert row["run"].startswith(path.stem + "-")
        assert row["engine"] == run.engine and row["engine_version"] == report.engine_version
        assert row["decode_mean_tok_s"] == report.stable_decode.mean_tok_s
        assert row["decode_running"] == report.stable_decode.concurrency
        assert row["events"] == len(run.events) and row["lines"] == run.stats.lines
        assert row["finding_codes"] == sorted({f.code for f in report.findings})
        assert row["findings_warning"] == sum(f.severity == "warning" for f in report.findings)
        assert row["content_hashes"] == [layout.file_digest(path)[0]] and row["sizes"] == [
            path.stat().st_size
        ]
        assert row["start_time"] is not None and row["duration_s"] > 0


def test_events_are_the_frames_of_load(case_store: Path) -> None:
    store = open_store(case_store)
    runs = store.runs.select("run", pl.col("files").list.first().alias("file")).collect()
    for run_id, file in runs.iter_rows():
        run = logscope.load(file)
        for kind in ("throughput", "decode_batch", "config", "warning", "spec_decode", "unparsed"):
            got = store[kind].filter(pl.col("run") == run_id).sort("seq").collect()
            assert got.columns[:3] == ["run", "kind", "seq"]
            want = run.frame(kind)
            assert got.drop("run", "seq").equals(want), (run_id, kind)


def test_cross_run_question_is_one_query(case_store: Path) -> None:
    store = open_store(case_store)
    by_engine = (
        store["throughput"]
        .select("run", "gen_tok_s")
        .join(store.runs.select("run", "engine", "engine_version"), on="run")
        .group_by("engine", "engine_version")
        .agg(pl.col("gen_tok_s").max().alias("peak"), pl.len().alias("n"))
        .collect()
    )
    assert by_engine.height == 1 and by_engine["engine"][0] == "vllm" and by_engine["n"][0] > 0
    assert set(store.kinds()) >= {"throughput", "decode_batch", "prefill_batch", "config"}
    absent = next(k for k in ("kv_capacity", "retract", "preemption", "prefix_cache") if k not in store)
    empty = store[absent].collect()  # no run has one: empty, with the columns
    assert empty.height == 0 and empty.columns == list(layout.event_table_schema(absent))


def test_incremental_by_content_hash(tmp_path: Path, case_store: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(case_store, store)
    before = tree_digest(store)
    again = ingest([CASE], store)
    assert again.runs == [] and len(again.skipped) == 4 and "already in the store" in again.skipped[0][1]
    copy = tmp_path / "copy-of-vllm.log"
    shutil.copyfile(CASE / "vllm-64k.log", copy)
    same = ingest([copy], store)
    assert same.runs == [] and "already in the store" in same.skipped[0][1]
    assert tree_digest(store) == before


def test_a_grown_log_replaces_its_run_and_a_rewritten_one_is_a_new_run(tmp_path: Path) -> None:
    lines = (CASE / "vllm-200k.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_bytes(b"".join(lines[:200]))
    store = tmp_path / "store"
    first = ingest([log], store).runs
    log.write_bytes(b"".join(lines))  # the server wrote more
    grown = ingest([log], store)
    assert grown.superseded == first and len(grown.runs) == 1
    s = open_store(store)
    assert s.run_ids() == grown.runs
    assert {r for _k, r in layout.partitions(store)} == set(grown.runs), "the old run's partitions are gone"
    assert s["throughput"].collect().height == logscope.load(str(log)).counts()["throughput"]
    log.write_bytes(b"".join(lines[:100]) + b"a different ending\n")  # not a continuation
    other = ingest([log], store)
    assert other.superseded == [] and len(open_store(store).run_ids()) == 2


def test_same_content_under_two_names_is_one_run(tmp_path: Path) -> None:
    for name in ("a.log", "b.log"):
        shutil.copyfile(CASE / "sglang-64k.log", tmp_path / name)
    summary = ingest([tmp_path / "a.log", tmp_path / "b.log"], tmp_path / "store")
    assert len(summary.runs) == 1 and summary.skipped[0][1].startswith("same content as")


def test_group_dir_makes_one_run_of_a_directory(tmp_path: Path) -> None:
    node = tmp_path / "logs" / "node-a"
    node.mkdir(parents=True)
    for p in SERVER_LOGS[2:]:
        shutil.copyfile(p, node / p.name)
    summary = ingest([tmp_path / "logs"], tmp_path / "store", group="dir")
    assert len(summary.runs) == 1 and summary.runs[0].startswith("node-a-")
    row = open_store(tmp_path / "store").runs.collect().row(0, named=True)
    assert len(row["files"]) == 2
    merged = logscope.load([str(node / p.name) for p in SERVER_LOGS[2:]])
    assert row["events"] == len(merged.events)


def test_paths_files_directories_globs_and_gz(tmp_path: Path) -> None:
    import gzip

    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "x.log.gz").write_bytes(gzip.compress((CASE / "vllm-64k.log").read_bytes()))
    (tmp_path / "d" / "notes.txt").write_text("not a log")
    (tmp_path / "d" / ".hidden").mkdir()
    (tmp_path / "d" / ".hidden" / "y.log").write_text("hidden")
    got = expand([tmp_path / "d", str(CASE / "vllm-*.log"), CASE / "sglang-64k.client.txt"])
    assert got == sorted(got) and all(os.path.isabs(p) for p in got)
    assert sorted(os.path.basename(p) for p in got) == [
        "sglang-64k.client.txt",
        "vllm-200k.log",
        "vllm-64k.log",
        "x.log.gz",
    ]
    summary = ingest([tmp_path / "d"], tmp_path / "store")
    row = open_store(tmp_path / "store").runs.collect().row(0, named=True)
    assert summary.runs == [row["run"]] and row["run"].startswith("x-") and row["engine"] == "vllm"
    with pytest.raises(LogscopeError, match="no file matches"):
        expand([str(tmp_path / "nothing-*.log")])


def test_jobs_and_increments_give_the_same_bytes(tmp_path: Path) -> None:
    logs = log_set(tmp_path / "logs", 8)
    files = sorted(logs.iterdir())
    one, two, steps = tmp_path / "one", tmp_path / "two", tmp_path / "steps"
    assert len(ingest([logs], one, jobs=1).runs) == 8
    assert len(ingest([logs], two, jobs=2).runs) == 8
    ingest(files[:3], steps)
    ingest(files[5:], steps)
    ingest([logs], steps)
    assert tree_digest(one) == tree_digest(two) == tree_digest(steps)
    assert not (one / layout.STAGING_DIR).exists()


def test_a_failing_run_leaves_nothing_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = layout.write_parquet

    def flaky(df: pl.DataFrame, path: Path) -> None:
        calls["n"] += 1
        if calls["n"] == 3:  # the first run dies after two of its partitions were written
            path.write_bytes(b"PAR1 half a file")
            raise OSError(28, "No space left on device")
        real(df, path)

    monkeypatch.setattr(layout, "write_parquet", flaky)
    store = tmp_path / "store"
    with pytest.raises(IngestFailed, match="1 run.s. failed: .*No space left") as raised:
        ingest(SERVER_LOGS[:2], store)
    summary = raised.value.summary
    assert len(summary.failed) == 1 and "No space left" in summary.failed[0][1] and len(summary.runs) == 1
    s = open_store(store)
    assert s.run_ids() == summary.runs
    assert {r for _k, r in layout.partitions(store)} == set(summary.runs)
    assert not (store / layout.STAGING_DIR).exists()
    monkeypatch.setattr(layout, "write_parquet", real)
    retry = ingest(SERVER_LOGS[:2], store)
    assert len(retry.runs) == 1 and len(open_store(store).run_ids()) == 2


def test_leftovers_of_a_killed_ingest_are_invisible_then_cleared(tmp_path: Path, case_store: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(case_store, store)
    clean = tree_digest(store)
    # what a kill can leave: a half-written staged file, and partitions of a run not committed yet
    staged = store / layout.STAGING_DIR / "r-123.abc" / "throughput"
    staged.mkdir(parents=True)
    (staged / layout.PART_FILE).write_bytes(b"PAR1 half")
    orphan = layout.partition_dir(store, "throughput", "orphan-000000000000")
    orphan.mkdir(parents=True)
    layout.write_parquet(pl.DataFrame({"seq": [0]}), orphan / layout.PART_FILE)
    s = open_store(store)
    assert "orphan-000000000000" not in s["throughput"].select("run").unique().collect()["run"].to_list()
    assert ingest([CASE], store).runs == []
    assert tree_digest(store) == clean


def test_a_killed_ingest_process_never_shows_a_partial_partition(tmp_path: Path) -> None:
    logs = log_set(tmp_path / "logs", 24)
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "logscope", "ingest", str(logs), "--out", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not layout.partitions(store):
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # every partition a reader can find is a whole Parquet file; the runs listed have all theirs
    for f in layout.partitions(store).values():
        pl.read_parquet(f)
    s = open_store(store)
    for kind in s.kinds():
        s[kind].collect()
    finished = ingest([logs], store)
    assert not finished.failed and len(open_store(store).run_ids()) == 24
    reference = tmp_path / "reference"
    ingest([logs], reference)
    assert tree_digest(store) == tree_digest(reference)


def test_a_store_is_written_by_one_ingest_at_a_time(tmp_path: Path) -> None:
    store = tmp_path / "store"
    layout.create_store(store)
    with layout.writer_lock(store), pytest.raises(LogscopeError, match="another ingest"):
        ingest([CASE / "vllm-64k.log"], store)


def test_older_partitions_read_with_newer_columns(tmp_path: Path, case_store: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(case_store, store)
    (kind, run), f = next((k, f) for k, f in layout.partitions(store).items() if k[0] == "throughput")
    old = pl.read_parquet(f).drop("mm_cache_hit_pct")  # as if written before the field existed
    layout.write_parquet(old, f)
    got = open_store(store)["throughput"].filter(pl.col("run") == run).collect()
    assert got.height == old.height and got["mm_cache_hit_pct"].null_count() == got.height


def test_open_store_errors(tmp_path: Path, case_store: Path) -> None:
    with pytest.raises(LogscopeError, match="no such store"):
        open_store(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(LogscopeError, match="not a logscope store"):
        open_store(tmp_path / "plain")
    with pytest.raises(LogscopeError, match="no event kind"):
        open_store(case_store).events("nonsense")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file.txt").write_text("x")
    with pytest.raises(LogscopeError, match="neither empty nor a logscope store"):
        ingest([CASE / "vllm-64k.log"], tmp_path / "busy")
    assert repr(open_store(case_store)).startswith("Store(")
    assert logscope.open_store(case_store).run_ids() == open_store(case_store).run_ids()


def test_cli_ingest(tmp_path: Path) -> None:
    store = tmp_path / "store"
    r = CliRunner().invoke(main, ["ingest", str(CASE), "--out", str(store), "--jobs", "2"])
    assert r.exit_code == 0, r.output
    assert "ingested 4 run(s) from 4 file(s)" in r.output
    r = CliRunner().invoke(main, ["ingest", str(CASE / "vllm-64k.log"), "--out", str(store)])
    assert r.exit_code == 0 and "ingested 0 run(s)" in r.output and "skipped 1 file(s)" in r.output
    r = CliRunner().invoke(main, ["ingest", str(tmp_path / "nope.log"), "--out", str(store)])
    assert r.exit_code == 3 and "no such file" in r.output
    r = CliRunner().invoke(
        main, ["ingest", str(CASE), "--out", str(store), "--jobs", "2", "--dask-scheduler", "x:1"]
    )
    assert r.exit_code == 3 and "exclude each other" in r.output
    bad = tmp_path / "empty.log"
    bad.write_bytes(b"")
    r = CliRunner().invoke(main, ["ingest", str(bad), "--out", str(store)])
    assert r.exit_code == 1 and "failed" in r.output and "empty" in r.output


def test_benchmark_generator_keeps_formats(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import ingest_bench
    finally:
        sys.path.pop(0)
    n, size = ingest_bench.make_logs(tmp_path / "logs", 6)
    assert n == 6 and size > 0
    made = sorted((tmp_path / "logs").glob("*.log"))
    template = FIXTURES / "vllm/corpus" / made[0].name.split("-", 1)[1]
    a, b = logscope.load(str(template)), logscope.load(str(made[0]))
    assert a.counts() == b.counts() and made[0].read_bytes() != template.read_bytes()


def test_workers_fork_before_polars_starts_threads_else_spawn(tmp_path: Path) -> None:
    import sys as _sys

    from logscope.store.ingest import ProcessExecutor

    code = (
        "import sys, logscope.cli, logscope.store\n"
        "e = sys.modules['logscope.store.ingest'].ProcessExecutor(2)\n"
        "e.start(); print(e.method, 'polars' in sys.modules); e.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    if _sys.platform.startswith("linux"):
        assert out.split() == ["fork", "False"], (
            "the command line must fork its workers before importing polars"
        )
    here = ProcessExecutor(2)  # this process has polars' threads: spawn
    here.start()
    here.close()
    assert here.method == "spawn"
    # the command line's own path (forked workers) writes what one process writes
    logs = log_set(tmp_path / "logs", 4)
    cmd = [
        sys.executable,
        "-m",
        "logscope",
        "ingest",
        str(logs),
        "--out",
        str(tmp_path / "cli"),
        "--jobs",
        "2",
    ]
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    ingest([logs], tmp_path / "one")
    assert tree_digest(tmp_path / "cli") == tree_digest(tmp_path / "one")


def test_a_script_without_main_guard_ingests_with_workers_after_polars(tmp_path: Path) -> None:
    """Spawned workers used to import the unguarded script again: every run failed (BrokenProcessPool)
    and nothing was raised. Now every run is ingested; a failing run raises ``IngestFailed``."""
    script = tmp_path / "notes.py"
    script.write_text(
        "import sys, logscope\n"
        "from logscope.store import ingest\n"
        f"logscope.load({str(CASE / 'vllm-64k.log')!r}).frame('throughput')  # polars' threads exist now\n"
        f"s = ingest([{str(CASE)!r}], {str(tmp_path / 'store')!r}, jobs=2)\n"
        "print(len(s.runs), len(s.failed))\n"
        f"ingest([{str(tmp_path / 'empty.log')!r}], {str(tmp_path / 'store')!r}, jobs=2)\n"
    )
    (tmp_path / "empty.log").write_bytes(b"")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.stdout.split() == ["4", "0"], r.stderr
    assert r.returncode == 1 and "IngestFailed: 1 run(s) failed" in r.stderr and "empty" in r.stderr


def test_an_unreadable_file_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = layout.file_digest
    bad = str((CASE / "vllm-64k.log").absolute())

    def digest(path: str | os.PathLike[str], limit: int | None = None) -> tuple[str, int]:
        if os.fspath(path) == bad:
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(layout, "file_digest", digest)
    summary = ingest([CASE], tmp_path / "store", check=False)
    assert summary.failed == [(bad, "cannot be read (Permission denied)")] and len(summary.runs) == 3


def test_ingest_progress_bar_counts_runs_and_failures() -> None:
    import io
    import re

    from logscope.render.progress import RunsProgress
    from logscope.store.ingest import RunResult

    out = io.StringIO()
    with RunsProgress(out) as bar:
        bar(1, 2, RunResult("r1", ("a.log",), seconds=1.25))
        bar(2, 2, RunResult("r2", ("b.log",), error="empty"))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "1/2" in text and "r1 (1.2 s)" in text and "2/2" in text and "r2 (failed), 1 failed" in text
