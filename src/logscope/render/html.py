"""One self-contained HTML file: inline CSS, figures embedded as data URIs, no script, no network.

Everything from the log is HTML-escaped. A Content-Security-Policy ``<meta>`` forbids scripts and
every remote load (``default-src 'none'``), allows images only as ``data:`` URIs and the one
``<style>`` element only by its hash, so that even a mistake in escaping could not run code or call
out. The page is meant for a laptop screen and for print (``@media print``).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from typing import Any, Literal

from logscope.analyses.report import Report
from logscope.render.content import report_doc, title_of
from logscope.render.doc import Block, Code, FigureRef, Finding, Heading, Inline, Para, Table, clean
from logscope.version import __version__

ImageFormat = Literal["svg", "png"]

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 1120px; padding: 24px 28px 48px; color: var(--ink); background: #fff;
  font: 15px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
h1 { font-size: 1.6em; margin: 0 0 .3em; }
h2 { font-size: 1.3em; margin: 1.8em 0 .6em; padding-bottom: .25em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
p { margin: .5em 0; }
code { font: .86em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  background: var(--soft); padding: .1em .3em; border-radius: 4px; overflow-wrap: break-word; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: .6em 0; }
pre code { background: none; padding: 0; font-size: .8em; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: .88em; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv td:first-child { font-weight: 600; white-space: nowrap; width: 1%; }
table.kv thead { display: none; }
.meta { color: var(--muted); }
.note { color: var(--muted); border-left: 3px solid var(--line); padding-left: 10px; }
.warn { border-left: 3px solid #bf8700; background: #fff8c5; padding: 6px 10px; }
.na { color: var(--muted); font-style: italic; }
.method { font-size: .92em; }
.finding { border: 1px solid var(--line); border-left: 5px solid #8c959f; border-radius: 6px;
  padding: 4px 14px 8px; margin: .8em 0; }
.finding.sev-error, .finding.sev-critical { border-left-color: #cf222e; }
.finding.sev-warning, .finding.sev-warn { border-left-color: #bf8700; }
.finding.sev-info { border-left-color: #0969da; }
.sev { display: inline-block; font-size: .75em; font-weight: 700; text-transform: uppercase; letter-spacing: .04em;
  padding: 1px 7px; border-radius: 10px; background: #8c959f; color: #fff; vertical-align: 2px; }
.sev-error .sev, .sev-critical .sev { background: #cf222e; }
.sev-warning .sev, .sev-warn .sev { background: #9a6700; }
.sev-info .sev { background: #0969da; }
figure { margin: 1em 0 1.4em; }
figure img { display: block; width: 100%; max-width: 1000px; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: .86em; margin-top: .35em; }
nav.toc { font-size: .9em; border: 1px solid var(--line); border-radius: 6px; padding: 6px 14px; margin: 1em 0; }
nav.toc ul { margin: 0; padding: 0; list-style: none; display: flex; flex-wrap: wrap; gap: 4px 18px; }
nav.toc a, a { color: var(--accent); text-decoration: none; }
footer { margin-top: 3em; color: var(--muted); font-size: .82em; border-top: 1px solid var(--line); padding-top: .6em; }
@page { margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5pt; }
  nav.toc { display: none; }
  h2 { break-after: avoid; }
  figure, .finding, tr, pre { break-inside: avoid; }
  table { font-size: 8.5pt; }
  a { color: inherit; }
}
""".strip()


def _csp(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def _inline(spans: Inline) -> str:
    out = []
    for sp in spans:
        if sp.style == "code":
            if sp.text:
                out.append(f"<code>{esc(clean(sp.text))}</code>")
        elif sp.style == "bold":
            out.append(f"<strong>{esc(clean(sp.text))}</strong>")
        else:
            out.append(esc(clean(sp.text)))
    return "".join(out)


def _table(tb: Table) -> str:
    n = len(tb.header)

    def cls(i: int) -> str:
        return ' class="num"' if i < len(tb.numeric) and tb.numeric[i] else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(tb.header))
    rows = []
    for row in tb.rows:
        cells = "".join(f"<td{cls(i)}>{_inline(cell)}</td>" for i, cell in enumerate(row[:n]))
        rows.append(f"<tr>{cells}</tr>")
    kind = ' class="kv"' if tb.key_value else ""
    return f"<table{kind}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _figure(plot: Any, fmt: ImageFormat) -> str:
    if (plot.svg if fmt == "svg" else plot.png) is None:  # the other format is what was drawn
        fmt = "png" if fmt == "svg" else "svg"
    data = plot.svg if fmt == "svg" else plot.png
    if data is None:
        return ""
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return (
        f'<figure id="fig-{esc(plot.name)}"><img src="{uri}" alt="{esc(plot.title)}: {esc(plot.caption)}">'
        f"<figcaption><strong>{esc(plot.title)}.</strong> {esc(plot.caption)}</figcaption></figure>"
    )


def _block(bl: Block, plots: dict[str, Any], fmt: ImageFormat) -> str:
    if isinstance(bl, Heading):
        ident = f' id="{esc(bl.anchor)}"' if bl.anchor else ""
        return f"<h{bl.level}{ident}>{_inline(bl.text)}</h{bl.level}>"
    if isinstance(bl, Para):
        cls = "" if bl.kind == "p" else f' class="{bl.kind}"'
        return f"<p{cls}>{_inline(bl.inline)}</p>"
    if isinstance(bl, Table):
        return _table(bl)
    if isinstance(bl, Code):
        return f"<pre><code>{esc(chr(10).join(clean(x) for x in bl.lines))}</code></pre>"
    if isinstance(bl, FigureRef):
        return "".join(_figure(plots[n], fmt) for n in bl.names if n in plots)
    if isinstance(bl, Finding):
        sev = esc(bl.severity)
        body = "".join(_block(p, plots, fmt) for p in bl.body)
        return (
            f'<div class="finding sev-{sev}"><h3><span class="sev">{sev}</span> <code>{esc(clean(bl.code))}</code> '
            f"{esc(clean(bl.title))}</h3>{body}</div>"
        )
    raise TypeError(f"unknown block {bl!r}")


def page(
    title: str,
    blocks: Sequence[Block],
    plots: Sequence[Any] = (),
    *,
    image_format: ImageFormat = "svg",
    footer: str = "",
) -> str:
    """A complete HTML document of ``blocks``; ``plots`` (``logscope.plots.Plot``) placed where referenced."""
    by_name = {p.name: p for p in plots}
    toc = [(bl.anchor, bl.text) for bl in blocks if isinstance(bl, Heading) and bl.level == 2 and bl.anchor]
    body: list[str] = []
    for i, bl in enumerate(blocks):
        body.append(_block(bl, by_name, image_format))
        if i == 0 and toc:
            items = "".join(f'<li><a href="#{esc(a)}">{_inline(txt)}</a></li>' for a, txt in toc)
            body.append(f'<nav class="toc" aria-label="Contents"><ul>{items}</ul></nav>')
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(_csp(CSS))}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="color-scheme" content="light">',
            f"<title>{esc(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            "<main>",
            *body,
            "</main>",
            f"<footer>{esc(footer)}</footer>" if footer else "",
            "</body>",
            "</html>",
            "",
        ]
    )


FOOTER = (
    "Generated by logscope {version}. Self-contained: no scripts, nothing loaded from the network; "
    "everything quoted from the logs is shown as text."
)


def render_html(report: Report, plots: Any = None, *, image_format: ImageFormat = "svg") -> str:
    """The report as one HTML page; ``plots`` is ``logscope.plots.Plots`` (or None for no figures)."""
    drawn = list(plots.plots) if plots is not None else []
    skipped = dict(plots.skipped) if plots is not None else None
    blocks = report_doc(report, 0, figures=[p.name for p in drawn], skipped_figures=skipped)
    return page(
        title_of(report),
        blocks,
        drawn,
        image_format=image_format,
        footer=FOOTER.format(version=report.logscope_version),
    )


def render_compare_html(comparison: Any, plots: Any = None, *, image_format: ImageFormat = "svg") -> str:
    from logscope.render.compare_doc import compare_doc

    drawn = list(plots.plots) if plots is not None else []
    blocks = compare_doc(comparison, 0, figures=tuple(p.name for p in drawn))
    title = f"logscope comparison: {comparison.base.label} vs {comparison.other.label}"
    return page(title, blocks, drawn, image_format=image_format, footer=FOOTER.format(version=__version__))
