"""Grammar pieces both engines share: memory sizes with units, CUDA OOM, KV-capacity errors,
``key=value`` reprs of configurations."""

from __future__ import annotations

import ast
import re
from typing import Any

from logscope.parsers.grammar import FLOAT, Float, Grammar, Int, Leaf, Opt, Rest, Seq, Until, to_float

_UNIT = {
    "b": 1 / 2**30,
    "kib": 1 / 2**20,
    "kb": 1 / 2**20,
    "mib": 1 / 1024,
    "mb": 1 / 1024,
    "gib": 1.0,
    "gb": 1.0,
    "tib": 1024.0,
    "tb": 1024.0,
}
_MEM_SPLIT = re.compile(r"^(.*?) ?([KMGT]?i?[Bb])$")


def to_gib(text: str) -> float:
    """``4.52 GiB``, ``524.00 MiB``, ``7.97GiB``, ``2.89Gib`` -> GiB (GB as printed by vLLM is GiB)."""
    m = _MEM_SPLIT.match(text.strip())
    if m is None:
        return to_float(text)
    return round(to_float(m.group(1)) * _UNIT[m.group(2).lower()], 6)


def Gib(name: str | None) -> Leaf:  # noqa: N802 - vocabulary
    """A size in GiB as vLLM prints it: ``7.97GiB``, ``7.97 GiB``, the ``Gib`` typo, or ``GB``."""
    return Leaf(FLOAT + r" ?(?:GiB|Gib|GB)", name, to_gib)


def Mem(name: str | None) -> Leaf:  # noqa: N802
    """A size with any unit (``MiB``, ``GiB``, ``KiB``, ``bytes``) converted to GiB."""
    return Leaf(FLOAT + r" ?(?:[KMGT]i?B|bytes)", name, lambda s: to_gib(s.replace("bytes", "B")))


# -- CUDA out of memory ---------------------------------------------------------------------------
OOM_DETAIL = Grammar(
    "common.oom_detail",
    "oom",
    ("out of memory",),
    Seq(
        Until("out of memory"),
        "out of memory",
        Opt(
            Seq(
                Leaf(r"[^\n]*?(?=Tried to allocate )"),
                "Tried to allocate ",
                Mem("requested_gib"),
                Opt(
                    Seq(
                        Leaf(r"\. GPU |\s*\(GPU "),
                        Int("gpu"),
                        Seq(
                            "; ",
                            Mem("total_gib"),
                            " total capacity; ",
                            Mem(None),
                            " already allocated; ",
                            Mem("free_gib"),
                            " free",
                        )
                        | Seq(
                            " has a total capacity of ",
                            Mem("total_gib"),
                            " of which ",
                            Mem("free_gib"),
                            " is free",
                        ),
                    )
                ),
            )
        ),
        Rest(),
    ),
)


def _oom(f: dict[str, Any]) -> dict[str, Any]:
    msg: str = f["message"].strip()
    detail = OOM_DETAIL.match(msg) or {}
    return {"message": msg[:2000], **detail}


def _line_with(phrases: str) -> tuple[Leaf, Leaf]:
    """(skip, line): skip whole lines up to the first one holding ``phrases`` (a regex alternation)
    that is not a quoted source line of a traceback (``raise ValueError("No available memory...``)."""
    line = rf"(?![ \t]*+(?:raise\b|File \"|except\b))[^\n]*?(?:{phrases})"
    return Leaf(rf"(?:[^\n]*+\n)*?(?={line})"), Leaf(rf"{line}[^\n]*+", "message")


def oom_grammar(engine: str) -> Grammar:
    """A CUDA OOM anywhere in a record (a traceback's last line, a warning, a wrapper's message)."""
    return Grammar(
        f"{engine}.oom",
        "oom",
        ("out of memory", "OutOfMemoryError", "not enough GPU memory"),
        Seq(
            *_line_with(r"CUDA out of memory|OutOfMemoryError|Failed to load model - not enough GPU memory"),
            Rest(),
        ),
        build=_oom,
        also=True,
    )


# -- KV capacity: one full-length request does not fit -------------------------------------------
KV_CAPACITY_DETAIL = Grammar(
    "common.kv_capacity_detail",
    "kv_capacity",
    ("max seq len",),
    Seq(
        Until("max seq len ("),
        "max seq len (",
        Int("max_seq_len"),
        ")",
        Opt(
            Seq(
                " is larger than the maximum number of tokens that can be stored in KV cache (",
                Int("kv_tokens"),
                ")",
            )
        ),
        Opt(
            Seq(
                ", (",
                Float("needed_gib"),
                Leaf(r" Gi?B"),
                " KV cache is needed, which is larger than the available KV cache memory (",
                Float("available_gib"),
                Leaf(r" Gi?B"),
                ")",
            )
        ),
        Opt(
            Seq(
                Until("estimated maximum model length is "),
                "estimated maximum model length is ",
                Int("estimated_max_len"),
            )
        ),
        Rest(),
    ),
)


def _kv_capacity(f: dict[str, Any]) -> dict[str, Any]:
    msg: str = f["message"].strip()
    detail = KV_CAPACITY_DETAIL.match(msg) or {}
    return {"message": msg[:2000], **detail}


def kv_capacity_grammar(engine: str) -> Grammar:
    return Grammar(
        f"{engine}.kv_capacity",
        "kv_capacity",
        ("max seq len", "No available memory for the cache blocks"),
        Seq(*_line_with(r"max seq len \(\d|No available memory for the cache blocks"), Rest()),
        build=_kv_capacity,
        also=True,
    )


# -- configuration reprs --------------------------------------------------------------------------
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top(body: str, sep: str = ",") -> list[str]:
    """Split at top-level separators, respecting brackets and quotes."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return [p.strip() for p in parts if p.strip()]


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text


def parse_kv_repr(body: str) -> dict[str, Any]:
    """``{'a': 1, ...}``, ``Namespace(a=1, ...)``, ``a=1, b='x', c={...}`` -> dict (values literal when possible)."""
    body = body.strip().rstrip(",").strip()
    if body.startswith("{") and body.endswith("}"):
        val = _value(body)
        if isinstance(val, dict):
            return {str(k): v for k, v in val.items()}
        items = _split_top(body[1:-1])
        out: dict[str, Any] = {}
        for it in items:
            k, sep, v = it.partition(":")
            if sep:
                out[str(_value(k.strip()))] = _value(v.strip())
        return out
    m = re.match(r"^\w+\((.*)\)$", body, re.S)
    if m:
        body = m.group(1)
    out = {}
    for it in _split_top(body):
        k, sep, v = it.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][\w.]*", k.strip()):
            out[k.strip()] = _value(v.strip())
    return out


__all__ = [
    "Gib",
    "Mem",
    "OOM_DETAIL",
    "KV_CAPACITY_DETAIL",
    "oom_grammar",
    "kv_capacity_grammar",
    "parse_kv_repr",
    "to_gib",
]
_ = Rest
