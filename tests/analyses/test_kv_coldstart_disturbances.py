"""KV pool audit, cold start and disturbances on small event lists."""

from __future__ import annotations

import pytest

from logscope.analyses.base import NotApplicable
from logscope.analyses.coldstart import ColdStart, cold_start
from logscope.analyses.disturbances import disturbances
from logscope.analyses.kv import KvPool, kv_pool
from logscope.events import (
    Compile,
    Config,
    EngineInit,
    Error,
    Event,
    GraphCapture,
    KvCachePool,
    KvCapacity,
    MaxConcurrency,
    MemoryProfile,
    ModelLoad,
    Oom,
    SchedulerLimits,
    ServerReady,
    Unparsed,
    Warning_,
)

from .build import run, stats

V = {"engine": "vllm", "file": "t.log"}
S = {"engine": "sglang", "file": "s.log"}


def _kv(res: KvPool | NotApplicable) -> KvPool:
    assert isinstance(res, KvPool), getattr(res, "reason", res)
    return res


def test_vllm_overcommit_from_suggestion_and_sum() -> None:
    evs: list[Event] = [
        KvCachePool(**V, line=10, t_s=1.0, pool="kv", tokens=500_000, device="gpu"),
        MaxConcurrency(**V, line=10, t_s=1.0, tokens_per_request=200_000, concurrency=2.5),
        MemoryProfile(
            **V,
            line=12,
            t_s=2.0,
            total_gib=80.0,
            gpu_memory_utilization=0.9,
            requested_gib=72.0,
            consumed_gib=50.0,
            activation_peak_gib=5.0,
            cuda_graph_gib=2.0,
            kv_cache_gib=17.0,
            suggested_kv_cache_bytes=15 * 2**30,
        ),
    ]
    kv = _kv(kv_pool(run(evs)))
    assert kv.tokens == 500_000 and kv.max_model_len == 200_000 and kv.max_concurrency == 2.5
    assert kv.overcommit_gib == 2.0  # 17 in use - 15 that fit
    assert kv.overcommit_from_sum_gib == 2.0  # 50 + 5 + 2 + 17 - 72
    assert kv.shortfall_pct is None
    assert any("over-committed by 2" in n for n in kv.notes)


def test_sglang_shortfall_draft_pool_and_running_cap() -> None:
    evs: list[Event] = [
        Config(**S, line=1, t_s=0.0, form="server_args", args={"context_length": 1_000_000, "dcp_size": 8}),
        Warning_(
            **S,
            line=2,
            t_s=0.0,
            message="Max running requests is reset to 48 for speculative decoding.",
            template="t",
        ),
        ModelLoad(**S, line=5, t_s=100.0, tp_rank=0, memory_gib=195.86, seconds=140.0),
        KvCachePool(**S, line=6, t_s=101.0, tp_rank=0, pool="kv", tokens=916_672, k_gib=5.9, v_gib=5.9),
        KvCachePool(**S, line=7, t_s=101.0, tp_rank=1, pool="kv", tokens=916_672, k_gib=5.9, v_gib=5.9),
        Warning_(
            **S,
            line=8,
            t_s=102.0,
            tp_rank=0,
            template="t",
            message="max_running_requests is capped to 39 by the mamba state cache (max_mamba_cache_size=78)",
        ),
        ModelLoad(**S, line=20, t_s=400.0, tp_rank=0, memory_gib=1.2, seconds=7.0),
        KvCachePool(**S, line=21, t_s=401.0, tp_rank=0, pool="kv", tokens=7_333_376, k_gib=4.37, v_gib=4.37),
        SchedulerLimits(
            **S,
            line=30,
            t_s=500.0,
            tp_rank=0,
            max_total_num_tokens=916_672,
            max_running_requests=39,
            context_len=1_000_000,
            available_gpu_mem_gib=17.08,
        ),
    ]
    kv = _kv(kv_pool(run(evs, engine="sglang")))
    assert kv.tokens == 916_672 and kv.memory_gib == 11.8
    assert kv.shortfall_pct == 8.33
    assert kv.max_concurrency == pytest.approx(0.9167)
    assert kv.max_running_requests == 39
    assert [n.split(" (line")[0] for n in kv.max_running_requests_notes] == [
        "max_running_requests reset to 48 for speculative decoding",
        "max_running_requests capped to 39 by the Mamba state cache",
    ]
    pools = {p.pool: p for p in kv.pools}
    assert pools["kv"].seen == 2 and pools["kv"].ranks == [0, 1]
    assert pools["draft"].tokens == 7_333_376
    assert any("8 x the kv pool" in n and "DCP" in n for n in kv.notes)
    assert kv.memory is not None and kv.memory.weights_gib == 195.86


def test_startup_failure_shortfall() -> None:
    cap = KvCapacity(**V, line=52, t_s=35.0, message="...", max_seq_len=32768, estimated_max_len=6016)
    kv = _kv(kv_pool(run([cap])))
    assert kv.shortfall_pct == 81.64 and kv.max_model_len == 32768


def test_kv_nothing() -> None:
    res = kv_pool(run(stats([(0.0, 500.0, 10)])))
    assert isinstance(res, NotApplicable) and "no KV pool" in res.reason


def _cs(res: ColdStart | NotApplicable) -> ColdStart:
    assert isinstance(res, ColdStart), getattr(res, "reason", res)
    return res


def test_cold_start_vllm_printed_figures_and_ranks() -> None:
    evs: list[Event] = [Config(**V, line=1, t_s=0.0, time="10-18 17:06:21", args={"model": "m"})]
    evs += [
        ModelLoad(**V, line=10 + k, t_s=220.0, tp_rank=k, memory_gib=196.0, seconds=163.5 + k / 10)
        for k in range(4)
    ]
    evs += [
        Compile(**V, line=20 + k, t_s=235.0, tp_rank=k, stage="warmup", seconds=14.0 + k) for k in range(4)
    ]
    evs += [
        GraphCapture(**V, line=30 + k, t_s=600.0, tp_rank=k, seconds=85.0 + k, memory_gib=5.13)
        for k in range(4)
    ]
    evs += [
        EngineInit(**V, line=40, t_s=630.0, seconds=409.61),
        ServerReady(**V, line=50, t_s=None),
        Unparsed(**V, line=49, t_s=636.0, time="10-18 17:16:57", text="Starting vLLM server"),
    ]
    ev = sorted(evs, key=lambda e: e.line)
    cs = _cs(cold_start(run(ev, ordered=True)))
    assert cs.total_s == 636.0 and cs.ready_line == 50 and cs.ready_time == "10-18 17:16:57"
    ph = {p.name: p for p in cs.phases}
    assert ph["weights"].seconds == 163.8 and ph["weights"].ranks == 4
    assert ph["profiling/warmup run"].range_s == (14.0, 17.0)
    assert ph["CUDA graph capture"].seconds == 88.0 and ph["CUDA graph capture"].range_s == (85.0, 88.0)
    assert ph["engine init"].seconds == 409.61 and ph["engine init"].source == "printed"
    assert "untimed" in cs.method


def test_cold_start_sglang_from_timestamps() -> None:
    evs: list[Event] = [
        Config(**S, line=1, t_s=0.0, args={"tp_size": 2}),
        ModelLoad(**S, line=5, t_s=240.0, tp_rank=0, seconds=141.0, memory_gib=195.0),
        KvCachePool(**S, line=6, t_s=241.0, tp_rank=0, pool="kv", tokens=1000),
        GraphCapture(**S, line=7, t_s=260.0, tp_rank=0, begin=True),
        GraphCapture(**S, line=8, t_s=470.0, tp_rank=0, seconds=210.0, memory_gib=12.0),
        GraphCapture(**S, line=9, t_s=480.0, tp_rank=0, begin=True),
        GraphCapture(**S, line=10, t_s=600.0, tp_rank=0, seconds=120.0, memory_gib=3.0),
        SchedulerLimits(**S, line=11, t_s=609.0, tp_rank=0, max_total_num_tokens=1000),
        EngineInit(**S, line=12, t_s=610.0, seconds=520.0),
        ServerReady(**S, line=20, t_s=614.0),
    ]
    cs = _cs(cold_start(run(evs, engine="sglang")))
    ph = {p.name: p for p in cs.phases}
    assert ph["CUDA graph capture"].seconds == 330.0 and ph["CUDA graph capture"].memory_gib == 15.0
    assert "2 captures" in (ph["CUDA graph capture"].detail or "")
    init = ph["engine init after weights (weights loaded -> scheduler summary)"]
    assert init.seconds == 369.0 and init.source == "timestamps"
    assert cs.total_s == 614.0


def test_cold_start_without_ready() -> None:
    res = cold_start(run([Error(**V, line=3, t_s=1.0, message="boom")]))
    assert isinstance(res, NotApplicable) and "no ready line" in res.reason


def test_disturbances_on_the_timeline() -> None:
    evs: list[Event] = [ServerReady(**V, line=1, t_s=0.0)]
    evs += stats([(20000.0, 0.1, 5, 5)] + [(0.0, 500.0, 10)] * 5, start_line=100, t0=10.0)
    evs += [
        Oom(
            **V,
            line=200 + k,
            t_s=5.0,
            tp_rank=k,
            message="CUDA out of memory",
            retry=True,
            requested_gib=4.52,
            free_gib=2.67,
        )
        for k in range(4)
    ]
    evs += [
        Oom(**V, line=210 + k, t_s=35.0, tp_rank=k, message="CUDA out of memory", retry=True)
        for k in range(4)
    ]
    evs.append(Compile(**V, line=220, t_s=6.0, tp_rank=0, stage="runtime_jit", detail="kernel_a"))
    evs.append(
        Error(**V, line=230, t_s=70.0, message="EngineDeadError", exception="EngineDeadError", raw="x")
    )
    evs.append(
        Unparsed(
            **V,
            line=229,
            t_s=69.0,
            text="[shutdown] API server: shutdown triggered",
            raw="(APIServer) INFO [shutdown] API server: shutdown triggered",
        )
    )
    d = disturbances(run(evs))
    assert d.oom == 8 and d.oom_rounds == 2 and d.oom_retried == 8
    assert d.oom_by_rank == {"TP0": 2, "TP1": 2, "TP2": 2, "TP3": 2}
    assert d.runtime_compiles == 1
    ooms = [t for t in d.timeline if t.kind == "oom"]
    assert [(t.count, t.ranks, t.overlaps) for t in ooms] == [
        (4, ["TP0", "TP1", "TP2", "TP3"], ["prefill"]),
        (4, ["TP0", "TP1", "TP2", "TP3"], ["stable decode"]),
    ]
    assert any(
        s.startswith("4 OOM line(s) (1 distinct moment(s)) fall inside stable decode") for s in d.overlapping
    )
    assert d.errors == 0 and d.benign_errors == 1  # after a clean stop began: listed, not counted
    assert d.error_list[0].benign_shutdown and d.error_list[0].phase == "shutdown"


def test_preemptions_and_retractions_are_counted() -> None:
    from logscope.events import Preemption, Retract, Throughput

    evs: list[Event] = [
        Throughput(
            **V, line=10, t_s=10.0, prompt_tok_s=0.0, gen_tok_s=100.0, running=4, waiting=2, preemptions=3
        ),
        Preemption(**V, line=11, t_s=11.0, request_id="r1", count=4),
        Retract(**S, line=12, t_s=12.0, tp_rank=0, retracted_reqs=5, new_token_ratio=0.3),
    ]
    d = disturbances(run(evs))
    assert d.preemptions == 4 and d.retractions == 1 and d.retracted_requests == 5
    assert {t.kind for t in d.timeline} == {"throughput", "preemption", "retract"}
