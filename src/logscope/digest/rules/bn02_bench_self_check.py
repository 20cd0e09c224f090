"""BN02: the benchmark client and the engine's log disagree (the report checks itself)."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._bench import self_checks

_ROW = {
    "token_accounting": "Total generated tokens",
    "latency_identity": "Mean E2E",
    "physical_floor": "Mean TPOT",
}
_FIX = {
    "measurement": (
        "Re-measure before using the client's figures: check how the client counts tokens (streamed chunks, "
        "retokenized text, reasoning tokens) and times them, and its version; trust the engine's own "
        "counts and rates meanwhile."
    ),
    "workload": (
        "Make sure the client file belongs to this log and that nothing else sent traffic during the run "
        "(another client, warm-up requests, health probes that generate); re-run alone if it did."
    ),
    "real behaviour": "The figures are consistent; look at the engine's behaviour the finding names.",
}


@register
class BenchSelfCheck(Rule):
    """The benchmark client's figures and the engine's log do not describe the same run.

    What
        The self-check (``logscope.analyses.selfcheck``) sets the client's result beside the server's
        evidence: its output tokens against the tokens the engine generated over the run's span (the
        busy stretch of the log whose length matches the client's duration; vLLM stats windows, SGLang
        decode lines), its latencies against the identity e2e = TTFT + TPOT (or ITL) × (output tokens
        − 1), and its time per token against the engine's ms per token per request at the run's load
        (the physical floor). Each failed check is one finding that says what it points to:
        **measurement** (the client counts or times wrong: more tokens than the engine made, latencies
        that do not add up, tokens faster than the engine decodes), **workload** (the engine made more
        tokens than the client received: other traffic, warm-up, a file from another run). A check
        whose run cannot be placed in the log (no or several matching stretches) is not made.

    Why
        Tools adopted by 2026 validate their own reports this way (inference-perf: token accounting
        between client and server, the latency identity, physical floors), because a client figure
        that looks plausible on its own can be off by a factor: counting streamed chunks as tokens
        doubles the throughput of a speculative-decoding run. The server's log is the independent
        witness only logscope has.

    Fix
        For measurement: re-measure, check the client's token counting and timing and its version,
        and use the engine's figures meanwhile. For workload: make sure the client file is of this
        run and the server served nothing else during it.

    References
        - ``logscope.analyses.selfcheck`` (the checks and their tolerances)
        - BN01 checks the client's figures against themselves; the engine-side bounds it used to
          report (``tpot_vs_engine_decode``, and ``output_vs_engine_decode`` when the run's span is
          placed) are reported here instead, once.
    """

    code = "BN02"
    slug = "bench-self-check"
    title = "Client benchmark figures disagree with the engine's log"
    severity = "warning"
    confidence = "inferred"
    kinds = ("bench_result",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        out: list[Finding] = []
        for e, result in self_checks(ctx):
            for c in result.failed:
                msg = (
                    f"Self-check of the benchmark client's result (line {e.line}) failed, pointing to "
                    f"{c.points_to}: {c.message}."
                )
                evidence: list[EvidenceItem] = [e]
                if c.name in _ROW:
                    evidence.append((e, _ROW[c.name]))
                out.append(self.finding(msg, _FIX[c.points_to or "measurement"], [e], evidence))
        return out
