"""compare's A/B guard (``not_ab``) on real logs: what makes two runs something other than an A/B test
of one change, and the context length, which is the experiment and never a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import logscope
from logscope.analyses.compare import compare
from logscope.cli import main

from ..conftest import FIXTURES

VLLM = FIXTURES / "vllm" / "corpus"
CASE = FIXTURES / "case"


def _load(*paths: Path) -> logscope.Run:
    return logscope.load([str(p) for p in paths])


def test_spec_on_vs_off_is_not_ab() -> None:
    # b2 runs ngram speculation and prints no SpecDecoding line at all (corpus README, oddity 6): the
    # configuration says it is on (speculative_config=...), a1's says speculative_config=None
    cmp = compare(_load(VLLM / "gen-a1_plain_c10.log"), _load(VLLM / "gen-b2_ngram_spec_random_sampled.log"))
    reasons = {r.setting: r for r in cmp.not_ab}
    assert list(reasons) == ["speculative_decoding"]
    spec = reasons["speculative_decoding"]
    assert (spec.category, spec.base, spec.other) == ("speculative decoding", False, True)
    assert "on in OTHER only" in spec.reason and "ngram" in spec.reason and "draft tokens 5" in spec.reason
    assert cmp.warning is not None and cmp.warning.startswith("Not an A/B test of one change")
    # the spec settings are said by the reason; they are not listed again as "printed by one log only"
    assert "Printed by one log only" not in cmp.warning


def test_client_workloads_compared() -> None:
    # a1: 400 prompts, b2: 150 prompts; both 1024 in / 300 out at concurrency 10 (the clients' result blocks)
    cmp = compare(
        _load(VLLM / "gen-a1_plain_c10.log", VLLM / "gen-a1_plain_c10.client.txt"),
        _load(
            VLLM / "gen-b2_ngram_spec_random_sampled.log",
            VLLM / "gen-b2_ngram_spec_random_sampled.client.txt",
        ),
    )
    work = [r for r in cmp.not_ab if r.category == "workload"]
    assert [(r.setting, r.base, r.other) for r in work] == [("prompts", 400, 150)]


def test_memory_setting_is_not_ab() -> None:
    # c1 runs --kv-cache-memory-bytes 24M, a1 1G; both --max-model-len 4096
    cmp = compare(_load(VLLM / "gen-a1_plain_c10.log"), _load(VLLM / "gen-c1_kv_tight_waiting.log"))
    assert [(r.category, r.setting, r.base, r.other) for r in cmp.not_ab] == [
        ("memory", "kv_cache_memory_bytes", 1073741824, 25165824)
    ]


def test_context_length_is_the_experiment() -> None:
    # the case study: same setup, 64K vs 200K context; with the clients, the input length differs 3x
    # (the variable under test, said as context_ratio) and nothing else does
    cmp = compare(
        _load(CASE / "vllm-64k.log", CASE / "vllm-64k.client.txt"),
        _load(CASE / "vllm-200k.log", CASE / "vllm-200k.client.txt"),
    )
    assert cmp.not_ab == [] and cmp.warning is None
    assert cmp.degradation.context_ratio == 3.0
    assert "mean input tokens per request" in cmp.degradation.labels["context_ratio"]


def test_same_run_is_ab() -> None:
    a = _load(VLLM / "gen-d1_ctx512.log")
    assert compare(a, a).not_ab == []


@pytest.mark.parametrize("fmt", ["json", "markdown", "text", "html"])
def test_cli_compare_bench_banner(fmt: str) -> None:
    r = CliRunner().invoke(
        main,
        [
            "compare",
            str(VLLM / "gen-a1_plain_c10.log"),
            str(VLLM / "gen-b2_ngram_spec_random_sampled.log"),
            "--bench",
            str(VLLM / "gen-a1_plain_c10.client.txt"),
            str(VLLM / "gen-b2_ngram_spec_random_sampled.client.txt"),
            "--format",
            fmt,
        ],
    )
    assert r.exit_code == 1, r.output  # not an A/B test: every verdict INCONCLUSIVE (logscope.exits)
    if fmt == "json":
        got = json.loads(r.stdout)["not_ab"]
        assert [x["setting"] for x in got] == ["speculative_decoding", "prompts"]
    else:
        flat = " ".join(r.output.split())
        assert "Not an A/B test of one change" in flat and "number of prompts 400 vs 150" in flat


def test_real_restart_with_smaller_limits_is_not_ab() -> None:
    # the real two-lifetime capture: lifetime 1 --max-model-len 4096 --kv-cache-memory-bytes 1G (client: 256
    # input tokens), lifetime 2 2048 / 512M / --max-num-seqs 4 (client: 512 input tokens). The context doubles
    # while max_model_len halves: not the context experiment; max-num-seqs is printed by lifetime 2 only
    real = FIXTURES / "vllm" / "lifetimes"
    run = _load(
        real / "two-lifetimes.log",
        real / "two-lifetimes.run1.client.txt",
        real / "two-lifetimes.run2.client.txt",
    )
    cmp = compare(run.lifetime(1), run.lifetime(2))
    assert cmp.degradation.context_ratio == 2.0  # 512 / 256 mean input tokens (the clients)
    got = {r.setting: r.reason for r in cmp.not_ab}
    assert got["kv_cache_memory_bytes"] == "KV cache memory (bytes) differs: 1 GiB vs 0.5 GiB"
    assert got["max_model_len"].startswith("max model len differs (4,096 vs 2,048) while the context length")
    assert "max_num_seqs" not in got and cmp.warning is not None and "max running requests" in cmp.warning
