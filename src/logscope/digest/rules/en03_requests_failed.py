"""EN03: the server answered requests with HTTP errors, or requests were aborted or failed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from logscope.analyses.disturbances import aborted_once
from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import plural
from logscope.events import Event


@register
class RequestsFailed(Rule):
    """Requests were answered with HTTP 4xx/5xx, or were aborted or failed inside the engine.

    What
        uvicorn's access log prints one line per answered request, ``INFO:     127.0.0.1:51234 -
        "POST /v1/completions HTTP/1.1" 400 Bad Request`` (SGLang puts its ``[time] `` before it);
        the rule counts the lines whose status is 400 or more, per status and path, except a
        monitor's probes (``GET /metrics``, ``/health``, ``/ping``, ``/favicon.ico``: a scraper
        asking a server started without metrics is no failed request). With request
        logging on (vLLM ``--enable-log-requests``, SGLang ``--log-requests``) the engine also
        prints ``Aborted request(s) ID.`` and ``Request ID aborted.`` (vLLM: one abort, two lines,
        counted once), ``Request ID failed (...)``, or an SGLang ``Finish:`` line whose
        ``finish_reason`` is an abort. A 4xx answer usually has no WARNING or ERROR line of its own:
        the access line is the only trace. A log without access or request lines says nothing here
        (the counts are unknown, not zero).

    Why
        Clients did not get what they asked for: a prompt longer than the context (400), an unknown
        model name or path (404), a server error (5xx), a client that gave up (abort, often a
        timeout). Benchmark figures of such a run count fewer requests than were sent, and a
        throughput measured over it mixes served and refused work.

    Fix
        Read the evidence lines: 400 are requests the server refused (check ``--max-model-len``
        against the prompts, the sampling parameters the client sends), 404 a wrong model name
        (``--served-model-name``) or endpoint, 5xx the engine's own error lines near them; aborts
        are clients that disconnected or timed out (raise the client timeout, lower the load).

    References
        - uvicorn ``protocols/http`` access log; vLLM ``v1/engine/async_llm.py`` (abort, failed)
        - SGLang ``srt/utils/request_logger.py`` (``Finish:``)
    """

    code = "EN03"
    slug = "requests-failed"
    title = "Requests answered with HTTP errors or aborted"
    severity = "warning"
    confidence = "observed"
    kinds = ("http_access", "request")

    def check(self, ctx: Context) -> Iterable[Finding]:
        out: list[Finding] = []
        bad = [
            e for _i, e in ctx.of_kind("http_access") if int(getattr(e, "status", 0)) >= 400 and not _probe(e)
        ]
        if bad:
            total = sum(e.repeated for e in ctx_events(ctx, "http_access"))
            by: Counter[tuple[int, str]] = Counter()
            for e in bad:
                by[
                    (int(getattr(e, "status", 0)), f"{getattr(e, 'method', '')} {getattr(e, 'path', '')}")
                ] += e.repeated
            n = sum(by.values())
            parts = [
                f"{c}x {status} on {what}"
                for (status, what), c in sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))[:6]
            ]
            more = f" and {len(by) - 6} more" if len(by) > 6 else ""
            msg = (
                f"The server answered {plural(n, 'request')} of {total:,} in its access log with an HTTP error "
                f"({', '.join(parts)}{more}; first at line {bad[0].line})."
            )
            fix = (
                "400: the request was refused (prompt longer than --max-model-len, bad sampling parameters); 404: unknown "
                "model name or path; 5xx: see the engine's error lines near them."
            )
            evidence: list[EvidenceItem] = []
            seen: set[int] = set()
            for e in bad:  # the first line of each status
                status = int(getattr(e, "status", 0))
                if status not in seen:
                    seen.add(status)
                    evidence.append(e)
            out.append(self.finding(msg, fix, bad, evidence[:4]))
        reqs = [e for _i, e in ctx.of_kind("request")]
        aborted = aborted_once(reqs)
        failed = [e for e in reqs if getattr(e, "phase", None) == "error"]
        if aborted or failed:
            n_abort = sum(
                max(1, len((getattr(e, "request_id", None) or "").split(","))) * e.repeated for e in aborted
            )
            parts = []
            if aborted:
                parts.append(f"{plural(n_abort, 'request')} aborted (first at line {aborted[0].line})")
            if failed:
                reasons = Counter((getattr(e, "reason", None) or "no reason printed")[:80] for e in failed)
                top = ", ".join(f"{c}x {r}" for r, c in reasons.most_common(3))
                parts.append(
                    f"{plural(sum(e.repeated for e in failed), 'request')} failed ({top}; first at line "
                    f"{failed[0].line})"
                )
            msg = "Request logging shows " + " and ".join(parts) + ": those clients got no complete answer."
            fix = (
                "Aborts are clients that disconnected or timed out: raise the client's timeout or lower the load; "
                "failures name their reason (bad request, input error, engine dead)."
            )
            out.append(self.finding(msg, fix, aborted + failed, (aborted[:2] + failed[:2]) or aborted[:1]))
        return out


_PROBES = ("/metrics", "/health", "/healthz", "/ping", "/favicon.ico", "/version")


def _probe(e: Event) -> bool:
    """A monitor's GET of a status endpoint (not a client's request)."""
    path = str(getattr(e, "path", "")).split("?", 1)[0]
    return getattr(e, "method", None) in ("GET", "HEAD") and path in _PROBES


def ctx_events(ctx: Context, kind: str) -> list[Event]:
    return [e for _i, e in ctx.of_kind(kind)]
