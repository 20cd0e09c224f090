"""BN01: the benchmark client printed numbers that cannot be right."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register

_ROW = {  # the result-block row that prints a checked figure (for the evidence line)
    "output_tok_s": "Output token throughput",
    "input_tok_s": "Input token throughput",
    "total_tok_s": "Total token throughput",
    "request_throughput": "Request throughput",
    "duration_s": "Benchmark duration",
    "mean_ttft_ms": "Mean TTFT",
    "mean_tpot_ms": "Mean TPOT",
    "concurrency": "Concurrency",
    **{
        f"{q}_{what}_ms": f"{label} {name}"
        for q, label in (
            ("mean", "Mean"),
            ("median", "Median"),
            ("p90", "P90"),
            ("p95", "P95"),
            ("p99", "P99"),
            ("max", "Max"),
        )
        for what, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"))
    },
}


@register
class BenchImpossible(Rule):
    """The benchmark client's result block holds numbers that are physically impossible.

    What
        The bench analysis checks every client result block in the log (``vllm bench serve``,
        ``sglang.bench_serving``) against arithmetic and physics: a throughput cannot exceed the
        tokens (or requests) divided by the duration; no latency exceeds the duration; Little's law
        relates duration, latency and concurrency; the client's own distributions must be in order
        (median <= P90 <= P95 <= P99 <= max) and its mean inter-token latency cannot be many times
        below its mean TPOT; and, when the engine's log is there too, the client's output
        throughput × duration cannot exceed the tokens of all the engine's stats windows (left to BN02
        when its token accounting already flags the same excess). The client's TPOT beside the engine's ms
        per token per request is BN02's physical floor, reported there only. Each violated
        check becomes part of the message; where the bound is the same quantity measured right
        (tokens / duration) it is given as the figure to trust, never a different quantity.

    Why
        Client figures are pasted into decisions. In the Kimi-K3 case the client printed 1111.61
        tok/s of output for a run whose 10 requests x 3000 tokens in 295.21 s allow at most 101.6
        tok/s: the figure was 11x inflated, and only the engine's own rates were usable.

    Fix
        Do not use the flagged figures; use the bound given where it is the same quantity (tokens /
        duration), else re-measure. Check the client's token counting (streaming chunks counted as tokens,
        reasoning tokens, a tokenizer mismatch) and its version.

    References
        - ``logscope.analyses.bench`` (the checks)
        - docs/design CASE: Kimi-K3, "Client-side numbers must be checked against physics"
    """

    code = "BN01"
    slug = "bench-impossible"
    title = "Client benchmark numbers impossible or inconsistent"
    severity = "warning"
    confidence = "inferred"
    kinds = ("bench_result",)

    def not_checked(self, ctx: Context) -> str | None:
        if _checker() is None:
            return "the bench analysis (logscope.analyses.bench.check_bench) is not available"
        return super().not_checked(ctx)

    def check(self, ctx: Context) -> Iterable[Finding]:
        check_bench = _checker()
        if check_bench is None:
            return []
        engine = _engine_figures(ctx)
        placed = _placed(ctx)
        out: list[Finding] = []
        for _i, e in ctx.of_kind("bench_result"):
            sanity = check_bench(e, **{k: v for k, v in engine.items() if k != "engine_window"})
            # the engine-side bounds BN02's self-check reports: the floor always; the engine's tokens when BN02's
            # token accounting already failed for this result (the same excess, once)
            skip = {"tpot_vs_engine_decode"} | (
                {"output_vs_engine_decode"} if (e.file, e.line) in placed else set()
            )
            bad = [
                c for c in getattr(sanity, "checks", []) if not getattr(c, "ok", True) and c.name not in skip
            ]
            if not bad:
                continue
            msg = "The benchmark client's result block (line {}) does not add up: {}.".format(
                e.line, "; ".join(str(getattr(c, "message", c)) for c in bad)
            )
            evidence: list[EvidenceItem] = [e]
            for c in bad:
                row = _ROW.get(str(getattr(c, "metric", "")))
                if row:
                    evidence.append((e, row))
            fix = (
                "Do not use the flagged figures: use the bound given where it is the same quantity (tokens / "
                "duration), else re-measure; check how the client counts tokens (streamed chunks, reasoning "
                "tokens, tokenizer) and times them, and its version."
            )
            out.append(self.finding(msg, fix, [e], evidence))
        return out


def _placed(ctx: Context) -> set[tuple[str, int]]:
    """(file, line) of the client results whose token accounting failed in BN02."""
    from logscope.digest.rules._bench import self_checks

    return {
        (e.file, e.line) for e, r in self_checks(ctx) if any(c.name == "token_accounting" for c in r.failed)
    }


def _checker() -> Callable[..., Any] | None:
    try:
        from logscope.analyses.bench import check_bench
    except ImportError:
        return None
    return check_bench


def _engine_figures(ctx: Context) -> dict[str, Any]:
    """The engine's own figures for the cross-checks, when the run holds the server log too."""
    from logscope.analyses.bench import engine_figures

    if not (ctx.has("throughput") or ctx.has("decode_batch")):
        return {}
    return engine_figures(ctx.data, ctx.analysis("stable_decode"), ctx.analysis("decode_under_load"))
