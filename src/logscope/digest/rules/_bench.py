"""Shared by BN01 and BN02: the self-checks of the run's client results, computed once per run."""

from __future__ import annotations

from typing import Any, cast

from logscope.digest.context import Context
from logscope.events import BenchResult


def self_checks(ctx: Context) -> list[tuple[Any, Any]]:
    """(bench_result event, SelfCheckResult) of each client result of the run (computed once per run)."""
    memo = ctx.data.memo
    if "bench_self_checks" in memo:
        got: list[tuple[Any, Any]] = memo["bench_self_checks"]
        return got
    from logscope.analyses.bench import engine_figures
    from logscope.analyses.selfcheck import busy_spans, self_check

    spans, how = busy_spans(ctx.data)
    eng: dict[str, Any] = {}
    if ctx.has("throughput") or ctx.has("decode_batch"):
        eng = engine_figures(ctx.data, ctx.analysis("stable_decode"), ctx.analysis("decode_under_load"))
    out = [
        (
            e,
            self_check(
                cast(BenchResult, e),
                spans,
                how,
                eng.get("engine_ms_per_token"),
                eng.get("engine_decode_method"),
                eng.get("engine_window"),
            ),
        )
        for _i, e in ctx.of_kind("bench_result")
    ]
    memo["bench_self_checks"] = out
    return out
