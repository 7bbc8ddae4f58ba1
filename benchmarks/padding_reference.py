"""Which replies of a served-LLM round does the ``padding`` rule flag? Each ok timed reply against the fp32
reference the cell judges by (``sent_reference``: it stops at EOS), and, where a reply runs on past that
EOS in a padded-looking loop, against the reference continued past EOS in each way of ``RUN_ON`` (the
cell's rule since stop 62: padded only when padded against every one). A check of the audit's false alarms
on an honest server (stop 61: one reply of 32 at c=8, the model's own continuation past its EOS on a
server that ignored EOS unasked, flagged by the rule that stopped at EOS).

Usage: ``python benchmarks/padding_reference.py ROUND [--concurrency 8]``, ROUND an ``accelbench-<n>``
folder of ``llm_endpoint_agreement.py`` (its ``accelbench.json`` beside ``../accelbench-store``).
Greedy fp32 on one thread: about 4 s a reply at 64 tokens, three more for a reply that runs on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llm_endpoint_agreement import point_texts  # noqa: E402

from accelbench.endpoint.accuracy import run_on, runs_on  # noqa: E402
from accelbench.endpoint.padding import padded  # noqa: E402
from accelbench.endpoint.prompts import salted  # noqa: E402
from accelbench.endpoint.records import RequestRecord  # noqa: E402
from accelbench.generation.base import GenerationContext  # noqa: E402
from accelbench.generation.models import load_model  # noqa: E402
from accelbench.generation.reference import RUN_ON, sent_reference  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("round", type=Path)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    result = json.loads((args.round / "accelbench.json").read_text())["results"][0]
    seed = int(result["settings"]["input_seed"])
    cells = args.round.parent / "accelbench-store" / "runs" / result["run_id"] / "cells"
    lines = [json.loads(line) for path in cells.rglob("requests.jsonl") for line in path.open()]
    records = [RequestRecord.from_dict(r) for r in lines if r.get("role", "timed") == "timed"]
    timed = [r for r in records if r.ok and r.concurrency == args.concurrency]
    cache = Path.home() / ".cache" / "accelbench" / "cache"
    model = load_model("smollm2-135m", cache)
    tokenizer = AutoTokenizer.from_pretrained(model.folder)
    texts = point_texts(seed, len(timed), args.concurrency)
    prompts = {p.salt: p for p in salted(tokenizer, seed, texts, "point", args.concurrency)}
    timed = [r for r in timed if r.salt in prompts]
    ids = [list(tokenizer(prompts[r.salt].text, add_special_tokens=False)["input_ids"]) for r in timed]
    ctx = GenerationContext(cache / "llm-stacks")
    reference = sent_reference(model, ids, args.max_tokens, ctx)
    eos = [str(tokenizer.decode(list(reply.tokens), skip_special_tokens=True)) for reply in reference.replies]
    ways = run_on(model, tokenizer, (timed, eos), (ids, [args.max_tokens] * len(timed)), ctx)
    by_eos = by_rule = ran_on = 0
    for i, (record, text) in enumerate(zip(timed, eos, strict=True)):
        flagged = padded(record.text, text)
        verdict = flagged and all(padded(record.text, way) for way in ways.get(i, ()))
        by_eos, by_rule, ran_on = by_eos + flagged, by_rule + verdict, ran_on + runs_on(record.text, text)
        if flagged:
            each = {name: padded(record.text, way) for name, way in zip(RUN_ON, ways.get(i, ()), strict=True)}
            print(f"request {record.index} ({record.salt}): padded by the EOS reference; run on {each}")
    print(
        f"{len(timed)} replies at c={args.concurrency}, {ran_on} run on past the reference's EOS: padded "
        f"by the reference that stops at EOS {by_eos}, by the audit's rule {by_rule}"
    )


if __name__ == "__main__":
    main()
