"""SC01: running requests were preempted (vLLM) or retracted (SGLang) for lack of KV space."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import plural, ranks_text
from logscope.events import Event


@register
class Preemptions(Rule):
    """Running requests were preempted or retracted because the KV cache was full.

    What
        When the KV cache cannot grow the running requests by one more token, the scheduler evicts
        some of them and recomputes (or swaps) them later. vLLM V0 prints ``Sequence group X is
        preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space ...
        total_num_cumulative_preemption=N`` (once every 50 preemptions); vLLM V1 prints
        ``Preemptions: N`` in the stats line (from late 2025; some versions never print it); SGLang
        prints ``KV cache pool is full. Retract requests. #retracted_reqs: N`` (older: ``Decode out
        of memory happened``) on every TP rank. The rule counts them, once per event (not per rank).

    Why
        A preempted request loses its KV cache and is prefilled again: its latency jumps, the
        recomputation takes prefill time from everyone, and throughput figures of the window mix
        decode with recomputation.

    Fix
        Give the KV cache more room (``--gpu-memory-utilization`` / ``--mem-fraction-static``, more
        GPUs, FP8 KV cache) or admit fewer requests (``--max-num-seqs`` / ``--max-running-requests``;
        SGLang: a higher ``--schedule-conservativeness``).

    References
        - vLLM V0 ``core/scheduler.py`` ``_preempt``; V1 ``loggers.py`` stats line
        - SGLang ``scheduler.py`` ``update_running_batch`` (retraction)
    """

    code = "SC01"
    slug = "preemptions"
    title = "Requests preempted or retracted for lack of KV cache"
    severity = "warning"
    confidence = "observed"
    kinds = ("preemption", "throughput", "retract")

    def check(self, ctx: Context) -> Iterable[Finding]:
        out: list[Finding] = []
        v0 = [e for _i, e in ctx.of_kind("preemption")]
        stats = [e for _i, e in ctx.of_kind("throughput") if (getattr(e, "preemptions", None) or 0) > 0]
        if v0 or stats:
            parts: list[str] = []
            evidence: list[EvidenceItem] = []
            total = 0
            if v0:
                cum = max((int(getattr(e, "count", 0) or 0) for e in v0), default=0)
                n = sum(e.repeated for e in v0)
                total += max(cum, n)
                parts.append(
                    f"vLLM preempted running requests for lack of KV cache space: "
                    f"{plural(n, 'preemption line')}{ranks_text(v0)}"
                    + (
                        f", the last saying total_num_cumulative_preemption={cum:,} (line "
                        f"{max(v0, key=lambda e: int(getattr(e, 'count', 0) or 0)).line}; vLLM logs one line per 50)"
                        if cum
                        else f" (first at line {v0[0].line})"
                    )
                )
                evidence += v0[:2] + v0[-1:]
            if stats:
                n = sum(int(getattr(e, "preemptions", 0) or 0) for e in stats)
                total += n
                worst = max(stats, key=lambda e: int(getattr(e, "preemptions", 0) or 0))
                parts.append(
                    f"{plural(n, 'preemption')} in {plural(len(stats), 'stats window')} (most at line "
                    f"{worst.line}: {getattr(worst, 'preemptions', 0)}, KV cache "
                    f"{getattr(worst, 'gpu_kv_cache_pct', None) or 0:.1f} % full)"
                )
                evidence += [(worst, "Preemptions"), (stats[0], "Preemptions")]
            msg = (
                "; ".join(parts)
                + ". Preempted requests are recomputed: their latency jumps and prefill work grows."
            )
            fix = (
                "Give the KV cache more room (`--gpu-memory-utilization`, more GPUs, `--kv-cache-dtype fp8`) or admit "
                "fewer requests at once (`--max-num-seqs`)."
            )
            out.append(self.finding(msg, fix, v0 + stats, evidence))
        retracts = [e for _i, e in ctx.of_kind("retract")]
        if retracts:
            unique = _once_per_event(retracts)
            reqs = sum(int(getattr(e, "retracted_reqs", 0) or 0) for e in unique)
            msg = (
                f"SGLang retracted running requests {plural(len(unique), 'time')} because the KV cache pool was "
                f"full ({plural(reqs, 'request')} in all; {plural(sum(e.repeated for e in retracts), 'line')}"
                f"{ranks_text(retracts)}; first at line {retracts[0].line}). Retracted requests go back to the "
                f"queue and are prefilled again."
            )
            fix = (
                "Give the KV pool more room (`--mem-fraction-static`, more GPUs, FP8 KV cache) or admit fewer "
                "requests (`--max-running-requests`, a higher `--schedule-conservativeness`)."
            )
            out.append(self.finding(msg, fix, retracts, unique[:3] + retracts[-1:]))
        return out


def _once_per_event(events: list[Event]) -> list[Event]:
    """One line per retraction: every TP rank of a DP group prints the same line at the same time."""
    seen: set[tuple[object, ...]] = set()
    out: list[Event] = []
    for e in events:
        key = (e.dp_rank, e.time, getattr(e, "retracted_reqs", None), getattr(e, "new_token_ratio", None))
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out
