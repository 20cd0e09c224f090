"""SC02: long prefills starved the running requests of decode steps."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.events import Event

MIN_WINDOWS = 2  # one starved window can be a stats-window edge; two are a pattern


@register
class DecodeStarvation(Rule):
    """Long prefills starved the running requests: decode nearly stopped while a prompt was prefilled.

    What
        The prefill analysis looks at the windows (vLLM stats lines, SGLang decode lines) where
        requests were running and a prefill was in progress, and marks a window starved when the
        generation rate per running request fell below a quarter of the run's normal decode rate
        (the stable segment's, else the median of the pure-decode windows). The rule fires when two
        or more windows were starved.

    Why
        A long prompt prefilled in big chunks takes the whole per-step token budget: the running
        requests get no decode step while it lasts, so their inter-token latency spikes and the
        aggregate decode rate collapses. In the Kimi-K3 case vLLM ran with
        ``long_prefill_token_threshold=0``, letting one prefill take all 32,768 tokens of a step.

    Fix
        vLLM: set ``--long-prefill-token-threshold`` (a few thousand tokens, well below
        ``--max-num-batched-tokens``) so a long prompt is prefilled in smaller pieces beside the
        decode steps. SGLang: lower ``--chunked-prefill-size`` or enable mixed chunks
        (``--enable-mixed-chunk``).

    References
        - vLLM scheduler config ``long_prefill_token_threshold``, ``max_num_partial_prefills``
        - SGLang server args ``chunked_prefill_size``, ``enable_mixed_chunk``
        - docs/design CASE: Kimi-K3, "Prefill"
    """

    code = "SC02"
    slug = "decode-starvation"
    title = "Decode starved by long prefills"
    severity = "warning"
    confidence = "inferred"
    requires = ("prefill",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        pf = ctx.analysis("prefill")
        st = getattr(pf, "decode_starvation", None)
        if st is None or st.count < MIN_WINDOWS:
            return []
        windows = list(st.windows)
        worst = min(windows, key=lambda w: w.pct_of_reference)
        msg = (
            f"In {st.count} of {st.prefill_windows} windows with running requests and a prefill in progress, "
            f"decode fell below {st.threshold_pct:g} % of the normal {st.reference_per_request_tok_s:g} tok/s per "
            f"request (worst at line {worst.line}: {worst.running} running at {worst.gen_tok_s:g} tok/s in all"
            + (f" while prefilling {worst.prompt_tok_s:g} tok/s" if worst.prompt_tok_s else "")
            + "): running requests got almost no decode steps while long prompts were prefilled."
        )
        thr = st.long_prefill_token_threshold
        if thr is not None:
            msg += f" long_prefill_token_threshold is {thr} in the configuration."
        chunk = ctx.settings.int("chunk_size")
        if ctx.engine == "sglang":
            fix = (
                "Lower `--chunked-prefill-size`"
                + (f" (now {chunk:,})" if chunk else "")
                + " or enable mixed chunks (`--enable-mixed-chunk`) so decode steps run beside a long prefill."
            )
        else:
            budget = f", well below `--max-num-batched-tokens` {chunk:,}" if chunk else ""
            fix = (
                f"Set `--long-prefill-token-threshold` (a few thousand tokens{budget}) so a long prompt is prefilled "
                f"in smaller pieces beside the decode steps."
            )
        by_line: dict[tuple[str, int], Event] = {
            (e.file, e.line): e for _i, e in ctx.of_kind("throughput", "decode_batch")
        }
        events = [by_line[(w.file, w.line)] for w in windows if (w.file, w.line) in by_line]
        first = by_line.get((worst.file, worst.line))
        evidence: list[EvidenceItem] = [first] if first is not None else []
        evidence += events
        return [self.finding(msg, fix, events, evidence)]
