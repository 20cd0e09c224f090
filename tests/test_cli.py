"""The command line, through click's CliRunner: outputs, exit codes, and junk input."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from click.testing import CliRunner

from logscope.cli import main
from tests.conftest import FIXTURES

LOG = FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log"


def test_events_jsonl_kinds_and_csv(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["events", str(LOG), "--kind", "throughput"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert len(rows) == 12 and {x["kind"] for x in rows} == {"throughput"}
    assert "raw" not in rows[0]
    out = tmp_path / "e.csv"
    r = CliRunner().invoke(main, ["events", str(LOG), "--format", "csv", "-o", str(out)])
    assert r.exit_code == 0 and out.read_text().startswith("kind,")
    out = tmp_path / "e.parquet"
    r = CliRunner().invoke(main, ["events", str(LOG), "--format", "parquet", "-o", str(out)])
    assert r.exit_code == 0 and out.stat().st_size > 0


def test_unparsed_only_on_request() -> None:
    r = CliRunner().invoke(main, ["events", str(LOG)])
    assert '"unparsed"' not in r.output
    r = CliRunner().invoke(main, ["events", str(LOG), "--include-unparsed"])
    assert "unparsed" in {json.loads(x)["kind"] for x in r.output.splitlines()}


def test_coverage_and_analyze() -> None:
    r = CliRunner().invoke(main, ["coverage", str(LOG)])
    assert r.exit_code == 0 and "throughput" in r.output
    r = CliRunner().invoke(main, ["analyze", str(LOG), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["engine"] == "vllm"


def test_junk_inputs_exit_cleanly(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(os.urandom(200_000))
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(LOG.read_bytes())[:3000])
    for path, code in [(empty, 3), (binary, 3), (tmp_path / "missing.log", 3), (cut, 0)]:
        r = runner.invoke(main, ["events", str(path)])
        assert r.exit_code == code, (path, r.output)
        assert "Traceback" not in r.output
        if code == 3:
            assert r.output.strip().startswith("logscope: ") and r.output.count("\n") == 1


def test_events_jobs_output_is_byte_identical() -> None:
    logs = sorted(str(p) for p in (FIXTURES / "vllm/corpus").glob("gen-*.log"))
    serial = CliRunner().invoke(main, ["events", *logs, "--include-unparsed"])
    parallel = CliRunner().invoke(main, ["events", *logs, "--include-unparsed", "--jobs", "2"])
    assert serial.exit_code == parallel.exit_code == 0
    assert serial.output == parallel.output and serial.output.count("\n") > 1000


def test_reader_notes_are_in_every_report_format(tmp_path: Path) -> None:
    # a real vLLM 0.32 log, gzipped and cut: the reader reads what came before the cut and says so
    cut = tmp_path / "cut.log.gz"
    gz = gzip.compress(LOG.read_bytes())
    cut.write_bytes(gz[: len(gz) * 9 // 10])
    r = CliRunner().invoke(main, ["analyze", str(cut), "--format", "json"])
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["notes"]
    assert len(notes) == 1 and "gzip stream is truncated" in notes[0]
    for fmt in ("text", "markdown", "html"):
        r = CliRunner().invoke(main, ["analyze", str(cut), "--format", fmt])
        assert r.exit_code == 0 and "gzip stream is truncated" in " ".join(r.stdout.split()), fmt
