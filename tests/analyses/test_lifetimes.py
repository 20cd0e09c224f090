"""Server lifetimes on real logs: two corpus logs joined as ``>>`` would join them (a failed start and
a good one), a folder of runs, a rotated log; every reader (full, sparse, ranges, follow) cuts alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import logscope
from logscope.api import load_for_report
from logscope.cli import main

from ..conftest import FIXTURES

VLLM = FIXTURES / "vllm" / "corpus"
SGLANG = FIXTURES / "sglang" / "corpus"
V_FAIL, V_GOOD = VLLM / "gen-c2_startup_fail_maxlen_vs_kv.log", VLLM / "gen-a1_plain_c10.log"
S_FAIL, S_GOOD = SGLANG / "gen-f2_startup_fail_no_vllm_rotary.log", SGLANG / "gen-a1_plain_c10.log"


def _joined(tmp_path: Path, *parts: Path, name: str = "server.log") -> Path:
    out = tmp_path / name
    out.write_bytes(b"".join(p.read_bytes() for p in parts))
    return out


def _lines(p: Path) -> int:
    """Lines as the reader numbers them (a ``\\r`` progress-bar fragment is a line of its own)."""
    return logscope.load(str(p)).stats.lines


def test_failed_start_then_good_start_vllm(tmp_path: Path) -> None:
    log = _joined(tmp_path, V_FAIL, V_GOOD)
    n_fail = _lines(
        V_FAIL
    )  # 169 (167 newlines, two \r fragments); the good log's banner begins at its line 2
    assert n_fail == 169
    run = logscope.load(str(log))
    lts = run.lifetimes
    assert [(x.index, x.start_line, x.started_by, x.ready, x.served_traffic) for x in lts] == [
        (1, 1, "banner", False, False),
        (2, n_fail + 2, "banner", True, True),
    ]
    assert [(x.start_time, x.engine_version) for x in lts] == [
        ("11-30 12:20:13", "0.32.0"),
        ("11-30 12:04:45", "0.32.0"),
    ]
    rep = run.analyze()
    assert rep.analyzed_lifetime is not None and rep.analyzed_lifetime.index == 2
    assert "last of the 2 lifetimes that served traffic" in rep.analyzed_lifetime.reason
    # the failed start's findings stay, saying which lifetime
    assert [(f.code, f.lifetime) for f in rep.findings] == [("EN02", 1), ("KV02", 1)]
    # the sections are those of the good run alone (its lines sit n_fail lines further down)
    alone = logscope.load(str(V_GOOD)).analyze()
    for section in ("prefill", "kv_pool", "spec_decode", "disturbances"):
        assert _shifted(getattr(rep, section), n_fail) == _shifted(getattr(alone, section), 0), section
    assert rep.cold_start is not None and alone.cold_start is not None
    assert rep.cold_start.total_s == alone.cold_start.total_s == 38.0
    assert rep.kv_pool is not None and rep.kv_pool.max_model_len == 4096  # not the failed start's 32768
    assert rep.coverage.lines == _lines(log)  # coverage counts the whole input
    # the failed lifetime, asked for
    one = run.lifetime(1).analyze()
    assert one.analyzed_lifetime is not None and one.analyzed_lifetime.reason == "lifetime 1 of 2, as asked"
    assert one.cold_start is not None and one.cold_start.total_s is None
    assert [(f.code, f.lifetime) for f in one.findings] == [("EN02", 1), ("KV02", 1)]


def _shifted(section: object, by: int) -> str:
    """A section's JSON with line numbers made relative (``by`` lines before the run's own first)."""
    d = json.loads(section.model_dump_json()) if section is not None else None  # type: ignore[attr-defined]

    def walk(x: object) -> object:
        if isinstance(x, dict):
            return {
                k: (v - by if isinstance(v, int) and k.endswith("line") else walk(v)) for k, v in x.items()
            }
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, str):  # "(line 53)" in a method sentence
            return re.sub(r"(lines? )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) - by}", x)
        return x

    return json.dumps(walk(d), sort_keys=True)


def test_good_start_then_failed_restart(tmp_path: Path) -> None:
    # the other order: the run that served is lifetime 1, and the failed restart's findings stay
    log = _joined(tmp_path, V_GOOD, V_FAIL)
    rep = logscope.load(str(log)).analyze()
    assert rep.analyzed_lifetime is not None and rep.analyzed_lifetime.index == 1
    assert [x.served_traffic for x in rep.lifetimes] == [True, False]
    assert [(f.code, f.lifetime) for f in rep.findings] == [("EN02", 2), ("KV02", 2)]


def test_failed_start_then_good_start_sglang(tmp_path: Path) -> None:
    log = _joined(tmp_path, S_FAIL, S_GOOD)
    run = logscope.load(str(log))
    assert [(x.start_line, x.started_by, x.start_time, x.served_traffic) for x in run.lifetimes] == [
        (1, "args", "2026-11-30 12:31:02", False),
        (_lines(S_FAIL) + 9, "args", "2026-11-30 12:41:09", True),
    ]
    rep = run.analyze()
    assert rep.analyzed_lifetime is not None and rep.analyzed_lifetime.index == 2
    assert ("EN02", 1) in [(f.code, f.lifetime) for f in rep.findings]
    assert rep.stable_decode is not None and rep.stable_decode.concurrency == 10


@pytest.mark.parametrize("parts", [(V_FAIL, V_GOOD), (S_FAIL, S_GOOD)], ids=["vllm", "sglang"])
def test_every_reader_cuts_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: tuple[Path, Path]
) -> None:
    from logscope.follow import Follower
    from logscope.parsers import chunks

    log = str(_joined(tmp_path, *parts))
    want = [x.model_dump() for x in logscope.load(log).lifetimes]
    assert len(want) == 2
    assert [x.model_dump() for x in load_for_report(log).lifetimes] == want
    monkeypatch.setattr(chunks, "CHUNK", 8000)
    assert chunks.can_split(log, 2)
    assert [x.model_dump() for x in load_for_report(log, jobs=2).lifetimes] == want
    with Follower(log) as f:
        f.poll()
        f.close()
    assert [x.model_dump() for x in f.run().lifetimes] == want


def test_folder_of_runs_and_a_rotated_log(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for p in (V_GOOD, VLLM / "gen-d1_ctx512.log"):
        (runs / p.name).write_bytes(p.read_bytes())
    lts = logscope.load(str(runs)).lifetimes
    assert [(Path(x.files[0]).name, x.start_time) for x in lts] == [
        ("gen-a1_plain_c10.log", "11-30 12:04:45"),
        ("gen-d1_ctx512.log", "11-30 12:21:11"),
    ]
    # a log rotated in two parts: the second has no banner and continues the first start
    data = V_GOOD.read_bytes().split(b"\n")
    (tmp_path / "vllm.log.1").write_bytes(b"\n".join(data[:300]) + b"\n")
    (tmp_path / "vllm.log").write_bytes(b"\n".join(data[300:]))
    run = logscope.load([str(tmp_path / "vllm.log.1"), str(tmp_path / "vllm.log")])
    assert len(run.lifetimes) == 1 and len(run.lifetimes[0].files) == 2
    assert run.analyze().analyzed_lifetime.reason == "the input holds one server lifetime"  # type: ignore[union-attr]


def test_client_output_goes_with_its_run(tmp_path: Path) -> None:
    log = _joined(tmp_path, V_FAIL, V_GOOD)
    run = logscope.load([str(log), str(VLLM / "gen-a1_plain_c10.client.txt")])
    assert [len(x.files) for x in run.lifetimes] == [1, 2]  # the client's stamps fall in the good run
    rep = run.analyze()
    assert rep.bench is not None and rep.bench.results


def test_cli_lifetime_option_and_formats(tmp_path: Path) -> None:
    log = str(_joined(tmp_path, V_FAIL, V_GOOD))
    r = CliRunner().invoke(main, ["analyze", log, "--format", "json", "--lifetime", "1"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["analyzed_lifetime"]["index"] == 1 and len(d["lifetimes"]) == 2
    assert d["stable_decode"] is None and d["cold_start"]["total_s"] is None
    r = CliRunner().invoke(main, ["analyze", log, "--lifetime", "3"])
    assert r.exit_code == 3 and "there is no lifetime 3" in r.output
    for fmt in ("text", "markdown", "html"):
        r = CliRunner().invoke(main, ["analyze", log, "--format", fmt])
        flat = " ".join(r.output.split())
        assert r.exit_code == 0 and "Server lifetimes (2)" in flat and "in server lifetime 1" in flat, fmt
    # one lifetime: no table
    r = CliRunner().invoke(main, ["analyze", str(V_GOOD), "--format", "markdown"])
    assert "Server lifetimes" not in r.output


REAL = FIXTURES / "vllm" / "lifetimes"


@pytest.mark.parametrize("loader", [logscope.load, load_for_report], ids=["full", "sparse"])
def test_real_two_lifetimes_capture(loader: object) -> None:
    # two `vllm serve` processes appended with >> (fixtures/vllm/lifetimes/README.md): banners at lines 4
    # and 198; 4096 / 1G, then 2048 / 512M / --max-num-seqs 4; each with its own client's output
    run = loader(
        [
            str(REAL / "two-lifetimes.log"),
            str(REAL / "two-lifetimes.run1.client.txt"),  # type: ignore[operator]
            str(REAL / "two-lifetimes.run2.client.txt"),
        ]
    )
    lts = run.lifetimes
    assert [(x.start_line, x.start_time, x.started_by, x.served_traffic, x.ready) for x in lts] == [
        (1, "12-03 15:21:55", "banner", True, True),
        (198, "12-03 15:26:08", "banner", True, True),
    ]
    assert [[Path(f).name for f in x.files] for x in lts] == [
        ["two-lifetimes.log", "two-lifetimes.run1.client.txt"],
        ["two-lifetimes.log", "two-lifetimes.run2.client.txt"],
    ]
    rep = run.analyze()
    assert rep.analyzed_lifetime.index == 2  # both served: the last
    assert (rep.kv_pool.tokens, rep.kv_pool.max_model_len) == (131072, 2048)
    assert [r.mean_ttft_ms for r in rep.bench.results] == [2421.25]  # run 2's client only
    one = run.lifetime(1).analyze()
    assert (one.kv_pool.tokens, one.kv_pool.max_model_len) == (262144, 4096)
    assert [r.mean_ttft_ms for r in one.bench.results] == [191.38]


def test_an_input_without_events_has_no_lifetime_and_still_reports(tmp_path: Path) -> None:
    """A paste of plain text (here a line of a real vllm bench serve output) gives no event: no lifetime to
    cut, and analyze reports it (coverage) in every format instead of failing on the empty split."""

    from logscope.analyses.lifetimes import split_lifetimes

    assert split_lifetimes([], []).items == []
    log = tmp_path / "pasted.log"
    log.write_text("tip: install termplotlib and gnuplot to plot the metrics\n")
    run = logscope.load(
        log, keep_unparsed=False
    )  # the sparse read analyze makes: the line is counted, no event
    assert run.events == [] and run.lifetimes == [] and run.lifetime() is run
    rep = run.analyze()
    assert rep.analyzed_lifetime is None and rep.lifetimes == []
    for fmt in ("text", "json", "markdown", "html", "br"):
        res = CliRunner().invoke(main, ["analyze", str(log), "--format", fmt])
        assert res.exit_code == 0 and res.exception is None, (fmt, res.output)
