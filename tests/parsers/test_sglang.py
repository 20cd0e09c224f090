"""SGLang dialect: hand counts and printed numbers on the shared corpus (copied into
fixtures/sglang/corpus), every header form, paste damage, engine detection, and the pyparsing
definition giving the same events as the compiled form on every line.

The sidecar ``contains`` counts were made by hand from the logs; they are the expected values. The
field checks read the printed number straight from the event's source line.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logscope
from logscope.events import Event
from logscope.parsers import detect, dialect
from logscope.parsers.framing import Line, read_lines
from logscope.parsers.pipeline import Parser
from logscope.parsers.sglang import SglangDialect
from tests.conftest import FIXTURES, check_golden, events_jsonl

CORPUS = FIXTURES / "sglang" / "corpus"
FORMATS = FIXTURES / "sglang" / "formats"
LOGS = sorted(CORPUS.glob("*.log"))
FORMAT_LOGS = sorted(FORMATS.glob("*.log"))
ALL_FILES = sorted([*CORPUS.glob("*.log"), *CORPUS.glob("*.txt"), *FORMAT_LOGS])

# sidecar key -> (kind, predicate), as ../shared/tools/corpus_score.py counts them
MAP = {
    "sglang_decode_batch": ("decode_batch", None),
    "sglang_prefill_batch": ("prefill_batch", None),
    "sglang_kv_cache_alloc": ("kv_cache_pool", None),
    "max_total_num_tokens": ("scheduler_limits", None),
    "retract": ("retract", None),
    "graph_capture": ("graph_capture", lambda e: not e.begin),
    "graph_capture_begin": ("graph_capture", lambda e: e.begin),
    "model_loading": ("model_load", None),
    "server_ready": ("server_ready", None),
    "oom": ("oom", None),
}

FIELDS = [
    ("decode_batch", "gen_tok_s", r"gen throughput \(token/s\): ([\d.]+)"),
    ("decode_batch", "running", r"#running-req: (\d+)"),
    ("decode_batch", "tokens", r"#(?:full )?token: (?:full=)?(\d+)"),
    ("decode_batch", "token_usage", r"(?<!swa |gpu |cpu )token usage: (?:full=)?([\d.]+)"),
    ("prefill_batch", "token_usage", r"(?<!swa |gpu |cpu )token usage: (?:full=)?([\d.]+)"),
    ("decode_batch", "queue", r"#queue-req: (\d+)"),
    ("decode_batch", "accept_len", r"accept len: ([\d.]+)"),
    ("decode_batch", "accept_rate", r"accept rate: ([\d.]+)"),
    ("prefill_batch", "new_seq", r"#new-seq: (\d+)"),
    ("prefill_batch", "new_token", r"#new-token: (\d+)"),
    ("prefill_batch", "cached_token", r"#cached-token: (\d+)"),
    ("prefill_batch", "running", r"#running-req: (\d+)"),
    ("prefill_batch", "queue", r"#queue-req: (\d+)"),
    ("prefill_batch", "input_tok_s", r"input throughput \(token/s\): ([\d.]+)"),
    ("kv_cache_pool", "tokens", r"#tokens: (\d+)"),
    ("kv_cache_pool", "k_gib", r"K size: ([\d.]+) GB"),
    ("scheduler_limits", "max_total_num_tokens", r"max_total_num_tokens=(\d+)"),
    ("scheduler_limits", "context_len", r"context_len=(\d+)"),
    ("retract", "retracted_reqs", r"#retracted_reqs: (\d+)"),
    ("graph_capture", "avail_mem_gib", r"avail mem=([\d.]+) GB"),
    ("model_load", "memory_gib", r"mem usage=([\d.]+) GB"),
]


def _run(path: Path) -> logscope.Run:
    return logscope.load(path)


def _events(texts: list[str], reference: bool = False) -> list[Event]:
    lines = [Line("t.log", i + 1, t) for i, t in enumerate(texts)]
    return list(Parser(SglangDialect(), reference=reference).events(lines))


def _one(text: str, kind: str) -> Event:
    evs = [e for e in _events([text]) if e.kind == kind]
    assert len(evs) == 1, (text, [e.kind for e in _events([text])])
    return evs[0]


# -- corpus -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_hand_counts(path: Path) -> None:
    side = json.loads(path.with_suffix(".json").read_text())
    run = _run(path)
    assert run.engine == "sglang"
    for key, want in side.get("contains", {}).items():
        if key not in MAP:
            continue
        kind, pred = MAP[key]
        got = sum(1 for e in run.events if e.kind == kind and (pred is None or pred(e)))
        assert got == want, f"{key}: {got} events, {want} counted by hand"
    # kinds the sidecar does not list were counted as absent
    for key, (kind, pred) in MAP.items():
        if key not in side.get("contains", {}) and "bench" not in path.stem:
            got = sum(1 for e in run.events if e.kind == kind and (pred is None or pred(e)))
            assert got == 0, f"{key}: {got} events where the hand count has none"


@pytest.mark.parametrize("path", [*LOGS, *FORMAT_LOGS], ids=lambda p: p.stem)
def test_printed_numbers(path: Path) -> None:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    run = logscope.load(path, engine="sglang")
    for e in run.events:
        for kind, field, rx in FIELDS:
            if e.kind != kind or getattr(e, field, None) is None:
                continue
            vals = re.findall(rx, lines[e.line - 1])
            assert vals, (e.line, field, "a value the line does not print")
            got = getattr(e, field)
            assert any(abs(got - float(v)) <= 1e-9 * max(1.0, float(v)) for v in vals), (
                e.line,
                field,
                got,
                vals,
            )


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_engine_detection(path: Path) -> None:
    assert detect(read_lines(str(path))) == "sglang"


@pytest.mark.parametrize("path", sorted((FIXTURES / "vllm" / "corpus").glob("*.log")), ids=lambda p: p.stem)
def test_vllm_logs_are_not_taken_for_sglang(path: Path) -> None:
    assert detect(read_lines(str(path))) == "vllm"


def test_specific_values() -> None:
    """Numbers read off real lines, by hand."""
    run = _run(CORPUS / "pd-decode-dp-attention-mtp-prealloc-fields-nccl-watchdog.log")
    d = run.of_kind("decode_batch")[0]
    assert (d.gen_tok_s, d.running, d.tokens, d.queue) == (191.37, 7, 67434, 0)
    assert (d.accept_len, d.accept_rate, d.token_usage, d.cuda_graph) == (2.0, 0.73, 0.28, True)
    assert d.extra == {"pre_allocated_usage": 0.09, "prealloc_req": 0, "transfer_req": 3, "retracted_req": 0}
    assert (d.process, d.dp_rank, d.tp_rank, d.time) == ("DP0 TP0", 0, 0, "2025-12-27 18:58:45")
    nccl = run.of_kind("error")[0]
    assert nccl.source == "ProcessGroupNCCL.cpp:2648" and "watchdog thread terminated" in nccl.message

    run = _run(CORPUS / "gen-a1_plain_c10.log")
    p = run.of_kind("prefill_batch")[1]
    assert (p.new_seq, p.new_token, p.cached_token, p.input_tok_s) == (1, 1121, 1, 107.38)
    assert p.cuda_graph is False and p.extra == {"pending_token": 0, "graph_device": "cpu"}
    pool = run.of_kind("kv_cache_pool")[0]
    assert (pool.pool, pool.tokens, pool.k_gib, pool.v_gib, pool.memory_gib) == ("kv", 262144, 0.5, 0.5, 1.0)
    lim = run.of_kind("scheduler_limits")[0]
    assert (lim.max_total_num_tokens, lim.chunked_prefill_size, lim.context_len) == (262144, 4096, 4096)
    assert lim.available_gpu_mem_gib is None and lim.extra == {"available_cpu_mem_gib": 20.48}
    load = run.of_kind("model_load")[0]
    assert (load.seconds, load.memory_gib, load.avail_mem_gib) == (0.03, 0.04, 21.57)
    assert run.of_kind("engine_init")[0].seconds == 1.95
    cfg = run.of_kind("config")[0]
    assert cfg.form == "server_args" and cfg.args["context_length"] == 4096 and cfg.args["tp_size"] == 1
    assert run.of_kind("server_ready")[0].time == "2026-11-30 12:41:19"

    run = _run(CORPUS / "tp8-kv-alloc-memory-pool-capture-begin-interleaved.log")
    assert [e.tp_rank for e in run.of_kind("kv_cache_pool")] == [5, 1, 3, 6]
    assert {e.tokens for e in run.of_kind("kv_cache_pool")} == {5134438}
    assert [e.avail_mem_gib for e in run.of_kind("graph_capture")] == [19.15, 18.78, 18.85]

    run = _run(CORPUS / "startup-no-tp-tag-api-key-warmup-failed-403.log")
    cap = run.of_kind("graph_capture")[0]
    assert (cap.seconds, cap.memory_gib, cap.avail_mem_gib, cap.begin) == (2.73, 0.68, 38.75, False)
    assert run.of_kind("scheduler_limits")[0].available_gpu_mem_gib == 38.75
    assert run.of_kind("error")[0].message.startswith("Initialization failed. warmup error")

    run = _run(CORPUS / "decode-oom-retracted-reqs-multinode-tp16.log")
    r = run.of_kind("retract")
    assert [e.new_token_ratio for e in r[:4]] == [0.1143, 0.1143, 0.1143, 0.1193] and not run.of_kind("oom")

    run = _run(CORPUS / "custom-log-format-padded-dp-tag-trailing-comma-16ranks.log")
    d = run.of_kind("decode_batch")[0]
    assert (d.level, d.process, d.tp_rank, d.dp_rank, d.time) == (
        "INFO",
        "DP15 TP15 EP15 pid=5129",
        15,
        15,
        "2025-10-18 15:00:18",
    )
    assert run.of_kind("decode_batch")[3].t_s == 5.0

    run = _run(CORPUS / "k8s-cri-containerd-prefix-pipeline-parallel-pp-ranks.log")
    assert [e.process for e in run.of_kind("decode_batch")] == ["PP0", "PP1", "PP2", "PP3", "PP0", "PP1"]
    assert run.events[0].time == "2026-06-01 14:01:04"  # SGLang's own stamp, not the node's

    run = _run(CORPUS / "swa-hybrid-full-token-usage-1.00-missing-bracket-then-user-abbreviated.log")
    d = run.of_kind("decode_batch")
    assert (d[0].time, d[0].tokens, d[0].token_usage, d[0].extra["swa_token_usage"]) == (
        "2026-09-03 14:21:02",
        2127901,
        1.0,
        0.11,
    )
    assert (d[3].time, d[3].t_s, d[3].queue, d[3].gen_tok_s) == ("14:21:12", 10.0, None, 11.31)

    run = _run(CORPUS / "engine-generate-prefill-cache-hit-rate-tqdm.log")
    p = run.of_kind("prefill_batch")[1]
    assert (p.time, p.extra["cache_hit_rate_pct"], p.token_usage) == ("14:53:02", 4.43, 0.09)

    run = _run(CORPUS / "sglang-jax-tpu-decode-cache-miss.log")
    assert run.of_kind("decode_batch")[0].extra == {"cache_miss": 2}


# -- paste damage -----------------------------------------------------------------------------------


def test_paste_damage_gives_a_correct_event_or_none() -> None:
    run = logscope.load(FORMATS / "9_paste-damage.log", engine="sglang")
    by_line: dict[int, list[Event]] = {}
    for e in run.events:
        by_line.setdefault(e.line, []).append(e)
    kinds = {n: [e.kind for e in evs] for n, evs in by_line.items()}
    # a float cut at the line end is not read (438.4 of 438.49): the decode line is refused
    assert kinds[1] == ["unparsed"] and by_line[1][0].candidate == "decode_batch"
    # a key cut at the end: the fields before it are kept, the cut one is named
    d = by_line[2][0]
    assert (d.gen_tok_s, d.queue, d.extra["clipped"]) == (438.49, None, "#queue-re")
    # a line spliced in its middle ("#token: 387" + "unning-req") is refused
    assert kinds[3] == ["unparsed"] and kinds[5] == ["unparsed"]
    p = by_line[4][0]
    assert (p.new_token, p.input_tok_s) == (777, None) and p.extra["clipped"].startswith("input throughput")
    assert "swa_token_usage" not in by_line[6][0].extra  # "swa token usage: 0." is not 0.0
    assert kinds[7] == ["unparsed"]
    # records written onto the end of a line (no newline) or of a tqdm bar
    assert kinds[8] == ["prefill_batch", "decode_batch"]
    assert kinds[9] == ["unparsed", "graph_capture"] and kinds[10] == ["unparsed", "model_load"]
    assert by_line[9][1].seconds == 12.34 and by_line[10][1].memory_gib == 40.46
    pool = by_line[11][0]
    assert (pool.tokens, pool.k_gib, pool.v_gib, pool.memory_gib) == (5134438, 85.01, None, None)
    lim = by_line[12][0]
    assert lim.available_gpu_mem_gib is None and lim.extra == {"clipped": "available_gpu_mem=38.7"}
    r = by_line[13][0]
    assert (r.kind, r.retracted_reqs, r.new_token_ratio) == ("retract", 2, None)


def _cut_lines() -> list[str]:
    out = []
    for path in [*LOGS, *FORMAT_LOGS]:
        shapes: set[str] = set()
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
            shape = re.sub(r"\d+", "0", text)
            if (
                shape not in shapes
                and len(shapes) < 6
                and re.search(
                    r"batch|Retract|happened|Cache is|max_total_num|Load weight end|graph end", text
                )
            ):
                shapes.add(shape)
                out.append(text)
    return out


@pytest.mark.parametrize("text", _cut_lines(), ids=lambda t: re.sub(r"\W+", "_", t[:60]))
def test_a_line_cut_anywhere_never_gives_a_wrong_number(text: str) -> None:
    """Cut at every position; every number an event still has is the one the whole line printed.

    Exceptions, by nature: an int that ends the cut line (``#queue-req: 12`` cut to ``#queue-req: 1``
    looks whole), and sums over optional parts (a Mamba pool without its cut speculative part).
    """
    kinds = {
        "prefill_batch",
        "decode_batch",
        "retract",
        "scheduler_limits",
        "kv_cache_pool",
        "model_load",
        "graph_capture",
    }
    whole = [e for e in _events([text]) if e.kind in kinds]
    if not whole:
        return
    skip = {"raw", "extra", "t_s", "time", "line", "end_line", "kind", "begin"}
    full = whole[-1].model_dump(exclude=skip)
    full_extra = getattr(whole[-1], "extra", {}) or {}
    for cut in range(len(text) - 1, 0, -1):
        part = text[:cut]
        for e in (e for e in _events([part]) if e.kind in kinds):
            for k, v in e.model_dump(exclude=skip).items():
                if v is None or v == full.get(k):
                    continue
                if isinstance(v, int) and not isinstance(v, bool) and part.rstrip().endswith(str(v)):
                    continue
                assert k == "memory_gib" and e.kind == "kv_cache_pool", (part, k, v, full.get(k))
            for k, v in (getattr(e, "extra", {}) or {}).items():
                if k == "clipped" or full_extra.get(k) == v:
                    continue
                assert isinstance(v, int) and part.rstrip().endswith(str(v)), (part, k, v, full_extra.get(k))


# -- header, envelope, glued lines, continuation lines ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "time", "process", "tp", "dp", "level", "msg"),
    [
        ("[2025-06-01 12:00:00] hello", "2025-06-01 12:00:00", None, None, None, None, "hello"),
        (
            "[2025-06-01 12:00:00.123 DP1 TP3 EP3] hello",
            "2025-06-01 12:00:00.123",
            "DP1 TP3 EP3",
            3,
            1,
            None,
            "hello",
        ),
        ("[12:00:00 TP0] hello", "12:00:00", "TP0", 0, None, None, "hello"),
        ("[2025-06-01 12:00:00 TP12 PP3] hello", "2025-06-01 12:00:00", "TP12 PP3", 12, None, None, "hello"),
        (
            "[2025-06-01 12:00:00 DP2 PP1 ATTN_CP1 MOE_DP2 TP11 EP11] x",
            "2025-06-01 12:00:00",
            "DP2 PP1 ATTN_CP1 MOE_DP2 TP11 EP11",
            11,
            2,
            None,
            "x",
        ),
        (
            "[2025-06-01 12:00:00 encode_dp_worker[3]] x",
            "2025-06-01 12:00:00",
            "encode_dp_worker[3]",
            None,
            None,
            None,
            "x",
        ),
        ("[ 2025-06-01 12:00:00 DP10 TP10] x", "2025-06-01 12:00:00", "DP10 TP10", 10, 10, None, "x"),
        ("2025-06-01 12:00:00 TP0] x", "2025-06-01 12:00:00", "TP0", 0, None, None, "x"),
        (
            "2025-10-18 15:00:18 INFO 5129 [ DP15 TP15 EP15 scheduler_metrics_mixin.py:131] x",
            "2025-10-18 15:00:18",
            "DP15 TP15 EP15 pid=5129",
            15,
            15,
            "INFO",
            "x",
        ),
        (
            "2025-10-18 15:00:18,123 WARNING 77 [scheduler.py:9] x",
            "2025-10-18 15:00:18,123",
            "pid=77",
            None,
            None,
            "WARNING",
            "x",
        ),
        (
            "[2025-06-01 12:00:40] INFO:     Started server process [1]",
            "2025-06-01 12:00:40",
            None,
            None,
            None,
            "INFO",
            "Started server process [1]",
        ),
        (
            "INFO:     Uvicorn running on http://0.0.0.0:30000",
            None,
            None,
            None,
            None,
            "INFO",
            "Uvicorn running on http://0.0.0.0:30000",
        ),
        (
            "[rank3]:[E1227 18:58:46.356042219 ProcessGroupNCCL.cpp:2648] x",
            "12-27 18:58:46.356042219",
            "rank3",
            None,
            None,
            "ERROR",
            "x",
        ),
        ("[2025-07-23 07:55:24] ", "2025-07-23 07:55:24", None, None, None, None, ""),
    ],
)
def test_header_forms(
    text: str,
    time: str | None,
    process: str | None,
    tp: int | None,
    dp: int | None,
    level: str | None,
    msg: str,
) -> None:
    d = SglangDialect()
    parsed = d.header(d.envelope(text).text)
    assert parsed is not None
    hdr, message = parsed
    assert (hdr.time, hdr.process, hdr.tp_rank, hdr.dp_rank, hdr.level, message) == (
        time,
        process,
        tp,
        dp,
        level,
        msg,
    )


def test_not_headers() -> None:
    d = SglangDialect()
    for text in (
        "INFO 10-18 17:06:21 [loggers.py:123] Avg prompt throughput: 1.0 tokens/s",
        "Processing batches: 2it [00:00,  3.10it/s]",
        "2025-08-02 03:05:16.727 3734202 kserve.trace x",
        '  File "x.py", line 1, in f',
        "[Gloo] Rank 0 is connected to 1 peer ranks",
    ):
        assert d.header(d.envelope(text).text) is None, text


def test_envelope_keeps_sglang_stamps_and_peels_collectors() -> None:
    d = SglangDialect()
    env = d.envelope("2026-06-01T16:01:04.25615995+02:00 stderr F 2025-10-18 15:00:18 INFO 1 [x.py:1] m")
    assert (env.text, env.outer_time) == (
        "2025-10-18 15:00:18 INFO 1 [x.py:1] m",
        "2026-06-01T16:01:04.25615995+02:00",
    )
    env = d.envelope("2026-06-01T16:01:04Z stdout F [2026-06-01 14:01:04 PP0] m")
    assert (env.text, env.outer_time) == ("[2026-06-01 14:01:04 PP0] m", "2026-06-01T16:01:04Z")
    assert d.envelope("2026-09-03 14:21:02 TP0] m").text == "2026-09-03 14:21:02 TP0] m"
    env = d.envelope("(SchedulerActor pid=1234, ip=10.0.0.1) [2025-10-10 10:10:16 TP0] m")
    assert (env.text, env.process) == ("[2025-10-10 10:10:16 TP0] m", "SchedulerActor pid=1234, ip=10.0.0.1")


def test_split_glued_gives_exact_slices() -> None:
    d = SglangDialect()
    line = "  0%|          [2026-01-30 18:27:12 TP0] Prefill batch, x[12:00:01 TP1] y"
    pieces = d.split_glued(line)
    assert pieces == ["  0%|          ", "[2026-01-30 18:27:12 TP0] Prefill batch, x", "[12:00:01 TP1] y"]
    assert "".join(pieces) == line
    for text in (
        "[2026-01-30 18:27:12 TP0] Capture cuda graph bs [1, 2, 4]",
        "Processing batches: 2it [00:00,  3.10it/s]",
        "[14:53:02] Prompts loaded. [12:00:00] x",
    ):
        assert d.split_glued(text) == [text]


@pytest.mark.parametrize("name", ["sglang-jax-tpu-decode-cache-miss", "gen-d1_ctx512"])
def test_windows_line_endings_and_indented_pastes(tmp_path: Path, name: str) -> None:
    """SGLang never continues a record on a prefixed line: lines with one stamp stay apart under \\r\\n."""
    src = (CORPUS / f"{name}.log").read_text(encoding="utf-8")
    want = _run(CORPUS / f"{name}.log").counts()
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(src.replace("\n", "\r\n").encode())
    assert _run(crlf).counts() == want
    indented = tmp_path / "indented.log"
    indented.write_text(
        "".join(f"    {ln}\n" if ln.startswith("[") else f"{ln}\n" for ln in src.splitlines())
    )
    assert _run(indented).counts() == want


def test_lines_behind_an_unknown_prefix() -> None:
    """A custom logging config (SGLANG_LOGGING_CONFIG_PATH) can print any prefix: batch, retraction and
    ready lines are still found; their time is what the collector layer kept, if anything."""
    evs = _events(
        [
            "2025-06-01 12:00:00,123 - sglang.srt.managers.scheduler - INFO - Decode batch. #running-req: 2, #token: 5, "
            "token usage: 0.00, gen throughput (token/s): 1.00, #queue-req: 0",
            "INFO:sglang.srt.managers.scheduler:Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, "
            "token usage: 0.00, #running-req: 0, #queue-req: 0",
            "[pod/sglang-0/sglang] KV cache pool is full. Retract requests. #retracted_reqs: 3, "
            "#new_token_ratio: 0.3000 -> 0.5123",
            "I1201 12:00:00 x.py:12] The server is fired up and ready to roll!",
            "vs self.max_total_num_tokens=1024",  # not a scheduler summary line
        ]
    )
    assert [e.kind for e in evs] == ["decode_batch", "prefill_batch", "retract", "server_ready", "unparsed"]
    assert (evs[0].time, evs[0].gen_tok_s, evs[1].new_token, evs[2].new_token_ratio) == (
        "2025-06-01 12:00:00,123",
        1.0,
        7,
        0.5123,
    )
    assert [e.model_dump() for e in evs] == [
        e.model_dump() for e in _events([e.raw for e in evs], reference=True)
    ]


def test_continuation_lines() -> None:
    evs = _events(
        [
            "[2025-10-10 10:10:10 TP0] Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Avaliable tokens: 2048",
            "self.tree_cache.evictable_size()=0",
            "",
            "/x/hf_transformers_utils.py:512: UserWarning: Using a slow tokenizer. This might cause a slowdown.",
            "  warnings.warn(",
            "[2026-02-01 10:00:00 TP0] Pyspy dump for PID 309:",
            "Process 309: sglang::scheduler_TP6",
            "",
            'Thread 309 (idle): "MainThread"',
            "[2026-02-01 10:00:01 TP0] Decode batch, #running-req: 1, #token: 5, token usage: 0.01, cuda graph: False, "
            "gen throughput (token/s): 1.00, #queue-req: 0",
            "Try to allocate 1 tokens.",
        ]
    )
    assert [(e.kind, e.line, e.end_line) for e in evs] == [
        ("error", 1, 5),
        ("warning", 6, 7),
        ("unparsed", 8, 11),
        ("decode_batch", 12, None),
        ("unparsed", 13, None),
    ]
    assert evs[0].message.splitlines()[1:3] == ["Try to allocate 148 tokens.", "Avaliable tokens: 2048"]
    assert evs[1].source == "/x/hf_transformers_utils.py:512"


def test_oom_vs_retraction() -> None:
    text = open(FORMATS / "3_retraction-oom-errors.log", encoding="utf-8").read().splitlines()
    evs = _events(text)
    ooms = [e for e in evs if e.kind == "oom"]
    assert len(ooms) == 2 and not any(e.retry for e in ooms)
    assert (ooms[0].requested_gib, ooms[0].free_gib, ooms[0].total_gib) == (1.23, 0.5, 79.1)
    assert ooms[1].message == "Exception: Capture cuda graph failed: CUDA error: out of memory"
    assert len([e for e in evs if e.kind == "retract"]) == 6
    # every OOM sits in a traceback that is also an error; KV pool exhaustion is never an OOM
    assert all(any(x.kind == "error" and x.line == o.line for x in evs) for o in ooms)
    kv_fail = next(e for e in evs if e.kind == "error" and e.message.startswith("Decode out of memory"))
    assert "Avaliable tokens: 2048" in kv_fail.message
    capture = next(e for e in evs if e.kind == "error" and e.line == ooms[0].line)
    assert capture.exception == "Exception" and any("Possible solutions" in t for t in capture.traceback)


# -- both executions --------------------------------------------------------------------------------


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_pyparsing_form_equals_compiled_form(path: Path) -> None:
    lines = list(read_lines(str(path)))
    fast = [e.model_dump() for e in Parser(dialect("sglang")).events(lines)]
    ref = [e.model_dump() for e in Parser(dialect("sglang"), reference=True).events(lines)]
    assert fast == ref


def _messages() -> list[str]:
    d = SglangDialect()
    anchors = [a for g in d.grammars for a in g.anchors]
    out = []
    for path in [*LOGS, *FORMAT_LOGS]:
        for ln in read_lines(str(path)):
            parsed = d.header(ln.text)
            msg = parsed[1] if parsed else ln.text
            if any(a in msg for a in anchors) and len(msg) < 2000:
                out.append(msg)
    return sorted(set(out))


MESSAGES = _messages()
mutated = st.builds(
    lambda m, edits: _edit(m, edits),
    st.sampled_from(MESSAGES),
    st.lists(
        st.tuples(
            st.integers(0, 400), st.integers(0, 4), st.text("0123456789.,:% -#xGB()=[]Tru\n", max_size=5)
        ),
        max_size=3,
    ),
)


def _edit(m: str, edits: list[tuple[int, int, str]]) -> str:
    for pos, drop, junk in edits:
        pos = min(pos, len(m))
        m = m[:pos] + junk + m[pos + drop :]
    return m


@settings(
    max_examples=int(__import__("os").environ.get("LOGSCOPE_HYPOTHESIS_EXAMPLES", "600")), deadline=None
)
@given(text=mutated)
def test_pyparsing_form_equals_compiled_form_on_damaged_sglang_lines(text: str) -> None:
    for g in SglangDialect().grammars:
        if any(a in text for a in g.anchors):
            assert g.match(text) == g.match_pp(text), (g.name, text)


# -- goldens of the format reference, one file per section ------------------------------------------


@pytest.mark.parametrize("path", FORMAT_LOGS, ids=lambda p: p.stem)
def test_format_reference_goldens(path: Path, update_goldens: bool) -> None:
    """Lines quoted in (or instantiated from) the SGLang format reference; events reviewed by hand."""
    run = logscope.load(path, engine="sglang")
    check_golden(path.with_suffix(".events.jsonl"), events_jsonl(run.events), update_goldens)
