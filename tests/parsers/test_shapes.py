"""Logs as users really paste and collect them (issue #17): each shape on its real line.

The lines are quoted from users' public reports (the issue) and from the format notes
(``/work/shared/formats``); the traceback is a slice of a real vLLM 0.32 run (fixtures/shapes)."""

from __future__ import annotations

from pathlib import Path

import logscope
from logscope.parsers import detect, dialect
from logscope.parsers.framing import read_lines
from tests.conftest import FIXTURES

SHAPES = FIXTURES / "shapes"

RAY_STACK = (
    "(ServeReplica:app:Deploy pid=28488) (EngineCore pid=29087) (RayWorkerProc pid=29271) (Worker pid=29271) "
    "WARNING 08-19 18:00:14 [kernel_warmup.py:258] Skipping FlashInfer autotune because it is not supported"
)
WRAPPED = (
    "07:29:02 [INFO] [inf-job] [INFERENCE LOG] (EngineCore_DP0 pid=497) INFO 10-03 07:29:02 "
    "[gpu_model_runner.py:2392] Model loading took 27.5185 GiB and 305.873276 seconds"
)
BULLET = (
    "- WARN 04-06 03:23:45 interface.py:275] Using 'pin_memory=False' as WSL is detected. "
    "This may slow down the performance."
)
CUT = "DP2 TP2] Scheduler hit an exception: Traceback (most recent call last):"
BARE_V0 = (
    " Sequence group 863 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. "
    "This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to "
    "provide more KV cache memory. total_num_cumulative_preemption=1"
)
SGLANG_LEVEL = (
    "[2026-05-01 15:16:08] WARNING server_args.py:1248: DSA with TP mode is active, dp_size=1, tp_size=8"
)
TMUX = (
    "(Worker_TP0 pid=34322) INFO 05-06 20:59:57 [default_loader.py:384] Loading weights took 24.84 seconds"
    + " " * 37
    + "[386/1830]"
)


def _load(tmp_path: Path, text: str, name: str = "x.log", engine: str | None = "auto") -> logscope.Run:
    p = tmp_path / name
    p.write_text(text)
    return logscope.load(p, engine=engine)


def test_a_stack_of_ray_process_prefixes(tmp_path: Path) -> None:
    run = _load(tmp_path, RAY_STACK + "\n")
    assert run.engine == "vllm"
    (ev,) = run.events  # one record: the prefixes are no record of their own
    assert ev.kind == "warning" and ev.level == "WARNING" and ev.source == "kernel_warmup.py:258"
    assert ev.message.startswith("Skipping FlashInfer autotune")
    assert ev.process == "Worker pid=29271"  # the innermost tag: the process that printed the line
    assert (
        ev.prefix
        == "(ServeReplica:app:Deploy pid=28488) (EngineCore pid=29087) (RayWorkerProc pid=29271) (Worker pid=29271)"
    )
    assert ev.time == "08-19 18:00:14"


def test_an_unknown_wrapper_before_the_header(tmp_path: Path) -> None:
    run = _load(tmp_path, WRAPPED + "\n")
    assert run.engine == "vllm"
    (ev,) = run.events
    assert ev.kind == "model_load" and ev.memory_gib == 27.5185 and ev.seconds == 305.873276
    assert ev.process == "EngineCore_DP0 pid=497" and ev.dp_rank == 0
    assert ev.prefix == "07:29:02 [INFO] [inf-job] [INFERENCE LOG] (EngineCore_DP0 pid=497)"


def test_a_markdown_bullet_with_the_level_word_warn(tmp_path: Path) -> None:
    run = _load(tmp_path, BULLET + "\n")
    assert run.engine == "vllm"
    (ev,) = run.events
    assert ev.kind == "warning" and ev.level == "WARNING" and ev.source == "interface.py:275"
    assert ev.message == "Using 'pin_memory=False' as WSL is detected. This may slow down the performance."
    assert ev.prefix == "-"


def test_a_line_whose_prefix_was_cut(tmp_path: Path) -> None:
    run = _load(tmp_path, CUT + "\n")
    assert run.engine == "sglang"
    (ev,) = run.events
    assert ev.kind == "error" and ev.process == "DP2 TP2" and ev.tp_rank == 2 and ev.dp_rank == 2
    assert ev.message == "Scheduler hit an exception:"


def test_a_one_line_file_of_a_bare_v0_message_with_a_leading_space(tmp_path: Path) -> None:
    run = _load(tmp_path, BARE_V0 + "\n")
    assert run.engine == "vllm"
    (ev,) = run.events
    assert ev.kind == "preemption" and ev.request_id == "863" and ev.mode == "RECOMPUTE" and ev.count == 1


def test_sglang_main_process_format_with_level_and_source(tmp_path: Path) -> None:
    run = _load(tmp_path, SGLANG_LEVEL + "\n")
    assert run.engine == "sglang"
    (ev,) = run.events
    assert ev.kind == "warning" and ev.level == "WARNING" and ev.source == "server_args.py:1248"
    assert ev.message == "DSA with TP mode is active, dp_size=1, tp_size=8"
    assert ev.time == "2026-05-01 15:16:08"


def test_tmux_padding_and_scroll_marker_are_not_the_record(tmp_path: Path) -> None:
    run = _load(tmp_path, TMUX + "\n")
    (ev,) = run.events
    assert ev.kind == "startup_step" and ev.step == "weights_loaded" and ev.seconds == 24.84
    assert ev.raw == TMUX  # the evidence stays as printed


def _errors(run: logscope.Run) -> list[logscope.events.Event]:
    return run.of_kind("error")


def test_a_prefixed_traceback_is_one_record_with_or_without_cr(tmp_path: Path) -> None:
    crlf = (SHAPES / "vllm-0.32-traceback-crlf.log").read_bytes()
    assert crlf.count(b"\r\n") == 23
    for data in (crlf, crlf.replace(b"\r\n", b"\n")):
        p = tmp_path / "tb.log"
        p.write_bytes(data)
        run = logscope.load(p)
        errs = _errors(run)
        # "EngineCore failed to start." + its traceback (lines 1-24), then the executor's line 25
        assert [(e.line, e.end_line) for e in errs] == [(1, 24), (25, None)]
        assert errs[0].exception == "ValueError" and errs[0].message == "EngineCore failed to start."
        assert len(errs[0].traceback) == 23
        assert len(run.of_kind("kv_capacity")) == 1


def test_detect_reads_wrapped_lines() -> None:
    lines = list(read_lines(str(SHAPES / "vllm-0.32-traceback-crlf.log")))
    assert detect(lines) == "vllm"
    d = dialect("vllm")
    found = d.find_header(WRAPPED)
    assert found is not None and found[2] == WRAPPED.index("INFO 10-03")
    assert d.find_header("some text that quotes INFO 10-03 07:29:02 [a.py:1] inside it") is None


def _fields(ev: logscope.events.Event) -> dict[str, object]:
    skip = set(logscope.events.Event.model_fields)
    return {k: v for k, v in ev.model_dump().items() if k not in skip and v is not None}


def test_vllm_start_up_lines_become_events() -> None:
    run = logscope.load(SHAPES / "vllm-startup-lines.log")
    assert run.engine == "vllm"
    got = [(e.line, e.kind, _fields(e)) for e in run.events]
    assert got == [
        (1, "server_start", {"detail": "http://0.0.0.0:8000"}),
        (2, "startup_step", {"step": "weights_loaded", "seconds": 24.84}),
        (
            3,
            "startup_step",
            {"step": "cuda_graph_memory_profile", "detail": "PIECEWISE=2 (largest=8), FULL=2 (largest=8)"},
        ),
        (4, "startup_step", {"step": "cuda_graph_addresses", "count": 13685}),
        (5, "server_start", {"detail": "http://0.0.0.0:8000"}),
        (6, "http_access", {"client": "127.0.0.1:55504", "method": "GET", "path": "/", "status": 404}),
    ]


def test_sglang_start_up_lines_become_events() -> None:
    run = logscope.load(SHAPES / "sglang-startup-lines.log")
    assert run.engine == "sglang"
    got = [(e.line, e.kind, _fields(e)) for e in run.events]
    assert got == [
        (1, "startup_step", {"step": "load_weight_begin", "avail_mem_gib": 20.21}),
        (2, "model_load", {"avail_mem_gib": 63.72}),
        (3, "startup_step", {"step": "kv_cache_dtype", "detail": "torch.bfloat16"}),
        (4, "kv_cache_pool", {"pool": "kv", "memory_gib": 54.26, "k_gib": 27.13, "v_gib": 27.13}),
        (5, "startup_step", {"step": "memory_pool_end", "avail_mem_gib": 8.34}),
        (6, "startup_step", {"step": "cuda_graph_batch_sizes", "count": 5, "detail": "[1, 2, 3, 8, 10]"}),
        (7, "startup_step", {"step": "cuda_graph_addresses", "count": 0}),
        (8, "startup_step", {"step": "http_startup_complete"}),
        (9, "server_start", {"detail": "http://127.0.0.1:3496"}),
        (
            10,
            "http_access",
            {"client": "172.16.19.148:48276", "method": "POST", "path": "/v1/completions", "status": 200},
        ),
    ]


def test_old_sglang_traceback_header_carries_its_message() -> None:
    run = logscope.load(SHAPES / "sglang-0.2-modeltpserver-traceback.log")
    assert run.engine == "sglang"
    (ev,) = run.events
    assert (
        ev.kind == "error"
        and ev.message == "Exception in ModelTpServer:"
        and ev.exception == "AssertionError"
    )
    assert (ev.line, ev.end_line) == (1, 8)


CAPTURE = FIXTURES / "vllm" / "captures" / "vllm-logreq-errors.log"


def _grep_c(path: Path, needle: str) -> int:
    return sum(needle in line for line in path.read_text(encoding="utf-8").splitlines())


def test_request_and_access_events_match_the_lines_of_a_real_run() -> None:
    run = logscope.load(CAPTURE)
    reqs = run.of_kind("request")
    access = run.of_kind("http_access")
    by_phase = {
        p: [e for e in reqs if e.phase == p] for p in ("received", "added", "aborted", "finished", "error")
    }
    assert len(by_phase["received"]) == _grep_c(CAPTURE, "] Received request ") == 30
    assert len(by_phase["added"]) == _grep_c(CAPTURE, "] Added request ") == 29
    assert (
        len(by_phase["aborted"])
        == _grep_c(CAPTURE, "] Aborted request(s) ") + _grep_c(CAPTURE, " aborted.")
        == 8
    )
    assert not by_phase["finished"] and not by_phase["error"]
    assert len(access) == _grep_c(CAPTURE, 'HTTP/1.1" ') == 39
    assert sorted(e.status for e in access if e.status != 200) == [400, 400, 400, 404, 404]
    first = by_phase["aborted"][0]
    assert first.request_id == "cmpl-9c44fcd1f99e5825-0-8288f04f" and first.process == "APIServer pid=13548"
    d = run.analyze().disturbances
    assert d is not None
    assert (d.http_errors, d.http_errors_by_status, d.aborts, d.request_errors) == (
        5,
        {"400": 3, "404": 2},
        4,
        0,
    )


def test_unknown_is_not_zero_without_request_lines() -> None:
    d = logscope.load(SHAPES / "vllm-0.32-traceback-crlf.log").analyze().disturbances
    assert d is not None and d.http_errors is None and d.aborts is None


def test_detect_on_access_lines_alone_and_mixed(tmp_path: Path) -> None:
    access = [ln for ln in CAPTURE.read_text(encoding="utf-8").splitlines() if 'HTTP/1.1" ' in ln]
    p = tmp_path / "access.log"
    p.write_text("\n".join(access) + "\n")
    run = logscope.load(p)
    assert run.engine == "vllm" and len(run.of_kind("http_access")) == 39
    one = tmp_path / "one.log"
    one.write_text(access[0] + "\n")
    assert logscope.load(one).engine is not None
    mixed = tmp_path / "mixed.log"
    mixed.write_text("\n".join([RAY_STACK, access[0], BULLET, WRAPPED]) + "\n")
    run = logscope.load(mixed)
    assert run.engine == "vllm" and [e.kind for e in run.events] == [
        "warning",
        "http_access",
        "warning",
        "model_load",
    ]
    sg = tmp_path / "sglang-access.log"
    sg.write_text(
        '[2025-08-02 19:24:20] INFO:     172.16.19.148:48276 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    assert logscope.load(sg).engine == "sglang"


def test_sglang_request_logging_lines() -> None:
    from logscope.parsers.requests import SGLANG_REQUEST

    # the 0.4 form (format notes 9) and a Finish line whose meta_info says the request was aborted
    recv = "Receive: obj=GenerateReqInput(text='Explain this', sampling_params={'max_new_tokens': 8}, rid='b1d3e0a5', stream=False)"
    fin = (
        "Finish: obj=GenerateReqInput(rid='b1d3e0a5'), out={'text': ' x', 'meta_info': {'id': 'b1d3e0a5', "
        "'finish_reason': {'type': 'abort', 'message': 'Abort before prefill'}, 'prompt_tokens': 320, "
        "'completion_tokens': 220, 'cached_tokens': 80, 'e2e_latency': 8.512}}"
    )
    for reference in (False, True):
        assert SGLANG_REQUEST.fields(recv, reference=reference) == {
            "phase": "received",
            "request_id": "b1d3e0a5",
        }
        assert SGLANG_REQUEST.fields(fin, reference=reference) == {
            "phase": "aborted",
            "request_id": "b1d3e0a5",
            "prompt_tokens": 320,
            "output_tokens": 220,
            "e2e_s": 8.512,
            "reason": "Abort before prefill",
        }


def test_prefixed_tracebacks_of_two_processes_interleaved_stay_whole() -> None:
    path = SHAPES / "vllm-0.32-two-tracebacks-interleaved.log"
    for keep_unparsed in (True, False):  # the careful read and the sparse one
        errs = logscope.load(path, keep_unparsed=keep_unparsed).of_kind("error")
        got = [(e.line, e.end_line, e.process, e.exception, e.message, len(e.traceback)) for e in errs]
        assert got == [
            (1, 32, "EngineCore pid=12456", "ValueError", "EngineCore failed to start.", 23),
            (
                3,
                24,
                "APIServer pid=11762",
                "vllm.v1.engine.exceptions.EngineDeadError",
                "AsyncLLM output_handler failed.",
                7,
            ),
        ]
        assert errs[0].traceback[-1].startswith("ValueError: To serve at least one request")


def test_sglang_json_request_records(tmp_path: Path) -> None:
    """``--log-requests --log-requests-format json`` (SGLang 0.5.23, formats/structured.md): one JSON object
    behind the text prefix; the reference's ``<32 hex>`` and elided ``obj``/``out`` filled in with its keys."""
    from logscope.parsers.requests import SGLANG_REQUEST

    rid = "5f2c8e0d9b7a4c1e8f3a6b2d4c9e7f10"
    recv = (
        f'{{"timestamp": "2026-12-03T14:26:02.235727", "event": "request.received", "rid": "{rid}", '
        f'"obj": {{"text": "Hello", "sampling_params": {{"max_new_tokens": 64}}, "rid": "{rid}", "lora_path": null}}}}'
    )
    fin = (
        f'{{"timestamp": "2026-12-03T14:26:05.901211", "event": "request.finished", "rid": "{rid}", '
        f'"out": {{"text": " world", "output_ids": [1, 2], "meta_info": {{"id": "{rid}", "finish_reason": '
        '{"type": "length", "length": 64}, "prompt_tokens": 6, "completion_tokens": 64, "cached_tokens": 0, '
        '"e2e_latency": 3.6655}}}'
    )
    aborted = fin.replace(
        '{"type": "length", "length": 64}', '{"type": "abort", "message": "Abort before prefill"}'
    )
    for reference in (False, True):
        assert SGLANG_REQUEST.fields(recv, reference=reference) == {"phase": "received", "request_id": rid}
        assert SGLANG_REQUEST.fields(fin, reference=reference) == {
            "phase": "finished",
            "request_id": rid,
            "prompt_tokens": 6,
            "output_tokens": 64,
            "e2e_s": 3.6655,
        }
        assert SGLANG_REQUEST.fields(aborted, reference=reference)["phase"] == "aborted"
        assert (
            SGLANG_REQUEST.fields(fin[:-40], reference=reference) is None
        )  # a clipped record stays unparsed
    log = tmp_path / "sglang-json-requests.log"
    log.write_text(
        f"[2026-12-03 14:26:02] {recv}\n[2026-12-03 14:26:05] {fin}\n[2026-12-03 14:26:06] {fin[:-40]}\n"
    )
    for keep_unparsed in (True, False):  # careful and sparse reads
        run = logscope.load(log, keep_unparsed=keep_unparsed)
        assert run.engine == "sglang"
        got = [(e.line, e.phase, e.request_id, e.output_tokens) for e in run.of_kind("request")]
        assert got == [(1, "received", rid, None), (2, "finished", rid, 64)]
    assert [e.line for e in logscope.load(log).of_kind("unparsed")] == [3]
