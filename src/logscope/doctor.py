"""What this install of logscope runs with: ``logscope doctor`` and ``logscope --version``.

The sparse reader's speed depends on Hyperscan (a default dependency wherever it has wheels; polars'
Aho-Corasick stands in elsewhere), and the Dask ingest on an optional package; nothing else says whether they are there. These lines say which scanner is in
use (and why not the faster one), which optional pieces are active, and how to install the others.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata

from logscope.version import __version__

# Hyperscan's wheels (0.9.1): CPython 3.10-3.15 on Linux x86_64/aarch64 (glibc, musl), macOS x86_64/arm64 and
# Windows AMD64; pyproject.toml installs it there by default. Elsewhere it builds only against a system Hyperscan.
FAST_INSTALL = "pip install hyperscan"
DASK_INSTALL = "pip install 'logscope[dask]'"
REQUIRED = ("pyparsing", "pydantic", "polars", "matplotlib", "click", "rich", "orjson")


@dataclass(frozen=True)
class Piece:
    name: str
    active: bool
    detail: str
    install: str | None = None  # the command that adds or speeds it, when it is not active


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def scanner_piece() -> Piece:
    """Which scanner the sparse reader uses: built for real (a Hyperscan wheel can be installed and
    still fail to load or compile on this machine)."""
    from logscope.parsers.scan import HyperscanScanner

    try:
        HyperscanScanner([b"INFO"])
    except Exception as exc:  # noqa: BLE001 - not installed, no wheel for this platform, a failing build
        why = (
            "not installed"
            if isinstance(exc, ImportError)
            else f"unusable here ({type(exc).__name__}: {exc})"
        )
        return Piece("scanner", False, f"{_fallback_text()}; Hyperscan {why}", FAST_INSTALL)
    return Piece(
        "scanner",
        True,
        f"Hyperscan {_version('hyperscan') or ''} (all anchors in one pass, ~1 GB/s)".replace("  ", " "),
    )


def _fallback_text() -> str:
    from logscope.parsers.scan import scanner

    if scanner(["INFO"], prefer="auto").name == "polars":
        return "polars Aho-Corasick fallback (all anchors in one pass, ~0.2 GB/s)"
    return "pure-Python fallback (bytes.find per anchor, ~0.03-0.25 GB/s)"


def pieces() -> list[Piece]:
    out = [scanner_piece()]
    dask = _version("distributed")
    out.append(
        Piece(
            "dask",
            dask is not None,
            f"distributed {dask}: logscope ingest --dask-scheduler"
            if dask
            else "not installed: logscope ingest --dask-scheduler and ingest_dask need it",
            None if dask else DASK_INSTALL,
        )
    )
    return out


def version_line() -> str:
    """``logscope --version``: the version, Python, and the scanner in one line."""
    sc = scanner_piece()
    if sc.active:
        scan = "hyperscan"
    else:
        from logscope.parsers.scan import scanner

        scan = f"{scanner(['INFO']).name} fallback; faster: {FAST_INSTALL}"
    return f"logscope {__version__} (Python {platform.python_version()}; scanner: {scan})"


def report() -> str:
    """``logscope doctor``: the version line, each optional piece, the required packages' versions."""
    lines = [
        f"logscope {__version__} at {os.path.dirname(os.path.abspath(__file__))}",
        f"python    {platform.python_version()} ({sys.executable}; {platform.system()} {platform.machine()}, "
        f"{os.cpu_count() or '?'} CPUs for --jobs)",
    ]
    for p in pieces():
        state = "active" if p.active else "missing"
        lines.append(f"{p.name:<9} {state}: {p.detail}")
        if p.install:
            lines.append(f"{'':<9} install: {p.install}")
    lines.append("requires  " + ", ".join(f"{d} {_version(d) or 'MISSING'}" for d in REQUIRED))
    return "\n".join(lines)
