"""Parsers: framing -> envelopes -> engine header -> message grammars -> typed events.

``dialect(name)`` gives an engine's dialect; ``detect(lines)`` picks the engine from the first lines
of a log (the one whose header and anchors match most), so mixed uvicorn/tqdm/flashinfer output
does not confuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from logscope.parsers.framing import Line
from logscope.parsers.pipeline import Dialect

ENGINES = ("vllm", "sglang")


def _factories() -> dict[str, Callable[[], Dialect]]:
    from logscope.parsers.vllm import VllmDialect

    out: dict[str, Callable[[], Dialect]] = {"vllm": VllmDialect}
    try:
        from logscope.parsers.sglang import SglangDialect
    except ImportError:  # pragma: no cover - during bring-up only
        pass
    else:
        out["sglang"] = SglangDialect
    return out


class PlainDialect(Dialect):
    """No engine recognised (a client's output, a bare paste): shared grammars only."""

    name = None

    def __init__(self) -> None:
        from logscope.parsers.plain import GRAMMARS

        super().__init__(GRAMMARS)


def dialect(name: str | None) -> Dialect:
    """A fresh dialect object for ``name`` ("vllm", "sglang", or None for plain text)."""
    if name is None:
        return PlainDialect()
    factories = _factories()
    if name not in factories:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(factories)})")
    return factories[name]()


def detect(lines: Iterable[Line], limit: int = 3000) -> str | None:
    """The engine whose header and grammars best match the first ``limit`` lines, or None."""
    dialects = {name: f() for name, f in _factories().items()}
    score = dict.fromkeys(dialects, 0)
    for i, ln in enumerate(lines):
        if i >= limit:
            break
        for name, d in dialects.items():
            text = d.envelope(ln.text).text
            for piece in d.split_glued(text):
                parsed = d.find_header(piece)
                if parsed is not None:
                    hdr, msg, _ = parsed
                    # a stamp, or rank tags (a header whose start was cut): the engine's own prefix
                    score[name] += (
                        1
                        if hdr.stamp is not None or hdr.tp_rank is not None or hdr.dp_rank is not None
                        else 0
                    )
                else:
                    msg = piece.lstrip(" ")  # a bare message pasted with its indentation
                if d.markers and msg.startswith(d.markers):
                    score[name] += 3
                for g in d.candidates(msg):
                    if not g.also and g.match(msg) is not None:
                        score[name] += 3
                        break
    best = max(score, key=lambda k: score[k]) if score else None
    if best is None or score[best] == 0:
        return None
    return best


__all__ = ["ENGINES", "PlainDialect", "detect", "dialect"]
