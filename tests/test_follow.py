"""Follow mode: a log written piece by piece (from a thread, rotated, truncated) gives the events and
findings that loading the whole file gives; new findings are announced once; the CLI's Ctrl-C prints
the final report."""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import logscope
from logscope.follow import Follower, Snapshot, finding_key
from logscope.render.follow_view import live_panel
from tests.conftest import FIXTURES, ROOT

VLLM = FIXTURES / "case/vllm-200k.log"
SGLANG = FIXTURES / "case/sglang-200k.log"
MULTILINE = FIXTURES / "vllm/formats/1_2-multi-line-messages-and-tracebacks-v.log"


def _dump(events: list[logscope.Event]) -> list[dict[str, object]]:
    return [e.model_dump() for e in events]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    "src",
    [VLLM, SGLANG, MULTILINE, FIXTURES / "sglang/corpus/gen-c1_kv_tight_queue.log"],
    ids=lambda p: p.name,
)
def test_any_cut_of_the_writes_gives_the_events_of_load(tmp_path: Path, src: Path) -> None:
    data = src.read_bytes()
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    rng = random.Random(7)
    with Follower(log) as f:
        pos = 0
        while pos < len(data):  # cuts anywhere: mid-line, between \r and \n, inside a traceback
            n = rng.choice([1, 2, 7, 100, 1000, 5000])
            _append(log, data[pos : pos + n])
            pos += n
            if rng.random() < 0.3:
                f.poll()
        final = f.close()
    ref = logscope.load(str(log))
    assert _dump(f.events) == _dump(ref.events)
    assert f.engine == ref.engine
    assert [finding_key(x) for x in final.findings] == [finding_key(x) for x in ref.analyze().findings]
    assert final.final and final.lines == ref.stats.lines and final.bytes == len(data)


def test_snapshots_from_a_writer_thread_with_a_rotation(tmp_path: Path) -> None:
    lines = _lines(VLLM)
    cut = 300  # a record boundary (a stats line) in the decode phase
    log = tmp_path / "vllm.log"
    log.write_bytes(b"")
    stop = threading.Event()  # set by the writer once it wrote everything: the follower then finishes

    def writer() -> None:
        try:
            for i, ln in enumerate(lines):
                if i == cut:  # logrotate: rename, then a new file at the same path
                    os.rename(log, tmp_path / "vllm.log.1")
                    log.write_bytes(b"")
                _append(log, ln)
                if i % 10 == 0:
                    time.sleep(0.03)
        finally:
            stop.set()

    snaps: list[Snapshot] = []
    thread = threading.Thread(target=writer)
    follower = Follower(log)
    thread.start()
    for snap in follower.follow(interval=0.02, stop=stop):  # close() reads what the last poll did not
        snaps.append(snap)
    thread.join()
    assert snaps[-1].final and all(not s.final for s in snaps[:-1])
    assert len(snaps) >= 4, "the writes should have been seen in several steps"
    events = [s.events for s in snaps]
    assert events == sorted(events)
    assert snaps[-1].rotations == 1 and snaps[-1].truncations == 0

    (tmp_path / "a.log").write_bytes(b"".join(lines[:cut]))
    (tmp_path / "b.log").write_bytes(b"".join(lines[cut:]))
    part_a, part_b = logscope.load(str(tmp_path / "a.log")), logscope.load(str(tmp_path / "b.log"))
    got = follower.events
    before = f"{log} (before rotation 1)"
    assert [e.file for e in got] == [before] * len(part_a.events) + [str(log)] * len(part_b.events)
    strip = {"file", "t_s"}  # t_s: one clock for the whole run here, one per file there
    assert [e.model_dump(exclude=strip) for e in got] == [
        e.model_dump(exclude=strip) for e in part_a.events + part_b.events
    ]
    ts = [e.t_s for e in got if e.t_s is not None]
    assert ts == sorted(ts), "one clock across the rotation"
    # every finding announced once, all of the final ones announced
    announced = [finding_key(f) for s in snaps for f in s.new_findings]
    assert len(announced) == len(set(announced))
    assert {finding_key(f) for f in snaps[-1].findings} <= set(announced)


def test_truncation_reads_the_new_content(tmp_path: Path) -> None:
    lines = _lines(SGLANG)
    log = tmp_path / "sglang.log"
    log.write_bytes(b"".join(lines[:400]))
    f = Follower(log)
    first = f.poll()
    assert first.engine == "sglang" and first.events > 0
    with open(log, "r+b") as fh:  # copytruncate: emptied in place, then written again
        fh.truncate(0)
    log.write_bytes(b"".join(lines[400:]))
    snap = f.poll()
    assert snap.truncations == 1 and snap.rotations == 0
    final = f.close()
    tail = logscope.load(str(log))
    new = [e for e in f.events if e.file == str(log)]
    assert [e.model_dump(exclude={"t_s"}) for e in new] == [
        e.model_dump(exclude={"t_s"}) for e in tail.events
    ]
    assert new[0].line == tail.events[0].line  # numbered from the new start
    assert final.counts["decode_batch"] == logscope.load(str(SGLANG)).counts()["decode_batch"]


def test_new_findings_appear_once_when_their_line_is_written(tmp_path: Path) -> None:
    lines = _lines(VLLM)
    slow = next(i for i, ln in enumerate(lines) if b"Using a slow tokenizer" in ln)
    log = tmp_path / "vllm.log"
    log.write_bytes(b"".join(lines[:slow]))
    with Follower(log, engine="vllm") as f:  # told: no waiting for enough lines to detect it
        before = f.poll()
        assert "TK01" not in {x.code for x in before.findings}
        _append(log, b"".join(lines[slow : slow + 3]))  # the next lines close the warning's record
        snap = f.poll()
        assert [x.code for x in snap.new_findings].count("TK01") == 1
        _append(log, b"".join(lines[slow + 3 :]))
        later = f.poll()
        assert "TK01" not in {x.code for x in later.new_findings}
        assert "TK01" in {x.code for x in later.findings}


def test_the_newest_record_waits_for_its_next_line(tmp_path: Path) -> None:
    lines = _lines(VLLM)
    stats = next(i for i, ln in enumerate(lines) if b"Avg generation throughput" in ln)
    log = tmp_path / "vllm.log"
    log.write_bytes(b"".join(lines[:stats]) + lines[stats][:40])  # half a stats line
    f = Follower(log)
    assert f.poll().counts.get("throughput", 0) == 0
    _append(log, lines[stats][40:])  # the line is whole, but the next one may continue its record
    assert f.poll().counts.get("throughput", 0) == 0
    _append(log, lines[stats + 1])
    snap = f.poll()
    assert snap.counts["throughput"] == 1 and snap.last["throughput"].line == stats + 1
    assert f.close().counts["throughput"] == logscope.load(str(log)).counts()["throughput"]


def test_a_missing_file_is_waited_for_and_the_engine_decided_after_a_pause(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    f = Follower(log)
    snap = f.poll()
    assert not snap.exists and snap.lines == 0 and snap.engine is None
    log.write_bytes(b"".join(_lines(VLLM)[:20]))
    assert f.poll().engine is None  # 20 lines: wait for more, or for a pause in the writing
    snap = f.poll()
    assert snap.engine == "vllm" and snap.events > 0
    text = _render(live_panel(snap, 2.0))
    assert "vllm" in text and "20 lines" in text and "Ctrl-C" in text
    f.close()


def test_gzip_is_refused(tmp_path: Path) -> None:
    import gzip

    log = tmp_path / "x.log.gz"
    log.write_bytes(gzip.compress(VLLM.read_bytes()))
    with pytest.raises(logscope.LogscopeError, match="gzip"):
        Follower(log).poll()


def _render(renderable: object) -> str:
    from rich.console import Console

    con = Console(width=160, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    con.print(renderable)
    text = con.export_text()
    con.file.close()
    return text


def test_cli_follow_prints_findings_then_the_final_report_on_ctrl_c(tmp_path: Path) -> None:
    lines = _lines(VLLM)
    log = tmp_path / "vllm.log"
    log.write_bytes(b"".join(lines[:15]))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "logscope",
            "analyze",
            "--follow",
            str(log),
            "--interval",
            "0.1",
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stderr is not None and proc.stdout is not None
    err_lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    threading.Thread(
        target=lambda: [err_lines.put(x) for x in iter(proc.stderr.readline, b"")], daemon=True
    ).start()
    out_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()

    def wait_for(needle: bytes, timeout: float = 60) -> bytes:
        seen = b""
        deadline = time.monotonic() + timeout
        while needle not in seen and time.monotonic() < deadline:
            try:
                seen += err_lines.get(timeout=0.5)
            except queue.Empty:
                assert proc.poll() is None, f"logscope ended early: {seen!r}"
        assert needle in seen, f"no {needle!r} on stderr within {timeout} s: {seen!r}"
        return seen

    try:
        wait_for(b"following")
        _append(log, b"".join(lines[15:]))
        wait_for(b" new ")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
        out = b"".join(out_chunks)
        err = b""
        while not err_lines.empty():
            err += err_lines.get()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    report = json.loads(out)
    expected = logscope.load(str(log)).analyze()
    assert [f["code"] for f in report["findings"]] == [f.code for f in expected.findings]
    assert report["stable_decode"]["mean_tok_s"] == expected.stable_decode.mean_tok_s


def test_cli_follow_takes_one_log() -> None:
    from click.testing import CliRunner

    from logscope.cli import main

    r = CliRunner().invoke(main, ["analyze", "--follow", str(VLLM), str(SGLANG)])
    assert r.exit_code == 3 and "one LOG" in r.output
