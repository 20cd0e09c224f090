"""vLLM logs from the shared corpus (copied into fixtures/vllm/corpus): hand counts and printed numbers.

The sidecar ``contains`` counts were made by hand from the logs; they are the expected values. The
field checks read the printed number straight from the event's source line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import logscope
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "vllm" / "corpus"
LOGS = sorted(CORPUS.glob("*.log"))

# sidecar key -> (kind, predicate)
MAP = {
    "vllm_stats": ("throughput", None),
    "spec_decode": ("spec_decode", None),
    "prefix_cache_hit_rate_line": ("prefix_cache", None),
    "kv_cache_size": ("kv_cache_pool", lambda e: e.tokens is not None),
    "gpu_blocks": ("kv_cache_pool", lambda e: e.gpu_blocks is not None),
    "max_concurrency": ("max_concurrency", None),
    "model_loading": ("model_load", None),
    "graph_capture": ("graph_capture", lambda e: not e.begin),
    "init_engine_took": ("engine_init", None),
    "preemption": ("preemption", None),
    "oom": ("oom", None),
    "kv_capacity_error": ("kv_capacity", None),
}

FIELDS = [
    ("throughput", "gen_tok_s", r"Avg generation throughput: ([\d.]+)"),
    ("throughput", "prompt_tok_s", r"Avg prompt throughput: ([\d.]+)"),
    ("throughput", "running", r"Running: (\d+)"),
    ("throughput", "waiting", r"(?:Waiting|Pending): (\d+)"),
    ("throughput", "gpu_kv_cache_pct", r"(?:GPU|CPU) KV cache usage: ([\d.]+)"),
    ("spec_decode", "accepted_tokens", r"Accepted: (\d+)"),
    ("spec_decode", "drafted_tokens", r"Drafted: (\d+)"),
    ("spec_decode", "mean_acceptance_length", r"Mean acceptance length: ([\d.]+)"),
    ("kv_cache_pool", "tokens", r"KV cache size: ([\d,]+)"),
    ("kv_cache_pool", "gpu_blocks", r"(?:GPU|cuda|CUDA) blocks: (\d+)"),
    ("max_concurrency", "concurrency", r"per request: ([\d.]+)x"),
    ("max_concurrency", "tokens_per_request", r"Maximum concurrency for ([\d,]+)"),
    ("model_load", "memory_gib", r"took ([\d.]+) Gi?B"),
    ("engine_init", "seconds", r"took ([\d.]+) s"),
]


def _run(path: Path) -> logscope.Run:
    return logscope.load(path)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_hand_counts(path: Path) -> None:
    side = json.loads(path.with_suffix(".json").read_text())
    run = _run(path)
    assert run.engine == "vllm"
    for key, want in side.get("contains", {}).items():
        if key not in MAP:
            continue
        kind, pred = MAP[key]
        got = sum(1 for e in run.events if e.kind == kind and (pred is None or pred(e)))
        assert got == want, f"{key}: {got} events, {want} counted by hand"


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_printed_numbers(path: Path) -> None:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    run = _run(path)
    checked = 0
    for e in run.events:
        for kind, field, rx in FIELDS:
            if e.kind != kind or getattr(e, field, None) is None:
                continue
            vals = re.findall(rx, lines[e.line - 1])
            if not vals:
                continue
            want = [float(v.replace(",", "")) for v in vals]
            assert any(abs(getattr(e, field) - w) <= 1e-9 * max(1.0, w) for w in want), (e.line, field)
            checked += 1
    if any(e.kind in {k for k, _, _ in FIELDS} for e in run.events):
        assert checked > 0


def test_specific_values() -> None:
    """Numbers read off real lines, by hand."""
    run = _run(CORPUS / "v1-dflash-specdecode-per-position-docker.log")
    spec = run.of_kind("spec_decode")[0]
    assert spec.mean_acceptance_length == 2.14
    assert spec.per_position_acceptance == [0.558, 0.295, 0.131, 0.069, 0.032]
    assert spec.acceptance_rate_pct == 54.2 and spec.drafted_tok_s == 205.39 and not spec.cumulative
    run = _run(CORPUS / "v1-0140-dp8-engine-000-001-mm-cache-hit.log")
    tp = run.of_kind("throughput")
    assert [t.engine_index for t in tp] == [0, 1]
    assert tp[0].mm_cache_hit_pct is not None
    run = _run(CORPUS / "v0-ray-asyncllmengine-collapsed-one-line.log")
    tps = run.of_kind("throughput")
    assert len(tps) == 5 and tps[1].gen_tok_s == 97.8 and tps[0].swapped == 0
    run = _run(CORPUS / "v0-ray-multinode-405b-repeated-across-cluster.log")
    assert max(e.repeated for e in run.events) == 35
    run = _run(CORPUS / "gen-c2_startup_fail_maxlen_vs_kv.log")
    cap = run.of_kind("kv_capacity")
    assert cap and cap[0].max_seq_len == 32768 and cap[0].estimated_max_len is not None
    assert run.of_kind("error")
    run = _run(CORPUS / "gen-a1_plain_c10.log")
    pool = run.of_kind("kv_cache_pool")[0]
    assert (pool.tokens, pool.device) == (262144, "cpu")
    assert run.of_kind("max_concurrency")[0].concurrency == 64.0
    assert run.of_kind("version")[0].engine_version == "0.32.0"
    args = next(e.args for e in run.of_kind("config") if e.form == "non_default_args")
    assert args["max_model_len"] == 4096 and args["kv_cache_memory_bytes"] == 1073741824


FORMATS = sorted((FIXTURES / "vllm" / "formats").glob("*.log"))


@pytest.mark.parametrize("path", FORMATS, ids=lambda p: p.stem)
def test_format_reference_goldens(path: Path, update_goldens: bool) -> None:
    """Real lines quoted in the vLLM format reference, one file per section; events reviewed by hand."""
    from tests.conftest import check_golden, events_jsonl

    run = logscope.load(path, engine="vllm")
    check_golden(path.with_suffix(".events.jsonl"), events_jsonl(run.events), update_goldens)
