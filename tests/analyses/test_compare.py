"""compare(): ratios labelled by method, context ratio, configuration differences."""

from __future__ import annotations

import json

import logscope
from logscope.analyses.compare import compare
from logscope.events import Config, Event

from ..conftest import FIXTURES
from .build import run, stats


def _run(vals: list[float], args: dict[str, object]) -> list[Event]:
    cfg = Config(engine="vllm", file="t.log", line=1, t_s=0.0, form="non_default_args", args=args)
    return [cfg, *stats([(0.0, v, 10) for v in vals])]


def test_ratios_are_labelled() -> None:
    a = run(_run([500.0, 540.0, 460.0, 500.0], {"tensor_parallel_size": 8}))
    b = run(_run([160.0, 170.0, 150.0, 160.0], {"tensor_parallel_size": 8}))
    cmp = compare(a, b, labels=["64K", "200K"])
    deg = cmp.degradation
    assert deg.ratio_mean == 3.12 and deg.labels["ratio_mean"] == "500 / 160 = 3.12x by mean"
    assert deg.ratio_peak == round(540 / 170, 2)
    assert deg.ratio_base_peak_over_other_mean == round(540 / 160, 2)
    assert deg.per_request["base"]["tok_s"] == 50.0
    assert cmp.labels == ["64K", "200K"] and cmp.warning is None
    assert set(cmp.sections) == {
        "stable_decode",
        "prefill",
        "spec_decode",
        "kv_pool",
        "cold_start",
        "disturbances",
        "bench",
        "decode_under_load",
    }
    assert deg.method == "stable_decode" and deg.metric == "stable decode aggregate tok/s, BASE / OTHER"
    assert json.loads(cmp.to_json())["degradation"]["ratio_mean"] == 3.12


def test_config_differences_warn() -> None:
    a = run(
        _run(
            [500.0] * 4,
            {"tensor_parallel_size": 8, "gpu_memory_utilization": 0.95, "max_num_batched_tokens": 8192},
        )
    )
    b = run(
        _run(
            [400.0] * 4,
            {
                "tensor_parallel_size": 4,
                "gpu_memory_utilization": 0.95,
                "max_num_batched_tokens": 16384,
                "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
            },
        )
    )
    cmp = compare(a, b)
    diffs = {d.setting: (d.base, d.other, d.both_printed) for d in cmp.config_differences}
    assert diffs["tensor_parallel"] == (8, 4, True)
    assert diffs["chunk_size"] == (8192, 16384, True)
    assert diffs["speculative_method"] == (None, "eagle", False)
    assert "memory_fraction" not in diffs
    assert cmp.warning is not None and "TP 8 vs 4" in cmp.warning and "draft tokens" in cmp.warning
    assert [r.setting for r in cmp.not_ab] == ["tensor_parallel", "chunk_size"]


def test_missing_segment_says_why() -> None:
    a = run(_run([500.0] * 4, {}))
    b = run(
        stats([(0.0, 0.0, 0, 6)] * 4)
    )  # nothing running, 6 waiting: neither stable decode nor decode under load
    deg = compare(a, b).degradation
    assert deg.ratio_mean is None and deg.method is None
    assert deg.not_applicable is not None and "other" in deg.not_applicable


def test_the_method_both_runs_share() -> None:
    # BASE has a stable segment, OTHER only windows with prefill: both have decode under load, so the ratios
    # use it (never stable decode on one side and decode under load on the other)
    a = run(_run([500.0] * 4, {}))
    b = run(stats([(1000.0, 400.0, 10, 3)] * 5))
    deg = compare(a, b).degradation
    assert deg.method == "decode_under_load" and deg.ratio_mean == 1.25
    assert deg.metric.startswith("decode under load aggregate tok/s")


def test_real_runs_without_stable_decode_compare_under_load() -> None:
    # the shared corpus's vLLM 0.32 a1 (1024-token prompts) and d1 (512): every window holds prefill
    vllm = FIXTURES / "vllm" / "corpus"
    cmp = compare(logscope.load(vllm / "gen-a1_plain_c10.log"), logscope.load(vllm / "gen-d1_ctx512.log"))
    deg = cmp.degradation
    assert deg.method == "decode_under_load" and deg.not_applicable is None
    assert deg.labels["ratio_mean"] == "623.87 / 1194.2 = 0.52x by mean"
    assert deg.per_request["base"] == {"tok_s": 65.671, "ms_per_token": 15.23}
    assert deg.per_request["other"] == {}  # d1's running swings 3-10: no per-request rate
    assert "decode under load mean tok/s" in {r.metric for r in cmp.summary}


def test_public_compare_is_exported() -> None:
    assert "compare" in logscope.__all__ and logscope.__all__ == sorted(logscope.__all__)
