"""matplotlib, imported only when a plot is drawn, on the Agg canvas (no display, no pyplot state)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito: tells apart for colour-blind readers and in greyscale print
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
RED = "#D55E00"
PURPLE = "#CC79A7"
SKY = "#56B4E9"
YELLOW = "#F0E442"
BLACK = "#000000"
GREY = "#7f7f7f"
SHADE = "#009E73"

RUN_COLOURS = (BLUE, ORANGE)

STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "figure.dpi": 100,
    "svg.fonttype": "path",
    "svg.hashsalt": "logscope",
    "path.simplify": True,
    "axes.axisbelow": True,
}

PNG_DPI = 144


@contextmanager
def style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(cast(Any, STYLE)):
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas (nothing global is touched, nothing is shown)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format="png", dpi=PNG_DPI, metadata={"Software": None}, facecolor="white")
    return buf.getvalue()


def to_svg(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, facecolor="white")
    return buf.getvalue()


def time_scale(span_s: float) -> tuple[float, str]:
    """(divisor, unit) for a time axis spanning ``span_s`` seconds."""
    if span_s <= 1800:
        return 1.0, "s"
    if span_s <= 36000:
        return 60.0, "min"
    return 3600.0, "h"


def short(text: str, n: int = 60) -> str:
    """Text for a plot label: one line, at most ``n`` characters, no mathtext ($ is literal)."""
    one = " ".join(text.split())
    one = one if len(one) <= n else one[: n - 1] + "…"
    return one.replace("$", r"\$")
