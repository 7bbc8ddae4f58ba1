"""The expressiveness workloads: deterministic, and each genuinely the kind of work it claims to be."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accelbench import registry
from accelbench.errors import UserError
from accelbench.workloads.base import Variant
from accelbench.workloads.expressive import EXPRESSIVE_WORKLOADS
from accelbench.workloads.expressive.dlrm_bags import DlrmBags
from accelbench.workloads.expressive.dynamic_seq import DynamicSeq
from accelbench.workloads.expressive.gnn_sage import GnnSage
from accelbench.workloads.expressive.moe_topk import MoeTopk
from accelbench.workloads.expressive.ssm_scan import SsmScan


def run(model: torch.nn.Module, sample: tuple[np.ndarray, ...]) -> torch.Tensor:
    with torch.inference_mode():
        return model(*(torch.from_numpy(a) for a in sample))


@pytest.mark.parametrize("name", EXPRESSIVE_WORKLOADS)
def test_registered_seeded_and_deterministic(name: str) -> None:
    workload = registry.instantiate(registry.resolve("workload", (name,))[name])
    assert workload.quality_metric == "cosine"
    first, again = workload.make_sample("tiny", 3, 5), workload.make_sample("tiny", 3, 5)
    other = workload.make_sample("tiny", 3, 6)
    assert len(first) == len(workload.input_names())
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    out_a = run(workload.build_model("tiny", 3), first)
    out_b = run(workload.build_model("tiny", 3), first)
    out_c = run(workload.build_model("tiny", 4), first)
    assert torch.equal(out_a, out_b) and not torch.allclose(out_a, out_c)
    assert torch.isfinite(out_a).all() and out_a.std() > 0
    assert workload.describe("standard")["input"]
    with pytest.raises(UserError):
        workload.make_sample("huge", 0, 0)


def test_gnn_aggregates_over_the_edges_it_is_given() -> None:
    workload = GnnSage()
    model = workload.build_model("tiny", 0)
    features, edges = workload.make_sample("tiny", 0, 0)
    assert edges.dtype == np.int64 and edges.shape == (2, 613) and edges.max() < features.shape[0]
    degree = np.bincount(edges[0], minlength=features.shape[0])
    assert degree.max() > 5 * max(degree.mean(), 1)  # irregular: hubs
    shuffled = edges[:, np.random.default_rng(1).permutation(edges.shape[1])]
    base = run(model, (features, edges))
    assert torch.allclose(base, run(model, (features, shuffled)), atol=1e-5)  # scatter-add: order-free
    assert not torch.allclose(base, run(model, (features, edges[:, :300].copy())))


def test_dlrm_bags_are_sums_of_embedding_rows_split_by_offsets() -> None:
    workload = DlrmBags()
    model = workload.build_model("tiny", 0)
    dense, indices, offsets = workload.make_sample("tiny", 0, 2)
    assert indices.dtype == offsets.dtype == np.int64 and offsets[0] == 0
    sizes = np.diff(np.append(offsets, indices.size))
    assert len(set(sizes.tolist())) > 1  # bags of different sizes
    pooled = model.bags(torch.from_numpy(indices), torch.from_numpy(offsets))
    table = model.bags.weight.detach()
    starts = [*offsets.tolist(), indices.size]
    for bag in range(len(offsets)):
        rows = torch.from_numpy(indices[starts[bag] : starts[bag + 1]])
        assert torch.allclose(pooled[bag], table[rows].sum(0), atol=1e-5)
    moved = offsets.copy()
    moved[1:] = np.minimum(moved[1:] + 1, indices.size)
    assert not torch.allclose(run(model, (dense, indices, offsets)), run(model, (dense, indices, moved)))


def test_moe_routes_each_token_to_its_top_k_experts_only() -> None:
    workload = MoeTopk()
    model = workload.build_model("tiny", 0)
    (tokens,) = workload.make_sample("tiny", 0, 0)
    x = torch.from_numpy(tokens)[0]
    with torch.inference_mode():
        out = model(torch.from_numpy(tokens))[0]
        weights, chosen = torch.softmax(model.router(x), -1).topk(2, -1)
        weights = weights / weights.sum(-1, keepdim=True)
        for t in range(x.shape[0]):
            expected = sum(weights[t, j] * model.experts[int(chosen[t, j])](x[t]) for j in range(2))
            assert torch.allclose(out[t], expected, atol=1e-5)
    assert len(set(chosen.flatten().tolist())) > 2  # the data decide which experts work


def test_scan_is_causal_and_matches_the_recurrence() -> None:
    workload = SsmScan()
    model = workload.build_model("tiny", 0)
    (sequence,) = workload.make_sample("tiny", 0, 0)
    changed = sequence.copy()
    changed[:, 20] += 1.0
    base, after = run(model, (sequence,)), run(model, (changed,))
    assert torch.equal(base[:, :20], after[:, :20]) and not torch.allclose(base[:, 20:], after[:, 20:])
    x = torch.from_numpy(sequence)
    with torch.inference_mode():
        delta = torch.nn.functional.softplus(model.delta(x))[0]
        b, c = model.b(x)[0], model.c(x)[0]
        a = -torch.exp(model.log_a)
        h = torch.zeros_like(a)
        for t in range(x.shape[1]):
            h = torch.exp(delta[t, :, None] * a) * h + (delta[t] * x[0, t])[:, None] * b[t]
            y = (h * c[t]).sum(-1) + model.skip * x[0, t]
            assert torch.allclose(base[0, t], y, rtol=1e-4, atol=1e-4)


def test_dynamic_seq_has_a_different_length_per_sample_and_a_fixed_output() -> None:
    workload = DynamicSeq()
    model = workload.build_model("tiny", 0)
    samples = [workload.make_sample("tiny", 0, i) for i in range(8)]
    lengths = {s[0].shape[1] for s in samples}
    assert len(lengths) >= 5 and min(lengths) >= 5 and max(lengths) <= 40
    assert {tuple(run(model, s).shape) for s in samples} == {(1, 32)}


def test_a_variant_changes_the_shape_record() -> None:
    variant = Variant("s1-v0", {"hidden": 40, "experts": 5})
    model = MoeTopk().build_model("tiny", 0, variant)
    assert len(model.experts) == 5 and model.experts[0].up.out_features == 40
