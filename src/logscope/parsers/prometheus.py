"""Saved Prometheus ``/metrics`` scrapes: one scrape, a series in one file, or a folder of scrape files.

The text exposition format is read by ``prometheus_client``'s parser
(``text_string_to_metric_families``), not by a grammar of ours. What this module adds is the framing
of a *series* and the damage control:

- a file may hold several scrapes, each started by a line ``# scrape_time <unix seconds>`` (written
  by the capturing script: ``echo "# scrape_time $(date +%s.%N)"; curl -s .../metrics``); to the
  exposition format it is a comment, so a single scrape with no such line reads the same way
  (its time is then the file's modification time, said in ``time_source``);
- a folder is a series of files, one scrape each (or several, as above), sorted by time; a file's
  time is a unix number in its name (``metrics-1796311157.txt``) or else its modification time;
- a scrape is parsed family by family (the text is cut at each ``# HELP``/``# TYPE`` group), so one
  broken family (a truncated last line, a value that is not a number) costs that family only and
  gets a note; NaN and ±Inf sample values are dropped with a note (a rate or a quantile over them
  would be meaningless); text with no family at all is "not Prometheus exposition text".
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

# not anchored at a line start: after a scrape cut mid-line (curl --max-time) the marker follows its last bytes
SCRAPE_TIME = re.compile(r"# scrape_time\s+(\S+)[ \t]*$", re.M)
_NAME_TIME = re.compile(r"(?<!\d)(1\d{9}(?:\.\d+)?)(?!\d)")  # a unix time 2001..2286 in a file name
_FAMILY_START = re.compile(r"^# (?:HELP|TYPE) (\S+)", re.M)
_TYPE_LINE = re.compile(r"^# TYPE (\S+) (\w+)", re.M)


@dataclass(frozen=True)
class Sample:
    name: str  # the sample's own name (``..._total``, ``..._bucket``, ``..._sum``)
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass
class Family:
    name: str  # as prometheus_client names it: a counter without ``_total``
    type: str  # counter, gauge, histogram, summary, info, stateset, gaugehistogram, unknown
    samples: list[Sample] = field(default_factory=list)


@dataclass
class Scrape:
    time: float | None  # unix seconds
    source: str  # "file:line" of its first line
    families: dict[str, Family] = field(default_factory=dict)
    file_time: bool = False  # its time is its file's modification time (no scrape_time, no time in the name)


@dataclass
class MetricsInput:
    """The scrapes read from ``files``, in time order, and every problem met on the way."""

    files: list[str]
    scrapes: list[Scrape]
    notes: list[str]
    time_source: str  # how the scrapes' times were known, in words


def read_metrics(paths: list[str], families: Collection[str] | None = None) -> MetricsInput:
    """Read the scrapes of ``paths`` (files or folders). Never raises on bad content: notes instead;
    a path that does not exist raises ``UnreadableInput``. ``families``: parse the samples of these
    only (see ``parse_scrape``); None: of every family."""
    from logscope.errors import UnreadableInput

    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(
                os.path.join(p, n)
                for n in sorted(os.listdir(p))
                if os.path.isfile(os.path.join(p, n)) and not n.startswith(".")
            )
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise UnreadableInput(f"{p}: no such metrics file or folder")
    scrapes: list[Scrape] = []
    notes: list[str] = []
    sources: set[str] = set()
    for f in files:
        try:
            if f.endswith(".gz"):
                import gzip

                with gzip.open(f, "rt", encoding="utf-8", errors="replace") as gz:
                    text = gz.read()
            elif f.endswith(
                ".xz"
            ):  # a series of near-identical scrapes: xz finds the repeats gzip's 32 KiB window misses
                import lzma

                with lzma.open(f, "rt", encoding="utf-8", errors="replace") as xz:
                    text = xz.read()
            else:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
        except (OSError, EOFError, ValueError, _lzma_error()) as exc:
            notes.append(f"{f}: cannot read ({getattr(exc, 'strerror', None) or exc})")
            continue
        got, how = _file_scrapes(f, text, notes, families)
        scrapes.extend(got)
        if got:
            sources.add(how)
    timed = sorted((s for s in scrapes if s.time is not None), key=lambda s: s.time or 0.0)
    untimed = [s for s in scrapes if s.time is None]
    return MetricsInput(
        files=files,
        scrapes=timed + untimed,
        notes=notes,
        time_source="; ".join(sorted(sources)) or "no scrape read",
    )


def _lzma_error() -> type[Exception]:
    import lzma

    return lzma.LZMAError


def _file_scrapes(
    path: str, text: str, notes: list[str], families: Collection[str] | None = None
) -> tuple[list[Scrape], str]:
    marks = list(SCRAPE_TIME.finditer(text))
    pieces: list[tuple[float | None, int, str]] = []  # (time, first line, text)
    if marks:
        head = text[: marks[0].start()]
        if head.strip():
            pieces.append((None, 1, head))
        line, pos = 1, 0
        for k, m in enumerate(marks):
            end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
            line += text.count("\n", pos, m.start())  # from the previous mark only: one pass over the file
            pos = m.start()
            try:
                t: float | None = float(m.group(1))
            except ValueError:
                t = None
                notes.append(
                    f"{path}:{line}: scrape_time {m.group(1)!r} is not a number; this scrape has no time"
                )
            pieces.append((t, line, text[m.end() : end]))
        how = "the `# scrape_time` lines (unix seconds, written when each scrape was taken)"
    else:
        named = _NAME_TIME.search(os.path.basename(path))
        if named:
            t0 = float(named.group(1))
            how = "the unix time in each file's name"
        else:
            t0 = os.path.getmtime(path)
            how = "each file's modification time (no `# scrape_time` line, no time in the name)"
        pieces.append((t0, 1, text))
    out: list[Scrape] = []
    for t, line, chunk in pieces:
        s = parse_scrape(chunk, f"{path}:{line}", notes, families)
        if s is None:
            continue
        s.time = t
        s.file_time = how.startswith("each file's modification time")
        out.append(s)
    return out, how


def parse_scrape(
    text: str, source: str, notes: list[str], families: Collection[str] | None = None
) -> Scrape | None:
    """One scrape's families; None (with a note) when the text holds none. With ``families`` (names as
    prometheus_client gives them: a counter without ``_total``), a family not among them that has a
    ``# TYPE`` line is kept by name and type only, its samples not parsed (the parser costs ~0.1 ms a
    sample: a 1 s scrape series of an hour is 3,600 scrapes of ~1,500 samples)."""
    scrape = Scrape(time=None, source=source)
    if text.strip() and not text.endswith("\n"):  # exposition text ends each line, the last one too
        cut = text.rsplit("\n", 1)
        notes.append(
            f"{source}: the scrape ends mid-line (truncated?): its last line {cut[-1][:60]!r} dropped"
        )
        text = cut[0] + "\n" if len(cut) == 2 else ""
    starts = [m.start() for m in _FAMILY_START.finditer(text)]
    # cut where a new family's HELP/TYPE group begins (a TYPE right after its own HELP stays with it)
    cuts: list[int] = []
    last_name = None
    for m in _FAMILY_START.finditer(text):
        if m.group(1) != last_name:
            cuts.append(m.start())
        last_name = m.group(1)
    if not starts:
        cuts = [0]
    elif text[: cuts[0]].strip():
        cuts.insert(0, 0)
    bad = 0
    nonfinite: list[str] = []
    for k, c in enumerate(cuts):
        block = text[c : cuts[k + 1] if k + 1 < len(cuts) else len(text)]
        if not block.strip():
            continue
        if families is not None:
            typed = _TYPE_LINE.search(block)
            if typed is not None:
                name, kind = typed.group(1), typed.group(2)
                if kind == "counter" and name.endswith("_total"):
                    name = name[: -len("_total")]
                if name not in families:
                    scrape.families.setdefault(name, Family(name, kind))
                    continue
        try:
            fams = list(text_string_to_metric_families(block))
        except (ValueError, IndexError, TypeError, KeyError) as exc:
            lines = block.rstrip("\n").splitlines()
            first = lines[0][:80]
            try:  # a scrape cut mid-line (curl's --max-time, a full disk): the family without its last line
                fams = (
                    list(text_string_to_metric_families("\n".join(lines[:-1]) + "\n"))
                    if len(lines) > 1
                    else []
                )
            except (ValueError, IndexError, TypeError, KeyError):
                fams = []
            if not fams:
                bad += 1
                notes.append(f"{source}: family at {first!r} not read ({_why(exc)})")
                continue
            notes.append(
                f"{source}: family at {first!r}: its last line {lines[-1][:60]!r} is cut or malformed "
                f"({_why(exc)}); read without it"
            )
        for fam in fams:
            samples: list[Sample] = []
            for s in fam.samples:
                if not math.isfinite(s.value):
                    nonfinite.append(s.name)
                    continue
                samples.append(Sample(s.name, tuple(sorted(s.labels.items())), float(s.value)))
            got = scrape.families.get(fam.name)
            if got is None:
                scrape.families[fam.name] = Family(fam.name, fam.type, samples)
            else:
                got.samples.extend(samples)
    if nonfinite:
        names = sorted(set(nonfinite))
        notes.append(
            f"{source}: {len(nonfinite)} NaN/Inf sample value(s) dropped ({', '.join(names[:5])}"
            f"{' …' if len(names) > 5 else ''})"
        )
    guessed = _type_untyped(scrape)
    if guessed:
        notes.append(
            f"{source}: {guessed} untyped famil{'y' if guessed == 1 else 'ies'} (no `# TYPE` line: a grep "
            "of /metrics?) typed by name: `_total` a counter, `_bucket`/`_sum`/`_count` a histogram"
        )
    if not scrape.families:
        if not bad:
            notes.append(f"{source}: not Prometheus exposition text (no metric family read); skipped")
        else:
            notes.append(f"{source}: no family could be read; scrape skipped")
        return None
    return scrape


def _type_untyped(scrape: Scrape) -> int:
    """Give untyped families (``unknown``: the lines had no ``# TYPE``) the type their names say."""
    untyped = [f for f in scrape.families.values() if f.type == "unknown"]
    bucketed = {f.name[: -len("_bucket")] for f in untyped if f.name.endswith("_bucket")}
    moved = 0
    for fam in untyped:
        base, kind = None, None
        if fam.name.endswith("_total"):
            base, kind = fam.name[: -len("_total")], "counter"
        for suffix in ("_bucket", "_sum", "_count"):
            if fam.name.endswith(suffix) and fam.name[: -len(suffix)] in bucketed:
                base, kind = fam.name[: -len(suffix)], "histogram"
        if base is None or kind is None:
            continue
        del scrape.families[fam.name]
        target = scrape.families.get(base)
        if target is None or target.type != kind:
            target = scrape.families[base] = Family(base, kind)
            moved += 1
        target.samples.extend(fam.samples)
    return moved


def _why(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:120]
