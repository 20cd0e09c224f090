"""Shared by the store tests: log sets to ingest, and one digest over a store's bytes."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.conftest import FIXTURES

CASE = FIXTURES / "case"
SERVER_LOGS = sorted(CASE.glob("*.log"))  # vllm-200k, vllm-64k, sglang-200k, sglang-64k


def tree_digest(store: Path) -> str:
    """Every file's relative path and bytes (the lock file aside): equal digests, byte-identical stores."""
    h = hashlib.sha256()
    for f in sorted(p for p in store.rglob("*") if p.is_file() and p.name != ".lock"):
        h.update(str(f.relative_to(store)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def store_files(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file() and p.name != ".lock")


def log_set(dest: Path, n: int) -> Path:
    """``n`` logs with different contents: the case and corpus logs, then copies with a line added."""
    dest.mkdir(parents=True, exist_ok=True)
    sources = SERVER_LOGS + sorted((FIXTURES / "vllm/corpus").glob("gen-*.log"))
    for k in range(n):
        src = sources[k % len(sources)]
        out = dest / f"{k:03d}-{src.name}"
        shutil.copyfile(src, out)
        if k >= len(sources):
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(f"copy {k}\n")
    return dest
