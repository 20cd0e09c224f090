"""What a notebook shows of a run, a report, a comparison and a store (``_repr_html_``), and their
one-line ``repr``: short, and saying the headline numbers and the findings."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

import logscope
from logscope.render.content import num
from tests.conftest import ROOT

SHIPPED = [
    ROOT / "engine_logs/vllm-0.32-decode-steady-c10.log",
    *sorted((ROOT / "fixtures/case").glob("*.log")),
]
LIMIT = 20_000  # bytes, as the issue asks (the renderer aims at render.notebook.HTML_BUDGET)


@pytest.fixture(scope="module")
def loaded() -> dict[str, tuple[logscope.Run, object]]:
    out = {}
    for p in SHIPPED:
        run = logscope.load(str(p))
        out[p.name] = (run, run.analyze())
    return out


@pytest.mark.parametrize("name", [p.name for p in SHIPPED])
def test_run_and_report_displays_are_short_and_say_the_headlines(name: str, loaded: dict[str, tuple]) -> None:
    run, rep = loaded[name]
    text = repr(run)
    assert len(text) < 300 and "\n" not in text and name in text and str(run.engine) in text
    known = sum(n for k, n in run.counts().items() if k != "unparsed")
    assert f"{known:,} events" in text
    page = run._repr_html_()
    assert len(page.encode()) <= LIMIT and name in page and "<script" not in page
    top = max((k for k in run.counts() if k != "unparsed"), key=lambda k: run.counts()[k])
    assert f"<code>{top}</code>" in page and num(run.counts()[top]) in page

    text = repr(rep)
    assert len(text) < 400 and "\n" not in text
    page = html.unescape(rep._repr_html_())
    assert len(rep._repr_html_().encode()) <= LIMIT
    sd = rep.stable_decode
    assert sd is not None, "every shipped log has a stable decode segment"
    assert f"decode {num(sd.mean_tok_s)} tok/s mean" in text and f"{num(sd.mean_tok_s)} tok/s mean" in page
    for f in rep.findings:
        assert f.code in text and f.code in page and f.title in page


def test_reports_repr_says_no_findings_and_unknown(loaded: dict[str, tuple]) -> None:
    _run, rep = loaded["vllm-0.32-decode-steady-c10.log"]
    assert not rep.findings and "no findings" in repr(rep)
    empty = rep.model_copy(update={"stable_decode": None, "engine_version": None})
    assert "decode: not applicable" in repr(empty) and "vllm:" in repr(empty)


def test_comparison_display(loaded: dict[str, tuple]) -> None:
    a, _ = loaded["vllm-64k.log"]
    b, _ = loaded["vllm-200k.log"]
    cmp = logscope.compare(a, b)
    deg = cmp.degradation
    assert deg.ratio_mean is not None
    text = repr(cmp)
    assert (
        "\n" not in text
        and f"{num(deg.ratio_mean)}x by mean" in text
        and "vllm-64k.log vs vllm-200k.log" in text
    )
    page = cmp._repr_html_()
    assert len(page.encode()) <= LIMIT and f"{num(deg.ratio_mean)}x" in page and "vllm-200k.log" in page


def test_store_display(tmp_path: Path) -> None:
    from logscope.store import ingest

    ingest([ROOT / "fixtures/case"], tmp_path / "store")
    store = logscope.open_store(tmp_path / "store")
    text = repr(store)
    assert "runs=4" in text and "\n" not in text
    page = store._repr_html_()
    assert len(page.encode()) <= LIMIT
    for r in store.runs.collect().to_dicts():
        assert r["name"] in page and num(r["decode_mean_tok_s"]) in page
