"""Effective config: the values the engine ran with, each with its line and who decided it.

"What did the server actually run with?" recurs in the trackers: some values are in the user's
arguments, some only in the engine's resolved config, some only in a later line where the engine
changed them. Each entry is ``{value, line, origin}`` where origin is

- ``set``: the user set it (vLLM's ``non-default args: {...}`` line lists exactly those);
- ``default``: the user did not set it and the engine kept or chose its own value (vLLM: a value of
  the ``Initializing a V1 LLM engine ... with config:`` line or a later line that is not in the
  non-default args; SGLang: a limit the scheduler resolved where ``server_args`` had ``None``);
- ``engine``: the engine changed what it was given (vLLM ``max_num_scheduled_tokens is set to 2048
  based on the speculative decoding settings``; a resolved value that differs from the argument);
- ``unknown``: printed, but the log cannot tell whether the user set it (SGLang prints every
  argument in ``server_args=...``, defaults and the user's alike), except where a line says the engine
  chose (``Attention backend not specified. Use trtllm_mla backend by default.``: ``default``).

Built from the ``config`` events (argument dicts), the ``scheduler_limits`` event (SGLang's
``max_total_num_tokens=..., chunked_prefill_size=...`` line) and a few warnings. Only values the
log prints are listed: a value the log never shows is absent, never guessed.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import NotApplicable, RunData

Origin = Literal["set", "default", "engine", "unknown"]


class ConfigValue(BaseModel):
    """One setting the engine ran with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: Any
    line: int = Field(description="the line that shows the value")
    origin: Origin = Field(
        description="set (by the user), default, engine (changed by the engine) or unknown"
    )


# vLLM: names under which the value is reported -> the keys it is printed under (args, engine config)
VLLM_KEYS: dict[str, tuple[str, ...]] = {
    "max_model_len": ("max_model_len", "max_seq_len"),
    "max_num_seqs": ("max_num_seqs",),
    "max_num_batched_tokens": ("max_num_batched_tokens",),
    "enable_chunked_prefill": ("enable_chunked_prefill",),
    "enable_prefix_caching": ("enable_prefix_caching",),
    "kv_cache_dtype": ("kv_cache_dtype",),
    "kv_cache_memory_bytes": ("kv_cache_memory_bytes",),
    "gpu_memory_utilization": ("gpu_memory_utilization",),
    "block_size": ("block_size",),
    "attention_backend": ("attention_backend",),
    "speculative_config": ("speculative_config",),
    "tensor_parallel_size": ("tensor_parallel_size",),
    "pipeline_parallel_size": ("pipeline_parallel_size",),
    "data_parallel_size": ("data_parallel_size",),
    "enforce_eager": ("enforce_eager",),
    "dtype": ("dtype",),
    "quantization": ("quantization",),
}
# keys of the compilation config (a dict printed as text in the engine config line)
_COMPILATION = {
    "cudagraph_mode": re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(\w+)"),
    "cudagraph_capture_sizes": re.compile(r"'cudagraph_capture_sizes': (\[[^\]]*\])"),
    "max_cudagraph_capture_size": re.compile(r"'max_cudagraph_capture_size': (\w+)"),
}
_SCHEDULED = re.compile(r"max_num_scheduled_tokens is set to (\d+)")
_CHUNKED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")

# SGLang: server_args keys reported, and the scheduler line's names -> their server_args key
SGLANG_KEYS = (
    "max_running_requests",
    "chunked_prefill_size",
    "max_total_tokens",
    "max_prefill_tokens",
    "context_length",
    "mem_fraction_static",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "disable_cuda_graph",
    "cuda_graph_max_bs",
    "cuda_graph_bs",
    "kv_cache_dtype",
    "page_size",
    "schedule_policy",
    "disable_radix_cache",
    "enable_mixed_chunk",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "speculative_eagle_topk",
    "tp_size",
    "dp_size",
    "ep_size",
    "dtype",
    "quantization",
)
_SCHEDULER = {
    "max_total_num_tokens": "max_total_tokens",
    "chunked_prefill_size": "chunked_prefill_size",
    "max_prefill_tokens": "max_prefill_tokens",
    "max_running_requests": "max_running_requests",
    "context_len": "context_length",
}


_ATTN_DEFAULT = re.compile(r"Attention backend not specified\. Use (\w+) backend by default")


def _literal(v: Any) -> Any:
    """Values as JSON can hold them (a repr stays text)."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, list | tuple):
        return [_literal(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _literal(x) for k, x in v.items()}
    return str(v)


def _vllm(data: RunData) -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = {}
    user: dict[str, Any] = {}
    for i in data.kind_index.get("config", ()):
        e = data.events[i]
        args: dict[str, Any] = dict(getattr(e, "args", {}) or {})
        form = getattr(e, "form", None)
        if form == "non_default_args":
            if user:
                continue  # a second lifetime's args: the first lifetime's config is reported
            user = args
            for name, keys in VLLM_KEYS.items():
                key = next((k for k in keys if k in args), None)
                if key is not None:
                    out[name] = ConfigValue(value=_literal(args[key]), line=e.line, origin="set")
            continue
        for name, keys in VLLM_KEYS.items():
            key = next((k for k in keys if k in args), None)
            if key is None:
                continue
            value = _literal(args[key])
            if value == "None":
                value = None
            have = out.get(name)
            if have is None:
                out[name] = ConfigValue(value=value, line=e.line, origin="default")
            elif (
                have.origin == "set"
                and value != have.value
                and name != "speculative_config"
                and not isinstance(have.value, dict)
            ):
                out[name] = ConfigValue(value=value, line=e.line, origin="engine")
        comp = args.get("compilation_config")
        if isinstance(comp, str):
            for name, rx in _COMPILATION.items():
                m = rx.search(comp)
                if m and name not in out:
                    out[name] = ConfigValue(value=_literal(_parse(m.group(1))), line=e.line, origin="default")
    for i in (*data.kind_index.get("warning", ()), *data.kind_index.get("unparsed", ())):
        e = data.events[i]
        raw = e.raw or ""
        m = _SCHEDULED.search(raw) if "max_num_scheduled_tokens" in raw else None
        if m and "max_num_scheduled_tokens" not in out:
            out["max_num_scheduled_tokens"] = ConfigValue(value=int(m.group(1)), line=e.line, origin="engine")
        m = _CHUNKED.search(raw) if "Chunked prefill is enabled" in raw else None
        if (
            m
            and out.get("max_num_batched_tokens", ConfigValue(value=None, line=0, origin="unknown")).origin
            != "set"
        ):
            out["max_num_batched_tokens"] = ConfigValue(value=int(m.group(1)), line=e.line, origin="default")
    return out


def _parse(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _sglang(data: RunData) -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = {}
    for i in data.kind_index.get("config", ()):
        e = data.events[i]
        args: dict[str, Any] = dict(getattr(e, "args", {}) or {})
        for key in SGLANG_KEYS:
            if key in args and key not in out:
                out[key] = ConfigValue(value=_literal(args[key]), line=e.line, origin="unknown")
    for i in (*data.kind_index.get("warning", ()), *data.kind_index.get("unparsed", ())):
        raw = data.events[i].raw or ""
        m = _ATTN_DEFAULT.search(raw) if "Attention backend not specified" in raw else None
        if m:  # SGLang chose the backend itself: the server_args value is its default
            out["attention_backend"] = ConfigValue(
                value=m.group(1), line=data.events[i].line, origin="default"
            )
            break
    for i in data.kind_index.get("scheduler_limits", ())[:1]:
        e = data.events[i]
        for attr, key in _SCHEDULER.items():
            value = getattr(e, attr, None)
            if value is None:
                continue
            have = out.get(key)
            if have is None or have.value is None:
                out[key] = ConfigValue(value=value, line=e.line, origin="default")
            elif have.value != value:
                out[key] = ConfigValue(value=value, line=e.line, origin="engine")
    return out


def effective_config(data: RunData) -> dict[str, ConfigValue] | NotApplicable:
    """``{name: {value, line, origin}}`` of the run's first lifetime, or why not."""
    if not data.kind_index.get("config") and not data.kind_index.get("scheduler_limits"):
        return NotApplicable(
            reason="no configuration line (vLLM `non-default args` / engine config, "
            "SGLang `server_args=`) in the log"
        )
    values = _sglang(data) if data.engine == "sglang" else _vllm(data)
    if not values:
        return NotApplicable(reason="the configuration lines hold none of the reported settings")
    return dict(sorted(values.items()))
