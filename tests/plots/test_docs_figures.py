"""``docs/figures/`` holds one PNG of each figure, drawn from the case fixtures (``pytest --update-goldens``
redraws them; look at them before committing). PNG bytes differ between FreeType builds, so this checks
that each is there and is a real image, not that it is byte-identical."""

from __future__ import annotations

import io

from PIL import Image

from logscope.analyses.compare import compare
from logscope.plots import COMPARE_FIGURES, RUN_FIGURES, Plot, PlotInput, compare_plots, run_plots
from tests.conftest import ROOT
from tests.render.cases import CASES, loaded

FIGURES = ROOT / "docs" / "figures"
# which case run shows each figure best
SOURCE = {
    "throughput": "vllm-64k",
    "spec_acceptance": "vllm-64k",
    "cold_start": "vllm-64k",
    "prefill_chunks": "sglang-200k",
}
COMPARED = ("vllm-64k", "vllm-200k")
METRICS = ROOT / "fixtures" / "metrics"  # the metrics figures: the c6 recapture and its 1 s scrapes


def _draw() -> list[Plot]:
    out: list[Plot] = []
    for name, source in SOURCE.items():
        run, rep = loaded(source)
        out += [p for p in run_plots(PlotInput.of(run, rep), ("png",)).plots if p.name == name]
    (a, ra), (b, rb) = (loaded(n) for n in COMPARED)
    cmp = compare(a, b, labels=["vLLM 64K", "vLLM 200K"])
    out += compare_plots(
        PlotInput.of(a, ra, "vLLM 64K"), PlotInput.of(b, rb, "vLLM 200K"), cmp, ("png",)
    ).plots
    from logscope.api import load

    run = load([str(METRICS / "vllm-c6-metrics-1s.log")])
    rep = run.analyze(metrics=[str(METRICS / "vllm-c6-metrics-1s.scrapes.txt.xz")])
    out += [p for p in run_plots(PlotInput.of(run, rep), ("png",)).plots if p.name.startswith("metrics_")]
    return out


def test_docs_figures(update_goldens: bool) -> None:
    expected = {n for n, _t, _c in RUN_FIGURES} | {n for n, _t, _c in COMPARE_FIGURES}
    if update_goldens and all(n in CASES for n in (*SOURCE.values(), *COMPARED)):
        FIGURES.mkdir(parents=True, exist_ok=True)
        for p in _draw():
            assert p.png is not None
            (FIGURES / f"{p.name}.png").write_bytes(p.png)
    present = {p.stem for p in FIGURES.glob("*.png")}
    assert present == expected, f"docs/figures: missing {expected - present}, unexpected {present - expected}"
    for name in expected:
        data = (FIGURES / f"{name}.png").read_bytes()
        img = Image.open(io.BytesIO(data))
        assert img.format == "PNG" and img.size[0] >= 800, name
    readme = (FIGURES / "README.md").read_text(encoding="utf-8")
    assert all(f"({n}.png)" in readme for n in expected)
