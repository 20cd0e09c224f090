"""TK01: a slow (pure-Python) tokenizer is in use."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import hits_events, plural, ranks_text

_PATTERN = re.compile(r"Using a slow tokenizer")


@register
class SlowTokenizer(Rule):
    """The server tokenizes with a slow (pure-Python) tokenizer.

    What
        Both engines load the tokenizer through Hugging Face ``transformers``; when the model has no
        fast (Rust, ``tokenizers``) tokenizer they print ``Using a slow tokenizer. This might cause a
        significant slowdown. Consider using a fast tokenizer instead.`` (vLLM as a WARNING of the
        API server and engine processes, SGLang as a Python ``UserWarning`` on stderr).

    Why
        Every prompt is tokenized on the request path: with long inputs (tens of thousands of
        tokens) a Python tokenizer adds seconds to the time to first token and can saturate the API
        server's CPU, so the engine waits for work. The engine's own throughput lines do not show
        this time.

    Fix
        Provide a fast tokenizer for the model (a ``tokenizer.json`` and a ``*TokenizerFast`` class),
        or point ``--tokenizer`` to a compatible fast one; check that the ``tokenizers`` package is
        installed.

    References
        - vLLM ``tokenizers/registry.py`` ``get_tokenizer``; SGLang ``hf_transformers_utils`` / ``hf_transformers/tokenizer.py``
        - docs/design CASE: Kimi-K3, "Warnings worth a digest"
    """

    code = "TK01"
    slug = "slow-tokenizer"
    title = "Slow tokenizer in use"
    severity = "warning"
    confidence = "observed"
    kinds = ("warning", "unparsed")
    anchors = ("Using a slow tokenizer",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        hits = ctx.grep(_PATTERN, self.anchors)
        if not hits:
            return []
        events = hits_events(hits)
        n = sum(e.repeated for e in events)
        msg = (
            f"A slow (pure-Python) tokenizer is in use ({plural(n, 'warning')}{ranks_text(events)}; first at line "
            f"{events[0].line}): tokenizing long prompts adds to the time to first token and loads the "
            f"server's CPU."
        )
        fix = (
            "Provide a fast tokenizer for the model (`tokenizer.json` with a `*TokenizerFast` class) or point "
            "`--tokenizer` to a compatible fast one; check that the `tokenizers` package is installed."
        )
        return [self.finding(msg, fix, events, [(h.event, h.text) for h in hits])]
