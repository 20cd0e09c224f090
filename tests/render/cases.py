"""The runs the render and plot tests use, loaded once: the case fixtures (Kimi-K3, vLLM and SGLang at
64K and 200K), by paths relative to the repository so that reports and goldens do not depend on
where the checkout lives."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, ROOT

CASES = sorted(p.stem for p in (FIXTURES / "case").glob("*.log"))
FALLBACK = "fixtures/vllm/corpus/gen-a2_decode_steady_c10.log"
if not CASES:  # the case fixtures are written by another change; the corpus log stands in until then
    CASES = ["gen-a2_decode_steady_c10"]


def case_path(name: str) -> str:
    rel = f"fixtures/case/{name}.log"
    return rel if (ROOT / rel).exists() else FALLBACK


@contextmanager
def at_root() -> Iterator[None]:
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(old)


@cache
def loaded(name: str) -> tuple[Any, Any]:
    """(run, report with findings) of a case, paths relative to the repository."""
    import logscope

    with at_root():
        run = logscope.load(case_path(name))
        report = run.analyze()
    return run, report


# A log line of the kind a poisoned or merely unlucky log can hold: HTML, a code-block terminator,
# a Markdown link, an image, backticks, a mention, rich markup, a bidi override.
PAYLOAD = (
    "<script>window.__pwned=1</script></code></pre>[x](http://evil.example/a)"
    "![i](http://evil.example/i.png)```~~~ ``` @octocat [bold red]rich[/bold red] \u202egnp.exe"
)


def poisoned_log(tmp: Path) -> Path:
    """The vLLM 64K case log with the payload as a JIT-compiled kernel's name (it reaches the
    disturbances timeline and the JT01 finding's message and evidence) and in the file name."""
    src = ROOT / case_path("vllm-64k")
    text = src.read_text(encoding="utf-8")
    target = "_zero_kv_blocks_kernel"
    if target not in text:  # the fallback log: put the payload in a warning line of its own
        text += (
            "(Worker_TP0 pid=436) WARNING 10-18 17:19:43 [jit_monitor.py:135] Triton kernel JIT compilation "
            f"during inference: {PAYLOAD}. This causes a latency spike.\n"
        )
    else:
        text = text.replace(target, PAYLOAD)
    out = tmp / 'run "<img src=x onerror=window.__pwned=2>".log'
    out.write_text(text, encoding="utf-8")
    return out


def copy_case(tmp: Path, name: str) -> Path:
    dst = tmp / f"{name}.log"
    shutil.copy(ROOT / case_path(name), dst)
    return dst
