"""Request-level lines: uvicorn's access log (both engines) and request logging (vLLM
``--enable-log-requests``, SGLang ``--log-requests``), as ``http_access`` and ``request`` events.

Format facts (see docs/formats): uvicorn prints ``INFO:     127.0.0.1:51234 - "POST /v1/completions
HTTP/1.1" 200 OK`` (SGLang puts its ``[time] `` before it); vLLM prints ``Received request ID: ...``,
``Added request ID.``, ``Finished request ID.`` (V0), ``Aborted request ID.`` / ``Aborted request(s)
ID,ID.`` (V1 from 2025-08), ``Request ID aborted.`` and ``Request ID failed (...)``; SGLang prints
``Receive: obj=...`` / ``Receive OpenAI: obj=...`` and ``Finish: obj=..., out={... 'meta_info': {...}}``
with ``prompt_tokens``, ``completion_tokens``, ``e2e_latency`` in ``meta_info``.

Access lines are the most frequent lines of a request-heavy log: the grammar's anchor is the literal
every one of them holds (``HTTP/1.1" ``; in a JSON record the quote is escaped, a second anchor), which the sparse reader's one-pass scan looks for.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from logscope.parsers.grammar import Grammar, Int, Leaf, Opt, Rest, Seq


def const(name: str, value: Any) -> Leaf:
    """A field set to ``value`` when the alternative it sits in matches (consumes nothing)."""

    def conv(_text: str) -> Any:
        return value

    return Leaf(r"(?=)", name, conv)


HTTP_ACCESS = Grammar(
    "common.http_access",
    "http_access",
    # the quote after the version keeps a line cut before its status out (terminal-clipped pastes); the
    # escaped forms are the same text inside a JSON record, as the sparse read's raw-byte scan meets it
    ('HTTP/1.1" ', 'HTTP/1.0" ', 'HTTP/1.1\\" ', 'HTTP/1.0\\" '),
    Seq(
        # uvicorn's level when no dialect took it, maybe after a logger name (KServe: "uvicorn.access INFO:     ")
        Opt(Leaf(r"(?:[\w.]+ )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL): +")),
        Leaf(r"[^\s\"]+", "client"),
        Opt(Leaf(r" \d+")),
        ' - "',  # (KServe prints its pid after the client)
        Leaf(r"[A-Z]+", "method"),
        " ",
        Leaf(r"[^\s\"]*", "path"),
        Leaf(r" HTTP/[\d.]+\" "),
        Int("status"),
        Rest(),
    ),
)

# an id as printed: anything but spaces, up to the ":", "." or "," that ends the sentence
_ID = r"\S*?[^\s.:,](?=[.:,]*(?:\s|\Z))"
_IDS = r"\S*?[^\s.:](?=[.:]*(?:\s|\Z))"  # "Aborted request(s) a,b."
_FAILED = re.compile(r"\((?P<why>[^)]*)\)(?:: (?P<msg>.*?))?\.?$|due to (?P<due>.*?)\.?$", re.S)


def _vllm_request(f: dict[str, Any]) -> dict[str, Any]:
    rest = f.pop("rest", None)
    if f["phase"] == "error" and rest:
        m = _FAILED.search(rest.strip())
        if m is None:
            f["reason"] = rest.strip()[:500]
        elif m["due"] is not None:
            f["reason"] = m["due"][:500]
        else:
            f["reason"] = f"{m['why']}: {m['msg']}"[:500] if m["msg"] else m["why"]
    return f


_KSERVE = Leaf(r"\d+ [\w.]+ ")  # KServe's "<pid> kserve.trace " before vLLM's request logger's message


def _vllm(name: str, phase: str, anchors: tuple[str, ...], expr: Seq) -> Grammar:
    return Grammar(
        f"vllm.request_{name}", "request", anchors, Seq(const("phase", phase), expr), build=_vllm_request
    )


# one grammar per wording, each with its own anchor: a record meets only its own (one path, learned once)
VLLM_REQUEST = [
    _vllm(
        "received",
        "received",
        ("Received request ",),
        Seq(Opt(_KSERVE), "Received request ", Leaf(_ID, "request_id"), Rest()),
    ),
    _vllm(
        "added",
        "added",
        ("Added request ",),
        Seq("Added request ", Leaf(_ID, "request_id"), Opt("."), Rest()),
    ),
    _vllm(
        "finished",
        "finished",
        ("Finished request ",),
        Seq("Finished request ", Leaf(_ID, "request_id"), Opt("."), Rest()),
    ),
    _vllm(
        "aborted",
        "aborted",
        ("Aborted request",),
        Seq("Aborted request", Opt("(s)"), " ", Leaf(_IDS, "request_id"), Rest()),
    ),
    _vllm(
        "aborted_v1", "aborted", (" aborted.",), Seq("Request ", Leaf(_ID, "request_id"), " aborted.", Rest())
    ),
    _vllm(
        "failed",
        "error",
        (" failed (", " failed due to "),
        Seq("Request ", Leaf(_ID, "request_id"), " failed ", Rest("rest")),
    ),
]

_RID = re.compile(r"""\b(?:rid|request_id)'?(?:=|: )'([^']+)'""")
_META_ID = re.compile(r"""'id': '([^']+)'""")
_META_NUM = re.compile(r"""'(prompt_tokens|completion_tokens|e2e_latency)': ([0-9.eE+-]+)""")
_ABORT = re.compile(r"""'finish_reason': \{'type': 'abort'(?:, 'message': '([^']*)')?""")


def _sglang_request(f: dict[str, Any]) -> dict[str, Any]:
    body: str = f.pop("body")
    m = _RID.search(body)
    if f["phase"] == "received":
        if m is not None:
            f["request_id"] = m.group(1)
        return f
    cut = body.rfind("'meta_info': {")
    meta = body[cut:] if cut >= 0 else body[max(0, body.rfind("out={")) :]
    if m is None:
        m = _META_ID.search(meta)
    if m is not None:
        f["request_id"] = m.group(1)
    names = {"prompt_tokens": "prompt_tokens", "completion_tokens": "output_tokens", "e2e_latency": "e2e_s"}
    for key, value in _META_NUM.findall(meta):
        try:
            f[names[key]] = float(value) if key == "e2e_latency" else int(value)
        except ValueError:
            continue
    a = _ABORT.search(meta)
    if a is not None:
        f["phase"] = "aborted"
        if a.group(1):
            f["reason"] = a.group(1)[:500]
    return f


def _sglang_json_request(f: dict[str, Any]) -> dict[str, Any] | None:
    """``--log-requests-format json`` (SGLang 0.5.x): the record is one JSON object, ``rid`` at its top,
    a finished record's figures in ``out.meta_info`` (as the text form's ``meta_info``)."""
    try:
        doc = orjson.loads(f.pop("json"))
    except orjson.JSONDecodeError:
        return None  # cut short (a clipped paste): the line stays unparsed, counted in coverage
    if not isinstance(doc, dict):
        return None
    rid = doc.get("rid")
    if isinstance(rid, str):
        f["request_id"] = rid
    out = doc.get("out")
    meta = out.get("meta_info") if isinstance(out, dict) else None
    if f["phase"] == "received" or not isinstance(meta, dict):
        return f
    if "request_id" not in f and isinstance(meta.get("id"), str):
        f["request_id"] = meta["id"]
    for key, name, typ in (
        ("prompt_tokens", "prompt_tokens", int),
        ("completion_tokens", "output_tokens", int),
        ("e2e_latency", "e2e_s", float),
    ):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            f[name] = typ(value)
    reason = meta.get("finish_reason")
    if isinstance(reason, dict) and reason.get("type") == "abort":
        f["phase"] = "aborted"
        if isinstance(reason.get("message"), str) and reason["message"]:
            f["reason"] = reason["message"][:500]
    return f


def _sglang_any_request(f: dict[str, Any]) -> dict[str, Any] | None:
    return _sglang_json_request(f) if "json" in f else _sglang_request(f)


def _json_event(event: str) -> Leaf:
    """The start of a JSON request record whose ``event`` is ``event`` (``timestamp`` first, as 0.5.23 prints)."""
    return Leaf(rf'(?=\{{(?:"timestamp": "[^"\\]*", )?"event": "{re.escape(event)}")')


SGLANG_REQUEST = Grammar(
    "sglang.request",
    "request",
    (
        "Receive: obj=",
        "Receive OpenAI: obj=",
        "Finish: obj=",
        '"event": "request.received"',
        '"event": "request.finished"',
    ),
    Seq(const("phase", "received"), Leaf(r"Receive(?: OpenAI)?: obj="), Rest("body"))
    | Seq(const("phase", "finished"), "Finish: obj=", Rest("body"))
    | Seq(const("phase", "received"), _json_event("request.received"), Rest("json"))
    | Seq(const("phase", "finished"), _json_event("request.finished"), Rest("json")),
    build=_sglang_any_request,
)

__all__ = ["HTTP_ACCESS", "SGLANG_REQUEST", "VLLM_REQUEST", "const"]
