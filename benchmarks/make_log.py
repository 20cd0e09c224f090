"""Build a large, realistic server log from real line shapes, deterministically.

    python benchmarks/make_log.py --profile vllm-requests --size 300M -o /tmp/bench/vllm-300M.log
    python benchmarks/make_log.py --profile sglang --size 100M -o /tmp/bench/sglang-100M.log

Profiles:
- ``vllm-requests``: a vLLM V1 server (API server + EngineCore + 8 TP workers) with request logging
  and access logs on: per request a ``Received request`` line (now and then with a very long prompt,
  as the pre-2025-10 form printed it), an ``Added request`` line and an access line; every 10 s a
  stats line and a SpecDecoding line; per-rank warnings now and then.
- ``sglang``: an SGLang TP8 server: prefill chunks and decode batches on TP0, warnings on all ranks.

The line shapes are those of the real logs in ``fixtures/`` and the format references. A sidecar
``<out>.json`` holds the number of lines of each kind written, so the benchmark can check counts.
Nothing here is committed output: the files are made on demand (they are large).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


class Clock:
    def __init__(self) -> None:
        self.t = 12 * 3600 + 4 * 60 + 45  # 12:04:45

    def stamp(self) -> str:
        t = int(self.t)
        day = 30 + t // 86400
        t %= 86400
        return f"11-{day:02d} {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


STARTUP_VLLM = Path(__file__).resolve().parents[1] / "fixtures/vllm/corpus/gen-a1_plain_c10.log"


def vllm_requests(out, size: int, rng: random.Random) -> dict[str, int]:  # type: ignore[no-untyped-def]
    counts = {"throughput": 0, "spec_decode": 0, "request_lines": 0, "warning": 0, "long_lines": 0}
    head = STARTUP_VLLM.read_text(encoding="utf-8").splitlines()
    startup = [ln for ln in head[:110]]  # the real start-up of a vLLM 0.32 server
    written = 0
    for ln in startup:
        out.write(ln + "\n")
        written += len(ln) + 1
    clock = Clock()
    api = "(APIServer pid=26354) "
    words = "the of and to in is for on that with as by at from this be are it an or".split()
    req = 0
    next_stats = clock.t + 10
    running = 0
    while written < size:
        clock.t += rng.random() * 0.05
        ts = clock.stamp()
        req += 1
        rid = f"chatcmpl-{rng.getrandbits(128):032x}"
        if rng.random() < 0.002:
            prompt = " ".join(rng.choice(words) for _ in range(rng.randint(20000, 60000)))
            counts["long_lines"] += 1
        else:
            prompt = " ".join(rng.choice(words) for _ in range(rng.randint(20, 120)))
        lines = [
            f"{api}INFO {ts} [logger.py:71] Received request {rid}: prompt: {prompt!r}, params: SamplingParams(n=1, "
            f"presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, top_p=0.95, "
            f"top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], max_tokens={rng.randint(64, 4096)}), "
            f"prompt_token_ids: None, prompt_embeds shape: None, lora_request: None.",
            f"{api}INFO {ts} [async_llm.py:261] Added request {rid}.",
            f'{api}INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        ]
        counts["request_lines"] += 3
        if clock.t >= next_stats:
            next_stats += 10
            running = max(0, min(64, running + rng.randint(-4, 6)))
            gen = rng.uniform(800, 1500)
            lines.append(
                f"{api}INFO {ts} [loggers.py:271] Engine 000: Avg prompt throughput: {rng.uniform(0, 20000):.1f} tokens/s, "
                f"Avg generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, Waiting: {rng.randint(0, 40)} reqs, "
                f"GPU KV cache usage: {rng.uniform(0, 100):.1f}%, Prefix cache hit rate: {rng.uniform(0, 90):.1f}%"
            )
            acc = rng.randint(100, 900)
            drafted = acc + rng.randint(100, 900)
            lines.append(
                f"{api}INFO {ts} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {1 + acc / max(1, drafted // 3):.2f}, "
                f"Accepted throughput: {acc / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
                f"Accepted: {acc} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: "
                f"{rng.random():.3f}, {rng.random():.3f}, {rng.random():.3f}, Avg Draft acceptance rate: {100 * acc / drafted:.1f}%"
            )
            counts["throughput"] += 1
            counts["spec_decode"] += 1
        if rng.random() < 0.001:
            for r in range(8):
                lines.append(
                    f"(Worker_TP{r} pid={4000 + r}) WARNING {ts} [custom_all_reduce.py:136] Custom allreduce is disabled "
                    "because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify "
                    "disable_custom_all_reduce=True explicitly."
                )
                counts["warning"] += 1
        text = "\n".join(lines) + "\n"
        out.write(text)
        written += len(text.encode())
    return counts


def sglang(out, size: int, rng: random.Random) -> dict[str, int]:  # type: ignore[no-untyped-def]
    counts = {"decode_batch": 0, "prefill_batch": 0, "warning": 0}
    written = 0
    t = 18 * 3600 + 1 * 60 + 45
    running = 0
    while written < size:
        t += rng.random() * 0.5
        s = int(t)
        ts = f"2026-10-18 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
        lines = []
        if rng.random() < 0.1:
            running = min(48, running + 1)
            lines.append(
                f"[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: {rng.randint(1000, 32768)}, #cached-token: "
                f"{rng.randint(0, 5000)}, token usage: {rng.random():.2f}, #running-req: {running}, #queue-req: "
                f"{rng.randint(0, 20)}, input throughput (token/s): {rng.uniform(5000, 25000):.2f}, cuda graph: False"
            )
            counts["prefill_batch"] += 1
        else:
            lines.append(
                f"[{ts} TP0] Decode batch, #running-req: {running}, #token: {rng.randint(10000, 900000)}, token usage: "
                f"{rng.random():.2f}, accept len: {rng.uniform(1, 3):.2f}, accept rate: {rng.random():.2f}, cuda graph: True, "
                f"gen throughput (token/s): {rng.uniform(200, 500):.2f}, #queue-req: {rng.randint(0, 20)}"
            )
            counts["decode_batch"] += 1
        if rng.random() < 0.001:
            for r in range(8):
                lines.append(
                    f"[{ts} TP{r}] Using KV cache scaling factor 1.0 for fp8_e4m3. This may cause accuracy issues."
                )
        text = "\n".join(lines) + "\n"
        out.write(text)
        written += len(text.encode())
    return counts


PROFILES = {"vllm-requests": vllm_requests, "sglang": sglang}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="vllm-requests")
    ap.add_argument("--size", default="100M", help="approximate size, e.g. 100M, 2G")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    with open(a.output, "w", encoding="utf-8") as out:
        counts = PROFILES[a.profile](out, parse_size(a.size), rng)
    Path(a.output + ".json").write_text(json.dumps({"profile": a.profile, "counts": counts}, indent=1))
    print(json.dumps(counts), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
