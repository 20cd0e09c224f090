"""The run's configuration under engine-neutral names (TP, DP, DCP, spec decode, memory fraction, ...).

vLLM prints ``non-default args: {...}`` and ``Initializing a V1 LLM engine ... with config: ...``;
SGLang prints ``server_args=ServerArgs(...)`` and a ``max_total_num_tokens=...`` summary. Each canonical
setting lists the names it goes by; the first value found in run order wins (the user's arguments
come before the resolved engine config in both engines' logs).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from logscope.events import Event

# canonical name -> (label, the keys it is printed under)
ALIASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "tensor_parallel": ("TP", ("tensor_parallel_size", "tp_size")),
    "data_parallel": ("DP", ("data_parallel_size", "dp_size")),
    "decode_context_parallel": ("DCP", ("decode_context_parallel_size", "dcp_size", "decode_cp_size")),
    "pipeline_parallel": ("PP", ("pipeline_parallel_size", "pp_size")),
    "expert_parallel": ("EP", ("enable_expert_parallel", "ep_size", "expert_parallel_size")),
    "speculative_method": ("spec-decode method", ("speculative_method", "speculative_algorithm")),
    # SGLang's speculative_num_draft_tokens counts the verified root token too: its steps are the drafts
    "speculative_tokens": (
        "draft tokens",
        ("num_speculative_tokens", "speculative_num_steps", "speculative_num_draft_tokens"),
    ),
    "speculative_model": ("draft model", ("speculative_model", "speculative_draft_model_path")),
    "memory_fraction": ("memory fraction", ("gpu_memory_utilization", "mem_fraction_static")),
    "kv_cache_memory_bytes": ("KV cache memory (bytes)", ("kv_cache_memory_bytes", "kv_cache_memory")),
    "kv_cache_dtype": ("KV dtype", ("kv_cache_dtype",)),
    "chunk_size": ("prefill chunk size", ("max_num_batched_tokens", "chunked_prefill_size")),
    "long_prefill_token_threshold": ("long prefill threshold", ("long_prefill_token_threshold",)),
    "max_model_len": ("max model len", ("max_model_len", "context_length", "max_seq_len", "context_len")),
    "max_num_seqs": ("max running requests", ("max_num_seqs", "max_running_requests")),
    "block_size": ("KV page size", ("block_size", "page_size")),
    "attention_backend": ("attention backend", ("attention_backend", "attn_backend")),
    "moe_backend": ("MoE backend", ("moe_backend", "moe_runner_backend", "moe_a2a_backend")),
    "quantization": ("quantization", ("quantization",)),
    "enforce_eager": ("eager mode", ("enforce_eager", "disable_cuda_graph")),
    "all_reduce": ("custom all-reduce disabled", ("disable_custom_all_reduce",)),
}

# what ``compare`` lists (the settings that change what decode and prefill numbers mean)
COMPARED = (
    "tensor_parallel",
    "data_parallel",
    "decode_context_parallel",
    "pipeline_parallel",
    "expert_parallel",
    "speculative_method",
    "speculative_tokens",
    "speculative_model",
    "memory_fraction",
    "kv_cache_memory_bytes",
    "kv_cache_dtype",
    "chunk_size",
    "long_prefill_token_threshold",
    "max_model_len",
    "max_num_seqs",
    "block_size",
    "attention_backend",
    "moe_backend",
    "quantization",
    "enforce_eager",
    "all_reduce",
)

_SPEC_REPR = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,()]+)")


def _literal(text: str) -> Any:
    t = text.strip()
    try:
        return ast.literal_eval(t)
    except (ValueError, SyntaxError):
        return t


def _spec_fields(value: Any) -> dict[str, Any]:
    """vLLM's speculative config, as a dict (non-default args) or a repr (engine config)."""
    if isinstance(value, dict):
        d = dict(value)
    elif isinstance(value, str) and value not in ("None", ""):
        d = {k: _literal(v) for k, v in _SPEC_REPR.findall(value)}
    else:
        return {}
    out: dict[str, Any] = {}
    method = d.get("method")
    if method not in (None, "None"):
        out["speculative_method"] = method
    n = d.get("num_speculative_tokens", d.get("num_spec_tokens"))
    if n not in (None, "None"):
        out["num_speculative_tokens"] = n
    model = d.get("model")
    if model not in (None, "None"):
        out["speculative_model"] = model
    if not out:
        out["speculative_method"] = "on"
    return out


@dataclass
class Settings:
    """Canonical settings with the line each came from."""

    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def int(self, name: str) -> int | None:
        v = self.values.get(name)
        if isinstance(v, bool):
            return None
        if isinstance(v, int | float):
            return int(v)
        if isinstance(v, str):
            try:
                return int(float(v))
            except ValueError:
                return None
        return None

    def spec_configured(self) -> bool | None:
        """True when spec decode is configured, False when the config says it is off, None unknown."""
        if self.values.get("speculative_method") is not None:
            return True
        if "speculative_config" in self.raw or "speculative_algorithm" in self.raw:
            return False
        return None


def settings_of(events: Sequence[Event]) -> Settings:
    """Canonical settings from ``config`` and ``scheduler_limits`` events: the first event that has a
    setting gives it; within one event the setting's names are tried in the order of ``ALIASES``."""
    s = Settings()

    def take(args: dict[str, Any], line: int) -> None:
        for key, value in args.items():
            s.raw.setdefault(key, value)
        for name, (_label, keys) in ALIASES.items():
            if name in s.values:
                continue
            for key in keys:
                value = args.get(key)
                if value is not None and value != "None":
                    s.values[name] = value
                    s.lines[name] = line
                    break

    for e in events:
        if e.kind == "config":
            args: dict[str, Any] = dict(getattr(e, "args", {}) or {})
            if "speculative_config" in args:
                args.update(
                    {k: v for k, v in _spec_fields(args["speculative_config"]).items() if k not in args}
                )
            take(args, e.line)
        elif e.kind == "scheduler_limits":
            take(
                {
                    k: getattr(e, k, None)
                    for k in ("chunked_prefill_size", "max_running_requests", "context_len")
                },
                e.line,
            )
        elif e.kind == "max_concurrency":
            take({"max_model_len": getattr(e, "tokens_per_request", None)}, e.line)
    return s


def label(name: str) -> str:
    return ALIASES[name][0] if name in ALIASES else name
