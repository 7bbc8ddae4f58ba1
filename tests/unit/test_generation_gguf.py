"""accelbench.generation.gguf_writer: the Q/K row order llama.cpp's RoPE expects."""

from __future__ import annotations

import numpy as np

from accelbench.generation.gguf_writer import permute_for_rope


def test_permute_interleaves_rotate_half_pairs_per_head() -> None:
    # 2 heads of dim 4: Hugging Face pairs rows (0, 2), (1, 3) in each head; llama.cpp wants them adjacent
    rows = np.arange(8, dtype=np.float32).reshape(8, 1)
    permuted = permute_for_rope(rows, heads=2).ravel().tolist()
    assert permuted == [0, 2, 1, 3, 4, 6, 5, 7]


def test_permute_keeps_columns_and_is_a_row_permutation() -> None:
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(64, 24)).astype(np.float32)
    permuted = permute_for_rope(weight, heads=4)
    assert permuted.shape == weight.shape
    assert sorted(map(tuple, permuted)) == sorted(map(tuple, weight))
    assert not np.array_equal(permuted, weight)
