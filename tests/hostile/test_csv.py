"""CSV export: no cell a spreadsheet would run as a formula, whatever text the log held.

A log line is attacker-controlled (a request id, a prompt, a model path) and CSV is opened in
spreadsheets, which run a cell that starts with ``=``, ``+``, ``-``, ``@``, tab or CR (OWASP's rule)."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from logscope.api import load
from logscope.cli import main
from logscope.events import Event
from logscope.render.tables import write_table
from tests.conftest import FIXTURES
from tests.hostile.payloads import FORMULAS

RISKY = re.compile(r"[=+\-@\t\r]")
NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
LOGS = [
    FIXTURES / "case/vllm-64k.log",
    FIXTURES / "case/sglang-64k.log",
    FIXTURES / "case/vllm-64k.client.txt",
    FIXTURES / "sglang/corpus/gen-f1_startup_fail_no_torchvision.log",
]


def _cells(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _executable(cell: str) -> bool:
    """Would a spreadsheet read this cell as a formula? (a plain number is read as a number)"""
    return bool(RISKY.match(cell)) and not NUMBER.fullmatch(cell)


def _one_of_each_kind() -> list[Event]:
    seen: dict[str, Event] = {}
    for log in LOGS:
        for e in load(log).events:
            seen.setdefault(e.kind, e)
    assert len(seen) >= 20
    return list(seen.values())


def _with_payload(e: Event, payload: str) -> tuple[Event, list[str]]:
    """``e`` with ``payload`` in every field that takes text (the names of those fields)."""
    data = e.model_dump()
    fields = []
    for name in type(e).model_fields:
        try:
            type(e).model_validate({**data, name: payload})
        except ValidationError:
            continue
        data[name] = payload
        fields.append(name)
    return type(e).model_validate(data), fields


@pytest.mark.parametrize("payload", FORMULAS)
def test_no_formula_cell_from_any_text_field(tmp_path: Path, payload: str) -> None:
    events, touched = [], set()
    for e in _one_of_each_kind():
        hostile, fields = _with_payload(e, payload)
        events.append(hostile)
        touched.update(fields)
    assert {"raw", "file", "time", "process", "level", "message", "text", "exception"} <= touched
    out = tmp_path / "e.csv"
    write_table(events, "csv", str(out), with_raw=True)
    rows = _cells(out.read_bytes().decode("utf-8"))
    assert len(rows) == len(events)
    hits = 0
    for row in rows:
        for name, cell in row.items():
            assert not _executable(cell), (name, cell)
            hits += cell == "'" + payload
    assert hits >= len(touched)  # the payload is there, made harmless, not dropped


def test_numbers_stay_numbers(tmp_path: Path) -> None:
    """Number columns are written as numbers, negative ones too (no quote put before them)."""
    e = next(e for e in load(LOGS[0]).events if e.kind == "throughput")
    neg = e.model_copy(update={"t_s": -1.5, "gen_tok_s": -0.25, "running": -3})
    out = tmp_path / "e.csv"
    write_table([e, neg], "csv", str(out))
    row = _cells(out.read_bytes().decode("utf-8"))[1]
    assert (row["t_s"], row["gen_tok_s"], row["running"]) == ("-1.5", "-0.25", "-3")


def test_cli_csv_from_a_hostile_log(tmp_path: Path) -> None:
    """End to end: payloads in a warning's message, an unparsed line and the file's own name."""
    lines = [
        "INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.32.0",
        *(f"WARNING 12-03 10:00:{i + 1:02d} [serving.py:{i}] {p}" for i, p in enumerate(FORMULAS)),
        *FORMULAS,
    ]
    (tmp_path / "=cmd.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(
            main, ["events", "=cmd.log", "--format", "csv", "--include-unparsed", "--with-raw"]
        )
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    rows = _cells(r.output)
    assert sum(row["kind"] == "warning" for row in rows) == len(FORMULAS)
    assert rows[0]["file"] == "'=cmd.log"
    for row in rows:
        for name, cell in row.items():
            assert not _executable(cell), (name, cell)
