"""CV02: the server answered requests but printed no statistics line."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.analyses.nostats import ANCHORS, missing_stats
from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register


@register
class StatisticsMissing(Rule):
    """A served server lifetime has no statistics line, so no decode or prefill figure can be measured.

    What
        A lifetime (from one ``Application startup complete`` to the next) answered inference
        requests (uvicorn access lines such as ``"POST /v1/completions HTTP/1.1" 200``, or vLLM
        ``Received request`` / ``Added request`` lines) but holds no stats line: no vLLM
        ``Engine 000: Avg prompt throughput ...`` and no SGLang ``Decode batch`` / ``Prefill batch``.
        The finding names the likely cause from the log: ``'disable_log_stats': True`` in the
        ``non-default args`` line, vLLM's ``AsyncLLM created with api_server_count more than 1;
        disabling stats logging`` warning or ``api_server_count`` above 1 in the args, a
        ``log_level`` above INFO; otherwise a logging configuration or an engine idle in every
        interval (vLLM logs idle intervals at DEBUG). Health, metrics and tokenize calls are not
        traffic.

    Why
        "Only access logs, no performance statistics" is a recurring question in the vLLM issue
        tracker. Without the stats line the decode rate, prefill rate, running and waiting queues
        and KV usage over time are unknown: logscope's decode and prefill sections say so, and this
        rule says why and how to get them back.

    Fix
        Drop ``--disable-log-stats``; with several API servers, use ``--api-server-count 1`` while
        measuring, or scrape ``/metrics``; run at ``--log-level info``; check that a logging
        configuration (``VLLM_LOGGING_CONFIG_PATH``) keeps the ``vllm.v1.metrics.loggers`` INFO records.

    References
        - fixtures/vllm/no_stats/README.md (a real vLLM 0.32.0 log served with ``--disable-log-stats``)
        - vLLM ``--api-server-count``: the stats logger is disabled with more than one API server
          (formats reference, vllm.md section 2.1)
    """

    code = "CV02"
    slug = "statistics-missing"
    title = "Requests served without statistics lines"
    severity = "warning"
    confidence = "observed"
    anchors = ANCHORS

    def check(self, ctx: Context) -> Iterable[Finding]:
        out: list[Finding] = []
        for m in missing_stats(ctx.data):
            msg = (
                f"The server lifetime from line {m.first_line} answered {m.traffic} {m.traffic_what} "
                f"(first at line {m.first_traffic.line}) but printed no statistics line, so the decode and "
                f"prefill rates, queues and KV usage over time are unknown. Likely cause: {m.cause}."
            )
            out.append(self.finding(msg, m.fix, [m.first_traffic], m.evidence))
        return out
