"""Typed events: one frozen pydantic model per kind of log line.

Every event carries its evidence (``file``, ``line``, ``raw``) and where it came from (``process``,
ranks, ``level``, the printed ``time`` and ``t_s`` seconds since the run's first timestamp). Field
names carry their unit (``gen_tok_s``, ``memory_gib``, ``gpu_kv_cache_pct``). Kinds are
engine-neutral where the meaning is shared: a KV pool of N tokens is ``kv_cache_pool`` whichever
engine printed it. The names here are the public contract (docs/contract.md): extend, never rename.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logscope.events.compact import compact


class Event(BaseModel):
    """Fields shared by every event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    engine: Literal["vllm", "sglang"] | None = None
    file: str = ""
    line: int = Field(0, description="1-based number of the first physical line")
    end_line: int | None = Field(None, description="last physical line when the record spans several")
    time: str | None = Field(None, description="timestamp as printed")
    t_s: float | None = Field(None, description="seconds since the run's first timestamp")
    process: str | None = Field(None, description='process tag, e.g. "EngineCore_DP0 pid=456" or "DP0 TP3"')
    tp_rank: int | None = None
    dp_rank: int | None = None
    level: str | None = None
    repeated: int = Field(
        1, description="times this line stands for (Ray's `[repeated Nx across cluster]` adds N)"
    )
    raw: str = Field(
        "",
        description="the record's text as read (ANSI colour removed), its physical lines joined by newlines",
    )
    prefix: str | None = Field(
        None,
        description="text before the engine's own header that is no known envelope (a job runner's tags, a stack of process prefixes), as printed",
    )
    outer_time: str | None = Field(
        None,
        description="the collector's stamp (docker, Loki, OTLP, Cloud Logging, CloudWatch, Elasticsearch, "
        "`docker logs -t`, journald) when the line has an engine time too: it holds the year and zone vLLM's lacks",
    )
    time_source: str | None = Field(
        None,
        description='where `time` comes from when a collector stamped the line: "collector" (the line has no '
        'engine time), "engine; year and zone in outer_time"; null: the engine\'s own header, as printed',
    )
    request_id: str | None = Field(
        None,
        description="the request the record is about: the id its line prints (`request`, `preemption`; comma-joined "
        "when one line names several), else a JSON record's request id key (`request_id`, `requestId`, `rid`, OTel "
        "attribute `vllm.request_id`); null: none, or the line was cut before it",
    )

    # An event-dense log holds a million events: each one is made small right after it is built, by
    # any path (validation, ``model_construct``, unpickling a worker's events). See ``compact``.
    def model_post_init(self, context: Any, /) -> None:
        """Share the fields-set between events given the same names, and key-sharing ``__dict__``."""
        compact(self)

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        compact(self)


class Throughput(Event):
    """vLLM periodic stats line (V0 `Avg prompt throughput ... Swapped`, V1 `Engine 000: ...`)."""

    kind: Literal["throughput"] = "throughput"
    prompt_tok_s: float | None = None
    gen_tok_s: float
    running: int
    waiting: int
    swapped: int | None = None
    deferred: int | None = None
    preemptions: int | None = None
    gpu_kv_cache_pct: float | None = None
    cpu_kv_cache_pct: float | None = None
    prefix_cache_hit_pct: float | None = None
    external_prefix_cache_hit_pct: float | None = None
    mm_cache_hit_pct: float | None = None
    corrupted: int | None = None
    engine_index: int | None = None
    engines_aggregated: int | None = None


class PrefixCache(Event):
    """vLLM V0 separate prefix-cache line: `Prefix cache hit rate: GPU: x%, CPU: y%`."""

    kind: Literal["prefix_cache"] = "prefix_cache"
    gpu_hit_pct: float
    cpu_hit_pct: float | None = None


class SpecDecode(Event):
    """Speculative-decoding metrics. Rates are percents even where the log printed a fraction."""

    kind: Literal["spec_decode"] = "spec_decode"
    mean_acceptance_length: float | None = None
    acceptance_rate_pct: float | None = None
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    accepted_tok_s: float | None = None
    drafted_tok_s: float | None = None
    per_position_acceptance: list[float] | None = None
    emitted_tokens: int | None = None
    speculative_tokens: int | None = None
    system_efficiency: float | None = None
    cumulative: bool = False


class PrefillBatch(Event):
    """SGLang `Prefill batch` line. A field a damaged paste lost (clipped, spliced) is null."""

    kind: Literal["prefill_batch"] = "prefill_batch"
    new_seq: int
    new_token: int
    cached_token: int | None = None
    token_usage: float | None = None
    running: int | None = None
    queue: int | None = None
    input_tok_s: float | None = None
    cuda_graph: bool | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class DecodeBatch(Event):
    """SGLang `Decode batch` line. A field a damaged paste lost (clipped, spliced) is null."""

    kind: Literal["decode_batch"] = "decode_batch"
    running: int
    tokens: int | None = None
    token_usage: float | None = None
    gen_tok_s: float
    queue: int | None = None
    accept_len: float | None = None
    accept_rate: float | None = None
    cuda_graph: bool | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class KvCachePool(Event):
    """A KV (or state) pool's size: tokens, blocks or memory."""

    kind: Literal["kv_cache_pool"] = "kv_cache_pool"
    pool: str = "kv"
    tokens: int | None = None
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    memory_gib: float | None = None
    k_gib: float | None = None
    v_gib: float | None = None
    device: str | None = Field(None, description='where the pool lives when the log says: "gpu", "cpu", ...')


class MaxConcurrency(Event):
    """`Maximum concurrency for N tokens per request: X.XXx`."""

    kind: Literal["max_concurrency"] = "max_concurrency"
    tokens_per_request: int
    concurrency: float


class MemoryProfile(Event):
    """Memory profiling results: what the engine itself says about its memory budget."""

    kind: Literal["memory_profile"] = "memory_profile"
    total_gib: float | None = None
    gpu_memory_utilization: float | None = None
    requested_gib: float | None = None
    free_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    consumed_gib: float | None = Field(
        None, description="weights + non-torch, as newer vLLM prints them together"
    )
    activation_peak_gib: float | None = None
    cuda_graph_gib: float | None = None
    kv_cache_gib: float | None = None
    suggested_kv_cache_bytes: int | None = None
    suggested_kv_cache_gib: float | None = None
    full_kv_cache_bytes: int | None = None
    seconds: float | None = None


class SchedulerLimits(Event):
    """SGLang summary line `max_total_num_tokens=..., chunked_prefill_size=..., ...`."""

    kind: Literal["scheduler_limits"] = "scheduler_limits"
    max_total_num_tokens: int
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gib: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class ModelLoad(Event):
    """Weights loaded: memory taken and the time it took."""

    kind: Literal["model_load"] = "model_load"
    memory_gib: float | None = None
    seconds: float | None = None
    avail_mem_gib: float | None = None


class GraphCapture(Event):
    """CUDA/NPU graph capture, begin (`begin=True`) or end."""

    kind: Literal["graph_capture"] = "graph_capture"
    seconds: float | None = None
    memory_gib: float | None = None
    avail_mem_gib: float | None = None
    begin: bool = False


class Compile(Event):
    """torch.compile stages and runtime JIT compiles."""

    kind: Literal["compile"] = "compile"
    seconds: float | None = None
    stage: str
    detail: str | None = None


class EngineInit(Event):
    """`init engine (profile, create kv cache, warmup model) took X seconds`."""

    kind: Literal["engine_init"] = "engine_init"
    seconds: float
    compile_seconds: float | None = None


class ServerStart(Event):
    """The serving process started (first lines of a server)."""

    kind: Literal["server_start"] = "server_start"
    detail: str | None = None


class ServerReady(Event):
    """The server accepts requests (`Application startup complete.`, SGLang's ready line)."""

    kind: Literal["server_ready"] = "server_ready"


class Preemption(Event):
    """A preemption reported on its own line (vLLM V0)."""

    kind: Literal["preemption"] = "preemption"
    count: int | None = None
    mode: str | None = None


class Retract(Event):
    """SGLang retraction of running requests when the KV pool is full (not an OOM)."""

    kind: Literal["retract"] = "retract"
    retracted_reqs: int | None = None
    new_token_ratio: float | None = None


class Oom(Event):
    """A CUDA out-of-memory error (PyTorch's text), recovered (`retry`) or not."""

    kind: Literal["oom"] = "oom"
    message: str
    requested_gib: float | None = None
    free_gib: float | None = None
    total_gib: float | None = None
    gpu: int | None = None
    retry: bool = False


class KvCapacity(Event):
    """The KV cache cannot hold one request of the maximum length (a start-up failure)."""

    kind: Literal["kv_capacity"] = "kv_capacity"
    message: str
    max_seq_len: int | None = None
    kv_tokens: int | None = None
    needed_gib: float | None = None
    available_gib: float | None = None
    estimated_max_len: int | None = None


class Warning_(Event):
    """A warning, with a number-masked template for grouping."""

    kind: Literal["warning"] = "warning"
    message: str
    source: str | None = None
    template: str
    category: str | None = Field(None, description="Python warning category, e.g. FutureWarning")


class Error(Event):
    """An error or exception, with its joined traceback."""

    kind: Literal["error"] = "error"
    exception: str | None = None
    message: str
    traceback: list[str] = Field(default_factory=list)
    source: str | None = None


class Config(Event):
    """Engine configuration: vLLM non-default args / engine config, SGLang server_args."""

    kind: Literal["config"] = "config"
    args: dict[str, Any]
    form: str | None = Field(None, description='which line gave it, e.g. "non_default_args", "engine_config"')


class Version(Event):
    """The engine's version as printed."""

    kind: Literal["version"] = "version"
    engine_version: str
    model: str | None = None


class BenchResult(Event):
    """A benchmark client's result (`vllm bench serve`, `sglang.bench_serving`): a printed block or a
    `--save-result` JSON / JSONL record; or another client's result file (AIPerf, GuideLLM, genai-bench,
    inference-perf, an llm-d benchmark report: logscope.parsers.bench_files). Fields are the printed numbers;
    unknown rows and keys go to `extra`."""

    kind: Literal["bench_result"] = "bench_result"
    client: str | None = Field(
        None,
        description='whose client wrote it: "vllm" or "sglang" (from the rows), "aiperf", '
        '"guidellm", "genai-bench", "inference-perf", or "br" (an llm-d '
        'benchmark report; its tool in extra["tool"])',
    )
    backend: str | None = None
    request_rate: float | None = Field(None, description="req/s configured; null when unlimited (inf)")
    successful_requests: int | None = None
    failed_requests: int | None = None
    duration_s: float | None = None
    total_input_tokens: int | None = None
    total_input_text_tokens: int | None = None
    total_input_vision_tokens: int | None = None
    total_output_tokens: int | None = None
    total_output_tokens_retokenized: int | None = None
    request_throughput: float | None = None
    request_goodput: float | None = None
    input_tok_s: float | None = None
    output_tok_s: float | None = None
    peak_output_tok_s: float | None = None
    peak_concurrent_requests: float | None = None
    total_tok_s: float | None = None
    max_concurrency: int | None = None
    concurrency: float | None = Field(
        None, description="mean requests in flight as the client printed it (SGLang)"
    )
    rtfx: float | None = None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    max_itl_ms: float | None = None
    mean_e2e_ms: float | None = None
    median_e2e_ms: float | None = None
    p90_e2e_ms: float | None = None
    p95_e2e_ms: float | None = None
    p99_e2e_ms: float | None = None
    accept_length: float | None = None
    acceptance_rate_pct: float | None = None
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    per_position_acceptance_pct: list[float] | None = None
    rows: int = Field(0, description="metric rows read from the block (rows cut mid-value are not read)")
    complete: bool = Field(False, description="the closing rule was seen (always true for a JSON record)")
    extra: dict[str, Any] = Field(default_factory=dict)


class StartupStep(Event):
    """A start-up step that no other kind holds: weights read, graph sizes chosen, memory left after a pool,
    the HTTP app up (``step`` names it; see docs/events.md for the lines of each)."""

    kind: Literal["startup_step"] = "startup_step"
    step: str = Field(
        description=(
            "weights_loaded (vLLM `Loading weights took`, seconds), cuda_graph_memory_profile (vLLM `Profiling CUDA graph "
            "memory:`, detail), cuda_graph_addresses (`Registering N cuda graph addresses`, count), load_weight_begin and "
            "memory_pool_end (SGLang, avail_mem_gib), cuda_graph_batch_sizes (SGLang `Capture cuda graph bs [...]`, detail "
            "and count), kv_cache_dtype (SGLang `Using KV cache dtype:`, detail), http_startup_complete (SGLang's uvicorn "
            "`Application startup complete.`; SGLang is ready at `The server is fired up`)"
        )
    )
    seconds: float | None = None
    avail_mem_gib: float | None = None
    count: int | None = None
    detail: str | None = None


class Request(Event):
    """One request's step as request logging prints it (vLLM ``--enable-log-requests``, SGLang
    ``--log-requests``): received, added to the engine, finished, aborted, failed."""

    kind: Literal["request"] = "request"
    phase: Literal["received", "added", "finished", "aborted", "error"]
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    e2e_s: float | None = Field(
        None, description="end-to-end latency the engine printed (SGLang meta_info e2e_latency)"
    )
    ttft_s: float | None = None
    queue_s: float | None = None
    reason: str | None = Field(None, description="why it failed or ended, as printed")


class HttpAccess(Event):
    """One uvicorn access line: ``127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK``."""

    kind: Literal["http_access"] = "http_access"
    client: str | None = None
    method: str
    path: str
    status: int


class Unparsed(Event):
    """A record no grammar understood. `candidate` names the kind it looks like (likely a new format)."""

    kind: Literal["unparsed"] = "unparsed"
    text: str
    candidate: str | None = None


AnyEvent = Annotated[
    Throughput
    | PrefixCache
    | SpecDecode
    | PrefillBatch
    | DecodeBatch
    | KvCachePool
    | MaxConcurrency
    | MemoryProfile
    | SchedulerLimits
    | ModelLoad
    | GraphCapture
    | Compile
    | EngineInit
    | ServerStart
    | ServerReady
    | Preemption
    | Retract
    | Oom
    | KvCapacity
    | Warning_
    | Error
    | Config
    | Version
    | BenchResult
    | StartupStep
    | Request
    | HttpAccess
    | Unparsed,
    Field(discriminator="kind"),
]

EVENT_TYPES: dict[str, type[Event]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        Throughput,
        PrefixCache,
        SpecDecode,
        PrefillBatch,
        DecodeBatch,
        KvCachePool,
        MaxConcurrency,
        MemoryProfile,
        SchedulerLimits,
        ModelLoad,
        GraphCapture,
        Compile,
        EngineInit,
        ServerStart,
        ServerReady,
        Preemption,
        Retract,
        Oom,
        KvCapacity,
        Warning_,
        Error,
        Config,
        Version,
        BenchResult,
        StartupStep,
        Request,
        HttpAccess,
        Unparsed,
    )
}
KINDS: tuple[str, ...] = tuple(EVENT_TYPES)
