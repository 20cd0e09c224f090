"""vLLM message grammars, V0 and V1, 2023 to today (see docs/formats: vLLM).

Each grammar is written once in our vocabulary (``logscope.parsers.grammar``) and tagged with the
event kind it produces. Where vLLM's wording changed over the years, one grammar takes every
wording as ordered alternatives; where optional fields come and go (the V1 stats line, the
spec-decode line), a ``Many`` list of fields in any order is parsed and mapped.
"""

from __future__ import annotations

from typing import Any

from logscope.parsers.bench import BENCH_GRAMMARS
from logscope.parsers.common import Gib, kv_capacity_grammar, oom_grammar
from logscope.parsers.grammar import (
    End,
    Flag,
    Float,
    Grammar,
    Int,
    Leaf,
    Many,
    NumList,
    Opt,
    Rest,
    Seq,
    Until,
    Word,
)
from logscope.parsers.requests import HTTP_ACCESS, VLLM_REQUEST, const

__all__ = ["GRAMMARS"]

# -- periodic stats ---------------------------------------------------------------------------
_stat_item = (
    Seq("Running: ", Int("running"), " reqs")
    | Seq("Waiting: ", Int("waiting"), " reqs")
    | Seq("Pending: ", Int("waiting"), " reqs")
    | Seq("Swapped: ", Int("swapped"), " reqs")
    | Seq("Deferred: ", Int("deferred"), " reqs")
    | Seq("Preemptions: ", Int("preemptions"))
    | Seq("Corrupted: ", Int("corrupted"), " reqs")
    | Seq("GPU KV cache usage: ", Float("gpu_kv_cache_pct"), "%")
    | Seq("CPU KV cache usage: ", Float("cpu_kv_cache_pct"), "%")
    | Seq("Prefix cache hit rate: ", Float("prefix_cache_hit_pct"), "%")
    | Seq("External prefix cache hit rate: ", Float("external_prefix_cache_hit_pct"), "%")
    | Seq("MM cache hit rate: ", Float("mm_cache_hit_pct"), "%")
)


def _throughput(f: dict[str, Any]) -> dict[str, Any] | None:
    if "running" not in f or "waiting" not in f:
        return None
    if "gpu_kv_cache_pct" not in f and "cpu_kv_cache_pct" in f and "swapped" not in f:
        # vLLM's CPU backend prints its only KV pool as "CPU KV cache usage": it is the engine's KV usage
        f["gpu_kv_cache_pct"] = f.pop("cpu_kv_cache_pct")
    return f


THROUGHPUT = Grammar(
    "vllm.stats",
    "throughput",
    ("Avg prompt throughput", "Throughput: "),
    Seq(
        Opt(
            Seq("Engine ", Int("engine_index"), ": ")
            | Seq(Int("engines_aggregated"), " Engines Aggregated: ")
        ),
        Seq(
            "Avg prompt throughput: ",
            Float("prompt_tok_s"),
            " tokens/s, Avg generation throughput: ",
            Float("gen_tok_s"),
            " tokens/s, ",
        )
        | Seq("Throughput: ", Float("gen_tok_s"), " tokens/s, "),
        # the V1 line in its usual order, read in one step; any other order or field goes to the list
        Seq(
            "Running: ",
            Int("running"),
            " reqs, Waiting: ",
            Int("waiting"),
            " reqs",
            Opt(Seq(", Deferred: ", Int("deferred"), " reqs")),
            Opt(Seq(", Preemptions: ", Int("preemptions"))),
            ", GPU KV cache usage: ",
            Float("gpu_kv_cache_pct"),
            "%, Prefix cache hit rate: ",
            Float("prefix_cache_hit_pct"),
            "%",
            End(),
        )
        | Seq(
            Many(_stat_item, ", "),
            # 2025-01-30 V1: "Waiting: 0 reqs GPU KV cache usage: 5.0%." (no comma)
            Opt(Seq(" GPU KV cache usage: ", Float("gpu_kv_cache_pct"), "%")),
            Opt("."),
            End(),
        ),
    ),
    build=_throughput,
)

PREFIX_CACHE = Grammar(
    "vllm.prefix_cache_v0",
    "prefix_cache",
    ("Prefix cache hit rate: GPU:",),
    Seq(
        "Prefix cache hit rate: GPU: ",
        Float("gpu_hit_pct"),
        "%",
        Opt(Seq(", CPU: ", Float("cpu_hit_pct"), "%")),
        End(),
    ),
)

# -- speculative decoding ---------------------------------------------------------------------
_spec_item = (
    Seq("Mean acceptance length: ", Float("mean_acceptance_length"))
    | Seq("Accepted throughput: ", Float("accepted_tok_s"), " tokens/s")
    | Seq("Drafted throughput: ", Float("drafted_tok_s"), " tokens/s")
    | Seq("Accepted: ", Int("accepted_tokens"), " tokens")
    | Seq("Drafted: ", Int("drafted_tokens"), " tokens")
    | Seq("Per-position acceptance rate: ", NumList("per_position_acceptance"))
    | Seq("Avg Draft acceptance rate: ", Float("acceptance_rate_pct"), "%")
    | Seq("Draft acceptance rate: ", Float("acceptance_rate_pct"), "%")
)

SPEC_V1 = Grammar(
    "vllm.spec_decode_v1",
    "spec_decode",
    ("SpecDecoding metrics:",),
    Seq(
        "SpecDecoding metrics: ",
        # the current order (2025-09 on) in one step; older orders and hybrids through the list
        Seq(
            "Mean acceptance length: ",
            Float("mean_acceptance_length"),
            ", Accepted throughput: ",
            Float("accepted_tok_s"),
            " tokens/s, Drafted throughput: ",
            Float("drafted_tok_s"),
            " tokens/s, Accepted: ",
            Int("accepted_tokens"),
            " tokens, Drafted: ",
            Int("drafted_tokens"),
            " tokens, Per-position acceptance rate: ",
            NumList("per_position_acceptance"),
            ", Avg Draft acceptance rate: ",
            Float("acceptance_rate_pct"),
            "%",
            End(),
        )
        | Seq(Many(_spec_item, ", "), End()),
    ),
)

_spec_v0_item = (
    Seq("Draft acceptance rate: ", Float("rate_frac"))
    | Seq("System efficiency: ", Float("system_efficiency"))
    | Seq("Number of speculative tokens: ", Int("speculative_tokens"))
    | Seq("Number of accepted tokens: ", Int("accepted_tokens"))
    | Seq("Number of draft tokens", Opt(" tokens"), ": ", Int("drafted_tokens"))
    | Seq("Number of emitted tokens", Opt(" tokens"), ": ", Int("emitted_tokens"))
)


def _spec_v0(f: dict[str, Any]) -> dict[str, Any]:
    rate = f.pop("rate_frac", None)
    if rate is not None:
        f["acceptance_rate_pct"] = round(rate * 100, 6)
    # V0 prints counters since start; the one-day V1 form of 2025-04-01 had no system efficiency
    f["cumulative"] = "system_efficiency" in f
    return f


SPEC_V0 = Grammar(
    "vllm.spec_decode_v0",
    "spec_decode",
    ("Speculative metrics:",),
    Seq("Speculative metrics: ", Many(_spec_v0_item, ", "), Opt(","), Opt("."), End()),
    build=_spec_v0,
)

# -- KV pool, concurrency, memory ---------------------------------------------------------------
KV_SIZE = Grammar(
    "vllm.kv_cache_size",
    "kv_cache_pool",
    ("KV cache size:",),
    Seq(
        Leaf(r"[\s\S]*?(?=\b[A-Z]{3} KV cache size: )"),
        Leaf(r"[A-Z]{3}", "device", str.lower),
        " KV cache size: ",
        Int("tokens"),
        " tokens",
    ),
    search=False,
    also=True,
)

BLOCKS = Grammar(
    "vllm.blocks",
    "kv_cache_pool",
    ("blocks: ",),
    Seq(
        Opt("# "),
        Seq(
            Leaf(r"GPU|CUDA|cuda|TPU|HPU|XPU|NPU|Neuron"),
            " blocks: ",
            Int("gpu_blocks"),
            Opt(Seq(", # CPU blocks: ", Int("cpu_blocks"))),
        )
        | Seq("CPU blocks: ", Int("cpu_blocks")),
        End(),
    ),
)

MAX_CONCURRENCY = Grammar(
    "vllm.max_concurrency",
    "max_concurrency",
    ("Maximum concurrency for",),
    Seq(
        Until("Maximum concurrency for "),
        "Maximum concurrency for ",
        Int("tokens_per_request"),
        " tokens per request: ",
        Float("concurrency"),
        "x",
    ),
    also=True,
)


_profile_item = (
    Seq("duration=", Float("seconds"), " seconds")
    | Seq("total_gpu_memory=", Gib("total_gib"))
    | Seq("initial_memory_usage=", Gib(None))
    | Seq("peak_torch_memory=", Gib(None))
    | Seq("memory_usage_post_profile=", Gib(None))
    | Seq("non_torch_memory=", Gib("non_torch_gib"))
    | Seq("kv_cache_size=", Gib("kv_cache_gib"))
    | Seq("gpu_memory_utilization=", Float("gpu_memory_utilization"))
)

MEMORY_V0_ONELINE = Grammar(
    "vllm.memory_profile_v0",
    "memory_profile",
    ("Memory profiling results:",),
    Seq("Memory profiling results: ", Many(_profile_item, " ") | Many(_profile_item, ", "), Opt("."), End()),
)

_line2 = Seq(
    "the current vLLM instance can use total_gpu_memory (",
    Gib("total_gib"),
    ") x gpu_memory_utilization (",
    Float("gpu_memory_utilization"),
    ") = ",
    Gib("requested_gib"),
)
_line3 = Seq(
    "model weights take ",
    Gib("weights_gib"),
    "; non_torch_memory takes ",
    Gib("non_torch_gib"),
    "; PyTorch activation peak memory takes ",
    Gib("activation_peak_gib"),
    "; the rest of the memory reserved for KV Cache is ",
    Gib("kv_cache_gib"),
    Opt("."),
)

MEMORY_V0_3LINE = Grammar(
    "vllm.memory_profile_3line",
    "memory_profile",
    ("Memory profiling takes", "the current vLLM instance can use", "model weights take "),
    Seq(
        Opt(Seq("Memory profiling takes ", Float("seconds"), " seconds", Opt("\n"))),
        Opt(Seq(_line2, Opt("\n"))),
        Opt(_line3),
        Leaf(r"(?<=\S)"),  # at least something matched
    ),
)

MEMORY_V1_DEBUG = Grammar(
    "vllm.memory_profile_v1_debug",
    "memory_profile",
    ("Total non KV cache memory:",),
    Seq(
        "Memory profiling takes ",
        Float("seconds"),
        " seconds. Total non KV cache memory: ",
        Gib(None),
        "; torch peak memory increase: ",
        Gib("activation_peak_gib"),
        "; non-torch forward increase memory: ",
        Gib("non_torch_gib"),
        "; weights memory: ",
        Gib("weights_gib"),
        Opt("."),
    ),
)

AVAILABLE_KV = Grammar(
    "vllm.available_kv_memory",
    "memory_profile",
    ("Available KV cache memory:",),
    Seq("Available KV cache memory: ", Gib("kv_cache_gib")),
)

EXPLICIT_KV = Grammar(
    "vllm.kv_memory_explicit",
    "memory_profile",
    ("for KV cache on node", "memory for KV Cache as specified by kv_cache_memory_bytes"),
    Seq(
        "Explicitly set (",
        Float("kv_cache_gib"),
        "/",
        Float("total_gib"),
        ") GiB for KV cache on node ",
        Int(None),
    )
    | Seq(
        "Initial free memory ",
        Gib("free_gib"),
        ", reserved ",
        Gib("kv_cache_gib"),
        " memory for KV Cache as specified by kv_cache_memory_bytes config",
        Rest(),
    ),
)


def _suggestion(f: dict[str, Any]) -> dict[str, Any]:
    cur = f.pop("current_kv", None)
    if cur is not None:
        f["kv_cache_gib"] = cur
    cur_b = f.pop("current_kv_bytes", None)
    if cur_b is not None:
        f["kv_cache_gib"] = round(cur_b / 2**30, 4)
    return f


KV_SUGGESTION = Grammar(
    "vllm.kv_cache_memory_suggestion",
    "memory_profile",
    ("--kv-cache-memory=", "GiB for CUDAGraph memory"),
    Seq(
        Opt(Seq("Free memory on device (", Float("free_gib"), "/", Float("total_gib"), " GiB) on startup. ")),
        "Desired GPU memory utilization is (",
        Float("gpu_memory_utilization"),
        ", ",
        Float("requested_gib"),
        " GiB). Actual usage is ",
        # two wordings: weights and non-torch apart, or together as "consumed memory" (newer)
        Seq(
            Float("weights_gib"),
            " GiB for weight, ",
            Float("activation_peak_gib"),
            " GiB for peak activation, ",
            Float("non_torch_gib"),
            " GiB for non-torch memory, and ",
        )
        | Seq(
            Float("consumed_gib"),
            " GiB for consumed memory (weights + non-torch), ",
            Float("activation_peak_gib"),
            " GiB for peak activation, and ",
        ),
        Float("cuda_graph_gib"),
        " GiB for CUDAGraph memory. ",
        # the suggestion is left out when the KV cache was sized explicitly
        Opt(
            Seq(
                "Replace gpu_memory_utilization config with `--kv-cache-memory=",
                Int("suggested_kv_cache_bytes"),
                "`",
                Opt(Seq(" (", Float("suggested_kv_cache_gib"), " GiB)")),
                " to fit into requested memory, or `--kv-cache-memory=",
                Int("full_kv_cache_bytes"),
                "`",
                Opt(Seq(" (", Float(None), " GiB)")),
                " to fully utilize gpu memory. ",
            )
        ),
        "Current kv cache memory in use is ",
        Seq(Float("current_kv"), " GiB") | Seq(Int("current_kv_bytes"), " bytes"),
        Opt("."),
    ),
    build=_suggestion,
)

# -- start-up phases ----------------------------------------------------------------------------


MODEL_LOAD = Grammar(
    "vllm.model_load",
    "model_load",
    ("Loading model weights took", "Model loading took"),
    Seq(
        Seq("Loading model weights took ", Float("memory_gib"), " GB")
        | Seq("Model loading took ", Float("memory_gib"), " ", Leaf("GiB|GB"), Opt(" memory")),
        Opt(Seq(" and ", Float("seconds"), " seconds")),
        Opt("."),
        End(),
    ),
)

GRAPH_CAPTURE = Grammar(
    "vllm.graph_capture",
    "graph_capture",
    ("Graph capturing finished", "Capturing the model for CUDA graphs", "Capturing cudagraphs for decoding"),
    Seq(
        "Graph capturing finished in ",
        Float("seconds"),
        " secs",
        Opt(Seq(", took ", Float("memory_gib"), " GiB")),
        Opt("."),
        End(),
    )
    | Seq(Flag("Capturing the model for CUDA graphs", "begin"), Rest())
    | Seq(Flag("Capturing cudagraphs for decoding", "begin"), Rest()),
)


def _const(field: str, value: str) -> Leaf:
    """A zero-width field: sets ``field`` to ``value`` when the branch it starts matches."""

    def conv(_text: str) -> str:
        return value

    return Leaf(r"(?=)", field, conv)


def _stage(name: str) -> Leaf:
    return _const("stage", name)


COMPILE = Grammar(
    "vllm.compile",
    "compile",
    (
        "Dynamo bytecode transform time",
        "Compiling a graph for",
        "torch.compile take",
        "torch.compile took",
        "graph compilation takes",
        "profiling/warmup run",
        "Directly load the compiled graph",
        "Triton kernel JIT compilation during inference",
        "saved AOT compiled function",
        "Directly load AOT compilation",
        "Compiling model again",
        "Saved compiler manager cache",
    ),
    Seq(
        Opt(Leaf(r"\[[\w.-]+\] ")),  # "[backbone] " sub-model tag (2026)
        Seq(_stage("dynamo"), "Dynamo bytecode transform time: ", Float("seconds"), " s")
        | Seq(
            _stage("graph"),
            "Compiling a graph for ",
            Until(" takes ", "detail"),
            " takes ",
            Float("seconds"),
            " s",
        )
        | Seq(_stage("graph"), "Compiling a graph for ", Rest("detail"))
        | Seq(
            _stage("total_with_warmup"),
            "torch.compile and initial profiling/warmup run together took ",
            Float("seconds"),
            " s in total",
        )
        | Seq(
            _stage("total"),
            Leaf("torch.compile takes |torch.compile took |graph compilation takes "),
            Float("seconds"),
            " s in total",
        )
        | Seq(_stage("warmup"), "Initial profiling/warmup run took ", Float("seconds"), " s")
        | Seq(
            _stage("cache_load"),
            "Directly load the compiled graph(s) for ",
            Until(" from the cache", "detail"),
            " from the cache",
            Opt(Seq(", took ", Float("seconds"), " s")),
        )
        | Seq(
            _stage("runtime_jit"),
            "Triton kernel JIT compilation during inference: ",
            Until(". This causes", "detail"),
            Rest(),
        )
        | Seq(_stage("aot_save"), "saved AOT compiled function to ", Rest("detail"))
        | Seq(_stage("aot_load"), "Directly load AOT compilation from path ", Rest("detail"))
        | Seq(_stage("recompile"), "Compiling model again due to a load failure", Rest("detail"))
        | Seq(
            _stage("cache_save"), "Saved compiler manager cache in ", Float("seconds"), " seconds", Opt(".")
        ),
    ),
)

ENGINE_INIT = Grammar(
    "vllm.engine_init",
    "engine_init",
    ("init engine (profile, create kv cache, warmup model) took",),
    Seq(
        "init engine (profile, create kv cache, warmup model) took ",
        Float("seconds"),
        " ",
        Leaf("seconds|s"),
        Opt(Seq(" (compilation: ", Float("compile_seconds"), " s", Rest())),
    ),
)

SERVER_READY = Grammar(
    "vllm.server_ready",
    "server_ready",
    ("Application startup complete",),
    Seq("Application startup complete", Opt("."), End()),
)

# -- runtime events -----------------------------------------------------------------------------
PREEMPTION = Grammar(
    "vllm.preemption_v0",
    "preemption",
    ("is preempted by",),
    Seq(
        "Sequence group ",
        Word("request_id"),
        " is preempted by ",
        Opt("PreemptionMode."),
        Leaf(r"[A-Za-z_]+", "mode"),
        " mode because there is not enough KV cache space.",
        Opt(Seq(Until("total_num_cumulative_preemption="), "total_num_cumulative_preemption=", Int("count"))),
        Rest(),
    ),
)

# -- configuration and version -------------------------------------------------------------------


def _parse_args(f: dict[str, Any]) -> dict[str, Any] | None:
    from logscope.parsers.common import parse_kv_repr

    form = f.pop("form")
    args = parse_kv_repr(f.pop("body"))
    if not args:
        return None
    return {"args": args, "form": form}


def _form(name: str) -> Leaf:
    return _const("form", name)


CONFIG = Grammar(
    "vllm.config",
    "config",
    (
        "non-default args:",
        "args: Namespace(",
        "with config: ",
        "Using max model len ",
        "Chunked prefill is enabled with max_num_batched_tokens=",
    ),
    Seq(_form("non_default_args"), "non-default args: ", Rest("body"))
    | Seq(_form("args"), "args: ", Rest("body"))
    | Seq(
        _form("engine_config"),
        Leaf(r"Initializing an? (?:V[01] )?LLM engine (?:\(v[^)\s]*\) )?with config: "),
        Rest("body"),
    )
    | Seq(
        _form("max_model_len"),
        Leaf(r"Using max model len (?=\d)"),
        Leaf(r"\d+", "body", lambda s: f"max_model_len={s}"),
        End(),
    )
    | Seq(
        _form("chunked_prefill"),
        Leaf(r"Chunked prefill is enabled with (?=max_num_batched_tokens=\d)"),
        Leaf(r"max_num_batched_tokens=\d+", "body"),
        Opt("."),
        End(),
    ),
    build=_parse_args,
)

VERSION = Grammar(
    "vllm.version",
    "version",
    ("server version ", "LLM engine (v", "  version "),
    Seq(
        Leaf(r"vLLM (?:API )?server version "),
        Leaf(r"[^\s,]+", "engine_version"),
        Opt(Seq(", serving model ", Word("model"))),
    )
    | Seq(
        Leaf(r"Initializing an? (?:V[01] )?LLM engine \(v"), Leaf(r"[^)\s]+", "engine_version"), ")", Rest()
    )
    | Seq(
        Until("  version "),
        "  version ",
        Word("engine_version"),
        Opt(Seq(Until("  model "), "  model ", Leaf(r"\S+", "model"))),
        Rest(),
    ),
    also=True,
)

STARTUP_STEP = Grammar(
    "vllm.startup_step",
    "startup_step",
    ("Loading weights took ", " cuda graph addresses", "Profiling CUDA graph memory: "),
    Seq(const("step", "weights_loaded"), "Loading weights took ", Float("seconds"), " seconds", Rest())
    | Seq(
        const("step", "cuda_graph_addresses"), "Registering ", Int("count"), " cuda graph addresses", Rest()
    )
    | Seq(const("step", "cuda_graph_memory_profile"), "Profiling CUDA graph memory: ", Rest("detail")),
)

SERVER_START = Grammar(
    "vllm.server_start",
    "server_start",
    ("Starting vLLM API server", "Uvicorn running on "),
    Seq(Leaf(r"Starting vLLM API server (?:\d+ )?on "), Word("detail"), Rest())
    | Seq("Uvicorn running on ", Word("detail"), Rest()),
)

GRAMMARS: list[Grammar] = [
    HTTP_ACCESS,  # first: the most frequent line of a request-heavy log, and its path may hold any anchor
    THROUGHPUT,
    SPEC_V1,
    SPEC_V0,
    PREFIX_CACHE,
    BLOCKS,
    KV_SIZE,
    MAX_CONCURRENCY,
    KV_SUGGESTION,
    MEMORY_V0_ONELINE,
    MEMORY_V1_DEBUG,
    MEMORY_V0_3LINE,
    AVAILABLE_KV,
    EXPLICIT_KV,
    MODEL_LOAD,
    GRAPH_CAPTURE,
    COMPILE,
    ENGINE_INIT,
    SERVER_READY,
    PREEMPTION,
    CONFIG,
    VERSION,
    STARTUP_STEP,
    SERVER_START,
    *VLLM_REQUEST,
    kv_capacity_grammar("vllm"),
    oom_grammar("vllm"),
    *BENCH_GRAMMARS,  # the benchmark client's result block (no log prefix), see parsers/bench.py
]
