"""RK01: one engine or DP rank held most of the queue, or ran as much as the others at far less speed."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register


@register
class RankImbalance(Rule):
    """One engine or DP rank held most of the waiting requests, or generated far less than the others.

    What
        Under data parallelism vLLM prints one stats line per engine (``Engine 000:``,
        ``Engine 001:``) and SGLang one ``Decode batch`` line per DP group (``[... DP2 TP0]``);
        the other sections sum or pool them. The ``ranks`` analysis matches the ranks' lines by
        time and checks each moment: a rank that holds 50 % or more of all waiting requests (at
        least 4, and 3 times the others' median queue), or one that runs at least the others'
        median of requests yet generates under half their median rate. The rule fires when that
        holds in half of the matched moments or more (in every moment of a short excerpt).

    Why
        A summed rate hides a rank that does less than its share: one overloaded rank sets the
        TTFT of every request routed to it while the others idle, and one slow rank (a bad GPU,
        thermal throttling, a rank whose requests are longer) holds back every collective step
        under DP attention. The sum looks normal; the tail latency does not.

    Fix
        Queue imbalance: check how requests are routed to the ranks (the router's or load
        balancer's policy, SGLang ``--load-balance-method``, session affinity or prefix-aware
        routing that pins long requests to one rank). Slow rank: compare the ranks' hardware
        (``nvidia-smi`` clocks, temperature, errors) and the lengths of the requests each rank
        served.

    References
        - vLLM per-engine stats line ``Engine NNN:`` (formats reference 2.1)
        - SGLang DP-attention header ``[... DP2 TP0]`` (formats reference, prefixes)
        - logscope issue #16: "imbalance is invisible"
    """

    code = "RK01"
    slug = "rank-imbalance"
    title = "One rank held the queue or ran far slower"
    severity = "warning"
    confidence = "heuristic"
    requires = ("ranks",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        rk = ctx.analysis("ranks")
        found = list(getattr(rk, "imbalances", []))
        if not found:
            return []
        parts = [f"{'Queue' if im.kind == 'queue' else 'Slow rank'}: {im.detail}." for im in found]
        msg = " ".join(parts) + " The summed figures of this report hide it."
        kinds = {im.kind for im in found}
        fixes = []
        if "queue" in kinds:
            fixes.append(
                "check how requests are routed to the ranks (the router's policy, SGLang "
                "`--load-balance-method`, session or prefix affinity pinning long requests to one rank)"
            )
        if "slow" in kinds:
            fixes.append(
                "compare the slow rank's hardware (`nvidia-smi` clocks, temperature, errors) and the lengths "
                "of the requests it served with the others'"
            )
        text = "; ".join(fixes)
        fix = text[:1].upper() + text[1:] + "."
        f = self.finding(msg, fix, [], [ev for im in found for ev in im.evidence])
        return [f.model_copy(update={"count": len(found)})]
