"""Per-request latencies of a benchmark client's result file, for ``compare``'s verdicts.

``vllm bench serve --save-result --save-detailed`` writes, beside the summary that ``parsers.bench``
reads into a ``bench_result`` event, one list entry per request: ``ttfts`` (s), ``latencies`` (s,
end to end), ``output_lens``, ``errors`` ("" when the request succeeded). ``bench_result`` leaves
these lists out (they are data, not results); a verdict on a latency percentile needs them as its
samples, so this reads them again from the same file, only when asked.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from typing import Any

MAX_BYTES = 512 * 2**20  # a result file beyond this is no client result file: not read whole


@lru_cache(maxsize=16)
def _load(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            raw = gzip.open(fh).read(MAX_BYTES) if head == b"\x1f\x8b" else fh.read(MAX_BYTES)
        obj = json.loads(raw)
    except (OSError, ValueError, EOFError):
        return None
    return obj if isinstance(obj, dict) else None


def per_request(path: str) -> dict[str, list[Any]]:
    """The per-request lists of the result in ``path`` (``ttfts``, ``latencies``, ``output_lens``,
    ``errors``, each as written), or an empty dict when the file holds none (a printed block, a
    result saved without ``--save-detailed``, JSONL, another client)."""
    obj = _load(path)
    if obj is None:
        return {}
    return {
        k: v for k in ("ttfts", "latencies", "output_lens", "errors") if isinstance(v := obj.get(k), list)
    }
