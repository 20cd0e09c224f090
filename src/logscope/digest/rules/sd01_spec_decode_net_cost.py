"""SD01: speculative decoding costs more than it gives."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.events import Event

WASTE_PCT = 90.0  # share of drafted tokens thrown away above which drafting is called a net cost


@register
class SpecDecodeNetCost(Rule):
    """Speculative decoding is a net cost, or throws most of its drafts away.

    What
        The spec-decode analysis sums the engine's acceptance lines (vLLM ``SpecDecoding metrics``,
        V0 ``Speculative metrics`` differenced, SGLang ``accept len`` on decode lines) into a mean
        acceptance length (tokens gained per target verification step) and the share of drafted
        tokens thrown away. The rule fires when the analysis' verdict is "net cost" (mean acceptance
        length below 1.5: most steps yield one token, as without speculation) or when 90 % or more of
        the drafted tokens are wasted (the draft is far longer than what is accepted, even when the
        gain is positive). It uses the stable decode segment's figures when there is one.

    Why
        Every step still runs the draft model for k tokens and verifies k + 1 tokens in the target:
        when the drafts are rejected that work is lost, the batch is bigger than it needs to be, and
        decode is slower than without speculation. Random or high-temperature text cannot be
        predicted by a draft. In the Kimi-K3 case at 200K, vLLM drafted about 990 tok/s and accepted
        about 21 tok/s: 98 % of the draft compute was wasted.

    Fix
        Turn speculative decoding off for this workload (drop ``--speculative-config`` /
        ``--speculative-algorithm``), or draft fewer tokens (``num_speculative_tokens``,
        ``--speculative-num-draft-tokens``), about the mean acceptance length; measure decode with and
        without it on real traffic.

    References
        - vLLM ``v1/spec_decode/metrics.py``; SGLang decode-batch ``accept len``
        - docs/design CASE: Kimi-K3, "Speculative decoding was pure overhead"
    """

    code = "SD01"
    slug = "spec-decode-net-cost"
    title = "Speculative decoding is a net cost or mostly wasted"
    severity = "warning"
    confidence = "inferred"
    requires = ("spec_decode",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        sd = ctx.analysis("spec_decode")
        seg = getattr(sd, "stable_segment", None)
        fig: Any = (
            seg
            if seg is not None and getattr(seg, "mean_acceptance_length", None) is not None
            else getattr(sd, "run", sd)
        )
        mal = getattr(fig, "mean_acceptance_length", None)
        rate = getattr(fig, "acceptance_rate_pct", None)
        waste = getattr(fig, "wasted_draft_pct", None)
        if not (sd.verdict == "net cost" or (waste is not None and waste >= WASTE_PCT)):
            return []
        where = "over the stable decode segment" if fig is seg else "over the run"
        what = getattr(sd, "speculative_method", None)
        k = getattr(sd, "draft_tokens", None)
        setup = ", ".join(x for x in (str(what) if what else "", f"{k} draft tokens" if k else "") if x)
        msg = f"Speculative decoding{f' ({setup})' if setup else ''} {where}:"
        figures = []
        if mal is not None:
            figures.append(f"mean acceptance length {mal:.2f} tokens per verification step")
        if rate is not None:
            figures.append(f"{rate:.1f} % of drafted tokens accepted")
        acc, dr = getattr(fig, "accepted_tok_s", None), getattr(fig, "drafted_tok_s", None)
        if acc is not None and dr is not None:
            figures.append(f"{dr:,.1f} tok/s drafted for {acc:,.1f} tok/s accepted")
        msg += " " + ", ".join(figures) if figures else ""
        if waste is not None:
            msg += f"; {waste:.1f} % of the draft work is thrown away"
        if sd.verdict == "net cost":
            msg += (
                ". Almost every step yields one token, as without speculation, while still drafting and verifying "
                "the full draft: spec decode is a net cost here."
            )
        else:
            msg += (
                f". The draft is far longer than what is accepted: most of the draft and verification work is "
                f"thrown away (the analysis calls the gain {sd.verdict})."
            )
        lines = self._lines(ctx, fig)
        evidence: list[EvidenceItem] = []
        if lines:
            worst = min(lines, key=_acceptance)
            evidence = [lines[0], worst, lines[-1]]
        fix = (
            "Turn speculative decoding off for this workload (drop `--speculative-config` / "
            "`--speculative-algorithm`) or draft fewer tokens, and compare decode with and without it."
        )
        if sd.verdict != "net cost" and mal is not None:
            fix = (
                f"Draft fewer tokens (about {max(1, round(mal))} instead of {k or 'k'}: `num_speculative_tokens` / "
                f"`--speculative-num-draft-tokens`) to keep the gain at less cost, and compare decode with and "
                f"without speculation."
            )
        return [self.finding(msg, fix, lines, evidence)]

    @staticmethod
    def _lines(ctx: Context, fig: Any) -> list[Event]:
        """The acceptance lines the figures come from (within the figures' line range when it is given)."""
        lo, hi = getattr(fig, "start_line", None), getattr(fig, "end_line", None)
        out = [e for _i, e in ctx.of_kind("spec_decode")]
        if not out:
            out = [e for _i, e in ctx.of_kind("decode_batch") if getattr(e, "accept_len", None) is not None]
        if lo is not None and hi is not None:
            inside = [e for e in out if lo <= e.line <= hi]
            out = inside or out
        return out


def _acceptance(e: Event) -> float:
    for name in ("mean_acceptance_length", "accept_len", "acceptance_rate_pct"):
        v = getattr(e, name, None)
        if v is not None:
            return float(v)
    return float("inf")
