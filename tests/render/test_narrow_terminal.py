"""``COLUMNS=80 logscope analyze``: tables fold their columns rather than break words, long texts are
elided at a word's end. A line wrapped inside a word leaves a piece of a word on each line: every
word of the 80-column report must be a word of the same report printed wide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscope.cli import main
from logscope.render.doc import Table, elide, t
from logscope.render.terminal import table_parts
from tests.conftest import ROOT

LOGS = [ROOT / "engine_logs/vllm-0.32-decode-steady-c10.log", *sorted((ROOT / "fixtures/case").glob("*.log"))]
# (run on the shared generated corpus, whose absolute paths are ~80 characters long, too: no piece)
_SPLIT = re.compile(r"[\s\u2500-\u257f]+")  # whitespace and box-drawing characters


def _analyze(args: list[str], columns: int) -> str:
    r = CliRunner().invoke(main, ["analyze", *args], env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    return r.output


def _words(text: str) -> set[str]:
    return {w for w in _SPLIT.split(text) if w}


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_no_word_is_broken_at_80_columns(log: Path) -> None:
    client = log.with_suffix(".client.txt")
    args = [str(log), *(["--bench", str(client)] if client.exists() else [])]
    narrow, wide = _analyze(args, 80), _analyze(args, 1000)
    assert max(len(ln) for ln in narrow.splitlines()) <= 80
    whole = _words(wide)
    # a word wider than the screen is shown by its end ("…/srt/utils/tokenizer.py:318:"): not a piece
    broken = sorted(
        w for w in _words(narrow) - whole if not (w.startswith("…") and any(x.endswith(w[1:]) for x in whole))
    )
    assert not broken, f"pieces of words at 80 columns: {broken[:20]}"
    assert "more characters]" not in narrow


def test_a_wide_table_folds_keyed_by_its_first_column() -> None:
    header = ("t (s)", "what", "detail", "line")
    rows = [((t("802"),), (t("compile"),), (t("_compute_slot_mapping_kernel " * 2),), (t("line 344"),))]
    tb = Table(header, rows)
    assert table_parts(tb, 200) == [[0, 1, 2, 3]]
    # longest words 5, 7, 28, 4 (+3 each); at 40 columns a word keeps at most 17 (its end): 8 + 10 + 20 fit
    assert table_parts(tb, 40) == [[0, 1, 2], [0, 3]]
    assert table_parts(tb, 30) == [[0, 1], [0, 2, 3]]  # a word keeps 12: 8 + 10 + 15 do not fit


def test_words_wider_than_the_screen_keep_their_end() -> None:
    from logscope.render.terminal import fit_words

    path = "/usr/local/lib/python3.12/dist-packages/sglang/srt/utils/hf_transformers/tokenizer.py:318:"
    assert fit_words(f"at {path} now", 40) == "at …/hf_transformers/tokenizer.py:318: now"
    assert fit_words("short words only", 40) == "short words only"


def test_elide_cuts_at_a_word_end() -> None:
    text = "Soft OOM during execute_model: emptied the CUDA caching allocator"
    assert elide(text, 40) == "Soft OOM during execute_model: emptied …"
    assert elide(text, 200) == text
    assert elide("x" * 50, 20) == "x" * 20 + " …"
