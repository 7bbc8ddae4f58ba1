"""The ``generation`` result section's arithmetic: KV-cache bytes, the per-query cost, the headline."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from accelbench.generation.figures import kv_cache_bytes_per_token, query_cost
from accelbench.sections import GenerationFigures


def test_kv_cache_bytes_follow_the_config(tmp_path: Path) -> None:
    config = {"num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576, "num_hidden_layers": 30}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert kv_cache_bytes_per_token(tmp_path) == 2 * 30 * 3 * 64 * 4  # smollm2-135m: 46 KB per token
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_key_value_heads": None, "head_dim": 32}))
    assert kv_cache_bytes_per_token(tmp_path) == 2 * 30 * 9 * 32 * 4


def _generation(prompt_tokens: float, reply_tokens: float) -> GenerationFigures:
    """The golden result's generation section with 1000 parameters and these mean token counts."""
    stored = json.loads((Path(__file__).parent.parent / "golden" / "result_v7.json").read_text())
    golden = GenerationFigures.from_dict(stored["generation"])
    return replace(golden, params=1000, mean_prompt_tokens=prompt_tokens, mean_output_tokens=reply_tokens)


def test_a_query_costs_two_flops_per_parameter_per_token_and_reads_the_weights_per_step() -> None:
    cost = query_cost("smollm2-135m", "standard", _generation(30.0, 10.0))
    assert cost.flops == 2 * 1000 * 40
    assert cost.state_bytes == 4000 and cost.bytes_moved == 4000 * 10
    assert cost.arithmetic_intensity == pytest.approx(80_000 / 40_000)
    single = query_cost("tiny-llama", "tiny", _generation(5.0, 1.0))
    assert single.bytes_moved == 4000 and "2 x params" in single.method
