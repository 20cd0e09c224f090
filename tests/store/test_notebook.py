"""The notebook guide runs as written: every ``python`` block of ``docs/notebook.md``, in order, in one
namespace, from a directory with ``fixtures/`` in it (as a reader's notebook would)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def blocks(path: Path, lang: str) -> list[str]:
    return [body for kind, body in BLOCK.findall(path.read_text(encoding="utf-8")) if kind == lang]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def test_notebook_runs_as_written(workdir: Path) -> None:
    cells = blocks(ROOT / "docs" / "notebook.md", "python")
    assert len(cells) >= 8
    ns: dict[str, object] = {"__name__": "__notebook__"}
    for i, cell in enumerate(cells, start=1):
        try:
            exec(compile(cell, f"docs/notebook.md cell {i}", "exec"), ns)
        except Exception as exc:  # name the cell that broke
            raise AssertionError(
                f"cell {i} of docs/notebook.md failed: {type(exc).__name__}: {exc}\n{cell}"
            ) from exc
    assert (workdir / "throughput.png").stat().st_size > 10_000
    # the figure is throughput over the wall clock (ts), its date's source said on the axis
    import numpy as np

    ax = ns["ax"]
    xs = np.asarray(ax.lines[0].get_xdata())  # type: ignore[attr-defined]
    assert np.issubdtype(xs.dtype, np.datetime64) and len(xs) == ns["tp"].height  # type: ignore[attr-defined]
    assert "date from: mtime" in ax.get_xlabel()  # type: ignore[attr-defined]
    assert (workdir / "store" / "runs.parquet").is_file()
    assert os.path.isdir(workdir / "store" / "events")


def test_store_guide_polars_and_duckdb_agree(workdir: Path) -> None:
    import math
    import shlex

    from click.testing import CliRunner

    from logscope.cli import main

    doc = ROOT / "docs" / "store.md"
    found = [(kind, body) for kind, body in BLOCK.findall(doc.read_text(encoding="utf-8"))]
    commands = [
        ln[2:] for kind, body in found if kind == "console" for ln in body.splitlines() if ln.startswith("$ ")
    ]
    assert commands and all(c.startswith("logscope ") for c in commands)
    for cmd in commands:
        r = CliRunner().invoke(main, shlex.split(cmd)[1:])
        assert r.exit_code == 0, (cmd, r.output)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    ns: dict[str, object] = {"__name__": "__store_guide__"}
    pairs = 0
    for kind, body in found:
        if kind == "python":
            ns.pop("result", None)
            exec(compile(body, "docs/store.md", "exec"), ns)
        elif kind == "sql":
            result = ns.get("result")
            assert result is not None, f"no polars result before this SQL:\n{body}"
            want = result.rows()  # type: ignore[attr-defined]
            got = con.sql(body).fetchall()
            assert len(got) == len(want) and len(got) > 0, (body, got, want)
            for g, w in zip(got, want, strict=True):
                assert len(g) == len(w)
                for a, b in zip(g, w, strict=True):
                    if isinstance(a, float) or isinstance(b, float):
                        assert math.isclose(float(a), float(b), rel_tol=1e-9), (body, g, w)
                    else:
                        assert a == b, (body, g, w)
            pairs += 1
    assert pairs >= 4
