"""Effective config (analyses/effective.py): the values each shared real run ran with, each with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from logscope.analyses.base import NotApplicable, RunData
from logscope.analyses.effective import ConfigValue, effective_config
from tests.conftest import FIXTURES

GENERATED = sorted(FIXTURES.glob("*/corpus/gen-*.log"))


def _ec(path: Path) -> dict[str, ConfigValue]:
    res = effective_config(RunData.of(logscope.load(path)))
    assert not isinstance(res, NotApplicable), res.reason
    return res


def _row(ec: dict[str, ConfigValue], name: str) -> tuple[object, int, str]:
    v = ec[name]
    return v.value, v.line, v.origin


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_every_generated_run_lists_its_values_with_their_lines(path: Path) -> None:
    run = logscope.load(path)
    res = effective_config(RunData.of(run))
    if path.name == "gen-f1_startup_fail_no_torchvision.log":  # died before printing its server_args
        assert isinstance(res, NotApplicable)
        return
    assert not isinstance(res, NotApplicable), res.reason
    lines = path.read_text(encoding="utf-8").split("\n")
    assert len(res) >= 10
    for name, v in res.items():
        text = lines[v.line - 1]
        if isinstance(v.value, bool | int) and not isinstance(v.value, bool):
            assert str(v.value) in text.replace(",", ""), (name, v)
        key = name if name not in ("max_model_len", "cudagraph_mode") else ""
        if v.origin in ("set", "unknown") and key:
            assert key in text, (name, v)


def test_vllm_spec_run_user_default_and_engine() -> None:
    ec = _ec(FIXTURES / "vllm" / "corpus" / "gen-b1_ngram_spec_greedy_repetitive.log")
    assert _row(ec, "max_model_len") == (4096, 8, "set")
    assert _row(ec, "kv_cache_memory_bytes") == (1073741824, 8, "set")
    assert ec["speculative_config"].origin == "set" and ec["speculative_config"].line == 8
    assert isinstance(ec["speculative_config"].value, dict)
    assert ec["speculative_config"].value["num_speculative_tokens"] == 5
    # "max_num_scheduled_tokens is set to 2048 based on the speculative decoding settings"
    assert _row(ec, "max_num_scheduled_tokens") == (2048, 14, "engine")
    assert _row(ec, "kv_cache_dtype") == ("auto", 19, "default")
    assert _row(ec, "enable_chunked_prefill") == (True, 19, "default")
    assert _row(ec, "cudagraph_mode") == ("NONE", 19, "default")


def test_vllm_case_max_model_len_changed_by_the_engine() -> None:
    ec = _ec(FIXTURES / "case" / "vllm-64k.log")
    # the args asked 1000000 (line 7); `Using max model len 1048576` (line 12)
    assert _row(ec, "max_model_len") == (1048576, 12, "engine")
    assert _row(ec, "tensor_parallel_size") == (8, 7, "set")
    assert _row(ec, "max_num_batched_tokens") == (32768, 7, "set")
    assert _row(ec, "kv_cache_dtype") == ("fp8", 7, "set")
    assert _row(ec, "cudagraph_mode") == ("FULL_AND_PIECEWISE", 22, "default")
    assert _row(ec, "max_cudagraph_capture_size") == (512, 22, "default")


def test_sglang_server_args_and_scheduler_limits() -> None:
    ec = _ec(FIXTURES / "sglang" / "corpus" / "gen-c1_kv_tight_queue.log")
    # server_args has max_running_requests=None: the scheduler chose 2048 (line 39)
    assert _row(ec, "max_running_requests") == (2048, 39, "default")
    assert _row(ec, "max_total_tokens") == (6144, 9, "unknown")
    assert _row(ec, "chunked_prefill_size") == (4096, 9, "unknown")
    assert _row(ec, "attention_backend") == ("torch_native", 9, "unknown")
    assert _row(ec, "mem_fraction_static") == (0.716, 9, "unknown")
