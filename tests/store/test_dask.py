"""The Dask path: the per-run work as tasks on a 2-worker LocalCluster (separate processes) writes the
store that the local ingest writes, byte for byte, from the library and from the command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscope.cli import main
from logscope.store import ingest, ingest_dask, open_store
from tests.store.helpers import log_set, store_files, tree_digest

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as c:
        yield c


def test_dask_store_is_byte_identical_to_the_local_one(tmp_path: Path, cluster: object) -> None:
    logs = log_set(tmp_path / "logs", 8)
    local = tmp_path / "local"
    ingest([logs], local, jobs=2)
    with distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        with distributed.get_task_stream(client) as tasks:
            summary = ingest_dask([logs], tmp_path / "dask", client=client)
    assert len(summary.runs) == 8 and not summary.failed
    assert len({t["worker"] for t in tasks.data}) == 2, "both worker processes took runs"
    assert store_files(tmp_path / "dask") == store_files(local)
    assert tree_digest(tmp_path / "dask") == tree_digest(local)
    assert open_store(tmp_path / "dask").run_ids() == open_store(local).run_ids()


def test_cli_dask_scheduler_is_incremental_too(tmp_path: Path, cluster: object) -> None:
    logs = log_set(tmp_path / "logs", 5)
    store = tmp_path / "store"
    address = cluster.scheduler_address  # type: ignore[attr-defined]
    r = CliRunner().invoke(main, ["ingest", str(logs), "--out", str(store), "--dask-scheduler", address])
    assert r.exit_code == 0, r.output
    assert "ingested 5 run(s)" in r.output
    r = CliRunner().invoke(main, ["ingest", str(logs), "--out", str(store), "--dask-scheduler", address])
    assert r.exit_code == 0 and "ingested 0 run(s)" in r.output and "skipped 5" in r.output
    reference = tmp_path / "reference"
    ingest([logs], reference)
    assert tree_digest(store) == tree_digest(reference)


def test_unreachable_scheduler_is_one_sentence(tmp_path: Path) -> None:
    from logscope.errors import LogscopeError

    with pytest.raises(LogscopeError, match="Dask scheduler"):
        ingest_dask([tmp_path], tmp_path / "store", scheduler="tcp://127.0.0.1:9", connect_timeout_s=1)
