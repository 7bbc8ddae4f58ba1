"""Which replies of a served-LLM round does the ``padding`` rule flag, against the fp32 reference made with
EOS (the rule ``llm@url`` judges by) and with every special token suppressed (the rule of a server that
ignores EOS)? A check of the audit's false alarms on an honest server (stop 61: one reply of 32 at c=8,
the model's own continuation past its EOS, flagged by the EOS rule on a server that ignored EOS unasked).

Usage: ``python benchmarks/padding_reference.py ROUND [--concurrency 8]``, ROUND an ``accelbench-<n>``
folder of ``llm_endpoint_agreement.py`` (its ``accelbench.json`` beside ``../accelbench-store``).
Greedy fp32 on one thread: about 4 s a reply at 64 tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llm_endpoint_agreement import point_texts  # noqa: E402

from accelbench.endpoint.padding import padded, parting, repeated_tail  # noqa: E402
from accelbench.endpoint.prompts import salted  # noqa: E402
from tests.e2e import served_llm  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("round", type=Path)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result = json.loads((args.round / "accelbench.json").read_text())["results"][0]
    seed = int(result["settings"]["input_seed"])
    cells = args.round.parent / "accelbench-store" / "runs" / result["run_id"] / "cells"
    records = [json.loads(line) for path in cells.rglob("requests.jsonl") for line in path.open()]
    timed = [r for r in records if r.get("role", "timed") == "timed" and r["status"] == "ok"]
    folder = served_llm.model_folder(Path.home() / ".cache" / "accelbench" / "cache")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    torch.set_num_threads(1)
    count = len([r for r in timed if r["concurrency"] == args.concurrency])
    texts = point_texts(seed, count, args.concurrency)
    prompts = {p.salt: p for p in salted(tokenizer, seed, texts, "point", args.concurrency)}
    special = sorted(set(tokenizer.all_special_ids))
    flagged = {"eos": 0, "suppressed": 0}
    for record in timed:
        prompt = prompts.get(record["salt"])
        if prompt is None:
            continue
        ids = torch.tensor([tokenizer(prompt.text, add_special_tokens=False)["input_ids"]])
        references = {
            "eos": _reply(model, tokenizer, ids, args.max_tokens, None),
            "suppressed": _reply(model, tokenizer, ids, args.max_tokens, special),
        }
        verdicts = {"eos": padded(record["text"], references["eos"], False)}
        verdicts["suppressed"] = padded(record["text"], references["suppressed"], True)
        for rule, verdict in verdicts.items():
            flagged[rule] += verdict
        if any(verdicts.values()) or repeated_tail(record["text"].lstrip()):
            shared = {k: parting(record["text"].lstrip(), v.lstrip()) for k, v in references.items()}
            print(f"request {record['index']}: padded {verdicts}; shared characters {shared}")
    print(
        f"{len(timed)} replies: padded by the EOS rule {flagged['eos']}, "
        f"against the suppressed reference {flagged['suppressed']}"
    )


def _reply(model: Any, tokenizer: Any, ids: Any, max_tokens: int, suppressed: list[int] | None) -> str:
    import torch

    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=max_tokens, do_sample=False, suppress_tokens=suppressed)
    return str(tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))


if __name__ == "__main__":
    main()
