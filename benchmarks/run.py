"""Speed of logscope on one big log, next to the reference points, with ratios.

    python benchmarks/make_log.py --profile vllm-requests --size 300M -o /tmp/bench/vllm-300M.log
    python benchmarks/run.py /tmp/bench/vllm-300M.log

Measured on the same file, in one run:
- ``logscope events --format jsonl > /dev/null`` and ``logscope analyze --format json``: wall time,
  MB/s, lines/s, events/s, peak RSS (each in its own process);
- ``grep -c`` with the dialect's anchors (``-F -e ...``): the floor of "find the lines that matter";
- ``grep -c -E`` with five anchors (``FIVE``), its output to a file: the reference the speed goal is set against;
- Python's bare line iteration over the file (``for line in f: pass``);
- the sparse reader alone (the byte layer: read, scan, count, decode the lines that hold an anchor;
  no parser), with the scanner in use or the one ``--scanner`` names;
- each with wall and CPU seconds (user + system), best of ``--repeat`` runs;
- on the lines that match a grammar: events/s of the compiled fast path against a plain pyparsing
  parse of the same lines (the naive design), timed on a sample and extrapolated.
Counts are checked against the generator's sidecar (``<log>.json``) when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


# The child reports its own peak RSS: the high-water mark of its own memory map (``VmHWM``, new at
# exec) and the largest of its worker processes (``--jobs``). The peak ``wait4`` gives is no good
# here: at exec Linux keeps the exec-ing process's old high-water mark, which for a child forked (or
# vforked) from this process is this process's own peak, and it holds the outputs it compares.
_REPORT_RSS = """
import atexit, os, resource, runpy, sys

def _report():
    hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(os.environ["LOGSCOPE_BENCH_RSS"], "w") as fh:
        fh.write(str(max(hwm, kids)))

atexit.register(_report)
sys.argv = ["logscope", *sys.argv[1:]]
runpy.run_module("logscope", run_name="__main__")
"""


LAST_CPU = [
    0.0
]  # CPU seconds (user + system) of the last child and its workers: steadier than wall time on a busy machine


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _child(cmd: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, float | None, bytes]:
    """(seconds, peak RSS in MB, stdout) of one child process. A ``logscope`` command (``[python, "-m",
    "logscope", ...]``) reports its own peak (``_REPORT_RSS``); other commands none."""
    rss_file = None
    env = None
    if cmd[1:3] == ["-m", "logscope"]:
        fd, rss_file = tempfile.mkstemp(prefix="logscope-bench-rss-")
        os.close(fd)
        env = {**os.environ, "LOGSCOPE_BENCH_RSS": rss_file}
        cmd = [cmd[0], "-c", _REPORT_RSS, *cmd[3:]]
    t0 = time.perf_counter()
    c0 = _children_cpu()
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE, env=env
    )
    out, err = p.communicate()
    dt = time.perf_counter() - t0
    LAST_CPU[0] = _children_cpu() - c0
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd[:4])} failed: {err.decode(errors='replace')[-500:]}")
    rss = None
    if rss_file is not None:
        text = Path(rss_file).read_text()
        os.unlink(rss_file)
        rss = int(text) / 1024 if text else None
    return dt, rss, out or b""


_LOOP = """
import sys
with open(sys.argv[1], "rb") as fh:
    for _line in fh:
        pass
"""

# The byte layer alone: the sparse reader over the whole file (no head read whole) with the scanner asked
# for, handing the lines that hold an anchor to a consumer that asks for no more; prints the lines handed.
_READER = """
import sys
from logscope.parsers import dialect
from logscope.parsers.framing import ReadStats, Sparse, read_lines
from logscope.parsers.scan import scanner

d = dialect(sys.argv[2])
sc = scanner([x for x in d.scan_literals() if x not in sys.argv[4:]], prefer=sys.argv[3])
st = ReadStats()
n = sum(1 for _ in read_lines(sys.argv[1], st, Sparse(sc, lambda: False, head=0, timed=d.starts_timed)))
print(n, sc.name, st.lines)
"""

# five anchors for ``grep -c -E``: the kinds a request-heavy log's lines hold (the reference point)
FIVE = {
    "vllm": [
        "Avg prompt throughput",
        "SpecDecoding metrics:",
        "Received request ",
        "Added request ",
        'HTTP/1.1" ',
    ],
    "sglang": ["Decode batch", "Prefill batch", "WARNING", "ERROR", "Traceback"],
}


def _best(
    repeat: int, cmd: list[str], stdout: int | None = subprocess.DEVNULL
) -> tuple[float, float, float | None, bytes]:
    """(wall, CPU, RSS, stdout) of ``cmd`` run ``repeat`` times: the least wall and the least CPU seconds."""
    best: tuple[float, float, float | None, bytes] | None = None
    for _ in range(max(1, repeat)):
        t, rss, out = _child(cmd, stdout=stdout)
        c = LAST_CPU[0]
        best = (t, c, rss, out) if best is None else (min(best[0], t), min(best[1], c), best[2], best[3])
    assert best is not None
    return best


def _grammar_speed(path: str, engine: str, sample: int = 2000) -> dict[str, Any]:
    """events/s of the compiled path and of pyparsing on lines that match a grammar."""
    from logscope.parsers import dialect
    from logscope.parsers.framing import read_lines

    d = dialect(engine)
    msgs: list[str] = []
    for ln in read_lines(path):
        parsed = d.header(ln.text.split(") ", 1)[-1] if ln.text.startswith("(") else ln.text)
        msg = parsed[1] if parsed else ln.text
        if any(g.match(msg) for g in d.candidates(msg) if not g.also):
            msgs.append(msg)
            if len(msgs) >= sample:
                break
    if not msgs:
        return {}

    def run(ref: bool) -> float:
        t0 = time.perf_counter()
        for m in msgs:
            for g in d.candidates(m):
                if (g.fields(m, reference=True) if ref else g.fields(m)) is not None:
                    break
        return len(msgs) / (time.perf_counter() - t0)

    # interleaved rounds, best of each: a shared machine's load hits both sides alike
    fast, ref = 0.0, 0.0
    for _ in range(5):
        fast = max(fast, run(False))
        ref = max(ref, run(True))
    out: dict[str, Any] = {
        "lines": len(msgs),
        "compiled_lines_s": fast,
        "pyparsing_lines_s": ref,
        "ratio": fast / ref,
    }
    # the same per grammar (the first that matches each line), for the kinds with most lines
    by: dict[str, list[str]] = {}
    for m in msgs:
        g = next(g for g in d.candidates(m) if g.fields(m) is not None)
        by.setdefault(g.name, []).append(m)
    per: dict[str, tuple[int, float]] = {}
    for name, ms in sorted(by.items(), key=lambda kv: -len(kv[1]))[:4]:
        best = 0.0
        for _ in range(5):
            t0 = time.perf_counter()
            for m in ms:
                for g in d.candidates(m):
                    if g.fields(m) is not None:
                        break
            best = max(best, len(ms) / (time.perf_counter() - t0))
        per[name] = (len(ms), best)
    out["per_grammar"] = per
    return out


def _machine() -> str:
    """The cost of the two steps every matched field pays, to read this machine's figures against others'."""
    import re
    import timeit

    rx = re.compile(r"a(\d+)b")

    def best(stmt: Callable[[], object]) -> float:
        return min(timeit.repeat(stmt, number=20000, repeat=7)) / 20000 * 1e9

    return f"int('12345') {best(lambda: int('12345')):.0f} ns, re.match(r'a(\\d+)b') {best(lambda: rx.match('a12345b')):.0f} ns"


def _as_docker_json(path: str) -> str:
    """The log's lines in docker's json-file shape (``{"log": line + "\\n", "stream", "time"}``, Go's
    escaping of ``<>&``), beside it as ``<log>.docker.jsonl`` (made once): the same log as JSON lines."""
    import orjson

    out = path + ".docker.jsonl"
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(path):
        return out
    with open(path, "rb") as src, open(out + ".tmp", "wb") as dst:
        for i, raw in enumerate(src):
            line = raw.decode("utf-8", "replace")
            rec = {
                "log": line if line.endswith("\n") else line + "\n",
                "stream": "stdout",
                "time": f"2026-11-30T12:00:00.{i % 1_000_000_000:09d}Z",
            }
            enc = orjson.dumps(rec)
            dst.write(
                enc.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026") + b"\n"
            )
    os.replace(out + ".tmp", out)
    return out


def _without_places(jsonl: bytes) -> list[dict[str, Any]]:
    """Events of ``logscope events`` output without file, line numbers and what docker's stamp adds (the
    time of lines that have no engine header, ``outer_time``, ``time_source``)."""
    out = []
    for line in jsonl.splitlines():
        d = json.loads(line)
        for k in ("file", "line", "end_line", "outer_time", "time_source"):
            d.pop(k, None)
        if d.get("t_s") is None:
            d["time"] = None
        out.append(d)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--skip-analyze", action="store_true")
    ap.add_argument(
        "--json",
        action="store_true",
        help="also time the same log as JSON lines (each line in docker's json-file shape) and print "
        "the JSON-vs-text speed ratio of `logscope events` and `analyze`",
    )
    ap.add_argument("--repeat", type=int, default=1, help="run each timed command this many times (best of)")
    ap.add_argument(
        "--scanner",
        default="auto",
        choices=["auto", "hyperscan", "polars", "python"],
        help="the scanner of the sparse-reader row (logscope itself uses the best one installed)",
    )
    ap.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="ANCHOR",
        help="leave this anchor out of the sparse-reader row (repeatable): on the request-heavy log, "
        "leaving out the request and access anchors measures a log where few lines matter",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="also time `logscope events --jobs N` and `analyze --jobs N` (and check their output)",
    )
    a = ap.parse_args(argv)
    path = a.log
    size_mb = os.path.getsize(path) / 1e6
    exe = [sys.executable, "-m", "logscope"]
    print(f"file: {path} ({size_mb:.1f} MB)")
    print(f"machine: {_machine()}")

    from logscope.parsers import dialect
    from logscope.parsers.scan import scanner

    anchors = sorted({x for g in dialect(a.engine).grammars for x in g.anchors})
    sc = scanner(anchors)
    print(f"anchors: {len(anchors)}, scanner: {sc.name}")

    lines = sum(1 for _ in open(path, "rb"))
    # the floors, each in its own process, timed in the same run: Python's bare line loop, the byte layer
    # alone (the sparse reader with the scanner in use, no parser), ``grep -c`` with the dialect's anchors
    # and with five anchors as one -E alternation (its output to a file: GNU grep stops at the first match
    # when its output is /dev/null)
    five = FIVE.get(a.engine, anchors[:5])
    grep_five = ["grep", "-c", "-E", "|".join(re.escape(x) for x in five), path]
    rows: list[tuple[str, float, float, float | None]] = []
    t_loop, c_loop, _r, _o = _best(a.repeat, [sys.executable, "-c", _LOOP, path])
    rows.append(("python line loop", t_loop, c_loop, None))
    t_rd, c_rd, _r, out_rd = _best(
        a.repeat, [sys.executable, "-c", _READER, path, a.engine, a.scanner, *a.without], stdout=None
    )
    rows.append((f"sparse reader ({out_rd.decode().split()[1] if out_rd else '?'})", t_rd, c_rd, None))
    t_grep, c_grep, _, out = _best(
        a.repeat, ["grep", "-c", "-F"] + [y for x in anchors for y in ("-e", x)] + [path], stdout=None
    )
    rows.append((f"grep -c ({len(anchors)} anchors)", t_grep, c_grep, None))
    with tempfile.TemporaryFile() as sink:
        t_g5, c_g5, _, _o = _best(a.repeat, grep_five, stdout=sink.fileno())
        sink.seek(0)
        five_count = sink.read().decode().strip()
    rows.append(("grep -c -E (five anchors)", t_g5, c_g5, None))
    t_ev, c_ev, rss_ev, out_ev = _best(
        a.repeat, [*exe, "events", path, "--engine", a.engine, "--format", "jsonl"], stdout=None
    )
    n_events = out_ev.count(b"\n")
    rows.append(("logscope events", t_ev, c_ev, rss_ev))
    if a.jobs > 1:
        t_j, rss_j, out_j = _child(
            [*exe, "events", path, "--engine", a.engine, "--format", "jsonl", "--jobs", str(a.jobs)],
            stdout=None,
        )
        rows.append((f"logscope events --jobs {a.jobs}", t_j, LAST_CPU[0], rss_j))
        print(f"--jobs {a.jobs} output byte-identical to one process: {out_j == out_ev}")
    if not a.skip_analyze:
        t_an, rss_an, rep = _child(
            [*exe, "analyze", path, "--engine", a.engine, "--format", "json"], stdout=None
        )
        rows.append(("logscope analyze", t_an, LAST_CPU[0], rss_an))
        if a.jobs > 1:
            t_aj, rss_aj, rep_j = _child(
                [*exe, "analyze", path, "--engine", a.engine, "--format", "json", "--jobs", str(a.jobs)],
                stdout=None,
            )
            rows.append((f"logscope analyze --jobs {a.jobs}", t_aj, LAST_CPU[0], rss_aj))
            print(f"analyze --jobs {a.jobs} report byte-identical to one process: {rep_j == rep}")
    if a.json:
        json_path = _as_docker_json(path)
        cpu: dict[str, float] = {}
        _t, _r, out_ev = _child(
            [*exe, "events", path, "--engine", a.engine, "--format", "jsonl"], stdout=None
        )
        cpu["events"] = LAST_CPU[0]
        t_jev, rss_jev, out_jev = _child(
            [*exe, "events", json_path, "--engine", a.engine, "--format", "jsonl"], stdout=None
        )
        cpu["events_json"] = LAST_CPU[0]
        rows.append(("logscope events (JSON lines)", t_jev, LAST_CPU[0], rss_jev))
        same = _without_places(out_jev) == _without_places(out_ev)
        print(
            f"JSON lines: {json_path} ({os.path.getsize(json_path) / 1e6:.1f} MB); events equal the text log's "
            f"(but place and docker's stamp): {same}"
        )
        ratio_ev = t_ev / t_jev
        print(
            f"JSON-vs-text speed ratio, logscope events: wall {ratio_ev:.2f} (text {t_ev:.2f} s, JSON {t_jev:.2f} s); "
            f"CPU {cpu['events'] / cpu['events_json']:.2f} (text {cpu['events']:.2f} s, JSON {cpu['events_json']:.2f} s)"
        )
        if not a.skip_analyze:
            _child([*exe, "analyze", path, "--engine", a.engine, "--format", "json"], stdout=None)
            cpu["analyze"] = LAST_CPU[0]
            t_jan, rss_jan, _rep = _child(
                [*exe, "analyze", json_path, "--engine", a.engine, "--format", "json"], stdout=None
            )
            cpu["analyze_json"] = LAST_CPU[0]
            rows.append(("logscope analyze (JSON lines)", t_jan, LAST_CPU[0], rss_jan))
            print(
                f"JSON-vs-text speed ratio, logscope analyze: wall {t_an / t_jan:.2f} (text {t_an:.2f} s, JSON "
                f"{t_jan:.2f} s); CPU {cpu['analyze'] / cpu['analyze_json']:.2f} (text {cpu['analyze']:.2f} s, "
                f"JSON {cpu['analyze_json']:.2f} s)"
            )
    print(
        f"lines: {lines:,}  events: {n_events:,}  grep matches: {out.decode().strip()}, "
        f"five anchors ({', '.join(five)}): {five_count}"
    )
    print(
        f"best of {a.repeat}; CPU = user + system of the process and its children (steadier on a busy machine)"
    )
    print(f"{'what':32} {'wall s':>8} {'MB/s':>8} {'CPU s':>8} {'MB/s CPU':>9} {'lines/s':>12} {'RSS MB':>8}")
    for name, t, c, rss in rows:
        print(
            f"{name:32} {t:8.2f} {size_mb / t:8.1f} {c:8.2f} {size_mb / max(c, 1e-9):9.1f} {lines / t:12,.0f} "
            f"{'' if rss is None else f'{rss:8.0f}'}"
        )
    print(
        f"events vs grep -c -E (five anchors): {t_g5 / t_ev:.2f}x grep's speed (wall), {c_g5 / max(c_ev, 1e-9):.2f}x "
        f"(CPU); vs grep -c ({len(anchors)} anchors): {t_grep / t_ev:.2f}x; events/s: {n_events / t_ev:,.0f}"
    )
    print(
        f"sparse reader vs grep -c -E (five anchors): {t_g5 / t_rd:.2f}x (wall), {c_g5 / max(c_rd, 1e-9):.2f}x (CPU)"
    )
    g = _grammar_speed(path, a.engine)
    if g:
        print(
            f"matching lines ({g['lines']}): compiled {g['compiled_lines_s']:,.0f}/s, "
            f"pyparsing {g['pyparsing_lines_s']:,.0f}/s, ratio {g['ratio']:.1f}x"
        )
        for name, (n, rate) in g["per_grammar"].items():
            print(f"  {name} ({n} lines): compiled {rate:,.0f}/s")
    side = Path(path + ".json")
    if side.exists():
        want = json.loads(side.read_text())["counts"]
        kinds: dict[str, int] = {}
        for line in out_ev.splitlines():
            k = json.loads(line)["kind"]
            kinds[k] = kinds.get(k, 0) + 1
        for k, v in want.items():
            if k in kinds:
                status = "ok" if kinds[k] >= v else "MISSING"
                print(f"count {k}: {kinds[k]} (generator wrote {v}) {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
