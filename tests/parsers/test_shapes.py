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

RAY_STACK = ("(ServeReplica:app:Deploy pid=28488) (EngineCore pid=29087) (RayWorkerProc pid=29271) (Worker pid=29271) "
             "WARNING 08-19 18:00:14 [kernel_warmup.py:258] Skipping FlashInfer autotune because it is not supported")
WRAPPED = ("07:29:02 [INFO] [inf-job] [INFERENCE LOG] (EngineCore_DP0 pid=497) INFO 10-03 07:29:02 "
           "[gpu_model_runner.py:2392] Model loading took 27.5185 GiB and 305.873276 seconds")
BULLET = ("- WARN 04-06 03:23:45 interface.py:275] Using 'pin_memory=False' as WSL is detected. "
          "This may slow down the performance.")
CUT = "DP2 TP2] Scheduler hit an exception: Traceback (most recent call last):"
BARE_V0 = (" Sequence group 863 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. "
           "This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to "
           "provide more KV cache memory. total_num_cumulative_preemption=1")
SGLANG_LEVEL = "[2026-05-01 15:16:08] WARNING server_args.py:1248: DSA with TP mode is active, dp_size=1, tp_size=8"
TMUX = ("(Worker_TP0 pid=34322) INFO 05-06 20:59:57 [default_loader.py:384] Loading weights took 24.84 seconds"
        + " " * 37 + "[386/1830]")


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
    assert ev.prefix == "(ServeReplica:app:Deploy pid=28488) (EngineCore pid=29087) (RayWorkerProc pid=29271) (Worker pid=29271)"
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
    run = _load(tmp_path, TMUX + "\n", engine="vllm")
    (ev,) = run.of_kind("unparsed") or run.events
    text = getattr(ev, "text", None) or getattr(ev, "message", "")
    assert "[386/1830]" not in text and not text.endswith(" ")
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
