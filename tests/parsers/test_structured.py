"""JSON inputs (``logscope.parsers.structured``): the same events as the text they wrap or stand for.

Real data: one vLLM 0.32 run logged through a dictConfig with a text and a JSON handler (two files of
the same records), and a real vLLM log wrapped in each collector's shape (fixtures/structured/README.md);
each shape also on a public example line from its tool's documentation.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import logscope
from logscope.parsers import structured
from logscope.parsers.chunks import can_split
from logscope.parsers.framing import ReadStats, read_lines
from tests.conftest import FIXTURES

HERE = FIXTURES / "structured"
A1 = FIXTURES / "vllm" / "corpus" / "gen-a1_plain_c10.log"


def _values(run: logscope.Run) -> list[dict[str, Any]]:
    """Each event's fields but where it sits in its file (file, line numbers, raw text) and what a
    collector added (its stamp)."""
    return [
        e.model_dump(exclude={"file", "line", "end_line", "raw", "outer_time", "time_source"})
        for e in run.events
    ]


def _same_as_text(text: logscope.Run, js: logscope.Run) -> None:
    a, b = _values(text), _values(js)
    assert Counter(e["kind"] for e in a) == Counter(e["kind"] for e in b)
    for x, y in zip(a, b, strict=True):
        if x["time"] is None:  # a line without an engine header: the JSON copy has the collector's stamp
            y["time"] = None
    assert a == b


# -- the dictConfig run: one run, two handlers --------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
def test_dictconfig_json_gives_the_text_logs_events(sparse: bool) -> None:
    text = logscope.load(HERE / "vllm-jsonlog-dictconfig.text.log", keep_unparsed=not sparse)
    js = logscope.load(HERE / "vllm-jsonlog-dictconfig.json.jsonl", keep_unparsed=not sparse)
    assert js.engine == text.engine == "vllm"
    _same_as_text(text, js)
    counts = js.counts()
    # values read off the real files
    assert counts["throughput"] == 6 and counts["warning"] == 14 and counts["version"] == 2
    first = js.of_kind("throughput")[0]
    assert (first.time, first.process) == ("12-03 15:06:43", "APIServer pid=20908")
    assert js.of_kind("version")[0].engine_version == "0.32.0"


# -- request ids: the request records of a JSON log and of a text log join on request_id -----------

LOGREQ = "vllm-jsonlog-logreq"  # one run with --enable-log-requests, two dictConfig handlers (README)


@pytest.mark.parametrize("sparse", [False, True])
def test_request_records_from_json_and_text_join_on_request_id(sparse: bool) -> None:
    text = logscope.load(HERE / f"{LOGREQ}.text.log", keep_unparsed=not sparse)
    js = logscope.load(HERE / f"{LOGREQ}.json.jsonl", keep_unparsed=not sparse)

    # the same events; at shutdown the processes' records reach the two files in another order
    def values(run: logscope.Run) -> Counter[str]:
        return Counter(
            json.dumps(v | ({"time": None} if e.time_source == "collector" else {}), sort_keys=True)
            for e, v in zip(run.events, _values(run), strict=True)
        )

    assert values(text) == values(js)
    steps = [(e.phase, e.request_id) for e in js.of_kind("request")]
    assert steps == [(e.phase, e.request_id) for e in text.of_kind("request")]
    # grep of the real files: 15 Received (1 + 1 cut by the client + the bench's tokenize + 12 bench),
    # 14 Added, the cut one's `Aborted request(s) <id>` and `Request <id> aborted`
    assert Counter(p for p, _ in steps) == {"received": 15, "added": 14, "aborted": 2}
    assert steps[:2] == [
        ("received", "cmpl-9fab1423b5065eec-0"),
        ("added", "cmpl-9fab1423b5065eec-0-b1e24676"),
    ]
    assert ("aborted", "cmpl-b08745911b0b505f-0-b068479a") in steps
    # the join: every id of the JSON log's request records is one of the text log's, and back
    assert {r for _, r in steps} == {e.request_id for e in text.of_kind("request")}
    assert all(e.request_id is None for e in js.events if e.kind != "request")  # no key, no id made up


def test_request_id_key_of_a_json_record(tmp_path: Path) -> None:
    """A formatter that writes the request's id as a key (python-json-logger with a request-id filter, an
    OTel attribute): the event of that record carries it, whatever its kind, and joins the request
    records. The records are the real capture's; the key is ours (no public vLLM log with such a key
    was found), under each name of ``structured.FIELDS["request_id"]``."""
    recs = [
        json.loads(x)
        for x in (HERE / f"{LOGREQ}.json.jsonl").read_text(encoding="utf-8").splitlines()
        if x.startswith("{")
    ]
    access = next(r for r in recs if r["name"] == "uvicorn.access" and "/v1/completions" in r["message"])
    rid = "cmpl-9fab1423b5065eec-0"  # the first completion's id, as its Received request record prints it
    lines = [
        json.dumps(access | {"request_id": rid}),
        json.dumps(access | {"requestId": rid}),
        json.dumps(access | {"rid": rid}),
    ]
    otlp = {
        "timeUnixNano": "1796320841820000000",
        "severityText": "INFO",
        "body": {"stringValue": access["message"]},
        "attributes": [
            {"key": "vllm.request_id", "value": {"stringValue": rid}},
            {"key": "code.filepath", "value": {"stringValue": "httptools_impl.py"}},
            {"key": "code.lineno", "value": {"intValue": "480"}},
        ],
    }
    lines.append(
        json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": [otlp]}]}]})
    )
    received = next(r for r in recs if r["message"].startswith(f"Received request {rid}:"))
    lines.append(json.dumps(received | {"request_id": "some-other-id"}))  # the id the line prints wins
    run = _one(tmp_path, "\n".join(lines))
    access_events = run.of_kind("http_access")
    assert [(e.status, e.request_id) for e in access_events] == [(200, rid)] * 4
    (req,) = run.of_kind("request")
    assert req.request_id == rid
    text_ids = {e.request_id for e in logscope.load(HERE / f"{LOGREQ}.text.log").of_kind("request")}
    assert {e.request_id for e in access_events} <= text_ids


@pytest.mark.parametrize("sparse", [False, True])
def test_json_access_and_request_records_read_sparsely_too(sparse: bool) -> None:
    # vLLM's JSON formatter with request logging (real capture, fixtures/vllm/no_stats/README.md): the
    # access records hold `HTTP/1.1\" 200` (the quote escaped), so an anchor holding the quote missed
    # them in the raw-byte scan of the sparse read. Counts: grep -c of the records.
    path = FIXTURES / "vllm" / "no_stats" / "vllm-jsonfmt-logreq-errors.jsonl"
    raw = path.read_text(encoding="utf-8")
    run = logscope.load(path, keep_unparsed=not sparse)
    assert run.counts()["http_access"] == raw.count('HTTP/1.1\\" ') == 39
    # 30 `Received request`, 29 `Added request`, 4 `Aborted request(s)` each followed by `Request ... aborted.`
    received, added, aborted = (
        raw.count(s) for s in ("Received request", "Added request", "Aborted request")
    )
    assert run.counts()["request"] == received + added + 2 * aborted == 30 + 29 + 2 * 4


def test_dictconfig_json_notes() -> None:
    stats = ReadStats()
    list(read_lines(str(HERE / "vllm-jsonlog-dictconfig.json.jsonl"), stats))
    assert any("156 JSON records" in n and "vLLM JSON formatter 156" in n for n in stats.notes)


# -- collectors' shapes around a real log --------------------------------------------------------

WRAPPED = ["a1-docker.jsonl", "a1-loki-newest-first.jsonl", "a1-otlp.jsonl", "a1-elastic.jsonl"]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", WRAPPED)
def test_wrapped_real_log_gives_its_events(name: str, sparse: bool) -> None:
    text = logscope.load(A1, keep_unparsed=not sparse)
    js = logscope.load(HERE / name, keep_unparsed=not sparse)
    assert js.engine == "vllm"
    _same_as_text(text, js)
    assert len(js.of_kind("throughput")) == 20


@pytest.mark.parametrize("name", ["a1-cloudwatch-200.json", "a1-gcloud-200.json"])
def test_pretty_documents_give_the_events_of_their_lines(name: str, tmp_path: Path) -> None:
    head = tmp_path / "a1-200.log"
    head.write_bytes(
        b"".join(A1.read_bytes().split(b"\n")[:200])
        and b"\n".join(A1.read_bytes().split(b"\n")[:200]) + b"\n"
    )
    text = logscope.load(head)
    js = logscope.load(HERE / name)
    assert js.engine == "vllm"
    _same_as_text(text, js)
    # the line of a record is the line its object starts on in the document
    assert all(e.line > 1 for e in js.events)


def test_newest_first_is_read_in_time_order_and_noted() -> None:
    run = logscope.load(HERE / "a1-gcloud-200.json")
    assert any("newest first" in n for n in run.stats.notes)
    ts = [e.t_s for e in run.events if e.t_s is not None]
    assert ts == sorted(ts)
    loki = logscope.load(HERE / "a1-loki-newest-first.jsonl")
    assert any("newest first" in n for n in loki.stats.notes)


def test_collector_stamp_is_kept_as_the_events_time_source() -> None:
    run = logscope.load(HERE / "a1-docker.jsonl")
    triton = run.events[0]  # no engine header: the collector's stamp is its time
    assert triton.kind == "unparsed" and triton.time == "2026-11-30T12:04:45.000000123Z"
    assert triton.time_source == "collector" and triton.outer_time is None
    stats = run.of_kind("throughput")[0]  # the engine's time as printed, the stamp beside it
    assert (stats.time, stats.outer_time) == ("11-30 12:05:43", "2026-11-30T12:05:43.000000123Z")
    assert stats.time_source == "engine; year and zone in outer_time"
    plain = logscope.load(A1).of_kind("throughput")[0]
    assert plain.outer_time is None and plain.time_source is None


def test_documents_and_newest_first_files_are_not_cut_into_ranges(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes((HERE / "a1-gcloud-200.json").read_bytes() * 200)
    assert not can_split(str(big), 2)
    docker = tmp_path / "docker.jsonl"
    docker.write_bytes((HERE / "a1-docker.jsonl").read_bytes() * 200)
    assert can_split(str(docker), 2)


# -- public examples, one per shape --------------------------------------------------------------

# a real vLLM 0.32 line: a1_plain_c10.log's first stats line
ENGINE_LINE = next(ln for ln in A1.read_text(encoding="utf-8").split("\n") if "Avg prompt throughput" in ln)


def _one(tmp_path: Path, text: str) -> logscope.Run:
    p = tmp_path / "one.jsonl"
    p.write_text(text + "\n", encoding="utf-8")
    return logscope.load(p)


def test_docker_docs_example(tmp_path: Path) -> None:
    # https://docs.docker.com/engine/logging/drivers/json-file/
    run = _one(
        tmp_path, '{"log":"Log line is here\\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}'
    )
    (ev,) = run.events
    assert (ev.kind, ev.text, ev.time) == ("unparsed", "Log line is here", "2019-01-01T11:11:11.111111111Z")


def test_docker_line_of_a_vllm_run(tmp_path: Path) -> None:
    line = json.dumps(
        {"log": ENGINE_LINE + "\n", "stream": "stdout", "time": "2026-11-30T12:05:08.471906204Z"},
        separators=(",", ":"),
    )
    run = _one(tmp_path, line)
    assert run.engine == "vllm"  # detected on a one-line file
    (ev,) = run.events
    assert ev.kind == "throughput" and ev.time == "11-30 12:05:43"


def test_otlp_example(tmp_path: Path) -> None:
    # opentelemetry-proto examples/logs.json (one record), then a filelog receiver's record of a vLLM line
    example = (
        '{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"my.service"}}]},'
        '"scopeLogs":[{"scope":{"name":"my.library","version":"1.0.0"},"logRecords":[{"timeUnixNano":'
        '"1544712660300000000","observedTimeUnixNano":"1544712660300000000","severityNumber":10,'
        '"severityText":"Information","traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174",'
        '"body":{"stringValue":"Example log record"},"attributes":[{"key":"string.attribute","value":'
        '{"stringValue":"some string"}}]}]}]}]}'
    )
    run = _one(tmp_path, example)
    (ev,) = run.events
    assert ev.level == "INFO" and ev.time == "12-13 14:51:00"  # the record's own UTC stamp gives its header
    rec = {"timeUnixNano": "1764504308471906204", "body": {"stringValue": ENGINE_LINE}, "severityText": ""}
    batch = {"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": [rec, rec]}]}]}
    run = _one(tmp_path, json.dumps(batch))
    assert run.engine == "vllm" and [e.kind for e in run.events] == ["throughput", "throughput"]


def test_otlp_pretty_printed_document(tmp_path: Path) -> None:
    # opentelemetry-proto's examples/logs.json, verbatim (pretty-printed, timeUnixNano an integer): its
    # resourceLogs items are read through scopeLogs/logRecords as a one-line OTLP request is
    example = HERE / "otlp-proto-example-logs.json"
    run = logscope.load(example, keep_unparsed=True)
    (ev,) = run.events
    assert (
        ev.level == "INFO"
        and ev.time == "12-13 14:51:00"
        and ev.outer_time == "2018-12-13T14:51:00.300000000Z"
    )
    # the same document shape around real vLLM lines: their events, as from the text
    doc = json.loads(example.read_text(encoding="utf-8"))
    rec = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    rec["body"] = {"stringValue": ENGINE_LINE}
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"] = [rec, dict(rec)]
    p = tmp_path / "otlp.json"
    p.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    run = logscope.load(p)
    assert run.engine == "vllm" and [e.kind for e in run.events] == ["throughput", "throughput"]


def test_loki_jsonl(tmp_path: Path) -> None:
    # logcli query --output jsonl: keys sorted, labels first
    line = json.dumps(
        {"labels": {"container": "vllm"}, "line": ENGINE_LINE, "timestamp": "2026-11-30T12:05:08.471906204Z"}
    )
    run = _one(tmp_path, line)
    assert run.engine == "vllm" and run.events[0].kind == "throughput"


def test_cloud_logging_entries(tmp_path: Path) -> None:
    # gcloud logging read --format=json: an array, 2-space indent, keys sorted; textPayload and jsonPayload
    entries = [
        {
            "insertId": "1",
            "logName": "projects/p/logs/stdout",
            "receiveTimestamp": "2026-11-30T12:05:09.1Z",
            "resource": {"type": "k8s_container"},
            "severity": "INFO",
            "textPayload": ENGINE_LINE,
            "timestamp": "2026-11-30T12:05:08.471906Z",
        },
        {
            "insertId": "2",
            "jsonPayload": {
                "asctime": "2026-11-30 12:05:09,001",
                "levelname": "WARNING",
                "filename": "system_utils.py",
                "lineno": 255,
                "message": "Found ulimit of 20000",
            },
            "severity": "WARNING",
            "timestamp": "2026-11-30T12:05:09.001Z",
        },
    ]
    p = tmp_path / "gcloud.json"
    p.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    run = logscope.load(p)
    assert run.engine == "vllm"
    assert [e.kind for e in run.events] == ["throughput", "warning"]
    warn = run.events[1]
    assert (warn.time, warn.source, warn.message) == (
        "11-30 12:05:09",
        "system_utils.py:255",
        "Found ulimit of 20000",
    )
    assert [e.line for e in run.events] == [2, 13]


def test_cloudwatch_filter_log_events(tmp_path: Path) -> None:
    # aws logs filter-log-events: {"events": [{logStreamName, timestamp (ms), message, ingestionTime, eventId}]}
    doc = {
        "events": [
            {
                "logStreamName": "my-log-stream-1",
                "timestamp": 1764504308471,
                "message": ENGINE_LINE,
                "ingestionTime": 1764504308900,
                "eventId": "31132629274945519779805322857203735586714454643391594505",
            }
        ],
        "searchedLogStreams": [],
    }
    p = tmp_path / "cw.json"
    p.write_text(json.dumps(doc, indent=4) + "\n", encoding="utf-8")
    run = logscope.load(p)
    assert run.engine == "vllm" and [e.kind for e in run.events] == ["throughput"]
    one = _one(tmp_path, json.dumps(doc))  # the same document on one line
    assert [e.kind for e in one.events] == ["throughput"]


def test_elasticsearch_hits(tmp_path: Path) -> None:
    # a search hit as the Elasticsearch search API documents it, and a hit holding a vLLM line
    hit = {
        "_index": "my-index-000001",
        "_id": "0",
        "_score": 1.3862942,
        "_source": {
            "@timestamp": "2099-11-15T14:12:12",
            "http": {"request": {"method": "get"}},
            "message": "GET /search HTTP/1.1 200 1070000",
            "user": {"id": "kimchy"},
        },
    }
    run = _one(tmp_path, json.dumps(hit))
    (ev,) = run.events
    assert (ev.text, ev.time) == ("GET /search HTTP/1.1 200 1070000", "2099-11-15T14:12:12")
    resp = {
        "took": 5,
        "hits": {
            "total": {"value": 1},
            "hits": [
                {
                    "_index": "logs",
                    "_id": "1",
                    "_source": {"@timestamp": "2026-11-30T12:05:08.471Z", "message": ENGINE_LINE},
                }
            ],
        },
    }
    run = _one(tmp_path, json.dumps(resp))
    assert [e.kind for e in run.events] == ["throughput"]


# -- verbatim public examples (fixtures/structured/public-*, sources in the README) ------------------


def _in_place_of(doc: Any, key: str, old: str, new: str) -> Any:
    """``doc`` with each ``key`` value equal to ``old`` replaced by ``new`` (the document's shape kept)."""
    if isinstance(doc, dict):
        return {k: (new if k == key and v == old else _in_place_of(v, key, old, new)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_in_place_of(v, key, old, new) for v in doc]
    return doc


# file, the key holding the line, [(text, time as read)] of its records as published
PUBLIC = {
    "public-docker-json-file.jsonl": ("log", [("Log line is here", "2019-01-01T11:11:11.111111111Z")]),
    "public-loki-logcli-jsonl.jsonl": (
        "line",
        [
            ("", "2006-01-02T08:04:05Z"),
            ("", "2006-01-02T08:04:05Z"),
            ("Hello", "2006-01-02T10:04:05+02:00"),
            ("Hello", "2006-01-02T08:04:05Z"),
        ],
    ),
    "public-gcloud-logging-read.json": (
        "textPayload",
        [
            (
                'info: [ghjExpress] 217.213.90.98 - - [15/Mar/2020:18:44:47 +0000] "GET /v1/groups/5bde9931-d2d8-4b2c-9953-'
                '68750ed4230a HTTP/1.1" 200 3436 "-" "abcghj (com.abccompany.ghj; build:293; android 2.0)"',
                "2020-03-15T18:44:47.899399657Z",
            )
        ],
    ),
    "public-aws-logs-filter-log-events.json": (
        "message",
        [("Test MESSAGE1", "2024-04-08T09:17:23.827Z"), ("Test MESSAGE2", "2024-04-08T09:21:08.991Z")],
    ),
    "public-elasticsearch-search-response.json": (
        "message",
        [("GET /search HTTP/1.1 200 1070000", "2099-11-15T14:12:12")],
    ),
}


@pytest.mark.parametrize("name", list(PUBLIC))
def test_public_example_verbatim(name: str, tmp_path: Path) -> None:
    """Each collector's own published output, byte for byte: every record read with its text and the
    collector's stamp as its time; then the same document with a real vLLM 0.32 stats line in place of
    each record's text: the engine is detected and each record is a throughput event."""
    key, want = PUBLIC[name]
    path = HERE / name
    run = logscope.load(path, keep_unparsed=True)
    assert run.engine is None  # no engine line in the tools' examples
    got = [(e.text or "", e.time) for e in run.events]
    assert got == want
    assert all(e.time_source == "collector" for e in run.events)
    assert not any("unknown shape" in n for n in run.stats.notes), run.stats.notes
    if name.startswith("public-gcloud"):  # the published excerpt ends after its first entry: said, and read
        assert any("breaks off after 1 records" in n for n in run.stats.notes)
    # the same shape around a real vLLM line
    raw = path.read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        lines = [
            json.dumps(
                _in_place_of(
                    json.loads(x), key, json.loads(x)[key], ENGINE_LINE + ("\n" if key == "log" else "")
                )
            )
            for x in raw.splitlines()
        ]
        text = "\n".join(lines) + "\n"
    else:
        doc = json.loads(raw.rstrip().rstrip(",") + ("\n]" if raw.startswith("[") else ""))
        for old, _t in want:
            doc = _in_place_of(
                doc, key, old + ("\n" if name.startswith("public-gcloud") else ""), ENGINE_LINE
            )
        text = json.dumps(doc, indent=2 if raw.startswith("[") else 4) + "\n"
    real = tmp_path / name
    real.write_text(text, encoding="utf-8")
    run = logscope.load(real)
    assert run.engine == "vllm"
    assert [e.kind for e in run.events] == ["throughput"] * len(want)


# -- the engines' own JSON -----------------------------------------------------------------------

# vLLM 0.32 --logging-config.formatter json, keys as structured.md records them from a real run
BUILTIN = [
    {
        "asctime": "2026-12-03 14:06:58,103",
        "levelname": "INFO",
        "name": "vllm.entrypoints.utils",
        "processName": "MainProcess",
        "process": 31337,
        "message": "vLLM server version 0.32.0, serving model /models/tiny-llama",
        "vllm_process_name": "APIServer",
    },
    {
        "asctime": "2026-12-03 14:07:03,100",
        "levelname": "INFO",
        "name": "uvicorn.access",
        "processName": "MainProcess",
        "process": 31337,
        "message": '127.0.0.1:52614 - "POST /v1/completions HTTP/1.1" 200',
    },
]


def test_builtin_json_without_a_line_number(tmp_path: Path) -> None:
    text = "Triton is installed, but doesn't include CPU backend. Disabling Triton.\n"
    p = tmp_path / "builtin.jsonl"
    p.write_text(text + "".join(json.dumps(r) + "\n" for r in BUILTIN), encoding="utf-8")
    run = logscope.load(p)
    assert run.engine == "vllm"
    kinds = [e.kind for e in run.events]
    assert kinds[0] == "unparsed" and "version" in kinds
    ver = run.of_kind("version")[0]
    assert (ver.engine_version, ver.time, ver.process, ver.line) == (
        "0.32.0",
        "12-03 14:06:58",
        "APIServer pid=31337",
        2,
    )


def test_exc_info_is_one_error_event(tmp_path: Path) -> None:
    rec = {
        "asctime": "2026-12-03 15:07:33,001",
        "levelname": "ERROR",
        "filename": "core.py",
        "lineno": 1095,
        "process": 20990,
        "vllm_process_name": "EngineCore",
        "message": "EngineCore encountered a fatal error.",
        "exc_info": 'Traceback (most recent call last):\n  File "/opt/venv-vllm/lib/python3.11/site-packages/vllm/v1/'
        'engine/core.py", line 1086, in run_engine_core\n    engine_core.run_busy_loop()\nRuntimeError: boom',
    }
    run = _one(tmp_path, json.dumps(rec))
    (ev,) = run.events
    assert ev.kind == "error" and ev.exception == "RuntimeError" and ev.process == "EngineCore pid=20990"
    assert len(ev.traceback) == 4 and ev.message == "EngineCore encountered a fatal error." and ev.line == 1


def test_process_prefix_before_json(tmp_path: Path) -> None:
    # vLLM issue #57955: a worker's stdout decoration in front of each JSON object
    rec = dict(BUILTIN[0])
    del rec["vllm_process_name"]
    run = _one(tmp_path, "(Worker_DP0 pid=4242) " + json.dumps(rec))
    (ev,) = run.events
    assert ev.kind == "version" and ev.process == "Worker_DP0 pid=4242" and ev.dp_rank == 0


def test_unknown_shape_searched_for_an_engine_line(tmp_path: Path) -> None:
    run = _one(tmp_path, json.dumps({"k8s": {"pod": "vllm-0"}, "payload": {"text": ENGINE_LINE}}))
    assert [e.kind for e in run.events] == ["throughput"]
    run = _one(tmp_path, json.dumps({"foo": 1, "bar": "baz"}))
    assert [e.kind for e in run.events] == ["unparsed"]
    assert any("unknown shape (keys: bar, foo" in n for n in run.stats.notes)


def test_docker_line_split_in_parts_comes_whole(tmp_path: Path) -> None:
    head, tail = ENGINE_LINE[:60], ENGINE_LINE[60:]
    lines = [
        {"log": head, "stream": "stdout", "time": "2026-11-30T12:05:08.1Z"},
        {"log": tail + "\n", "stream": "stdout", "time": "2026-11-30T12:05:08.1Z"},
    ]
    p = tmp_path / "split.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    run = logscope.load(p)
    assert [e.kind for e in run.events] == [
        "unparsed",
        "throughput",
    ]  # (an empty line where the first part was)
    assert run.events[1].line == 2 and run.stats.lines == 2


# -- bad JSON: noted, the rest read ---------------------------------------------------------------

GOOD = json.dumps({"log": ENGINE_LINE + "\n", "stream": "stdout", "time": "2026-11-30T12:05:08.4Z"})


@pytest.mark.parametrize(
    ("bad", "note"),
    [
        (b'{"log":"INFO 11-30 12:05:08 [loggers.py:259] Engine 000: Avg prompt', "truncated JSON object"),
        (b'["a", "b"]', "not an object"),
        (
            b'{"log":"bad \xff\xfe bytes\\n","stream":"stdout","time":"2026-11-30T12:05:08.1Z"}',
            "invalid UTF-8",
        ),
        (
            b'[{"log":"x\\n","stream":"stdout","time":"2026-11-30T12:05:08.1Z"}, {"log":',
            "array that breaks off",
        ),
        (
            b'{"log": "' + b"x" * (50 << 20) + b'"}',
            "truncated JSON object",
        ),  # cut at framing's 1 MiB line limit
    ],
    ids=["truncated", "not-an-object", "invalid-utf8", "array-never-closes", "50MB-string"],
)
def test_bad_json_is_noted_and_the_rest_read(tmp_path: Path, bad: bytes, note: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(bad + b"\n" + GOOD.encode() + b"\n")
    run = logscope.load(p)
    assert run.of_kind("throughput"), "the good line after the bad one is read"
    assert any(note in n for n in run.stats.notes), run.stats.notes


def test_document_that_never_closes(tmp_path: Path) -> None:
    text = (HERE / "a1-gcloud-200.json").read_text(encoding="utf-8")
    cut = text[: text.rfind('"textPayload"', 0, len(text) // 2)]
    p = tmp_path / "cut.json"
    p.write_text(cut, encoding="utf-8")
    run = logscope.load(p)
    assert any("breaks off" in n for n in run.stats.notes)
    assert run.events and run.stats.lines == cut.count("\n") + 1


def test_mixed_text_and_json(tmp_path: Path) -> None:
    lines = A1.read_text(encoding="utf-8").splitlines()[40:50]
    mixed = [
        json.dumps({"log": ln + "\n", "stream": "stdout", "time": "2026-11-30T12:05:08.4Z"}) if i % 2 else ln
        for i, ln in enumerate(lines)
    ]
    p = tmp_path / "mixed.log"
    p.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    q = tmp_path / "plain.log"
    q.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _same_as_text(logscope.load(q), logscope.load(p))


def test_stamp_text() -> None:
    assert structured.stamp_text("1544712660300000000") == "2018-12-13T14:51:00.300000000Z"
    assert structured.stamp_text(1433190184356) == "2015-06-01T20:23:04.356Z"
    assert structured.stamp_text("yesterday") is None
    assert structured.epoch("2026-11-30T12:05:08+01:00") == structured.epoch("2026-11-30T11:05:08Z")


def test_builtin_json_formatter_real_log() -> None:
    """vLLM 0.32 ``--logging-config.formatter json``, a real server log: 152 JSON records (no file or
    line keys) mixed with 45 plain stderr lines; both give their events."""
    run = logscope.load(HERE / "vllm-jsonfmt-builtin.jsonl")
    assert run.engine == "vllm"
    assert any("152 JSON records" in n for n in run.stats.notes)
    stats = run.of_kind("throughput")
    assert len(stats) == 5
    assert (stats[0].line, stats[0].time, stats[0].process, stats[0].gen_tok_s) == (
        104,
        "12-03 15:11:22",
        "APIServer pid=24903",
        165.4,
    )
    warnings = {w.line: w for w in run.of_kind("warning")}
    # from a JSON record: the logger's name stands where the text log has file:line
    assert (warnings[4].source, warnings[4].process) == ("vllm.utils.system_utils", "APIServer pid=24903")
    # from plain text lines in the same stream: a Python FutureWarning, torch's [W1203 ...] line
    assert warnings[16].source.endswith("vllm/triton_utils/dispatcher.py:138")
    assert warnings[20].message.startswith("NUMA binding")
    # uvicorn's access records (JSON without a reason phrase) are http_access events as in a text log
    access = [e for e in run.of_kind("http_access") if e.path == "/v1/completions"]
    assert len(access) == 40 and access[0].process == "APIServer pid=24903" and access[0].status == 200


def test_wall_clock_year_comes_from_the_collectors_stamp() -> None:
    """vLLM prints no year; a docker export's stamps carry it (the frames' ts_source says so)."""
    frame = logscope.load(HERE / "a1-docker.jsonl").frame("throughput")
    ts, source = frame.select(["ts", "ts_source"]).row(0)
    assert (ts.year, ts.month, ts.day, source) == (2026, 11, 30, "file_date")
