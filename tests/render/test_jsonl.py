"""``logscope events --format jsonl``: each line parses to the event's ``model_dump()``, on every
fixture event and on the odd values real lines can carry (nan, huge ints, non-ASCII, long lines)."""

from __future__ import annotations

import io
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from logscope.api import iter_events
from logscope.cli import main
from logscope.events import Event
from logscope.parsers.framing import MAX_LINE
from logscope.render.jsonl import _json_line, event_dict, event_line, write_jsonl
from tests.conftest import FIXTURES


def _strict(line: bytes) -> Any:
    """The line as JSON, refusing what ``json.loads`` takes beyond the standard (NaN, Infinity)."""
    assert line.endswith(b"\n") and line.count(b"\n") == 1, line[:200]

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in {line[:200]!r}")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


def _events(text: str, tmp_path: Path, name: str = "x.log") -> list[Event]:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return list(iter_events(str(p)))


def test_lines_are_model_dumps_on_every_fixture() -> None:
    """Every fixture event: the line's values and key order are ``model_dump()``'s (``raw`` only on
    request), the same through the ``json`` fallback, and ``event_dict`` is ``model_dump()``."""
    n = 0
    for path in sorted(FIXTURES.rglob("*.log")):
        for ev in iter_events(str(path)):
            want = ev.model_dump()
            d = event_dict(ev, True)
            assert d == want and list(d) == list(want), (path, ev.kind)
            got = _strict(event_line(ev, True))
            assert got == want and list(got) == list(want), (path, ev.line)
            del want["raw"]
            got = _strict(event_line(ev))
            assert got == want and list(got) == list(want), (path, ev.line)
            assert _strict(_json_line(event_dict(ev))) == want, (path, ev.line)
            assert "raw" in ev.__dict__  # the line without raw left the event alone
            n += 1
    assert n > 5000


def test_bench_result_files() -> None:
    """Benchmark clients' result files: their ``extra`` dicts (lists, text for inf) come out whole."""
    n = 0
    for path in sorted((FIXTURES / "bench").rglob("*.json*")):
        for ev in iter_events(str(path)):
            assert _strict(event_line(ev)) == ev.model_dump(exclude={"raw"}), path
            n += 1
    assert n > 0


def test_non_ascii_stays_as_printed() -> None:
    """vLLM's banner (block characters) is written as UTF-8, not as \\u escapes."""
    ev = next(e for e in iter_events(str(FIXTURES / "digest/AR01/pass-vllm.log")) if "▄▄ ▄█" in e.raw)
    line = event_line(ev, True)
    assert "▄▄ ▄█".encode() in line and b"\\u" not in line
    assert _strict(line)["raw"] == ev.raw


def _stats_line(value: str) -> str:
    """A real vLLM stats line (fixture) with its generation throughput replaced."""
    text = (FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "Avg generation throughput: " in x)
    head, rest = line.split("Avg generation throughput: ", 1)
    return f"{head}Avg generation throughput: {value}{rest[rest.index(' tokens/s') :]}\n"


def test_nan_is_null(tmp_path: Path) -> None:
    """A ``nan`` the log printed is null, as in ``analyze --format json``: the line stays standard JSON."""
    for value in ("nan", "inf"):
        (ev,) = _events(_stats_line(value), tmp_path)
        assert ev.kind == "throughput" and not math.isfinite(ev.gen_tok_s)  # type: ignore[attr-defined]
        got = _strict(event_line(ev))
        assert got["gen_tok_s"] is None and got["running"] == ev.running  # type: ignore[attr-defined]


def _config_line(**changes: str) -> str:
    """A real vLLM ``non-default args`` line (fixture) with some values replaced by other Python literals."""
    text = (FIXTURES / "digest/OM02/fail-vllm.log").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "non-default args: {" in x)
    for key, value in changes.items():
        head, rest = line.split(f"'{key}': ", 1)
        end = rest.index(", '")
        line = f"{head}'{key}': {value}{rest[end:]}"
    return line + "\n"


def test_odd_config_values(tmp_path: Path) -> None:
    """What ``ast.literal_eval`` makes of a config line: ints beyond 64 bits, inf (``1e999``), int
    keys, tuples, sets; as ``json.dumps(..., default=str)`` wrote them, non-finite floats as null."""
    text = _config_line(
        max_num_batched_tokens=str(2**70),
        gpu_memory_utilization="1e999",
        speculative_config="{1: 'a', None: -0.0, 'x': (1, 2)}",
        kv_cache_dtype="{'fp8'}",
        max_model_len=str(-(2**64)),
    )
    (ev,) = [e for e in _events(text, tmp_path) if e.kind == "config"]
    args = ev.args  # type: ignore[attr-defined]
    assert args["max_num_batched_tokens"] == 2**70 and args["gpu_memory_utilization"] == math.inf
    got = _strict(event_line(ev))["args"]
    assert got["max_num_batched_tokens"] == 2**70 and got["max_model_len"] == -(2**64)
    assert got["gpu_memory_utilization"] is None
    assert got["speculative_config"] == {"1": "a", "null": -0.0, "x": [1, 2]}
    assert math.copysign(1, got["speculative_config"]["null"]) == -1
    assert got["kv_cache_dtype"] == "{'fp8'}"
    old = json.loads(json.dumps(ev.model_dump(exclude={"raw"}), ensure_ascii=False, default=str))
    old["args"]["gpu_memory_utilization"] = None
    assert _strict(event_line(ev)) == old


def test_long_line(tmp_path: Path) -> None:
    """A warning line of 3 MiB (cut at ``MAX_LINE`` by the reader) is one JSON line with its raw text."""
    text = (FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if " WARNING " in x)
    evs = _events(line + ' é"\\\t' * (3 * 2**20 // 5) + "\n", tmp_path)
    (ev,) = [e for e in evs if e.kind == "warning"]
    got = _strict(event_line(ev, True))
    assert got["raw"] == ev.raw and len(ev.raw) >= MAX_LINE // 2
    assert got == ev.model_dump()


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names are UTF-8 only")
def test_file_name_not_utf8(tmp_path: Path) -> None:
    """A file name that is not UTF-8 (a lone surrogate in Python): escaped in JSON, value kept."""
    name = os.fsdecode(b"run-\xff.log")
    p = tmp_path / name
    try:
        p.write_bytes((FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log").read_bytes())
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses the name")
    r = CliRunner().invoke(main, ["events", str(p), "--kind", "throughput"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.stdout_bytes.decode("utf-8").splitlines()]
    assert len(rows) == 12 and {x["file"] for x in rows} == {str(p)}


def test_stdout_file_and_text_stream_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``write_jsonl`` to a file, to stdout's bytes and to a text-only stdout: the same lines."""
    evs = list(iter_events(str(FIXTURES / "sglang/formats/2_3-decode-batch.log")))
    want = b"".join(event_line(e) for e in evs)
    out = tmp_path / "e.jsonl"
    write_jsonl(iter(evs), str(out))
    assert out.read_bytes() == want
    r = CliRunner().invoke(
        main, ["events", str(FIXTURES / "sglang/formats/2_3-decode-batch.log"), "--include-unparsed"]
    )
    assert r.exit_code == 0 and r.stdout_bytes == want
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    write_jsonl(iter(evs), None)
    assert text.getvalue().encode() == want


def test_renumbered_lines_are_the_lines_of_renumbered_events() -> None:
    """A worker's line moved by the lines before its range (``NumberedLines.renumber``) is, byte for
    byte, the line of the event numbered from the file's start, on every fixture event (also through
    the ``json`` fallback, and for odd file names: a quote and ``,"line":`` inside the name)."""
    from logscope.events import copy_event
    from logscope.render.jsonl import NumberedLines

    n = 0
    for path in sorted(FIXTURES.rglob("*.log")):
        for ev in iter_events(str(path)):
            for shift in (1, 12345):
                for with_raw in (False, True):
                    moved = copy_event(
                        ev,
                        {
                            "line": ev.line + shift,
                            "end_line": None if ev.end_line is None else ev.end_line + shift,
                        },
                    )
                    lines = NumberedLines(with_raw)
                    assert lines.renumber(lines.render(ev), shift) == lines.render(moved), (path, ev.line)
            odd = copy_event(ev, {"file": 'a,"line":1,"end_line":2.log'})
            assert NumberedLines.renumber(_json_line(event_dict(odd)), 7) == _json_line(
                event_dict(
                    copy_event(
                        odd,
                        {"line": ev.line + 7, "end_line": None if ev.end_line is None else ev.end_line + 7},
                    )
                )
            )
            n += 1
    assert n > 5000
