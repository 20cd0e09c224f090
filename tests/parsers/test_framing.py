"""Framing on the input real users have: CRLF, ANSI, bad UTF-8, \\r progress bars, gzip, huge lines."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

import logscope
from logscope.errors import UnreadableInput
from logscope.parsers.framing import MAX_LINE, ReadStats, read_lines
from tests.conftest import FIXTURES

STATS = "(APIServer pid=1) INFO 01-09 07:10:57 [loggers.py:219] Engine 000: Avg prompt throughput: 2.2 tokens/s, Avg generation throughput: 108.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 34.2%, Prefix cache hit rate: 0.0%"


def _write(tmp_path: Path, data: bytes, name: str = "x.log") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_crlf_ansi_and_bad_utf8(tmp_path: Path) -> None:
    coloured = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m " + STATS.split(") ", 1)[1]
    data = (coloured + "\r\n").encode() + b"\xff\xfe garbage \xc3\x28\n" + STATS.encode() + b"\n"
    run = logscope.load(_write(tmp_path, data))
    tps = run.of_kind("throughput")
    assert [t.line for t in tps] == [1, 3]
    assert tps[0].process == "APIServer pid=1" and tps[0].gen_tok_s == 108.0
    assert run.of_kind("unparsed")[0].line == 2


def test_progress_bar_fragments_are_lines(tmp_path: Path) -> None:
    bar = "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.0s/it]"
    data = f"{bar}\r{bar}\r{STATS}\n".encode()
    run = logscope.load(_write(tmp_path, data))
    # numbered like str.splitlines: each \r starts a line
    assert run.of_kind("throughput")[0].line == 3
    assert run.stats.lines == 3


def test_gzip_and_truncated_gzip(tmp_path: Path) -> None:
    src = (FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log").read_bytes()
    gz = gzip.compress(src)
    full = logscope.load(_write(tmp_path, gz, "a.log.gz"))
    plain = logscope.load(FIXTURES / "vllm/corpus/gen-a2_decode_steady_c10.log")
    assert full.counts() == plain.counts()
    cut = logscope.load(_write(tmp_path, gz[: len(gz) * 9 // 10], "cut.log.gz"))
    assert 0 < len(cut.of_kind("throughput")) <= len(plain.of_kind("throughput"))
    assert any("truncated" in n for n in cut.stats.notes)


def test_huge_line_is_cut_in_bounded_memory(tmp_path: Path) -> None:
    data = STATS.encode() + b"\n" + b"x" * (50 * 2**20) + b"\n" + STATS.encode() + b"\n"
    stats = ReadStats()
    lines = list(read_lines(str(_write(tmp_path, data)), stats))
    assert [ln.number for ln in lines] == [1, 2, 3]
    assert len(lines[1].text) == MAX_LINE
    assert any("longer than" in n for n in stats.notes)
    run = logscope.load(tmp_path / "x.log")
    assert len(run.of_kind("throughput")) == 2


def test_empty_and_binary_inputs(tmp_path: Path) -> None:
    with pytest.raises(UnreadableInput, match="empty"):
        logscope.load(_write(tmp_path, b"", "empty.log"))
    junk = bytes(range(256)) * 400
    with pytest.raises(UnreadableInput, match="no text"):
        logscope.load(_write(tmp_path, junk, "junk.log"))


def test_directory_and_several_files(tmp_path: Path) -> None:
    a = "(APIServer pid=1) INFO 01-09 07:10:57 [loggers.py:219] " + STATS.split("] ", 1)[1]
    b = "(APIServer pid=1) INFO 01-09 07:11:07 [loggers.py:219] " + STATS.split("] ", 1)[1].replace(
        "108.0", "99.0"
    )
    (tmp_path / "d").mkdir()
    _write(tmp_path / "d", (b + "\n").encode(), "rank1.log")
    _write(tmp_path / "d", (a + "\n").encode(), "rank0.log")
    run = logscope.load(tmp_path / "d")
    tps = run.of_kind("throughput")
    assert [t.gen_tok_s for t in tps] == [108.0, 99.0]  # merged by time
    assert [t.t_s for t in tps] == [0.0, 10.0]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeStdin:
        buffer = io.BytesIO((STATS + "\n").encode())

    monkeypatch.setattr("sys.stdin", FakeStdin())
    run = logscope.load("-")
    assert len(run.of_kind("throughput")) == 1


def test_multiline_record_and_traceback_are_joined(tmp_path: Path) -> None:
    h = "(EngineCore pid=7) ERROR 11-30 12:20:48 [core.py:1510] "
    data = (
        f"{h}EngineCore failed to start.\r\n{h}Traceback (most recent call last):\r\n"
        f'{h}  File "x.py", line 1, in f\r\n{h}ValueError: boom\n'
        "(APIServer pid=8) Traceback (most recent call last):\n"
        '(APIServer pid=8)   File "y.py", line 2, in g\n'
        "(APIServer pid=8) RuntimeError: Engine core initialization failed.\n" + STATS + "\n"
    ).encode()
    run = logscope.load(_write(tmp_path, data))
    errs = run.of_kind("error")
    assert [(e.line, e.end_line, e.exception) for e in errs] == [(1, 4, "ValueError"), (5, 7, "RuntimeError")]
    assert errs[0].message == "EngineCore failed to start."
    assert run.of_kind("throughput")[0].line == 8
