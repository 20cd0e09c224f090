"""The real corpus logs give no finding a reader would call wrong.

Each corpus log (``fixtures/vllm/corpus/``, ``fixtures/sglang/corpus/``, ``engine_logs/``) is listed with
the codes it must give and a one-line judgement. A new corpus log fails ``test_every_corpus_log_is_judged``
until someone reads its findings and adds it here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import logscope
from tests.conftest import FIXTURES, ROOT

JUDGED: dict[str, list[str]] = {
    # -- vLLM 0.32 CPU runs (shared/corpus/generated) -------------------------------------------------
    # plain load, 64x concurrency for 10 requests, fast tokenizer; the SIGINT EngineDeadError is benign
    "vllm/corpus/gen-a1_plain_c10.log": [],
    # decode plateau, same set-up; shutdown traceback after [shutdown] is not a crash
    "vllm/corpus/gen-a2_decode_steady_c10.log": [],
    # ngram spec decode accepting 4.5-5.3 tokens per step: it pays off, no SD01
    "vllm/corpus/gen-b1_ngram_spec_greedy_repetitive.log": [],
    # spec decode configured but nothing drafted: no acceptance lines, so no verdict (not an all-clear)
    "vllm/corpus/gen-b2_ngram_spec_random_sampled.log": [],
    # right: 6,144-token pool = 1.50 full-length requests against 24 concurrent, 20 waiting at 85-94 % KV
    "vllm/corpus/gen-c1_kv_tight_waiting.log": ["KV03"],
    # right: max-model-len 32768 vs 6,016 tokens of KV, EngineCore failed to start with that ValueError
    "vllm/corpus/gen-c2_startup_fail_maxlen_vs_kv.log": ["EN02", "KV02"],
    # right: 1.50x against 24 requests, 13 waiting at 97.9 % KV; preemptions happened but 0.32 prints no field
    "vllm/corpus/gen-c5_kv_tight_preempt_burst.log": ["KV03"],
    # short context, plenty of KV: nothing to report
    "vllm/corpus/gen-d1_ctx512.log": [],
    # right: 'Using a slow tokenizer' from API server and EngineCore; fp8 KV without a 1.0-scale warning is not QT01
    "vllm/corpus/gen-e1_slow_tokenizer_fp8kv.log": ["TK01"],
    # -- vLLM variants (formats from public issues, values re-drawn) ----------------------------------------
    # right: KV 99.4-100 % with 467-485 requests pending, five windows in a row
    "vllm/corpus/v0-042-h800-kv-cache-full-pending-queue.log": ["KV05"],
    # right: three uvicorn 404s (GET /, GET and POST /generate: a client asking for an endpoint vLLM lacks)
    "vllm/corpus/v0-050post1-uvicorn-404-interleaved-stats.log": ["EN03"],
    # slow (0.4 tok/s) but no line says why: no rule may guess
    "vllm/corpus/v0-bracketed-metrics481-slow-0.4tps.log": [],
    # right: the slow-tokenizer warning, cut mid-line, still names the slow tokenizer
    "vllm/corpus/v0-gptq-fork-config-line-slow-tokenizer-warning-cut.log": ["TK01"],
    # one stats line among other loggers: nothing to report
    "vllm/corpus/v0-kserve-wrapper-mixed-logger-formats.log": [],
    # right: 'max seq len (34974) is larger than ... KV cache (28520)' and 0.57x: one request cannot fit
    "vllm/corpus/v0-memory-profiling-gpu-blocks-max-concurrency-3090.log": ["KV02"],
    # idle single-GPU decode: nothing to report
    "vllm/corpus/v0-metrics449-single-gpu-idle-decode.log": [],
    # stats lines only: nothing to report
    "vllm/corpus/v0-ray-asyncllmengine-collapsed-one-line.log": [],
    # right: custom all-reduce off across nodes, 1 line + 34 Ray-deduplicated copies = 35
    "vllm/corpus/v0-ray-multinode-405b-repeated-across-cluster.log": ["AR01"],
    # KV usage rising 86 -> 91 % with nobody waiting: nothing to report
    "vllm/corpus/v0-tenstorrent-fork-debug-heartbeat-kv-rising.log": [],
    # loading and block counts only: nothing to report
    "vllm/corpus/v0-tp8-l4-gemma2-loading-gpu-cpu-blocks-capture-notice.log": [],
    # two DP engines' stats: nothing to report
    "vllm/corpus/v1-0140-dp8-engine-000-001-mm-cache-hit.log": [],
    # right: MTP acceptance length 1.02, 99 % of drafts rejected: a net cost
    "vllm/corpus/v1-0202rc1-gemma4-mtp-near-zero-acceptance.log": ["SD01"],
    # MTP acceptance length 2.3: marginal, not a net cost
    "vllm/corpus/v1-apiserver-mtp-high-load.log": [],
    # DFlash acceptance length 2.15: marginal, not a net cost
    "vllm/corpus/v1-dflash-specdecode-per-position-docker.log": [],
    # every window prefills (no pure-decode window to compare with): starvation cannot be judged, SC02 is silent
    "vllm/corpus/v1-prefill-heavy-24k-prompt-throughput-waiting-queue.log": [],
    # hybrid model: 65,998 'tokens' but 3.11x at 104,427 printed by vLLM, so no KV02
    "vllm/corpus/v1-tp2-kimi-linear-worker-tp-prefixes-kv-size.log": [],
    # weight loading only: nothing to report
    "vllm/corpus/v1-tp8-3090-worker-tp-model-loading-gib-seconds-mtp-mamba.log": [],
    # -- SGLang 0.5.23 CPU runs (shared/corpus/generated) ---------------------------------------------------
    # plain load: nothing to report
    "sglang/corpus/gen-a1_plain_c10.log": [],
    # right: Scheduler hit an exception before ready, ModuleNotFoundError sgl_kernel
    "sglang/corpus/gen-b1_ngram_spec_startup_fail.log": ["EN02"],
    # right: 22 queued behind 2 running for minutes at <= 67 % token usage: admission reserves output room in a
    # 6,144-token pool, so the pool set the concurrency (KV06); no retraction
    "sglang/corpus/gen-c1_kv_tight_queue.log": ["KV06"],
    # short context: nothing to report
    "sglang/corpus/gen-d1_ctx512.log": [],
    # right: the launcher died on an uncaught ModuleNotFoundError torchvision before anything served
    "sglang/corpus/gen-f1_startup_fail_no_torchvision.log": ["EN02"],
    # right: Scheduler hit an exception before ready, ModuleNotFoundError vllm
    "sglang/corpus/gen-f2_startup_fail_no_vllm_rotary.log": ["EN02"],
    # -- SGLang variants (formats from public issues, values re-drawn) --------------------------------------
    # partial bench block whose printed rows are consistent: nothing to report
    "sglang/corpus/bench-serving-040post2-reqeuest-typo-partial.log": [],
    # bench block with an overflowing column: consistent figures
    "sglang/corpus/bench-serving-oai-chat-vision-tokens-overflow-column.log": [],
    # right for the file as it stands: Concurrency 9.79 vs 18 x 0.95 s / 1.97 s = 8.69 (values were re-drawn)
    "sglang/corpus/bench-serving-result-block-tpot-fix-partial.log": ["BN01"],
    # 16 DP ranks' decode lines: nothing to report
    "sglang/corpus/custom-log-format-padded-dp-tag-trailing-comma-16ranks.log": [],
    # decode lines with HiSparse fields: nothing to report
    "sglang/corpus/decode-batch-comma-cuda-graph-hisparse.log": [],
    # 2024 time-only prefix decode lines: nothing to report
    "sglang/corpus/decode-batch-old-time-only-prefix-2024.log": [],
    # right: 'Decode out of memory happened' retractions, 2 events printed by 8 ranks (11 lines)
    "sglang/corpus/decode-oom-retracted-reqs-multinode-tp16.log": ["SC01"],
    # offline engine prefill lines with tqdm: nothing to report
    "sglang/corpus/engine-generate-prefill-cache-hit-rate-tqdm.log": [],
    # pipeline-parallel ranks in a k8s CRI wrapper: nothing to report
    "sglang/corpus/k8s-cri-containerd-prefix-pipeline-parallel-pp-ranks.log": [],
    # MUSA start-up with glued tqdm: nothing to report
    "sglang/corpus/musa-tp2-kv-alloc-capture-tqdm-glued.log": [],
    # NPU clipped columns: clipped lines are understood or dropped, nothing to report
    "sglang/corpus/npu-terminal-clipped-columns-tqdm-interleaved.log": [],
    # right: the NCCL process-group watchdog died on 'CUDA error: device-side assert triggered' while decoding
    "sglang/corpus/pd-decode-dp-attention-mtp-prealloc-fields-nccl-watchdog.log": ["EN01"],
    # SWA prefill lines: nothing to report
    "sglang/corpus/prefill-full-swa-usage-input-throughput-before-cuda-graph.log": [],
    # prefill lines and a benchmark marker: nothing to report
    "sglang/corpus/prefill-trailing-comma-empty-prefix-line-benchmark-marker.log": [],
    # sglang-jax TPU decode lines: nothing to report
    "sglang/corpus/sglang-jax-tpu-decode-cache-miss.log": [],
    # right: 'Initialization failed. warmup error' (403 from --api-key): SGLang kills the server, it never became ready
    "sglang/corpus/startup-no-tp-tag-api-key-warmup-failed-403.log": ["EN02"],
    # right: full-attention token usage 1.00 with 2 requests queued, three lines; then (the reporter's own
    # lines) 5 running at 10-18 tok/s for 47 s against ~200 before, `#full token` not moving: a stall (ST01)
    "sglang/corpus/swa-hybrid-full-token-usage-1.00-missing-bracket-then-user-abbreviated.log": [
        "KV05",
        "ST01",
    ],
    # TP8 start-up lines interleaved: nothing to report
    "sglang/corpus/tp8-kv-alloc-memory-pool-capture-begin-interleaved.log": [],
    # -- the README's log ----------------------------------------------------------------------------------
    # vLLM 0.32 decode plateau with a clean SIGINT stop: nothing to report
    "../engine_logs/vllm-0.32-decode-steady-c10.log": [],
}


def _corpus() -> list[str]:
    logs = sorted(FIXTURES.glob("vllm/corpus/*.log")) + sorted(FIXTURES.glob("sglang/corpus/*.log"))
    logs += sorted((ROOT / "engine_logs").glob("*.log"))
    return [
        str(Path("..") / p.relative_to(ROOT))
        if p.parent.name == "engine_logs"
        else str(p.relative_to(FIXTURES))
        for p in logs
    ]


def test_every_corpus_log_is_judged() -> None:
    missing = [p for p in _corpus() if p not in JUDGED]
    assert not missing, f"corpus logs without a judgement in tests/digest/test_corpus.py: {missing}"


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_corpus_findings(name: str) -> None:
    path = (FIXTURES / name).resolve()
    if not path.exists():
        pytest.skip(f"{name} is not in the repository")
    report = logscope.load(path).analyze()
    assert sorted(f.code for f in report.findings) == sorted(JUDGED[name])
