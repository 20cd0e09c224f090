"""Speed of ``logscope ingest`` on many logs: ``--jobs 2`` against ``--jobs 1`` (and Dask, if asked).

    python benchmarks/ingest_bench.py                      # 200 logs under /tmp/logscope-ingest-bench
    python benchmarks/ingest_bench.py --logs 400 --repeat 3 --dask

The logs are made from the real logs in ``fixtures/`` (vLLM corpus, SGLang corpus, the case logs):
variant k of a template has its timestamps moved by k hours plus a few minutes and its throughput
numbers scaled by a factor near 1, so every file has its own content (its own run) while keeping
each engine's exact line formats. Nothing is committed: the files are made under ``--dir``.

Each ingest runs as its own ``logscope ingest`` process into a fresh store (wall time of the whole
command, process start and imports included), ``--repeat`` times; the best time counts. The stores of
``--jobs 1`` and ``--jobs 2`` (and ``--dask``: a 2-worker ``LocalCluster``) must be byte-identical.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_DIRS = ("fixtures/vllm/corpus", "fixtures/sglang/corpus", "fixtures/case")

STAMP = re.compile(r"(?<![\d-])(?:(\d{4})-)?(\d\d)-(\d\d)([ T])(\d\d):(\d\d):(\d\d)")
RATE = re.compile(r"((?:throughput|token/s\)|tokens/s\)):\s*)(\d+\.\d+)")


def templates() -> list[Path]:
    out: list[Path] = []
    for d in TEMPLATE_DIRS:
        out.extend(sorted((ROOT / d).glob("*.log")))
    return out


def shift_stamps(text: str, delta: dt.timedelta) -> str:
    def repl(m: re.Match[str]) -> str:
        year = int(m.group(1) or 2026)
        try:
            t = dt.datetime(
                year, int(m.group(2)), int(m.group(3)), int(m.group(5)), int(m.group(6)), int(m.group(7))
            )
        except ValueError:
            return m.group(0)
        t += delta
        date = f"{t.year:04d}-{t:%m-%d}" if m.group(1) else f"{t:%m-%d}"
        return f"{date}{m.group(4)}{t:%H:%M:%S}"

    return STAMP.sub(repl, text)


def scale_rates(text: str, factor: float) -> str:
    def repl(m: re.Match[str]) -> str:
        value = m.group(2)
        decimals = len(value.split(".")[1])
        return f"{m.group(1)}{float(value) * factor:.{decimals}f}"

    return RATE.sub(repl, text)


def make_logs(out: Path, n: int, seed: int = 0) -> tuple[int, int]:
    """``n`` logs in ``out`` (made again only when missing); (files, bytes)."""
    marker = out / "MANIFEST.json"
    if marker.exists() and json.loads(marker.read_text()).get("n") == n:
        files = sorted(out.glob("*.log"))
        return len(files), sum(f.stat().st_size for f in files)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rng = random.Random(seed)
    tpl = templates()
    total = 0
    for k in range(n):
        src = tpl[k % len(tpl)]
        text = src.read_bytes().decode("utf-8", errors="surrogateescape")
        variant = k // len(tpl) + 1
        delta = dt.timedelta(hours=variant, minutes=rng.randint(0, 59))
        new = scale_rates(shift_stamps(text, delta), rng.uniform(0.8, 1.2))
        if new == text:  # no stamp, no rate: keep the content unique all the same
            new = text + f"\nINFO logscope-bench variant {variant}\n"
        data = new.encode("utf-8", errors="surrogateescape")
        dst = out / f"{k:03d}-{src.stem}.log"
        dst.write_bytes(data)
        total += len(data)
    marker.write_text(json.dumps({"n": n, "seed": seed}))
    return n, total


def tree_digest(store: Path) -> str:
    """One hash over every file's path and bytes (the lock file aside)."""
    h = hashlib.sha256()
    for f in sorted(p for p in store.rglob("*") if p.is_file() and p.name != ".lock"):
        h.update(str(f.relative_to(store)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_ingest(logs: Path, store: Path, args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its worker processes)."""
    shutil.rmtree(store, ignore_errors=True)
    cmd = [sys.executable, "-m", "logscope", "ingest", str(logs), "--out", str(store), *args]
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    dt_s = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return dt_s, _children_cpu() - cpu0


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def capacity(n: int = 6_000_000) -> float:
    """How much faster two processes do two equal pure-Python loops than one process does both: the
    parallel speed-up this machine offers right now (other load on it lowers it)."""
    import multiprocessing

    t0 = time.perf_counter()
    _burn(n)
    _burn(n)
    one = time.perf_counter() - t0
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_burn, [1000, 1000])  # started
        t0 = time.perf_counter()
        pool.map(_burn, [n, n])
        two = time.perf_counter() - t0
    return one / two


def dask_ingest(logs: Path, store: Path, workers: int) -> tuple[float, float]:
    """(seconds of the ingest, seconds to start the cluster) on a local cluster of ``workers`` processes."""
    from dask.distributed import Client, LocalCluster

    from logscope.store import ingest_dask

    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        summary = ingest_dask([str(logs)], store, client=client)
        dt_s = time.perf_counter() - t1
    if summary.failed:
        sys.exit(f"dask ingest failed: {summary.failed[:3]}")
    return dt_s, started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=int, default=200, help="how many logs to make")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/logscope-ingest-bench"))
    ap.add_argument("--repeat", type=int, default=2, help="runs of each configuration (the best counts)")
    ap.add_argument("--dask", action="store_true", help="also time a 2-worker dask LocalCluster")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    a = ap.parse_args()

    logs = a.dir / "logs"
    n, size = make_logs(logs, a.logs)
    print(f"{n} logs, {size / 1e6:.1f} MB, from {len(templates())} templates, in {logs}")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(
        f"load average before: {os.getloadavg()[0]:.2f}; parallel capacity now: {capacity():.2f}x "
        "(two pure-Python loops in two processes vs one)"
    )
    times: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    digests: dict[str, str] = {}
    for _ in range(a.repeat):  # interleaved, so that a burst of other load hits both alike
        for jobs in (1, 2):
            store = a.dir / f"store-j{jobs}"
            wall, used = timed_ingest(logs, store, ["--jobs", str(jobs)])
            times[jobs].append(wall)
            cpu[jobs].append(used)
            digests[f"jobs{jobs}"] = tree_digest(store)
    results: dict[str, float] = {f"jobs{j}": min(ts) for j, ts in times.items()}
    for j, ts in times.items():
        print(
            f"logscope ingest --jobs {j}: best {min(ts):.2f} s of {', '.join(f'{t:.2f}' for t in ts)} "
            f"(CPU {', '.join(f'{c:.1f}' for c in cpu[j])} s)"
        )
    speedup = results["jobs1"] / results["jobs2"]
    pairs = sorted(t1 / t2 for t1, t2 in zip(times[1], times[2], strict=True))
    median_pair = statistics.median(pairs)
    print(
        f"speed-up --jobs 2 / --jobs 1: {speedup:.2f}x best against best; {median_pair:.2f}x median of the "
        f"{len(pairs)} back-to-back pairs ({', '.join(f'{x:.2f}' for x in pairs)})"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}; parallel capacity now: {capacity():.2f}x")
    if a.dask:
        store = a.dir / "store-dask"
        secs, started = dask_ingest(logs, store, 2)
        results["dask2"] = secs
        digests["dask2"] = tree_digest(store)
        print(
            f"ingest_dask on LocalCluster(n_workers=2): {secs:.2f} s (cluster start {started:.1f} s, not counted)"
        )
    same = len(set(digests.values())) == 1
    print(f"stores byte-identical: {same} ({', '.join(f'{k}={v[:12]}' for k, v in digests.items())})")
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "logs": n,
                    "bytes": size,
                    "seconds": results,
                    "speedup": speedup,
                    "speedup_median_pair": median_pair,
                    "wall": times,
                    "cpu": cpu,
                    "identical": same,
                },
                indent=2,
            )
            + "\n"
        )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
