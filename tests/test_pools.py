"""Worker pools from a plain script (no ``__main__`` guard) after polars started its threads: spawned
workers that do not run the script again (``logscope.pools``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, ROOT


def test_an_unguarded_script_with_threads_gets_working_spawned_workers(tmp_path: Path) -> None:
    logs = [str(FIXTURES / "case" / n) for n in ("vllm-64k.log", "sglang-64k.log")]
    script = tmp_path / "notes.py"
    script.write_text(
        "import os, polars as pl, logscope\n"
        "from logscope.pools import process_pool, start_method\n"
        "pl.DataFrame({'a': [1, 2]}).sum()  # polars' thread pool runs now\n"
        "print('RAN')  # a worker that imported this script again would print it too\n"
        "with process_pool(2) as pool:\n"
        "    workers = {pool.submit(os.getpid).result() for _ in range(4)}\n"
        "print(start_method(), len(workers) >= 1, os.getpid() not in workers)\n"
        f"one = [e.kind for e in logscope.iter_events({logs!r})]\n"
        f"two = [e.kind for e in logscope.iter_events({logs!r}, jobs=2)]\n"
        "print(one == two, len(one))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "RAN" and lines.count("RAN") == 1, r.stdout
    assert lines[1] == "spawn True True"
    same, n = lines[2].split()
    assert same == "True" and int(n) > 500
