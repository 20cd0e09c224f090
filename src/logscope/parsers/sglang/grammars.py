"""SGLang message grammars, 0.3 to 0.5.x (see docs/formats: SGLang).

Each grammar is written once in our vocabulary (``logscope.parsers.grammar``) and tagged with the
event kind it produces. The per-batch lines (``Prefill batch`` / ``Decode batch``) changed shape in
almost every release: their head is one of three forms and their body a ``key: value`` list whose
fields come, go and move between versions, so the body is a ``Many`` of items read by their printed
value format and mapped to event fields through a key table; a generic item keeps any other field
in ``extra`` (its key normalised: ``#pending-token`` -> ``pending_token``), never failing the line.

Paste damage must give a correct event or none, never a wrong number:

* every batch grammar ends with ``End()``, so a line spliced in its middle (a clipped terminal
  column, two writers in one line) stops the list early and is refused;
* a float of a known field must have the decimals SGLang always prints (``{:.2f}``; ``{:.4f}`` for
  the new-token ratio), so ``438.4`` at a clipped line end is not read as 438.4;
* a field cut at the line end (``, input thr``, ``, #queue-req``) is dropped and named in
  ``extra["clipped"]``; the event keeps the fields printed whole.

Numbers printed as ``GB`` are GiB (SGLang divides by 1024**3).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from typing import Any

from logscope.parsers.bench import BENCH_GRAMMARS
from logscope.parsers.common import oom_grammar, parse_kv_repr
from logscope.parsers.grammar import (
    Alt,
    End,
    Float,
    Grammar,
    Int,
    Leaf,
    Many,
    Opt,
    Rest,
    Seq,
    Until,
    Word,
    keyed,
)
from logscope.parsers.pipeline import template
from logscope.parsers.requests import HTTP_ACCESS, SGLANG_REQUEST, const

__all__ = ["GRAMMARS"]


def _const(name: str, value: Any) -> Leaf:
    """A field set to ``value`` when the alternative it sits in matches (consumes nothing)."""

    def conv(_text: str) -> Any:
        return value

    return Leaf(r"(?=)", name, conv)


def _gib(name: str | None) -> Seq:
    """``12.34 GB`` / ``12.34GB`` as SGLang prints sizes (GiB)."""
    return Seq(Float(name), Leaf(r" ?GB"))


# -- batch lines --------------------------------------------------------------------------------
# An item is one ``key: value`` field. Items are read by their value's printed format, one leaf per
# format, each yielding ``(field, value)`` through a key table: typed fields into ``fields``, the
# rest into ``items`` (-> ``extra``). Few leaves keep the compiled split fast (it visits every group
# of the item for every field of every line).
_INT_FIELDS = {
    "#new-seq": "new_seq",
    "#new-token": "new_token",
    "#cached-token": "cached_token",
    "#running-req": "running",
    "#queue-req": "queue",
    "#token": "tokens",
    "#full token": "full_token",
}
# printed with {:.2f}: a float cut at the line end has fewer decimals and is refused
_F2_FIELDS = {
    "token usage": "token_usage",
    "full token usage": "full_token_usage",
    "accept len": "accept_len",
    "accept rate": "accept_rate",
    "gen throughput (token/s)": "gen_tok_s",
    "input throughput (token/s)": "input_tok_s",
}
# fields kept in ``extra`` whose printed format is known ({:.2f}, some with "%"): read as strictly
_EXTRA_F2_KEYS = (
    "swa token usage",
    "mamba usage",
    "gpu token usage",
    "cpu token usage",
    "pre-allocated usage",
    "cap len",
    "block accept len",
    "time",
    "est. prefill TFLOPS/s (per GPU)",
    "est. decode TFLOPS/s (per GPU)",
    "est. read BW (GB/s per GPU)",
    "est. write BW (GB/s per GPU)",
)
_EXTRA_PCT_KEYS = ("cache hit rate", "fwd occupancy", "fwd+idle occupancy")


def _keys(keys: Iterable[str]) -> str:
    """Alternation of literal keys, longest first (so ``#token`` never shadows ``#token-x``)."""
    return "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))


def _fixed(name: str | None, decimals: int = 2) -> Leaf:
    """A float SGLang prints with exactly ``decimals`` places (``{:.2f}``): a value cut at the line end
    has fewer and is refused. (No look past the value: a ``Many`` item must match the same alone.)"""
    return Leaf(rf"\d+\.\d{{{decimals}}}(?![\w.])", name, float)


@functools.lru_cache(maxsize=512)
def _norm_key(key: str) -> str:
    """``#pending-token`` -> ``pending_token``, ``est. read BW (GB/s per GPU)`` -> ``est_read_bw_gb_s_per_gpu``."""
    return re.sub(r"[^0-9a-z]+", "_", key.strip().lower()).strip("_")


_INT_RX = re.compile(r"[-+]?\d+")
_FLOAT_RX = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _kv_item(text: str) -> tuple[str, Any]:
    """One ``key: value`` item kept in ``extra`` -> (normalised key, typed value)."""
    key, _, value = text.partition(": ")
    name = _norm_key(key)
    v = value.strip()
    if v in ("True", "False"):
        return name, v == "True"
    if v.endswith("%") and _FLOAT_RX.fullmatch(v[:-1]):
        return f"{name}_pct", float(v[:-1])
    if _INT_RX.fullmatch(v):
        return name, int(v)
    if _FLOAT_RX.fullmatch(v):
        return name, float(v)
    return name, v


def _graph(text: str) -> tuple[str, Any]:
    device, _, flag = text.partition(" graph: ")  # cuda / cpu / npu / musa / xpu graph
    return "graph", (device, flag == "True")


def _pair(text: str) -> tuple[str, Any]:
    """0.4.9 hybrid SWA: ``#token: full=N, swa=M`` / ``token usage: full=X, swa=Y``."""
    key, _, value = text.partition(": ")
    full, _, swa = value.partition(", ")
    conv = int if key == "#token" else float
    return key, (conv(full[5:]), conv(swa[4:]))


_batch_item = Alt(
    # 0.4.9 hybrid SWA: the value holds ", " (before the plain forms of the same keys)
    Leaf(
        r"#token: full=\d+, swa=\d+|token usage: full=\d+\.\d\d, swa=\d+\.\d\d(?![\w.])",
        "fields",
        _pair,
        each=True,
    ),
    keyed(_INT_FIELDS, r"\d+(?![\w.])", int, "fields", each=True),
    keyed(_F2_FIELDS, r"\d+\.\d\d(?![\w.])", float, "fields", each=True),
    Leaf(r"\w+ graph: (?:True|False)(?![\w.])", "fields", _graph, each=True),
    Leaf(
        rf"(?:{_keys(_EXTRA_F2_KEYS)}): \d+\.\d\d(?![\w.])|(?:{_keys(_EXTRA_PCT_KEYS)}): \d+\.\d\d%",
        "items",
        _kv_item,
        each=True,
    ),
    # any other field: a key that is none of the above, a value up to the next comma (not a cut "12.")
    Leaf(
        rf"(?!(?:{_keys([*_INT_FIELDS, *_F2_FIELDS, *_EXTRA_F2_KEYS, *_EXTRA_PCT_KEYS])}|\w+ graph): )"
        r"[^\s:,][^:,\n]*: [^\s,][^,\n]*+(?<!\.)",
        "items",
        _kv_item,
        each=True,
    ),
)

# The last field, cut by the paste: a key fragment, or a key whose value is missing or unreadable.
_CLIPPED = Leaf(r", [^\s,][^,\n]*(?=\s*\Z)", "clipped", lambda s: s[2:].rstrip())

_HEAD_SEP = Alt(". ", ", ", Seq(" [", Int("forward_iter"), "], "))

_PREFILL_FIELDS = (
    "new_seq",
    "new_token",
    "cached_token",
    "running",
    "queue",
    "token_usage",
    "input_tok_s",
    "cuda_graph",
)
_DECODE_FIELDS = (
    "running",
    "tokens",
    "token_usage",
    "gen_tok_s",
    "queue",
    "accept_len",
    "accept_rate",
    "cuda_graph",
)


def _batch(f: dict[str, Any], keep: frozenset[str]) -> dict[str, Any]:
    """Typed fields of one kind; everything else into ``extra`` (normalised printed keys)."""
    fields: dict[str, Any] = dict(f["fields"]) if "fields" in f else {}
    extra: dict[str, Any] = {}
    if len(f) > 1 or not fields:  # more than the typed fields: items, then forward_iter, clipped
        items = f.get("items")
        if items:
            extra.update(items)
        for k, v in f.items():
            if k != "fields" and k != "items":
                extra[k] = v
    graph = fields.pop("graph", None)
    if graph is not None:
        fields["cuda_graph"] = graph[1]
        if graph[0] != "cuda":
            extra["graph_device"] = graph[0]
    if "#token" in fields or "token usage" in fields:  # 0.4.9 hybrid SWA pairs
        for key, full, swa in (
            ("#token", "full_token", "swa_token"),
            ("token usage", "full_token_usage", "swa_token_usage"),
        ):
            pair = fields.pop(key, None)
            if pair is not None:
                fields[full], extra[swa] = pair
    # hybrid pools: the full-attention pool stands for the pool when no plain one is printed
    if "tokens" not in fields and "full_token" in fields:
        fields["tokens"] = fields.pop("full_token")
    if "token_usage" not in fields and "full_token_usage" in fields:
        fields["token_usage"] = fields.pop("full_token_usage")
    if fields.keys() <= keep:  # the usual line: every typed field is one the kind keeps
        fields["extra"] = extra
        return fields
    out: dict[str, Any] = {}
    for k, v in fields.items():
        if k in keep:
            out[k] = v
        else:
            extra["token" if k == "tokens" else k] = v
    out["extra"] = extra
    return out


def _batch_grammar(name: str, kind: str, head: str, keep: tuple[str, ...]) -> Grammar:
    kept = frozenset(keep)
    return Grammar(
        f"sglang.{name}",
        kind,
        (head,),
        Seq(head, _HEAD_SEP, Many(_batch_item, ", "), Opt(_CLIPPED), Opt(","), End()),
        search=True,  # behind any prefix a custom logging config may print
        build=functools.partial(_batch, keep=kept),
    )


PREFILL = _batch_grammar("prefill_batch", "prefill_batch", "Prefill batch", _PREFILL_FIELDS)
DECODE = _batch_grammar("decode_batch", "decode_batch", "Decode batch", _DECODE_FIELDS)

# -- retraction (KV pool full during decode): not an OOM -------------------------------------------
_retract_item = Alt(
    Seq("#retracted_reqs: ", Int("retracted_reqs")),
    Seq("#new_token_ratio: ", Float(None), " -> ", _fixed("new_token_ratio", 4)),
    Leaf(r"#\w+: [-+]?\d[\d.]*(?=,|\s*\Z)"),  # #aborted_retracted_reqs, #new_tokens_gained, #mamba_num_gained
)

RETRACT = Grammar(
    "sglang.retract",
    "retract",
    ("Decode out of memory happened", "Retract requests.", "Testing retraction."),
    Seq(
        Alt(
            "Decode out of memory happened. ",
            "KV cache pool is full. Retract requests. ",
            "Testing retraction. ",
        ),
        Many(_retract_item, ", "),
        Opt(_CLIPPED),
        Opt(","),
        End(),
    ),
    search=True,
    build=lambda f: {k: v for k, v in f.items() if k != "clipped"},
)

# -- start-up: limits, pools, weights, graphs, ready -------------------------------------------------


def _limits(f: dict[str, Any]) -> dict[str, Any]:
    f["extra"] = dict(f.pop("items", []))
    if "clipped" in f:
        f["extra"]["clipped"] = f.pop("clipped")
    cpu = f.pop("available_cpu_mem_gib", None)
    if cpu is not None:
        f["extra"]["available_cpu_mem_gib"] = cpu
    return f


def _opt_int(name: str) -> Alt:
    """An int, or ``None`` (the setting is off)."""
    return Alt(Int(name), "None")


_limit_item = Alt(
    Seq("chunked_prefill_size=", _opt_int("chunked_prefill_size")),
    Seq("max_prefill_tokens=", _opt_int("max_prefill_tokens")),
    Seq("max_running_requests=", _opt_int("max_running_requests")),
    Seq("context_len=", _opt_int("context_len")),
    Seq("available_gpu_mem=", _gib("available_gpu_mem_gib")),
    Seq("available_cpu_mem=", _gib("available_cpu_mem_gib")),
    Leaf(
        r"(?!(?:chunked_prefill_size|max_prefill_tokens|max_running_requests|context_len|available_gpu_mem"
        r"|available_cpu_mem)=)\w+=[^\s,][^,\n]*",
        "items",
        lambda s: _kv_item(s.replace("=", ": ", 1)),
        each=True,
    ),
)

SCHEDULER_LIMITS = Grammar(
    "sglang.scheduler_limits",
    "scheduler_limits",
    ("max_total_num_tokens=",),
    Seq(
        "max_total_num_tokens=",
        Int("max_total_num_tokens"),
        Opt(Seq(", ", Many(_limit_item, ", "))),
        Opt(_CLIPPED),
        End(),
    ),
    build=_limits,
)


def _pool(name: str) -> Leaf:
    return _const("pool", name)


def _kv_pool(f: dict[str, Any]) -> dict[str, Any]:
    f.pop("clipped", None)
    parts = [f.pop(k) for k in ("conv_gib", "ssm_gib", "inter_ssm_gib", "inter_conv_gib") if k in f]
    if parts:
        f["memory_gib"] = round(sum(parts), 4)
    if f.get("memory_gib") is None and "k_gib" in f and "v_gib" in f:
        f["memory_gib"] = round(f["k_gib"] + f["v_gib"], 4)
    return f


_pool_item = Alt(
    Seq("#tokens: ", Int("tokens")),
    Seq("K size: ", _gib("k_gib")),
    Seq("V size: ", _gib("v_gib")),
    Seq("KV size: ", _gib("memory_gib")),
    Leaf(r"dtype: [^\s,]+|avail mem=[^\s,][^,\n]*"),
)

KV_POOL = Grammar(
    "sglang.kv_cache_pool",
    "kv_cache_pool",
    ("KV Cache is allocated.", "KV cache allocated.", "Mamba Cache is allocated."),
    Alt(
        # "KV Cache is allocated. ..." (0.4.3+; 0.5.23 may name the cache: "... NVFP4 KV Cache is allocated.")
        Seq(
            _pool("kv"),
            Leaf(r"(?:[^\n]*? )?KV Cache is allocated\. "),
            Many(_pool_item, ", "),
            Opt("."),
            Opt(_CLIPPED),
            End(),
        ),  # 0.4.1/0.4.2: "K size: 2.82 GB, V size: 2.82 GB." (no #tokens)
        # 0.5.23 post-capture sizing: the final size (the earlier "VA upper bound" is only a bound)
        Seq(
            "Post-capture KV sizing: ",
            Alt(Seq(_pool("draft"), "draft KV cache allocated. "), Seq(_pool("kv"), "KV cache allocated. ")),
            Many(_pool_item, ", "),
            Opt(_CLIPPED),
            End(),
        ),
        Seq(
            _pool("mamba"),
            "Mamba Cache is allocated. ",
            Opt(Seq("max_mamba_cache_size: ", Int(None), ", ")),
            "conv_state size: ",
            _gib("conv_gib"),
            ", ssm_state size: ",
            _gib("ssm_gib"),
            Opt(
                Seq(
                    " intermediate_ssm_state_cache size: ",
                    _gib("inter_ssm_gib"),
                    " intermediate_conv_window_cache size: ",
                    _gib("inter_conv_gib"),
                )
            ),
            End(),
        ),
    ),
    build=_kv_pool,
)

_load_item = Alt(
    Seq("elapsed=", Float("seconds"), " s"),
    Seq("avail mem=", _gib("avail_mem_gib")),
    Seq("mem usage=", _gib("memory_gib")),
    Leaf(r"[\w ]+=[^\s,][^,\n]*"),  # type=, dtype=, quant=, fmt=, bits=, ...
)

MODEL_LOAD = Grammar(
    "sglang.model_load",
    "model_load",
    ("Load weight end.",),
    Seq(
        "Load weight end. ",
        Alt(
            Seq("Committed real weights after CUDA graph capture in ", Float("seconds"), " s", Rest()),
            Seq(Many(_load_item, ", "), Opt("."), End()),
        ),
    ),
)

_capture_item = Alt(
    Seq("Time elapsed: ", Float("seconds"), " s"),
    Seq("elapsed=", Float("seconds"), " s"),
    Seq("mem usage=", _gib("memory_gib")),
    Seq("avail mem=", _gib("avail_mem_gib")),
    Leaf(r"bs=\[[^\]\n]*\]"),
    Leaf(r"\w[\w ]*=[^\s,.\[][^,\n]*?(?=\.? *\Z|\. |, )"),  # backend=full, num_tokens_per_req=1, ...
)
# "Capture cuda graph", "Capture draft extend cuda graph", "Capture target decode CUDA graph", ...
_CAPTURE = r"Capture (?:\S+ ){1,6}?graph "
_STEP = Opt(Seq(" (step ", Int(None), ")"))

GRAPH_CAPTURE = Grammar(
    "sglang.graph_capture",
    "graph_capture",
    (" graph begin", " graph end"),
    Alt(
        Seq(
            Leaf(_CAPTURE + "begin", "begin", lambda _s: True),
            _STEP,
            ".",
            Opt(Seq(Until("avail mem="), "avail mem=", _gib("avail_mem_gib"))),
            Rest(),
        ),
        Seq(
            Leaf(_CAPTURE + "end"),
            _STEP,
            ".",
            Alt(
                Seq(" ", Many(_capture_item, ". "), Opt("."), End()),
                Seq(" ", Many(_capture_item, ", "), Opt("."), End()),
                End(),
            ),
        ),
    ),
)

SERVER_READY = Grammar(
    "sglang.server_ready",
    "server_ready",
    ("The server is fired up and ready to roll",),
    Seq("The server is fired up and ready to roll!", End()),
    search=True,
)


def _config(f: dict[str, Any]) -> dict[str, Any] | None:
    args = parse_kv_repr(f.pop("body"))
    return {"args": args, "form": "server_args"} if args else None


CONFIG = Grammar(
    "sglang.config",
    "config",
    ("server_args=",),
    Seq("server_args=", Rest("body")),
    build=_config,
)

# 0.5.23: "Engine startup timings (s): load_weight=0.03, kv_cache_allocation=0.54, scheduler_e2e=1.95,
# cuda_graph={decode=0.00, ...}, tokenizer_e2e=8.81": the scheduler's whole start-up.
_timing_item = Alt(
    Seq("scheduler_e2e=", Float("seconds")),
    Leaf(r"\w+=\{[^}\n]*\}"),
    Leaf(r"\w+=[^\s,][^,\n]*"),
)

ENGINE_INIT = Grammar(
    "sglang.engine_init",
    "engine_init",
    ("Engine startup timings (s):",),
    Seq("Engine startup timings (s): ", Many(_timing_item, ", "), End()),
)

COMPILE = Grammar(
    "sglang.compile",
    "compile",
    ("Compiling a graph for", "DeepGEMM JIT", "DeepGEMM warmup done in"),
    Alt(
        Seq(
            _const("stage", "graph"),
            "Compiling a graph for ",
            Until(" takes ", "detail"),
            " takes ",
            Float("seconds"),
            " s",
            End(),
        ),
        Seq(
            _const("stage", "runtime_jit"),
            "DeepGEMM JIT Compiling for ",
            Until(". Please wait", "detail"),
            Rest(),
        ),
        Seq(
            _const("stage", "jit_warmup"),
            "Try DeepGEMM JIT Compiling for ",
            Leaf(r"[^\n]+?(?= with all Ms|\Z)", "detail"),
            Rest(),
        ),
        Seq(_const("stage", "precompile"), "Entering DeepGEMM JIT Pre-Compile session", Rest()),
        Seq(_const("stage", "warmup"), "PP-parallel DeepGEMM warmup done in ", Float("seconds"), "s", Rest()),
    ),
)

# -- warnings SGLang prints without a level word -------------------------------------------------------
# (SGLang's formatter has no level name; these are the warnings worth a digest, by their text.)
_WARNINGS = {
    "Max running requests is reset to": r"Max running requests is reset to ",
    "max_running_requests was reduced": r"max_running_requests was reduced from ",
    "max_running_requests is capped": r"max_running_requests is capped to ",
    "fewer than --context-length": r"KV pool holds \d+ tokens, fewer than --context-length",
    "is larger than the profiled value": r"max_total_tokens=\d+ is larger than the profiled value",
    "is greater than the derived context_length": r"(?:Warning: )?User-specified context_length",
    "KV cache but no scaling factors": r"Using FP8 KV cache but no scaling factors",
    "Defaulting to KV cache scaling factors": r"Defaulting to KV cache scaling factors",
    "k_scale but KV cache dtype is not FP8": r"Checkpoint has k_scale but KV cache dtype is not FP8",
    "KV Cache might lead to a": r"[^\n]*KV Cache might lead to an? accuracy drop",
    "scale_fmt of checkpoint is not ue8m0": r"DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0",
    "Performance might be sub-optimal": r"[^\n]*Performance might be sub-optimal",
    "Detected different devices in the system": r"Detected different devices in the system",
    "SMs for DeepEP communication": r"Only use \d+ SMs for DeepEP communication",
    "allreduce is disabled": r"Custom (?:quick )?allreduce is disabled",
    "Setup Custom allreduce failed": r"Setup Custom allreduce failed",
    "The memory capacity is unbalanced": r"The memory capacity is unbalanced",
    "longer than the KV cache pool size": r"Request length is longer than the KV cache pool size",
    "longer than the model's context length": r"The input \(\d+ tokens\) is longer than the model's context length",
    "exceeds the model's context length": r"Requested token count \(",
    "retract_decode: aborted": r"retract_decode: aborted ",
    "Post-capture KV sizing: max_running_requests": r"Post-capture KV sizing: max_running_requests ",
    "reserving activation headroom": r"Post-capture KV sizing: decode CUDA graph max_bs=",
    "SIGTERM received": r"SIGTERM received",
    "but the state was deleted": r"Received output for rid=",
    "leak detected": r"(?:KV cache pool|token_to_kv_pool_allocator memory) leak detected",
    "Mem Leak Detected": r"Mem Leak Detected",
    "self.soft=True)": r"(?:\w+ )?watchdog timeout \([^\n]*self\.soft=True\)",
}


def _warning(f: dict[str, Any]) -> dict[str, Any]:
    msg: str = f["message"].rstrip()
    return {"message": msg, "template": template(msg)}


WARNING = Grammar(
    "sglang.warning",
    "warning",
    tuple(_WARNINGS),
    Seq(Leaf(r"(?=" + "|".join(f"(?:{p})" for p in _WARNINGS.values()) + ")"), Rest("message")),
    build=_warning,
)

# -- errors that are a line, not a traceback (tracebacks are the pipeline's ``error`` fallback) ---
_NO_TRACEBACK = r"(?![\s\S]*Traceback \(most recent call last\))"


def _error(f: dict[str, Any]) -> dict[str, Any]:
    msg: str = f["message"].rstrip()
    return {"message": msg[:2000], "exception": f.get("exception")}


ERROR = Grammar(
    "sglang.error",
    "error",
    (
        "Received sigquit from a child",
        "atchdog timeout (",
        "Try to lower your batch size",
        "runs out of memory",
        "exceeds the maximum allowed length",
        "Health check failed",
        " hit an exception: ",
        "Initialization failed. warmup error: ",
    ),
    Seq(
        Leaf(
            _NO_TRACEBACK + r"(?=Received sigquit from a child proces"
            r"|(?:\w+ )?[Ww]atchdog timeout \("
            r"|(?:Prefill |Decode )?[Oo]ut of memory\. Try to lower your batch size"
            r"|alloc_req_slots runs out of memory"
            r"|Input length \(\d+ tokens\) exceeds the maximum allowed length"
            r"|Health check failed"
            r"|\w+ hit an exception: "
            r"|Initialization failed\. warmup error: )"
        ),
        Rest("message"),
    ),
    build=_error,
)

# -- CUDA out of memory: never retried by SGLang -------------------------------------------------------


def _no_retry(g: Grammar) -> Grammar:
    build = g.build

    def _b(f: dict[str, Any]) -> dict[str, Any] | None:
        out = build(f) if build else f
        if out is not None:
            out["retry"] = False
        return out

    return dataclasses.replace(g, build=_b)


OOM = _no_retry(oom_grammar("sglang"))

# "CUDA error: out of memory" (cudaErrorMemoryAllocation, e.g. inside "Capture cuda graph failed: ...")
# when the record holds none of the texts the shared OOM grammar takes (one OOM event per record).
OOM_CUDA_ERROR = _no_retry(
    Grammar(
        "sglang.oom_cuda_error",
        "oom",
        ("CUDA error: out of memory",),
        Seq(
            Leaf(
                r"(?![\s\S]*(?:CUDA out of memory|OutOfMemoryError|not enough GPU memory))"
                r"[\s\S]*?(?=[^\n]*CUDA error: out of memory)"
            ),
            Leaf(r"[^\n]*CUDA error: out of memory[^\n]*", "message", str.strip),
            Rest(),
        ),
        also=True,
    )
)


def _bs_count(f: dict[str, Any]) -> dict[str, Any]:
    if f["step"] == "cuda_graph_batch_sizes":
        f["detail"] = f["detail"].strip()
        f["count"] = len(re.findall(r"\d+", f["detail"]))
    return f


STARTUP_STEP = Grammar(
    "sglang.startup_step",
    "startup_step",
    (
        "Load weight begin.",
        "Memory pool end.",
        "graph bs ",
        "Using KV cache dtype: ",
        " cuda graph addresses",
        "Application startup complete",
    ),
    Seq(const("step", "load_weight_begin"), "Load weight begin. avail mem=", _gib("avail_mem_gib"), Rest())
    | Seq(const("step", "memory_pool_end"), "Memory pool end. avail mem=", _gib("avail_mem_gib"), Rest())
    | Seq(
        const("step", "cuda_graph_batch_sizes"),
        Leaf(r"Capture (?:cuda|cpu) graph bs "),
        Leaf(r"\[[\d, ]*\]", "detail"),
        Rest(),
    )
    | Seq(const("step", "kv_cache_dtype"), "Using KV cache dtype: ", Word("detail"), Rest())
    | Seq(
        const("step", "cuda_graph_addresses"), "Registering ", Int("count"), " cuda graph addresses", Rest()
    )
    # uvicorn's app is up; SGLang is ready only after its warm-up ("The server is fired up")
    | Seq(const("step", "http_startup_complete"), "Application startup complete", Opt("."), End()),
    build=_bs_count,
)

SERVER_START = Grammar(
    "sglang.server_start",
    "server_start",
    ("Uvicorn running on ",),
    Seq("Uvicorn running on ", Word("detail"), Rest()),
)

GRAMMARS: list[Grammar] = [
    HTTP_ACCESS,  # first: the most frequent line of a request-heavy log, and its path may hold any anchor
    DECODE,
    PREFILL,
    RETRACT,
    SCHEDULER_LIMITS,
    KV_POOL,
    MODEL_LOAD,
    GRAPH_CAPTURE,
    SERVER_READY,
    CONFIG,
    ENGINE_INIT,
    COMPILE,
    WARNING,
    ERROR,
    OOM,
    OOM_CUDA_ERROR,
    STARTUP_STEP,
    SERVER_START,
    SGLANG_REQUEST,
    *BENCH_GRAMMARS,  # the benchmark client's result block (no log prefix), see parsers/bench.py
]
