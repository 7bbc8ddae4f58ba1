"""Tests of the workloads: deterministic inputs and weights, shapes, and what each model must compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertModel

from accelbench.errors import UserError
from accelbench.workloads._text import CLS_ID, PAD_ID, SEP_ID, PooledBert, masked_mean
from accelbench.workloads.base import Inputs, Workload
from accelbench.workloads.bert import BertBase
from accelbench.workloads.minilm import SENTENCE_TRIPLES, MiniLM, load_weights, minilm_config, model_dir
from accelbench.workloads.resnet50 import ResNet50

WORKLOADS = [ResNet50(), BertBase(), MiniLM()]
SAMPLE_SHAPES = {
    ("resnet50", "tiny"): (1, 3, 32, 32),
    ("resnet50", "standard"): (1, 3, 224, 224),
    ("bert-base", "tiny"): (1, 16),
    ("bert-base", "standard"): (1, 128),
    ("minilm-l6", "tiny"): (1, 32),
    ("minilm-l6", "standard"): (1, 128),
}
TINY_OUTPUT = {"resnet50": (1, 10), "bert-base": (1, 64), "minilm-l6": (1, 384)}


def run(model: torch.nn.Module, inputs: Inputs) -> np.ndarray:
    """One eager forward of ``inputs`` through ``model``."""
    with torch.no_grad():
        return model(*(torch.from_numpy(array) for array in inputs)).numpy()


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """Whether two models hold bitwise-identical parameters and buffers."""
    left, right = a.state_dict(), b.state_dict()
    return left.keys() == right.keys() and all(torch.equal(left[k], right[k]) for k in left)


def ids(workload: Workload) -> str:
    return workload.name


@pytest.fixture(scope="module")
def minilm_tiny() -> torch.nn.Module:
    return MiniLM().build_model("tiny", 0)


@pytest.fixture(scope="module")
def resnet_standard() -> torch.nn.Module:
    """The one standard ResNet-50 build of this file."""
    torch.set_num_threads(2)
    return ResNet50().build_model("standard", 0)


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_sample_is_deterministic_in_size_seed_index(workload: Workload) -> None:
    first, second = workload.make_sample("tiny", 3, 5), workload.make_sample("tiny", 3, 5)
    assert len(first) == len(workload.input_names())
    for a, b in zip(first, second, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
@pytest.mark.parametrize("other", [("tiny", 3, 6), ("tiny", 4, 5)], ids=["index", "seed"])
def test_sample_changes_with_index_and_seed(workload: Workload, other: tuple[str, int, int]) -> None:
    base = workload.make_sample("tiny", 3, 5)
    changed = workload.make_sample(*other)
    assert any(not np.array_equal(a, b) for a, b in zip(base, changed, strict=True))


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
@pytest.mark.parametrize("size", ["tiny", "standard"])
def test_sample_shapes_and_dtypes(workload: Workload, size: str) -> None:
    sample = workload.make_sample(size, 0, 0)
    expected_dtype = np.float32 if workload.name == "resnet50" else np.int64
    for array in sample:
        assert array.shape == SAMPLE_SHAPES[(workload.name, size)]
        assert array.dtype == expected_dtype


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_unknown_size_is_a_user_error(workload: Workload) -> None:
    with pytest.raises(UserError, match="huge"):
        workload.make_sample("huge", 0, 0)
    with pytest.raises(UserError):
        workload.build_model("huge", 0)


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_tiny_build_is_deterministic_per_seed(workload: Workload) -> None:
    model = workload.build_model("tiny", 0)
    assert not model.training
    assert same_weights(model, workload.build_model("tiny", 0))
    other_seed = workload.build_model("tiny", 1)
    assert same_weights(model, other_seed) == (workload.name == "minilm-l6")


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_build_leaves_global_rng_untouched(workload: Workload) -> None:
    before = torch.random.get_rng_state()
    workload.build_model("tiny", 7)
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_tiny_output_shape_and_finite(workload: Workload) -> None:
    output = run(workload.build_model("tiny", 0), workload.make_sample("tiny", 0, 0))
    assert output.shape == TINY_OUTPUT[workload.name]
    assert output.dtype == np.float32
    assert np.isfinite(output).all()


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_describe_names_the_weights(workload: Workload) -> None:
    facts = workload.describe("tiny")
    assert "weights" in facts
    assert ("seed does not change" in facts["weights"]) == (workload.name == "minilm-l6")


def test_tiny_resnet_predictions_spread_over_classes_with_clear_margins() -> None:
    workload = ResNet50()
    model = workload.build_model("tiny", 0)
    logits = np.concatenate([run(model, workload.make_sample("tiny", 0, i)) for i in range(16)])
    assert len(set(logits.argmax(axis=1).tolist())) >= 4
    top2 = np.sort(logits, axis=1)[:, -2:]
    margins = (top2[:, 1] - top2[:, 0]) / np.abs(logits).max(axis=1)
    assert np.median(margins) > 1e-2
    assert 0.5 < logits.std() < 50


def test_tiny_resnet_top1_survives_bf16() -> None:
    workload = ResNet50()
    model = workload.build_model("tiny", 0)
    samples = [torch.from_numpy(workload.make_sample("tiny", 0, i)[0]) for i in range(16)]
    with torch.no_grad():
        fp32 = torch.cat([model(x) for x in samples]).argmax(dim=1)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16 = torch.cat([model(x) for x in samples]).float().argmax(dim=1)
    assert (fp32 == bf16).float().mean().item() >= 0.9


@pytest.mark.slow
def test_standard_resnet_is_resnet50(resnet_standard: torch.nn.Module) -> None:
    parameters = sum(p.numel() for p in resnet_standard.parameters())
    assert 25_500_000 <= parameters <= 25_600_000
    workload = ResNet50()
    samples = [workload.make_sample("standard", 0, i) for i in range(8)]
    logits = np.concatenate([run(resnet_standard, sample) for sample in samples])
    assert logits.shape == (8, 1000)
    assert len(set(logits.argmax(axis=1).tolist())) >= 3


@pytest.mark.slow
def test_standard_resnet_top1_survives_bf16(resnet_standard: torch.nn.Module) -> None:
    workload = ResNet50()
    batch = torch.from_numpy(np.concatenate([workload.make_sample("standard", 0, i)[0] for i in range(8)]))
    with torch.no_grad():
        fp32 = resnet_standard(batch).argmax(dim=1)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16 = resnet_standard(batch).float().argmax(dim=1)
    assert (fp32 == bf16).sum().item() >= 7


def test_bert_sample_is_cls_words_sep_then_padding() -> None:
    workload = BertBase()
    lengths = set()
    for index in range(12):
        input_ids, mask = workload.make_sample("tiny", 0, index)
        length = int(mask.sum())
        lengths.add(length)
        np.testing.assert_array_equal(mask[0], [1] * length + [0] * (16 - length))
        assert input_ids[0, 0] == CLS_ID and input_ids[0, length - 1] == SEP_ID
        assert (input_ids[0, length:] == PAD_ID).all()
        words = input_ids[0, 1 : length - 1]
        assert ((words > SEP_ID) & (words < 1000)).all()
    assert len(lengths) > 3


def test_bert_padding_does_not_change_the_embedding() -> None:
    workload = BertBase()
    model = workload.build_model("tiny", 0)
    input_ids, mask = workload.make_sample("tiny", 0, 1)
    length = int(mask.sum())
    assert length < 16
    padded = run(model, (input_ids, mask))
    trimmed = run(model, (input_ids[:, :length].copy(), mask[:, :length].copy()))
    np.testing.assert_allclose(padded, trimmed, rtol=1e-5, atol=1e-5)


def test_masked_mean_ignores_padding() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(masked_mean(hidden, mask), torch.tensor([[2.0, 3.0]]))


@pytest.mark.slow
def test_standard_bert_is_bert_base() -> None:
    workload = BertBase()
    model = workload.build_model("standard", 0)
    parameters = sum(p.numel() for p in model.parameters())
    assert 108_000_000 <= parameters <= 110_000_000
    assert run(model, workload.make_sample("standard", 0, 0)).shape == (1, 768)


def test_minilm_matches_sentence_transformers(
    minilm_tiny: torch.nn.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    sentences = ["A man is playing a guitar.", "The stock market fell sharply today."]
    expected = SentenceTransformer(str(model_dir()), device="cpu").encode(sentences)
    workload = MiniLM()
    for sentence, reference in zip(sentences, expected, strict=True):
        embedding = run(minilm_tiny, workload.encode_text("tiny", sentence))[0]
        assert embedding.shape == (384,)
        assert abs(np.linalg.norm(embedding) - 1.0) < 1e-5
        cosine = embedding @ reference / np.linalg.norm(reference)
        assert cosine > 0.9999


def test_minilm_sanity_passes_with_real_weights(minilm_tiny: torch.nn.Module) -> None:
    verdict = MiniLM().sanity_check("tiny", lambda inputs: run(minilm_tiny, inputs))
    assert verdict.passed and verdict.value == 1.0 and verdict.threshold == 1.0
    assert verdict.name == "sentence-ranking"
    assert f"{len(SENTENCE_TRIPLES)}/{len(SENTENCE_TRIPLES)}" in verdict.detail


def test_minilm_sanity_fails_with_random_weights() -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        random_bert = BertModel(minilm_config(), add_pooling_layer=False)
    model = PooledBert(random_bert, normalize=True).eval()
    verdict = MiniLM().sanity_check("tiny", lambda inputs: run(model, inputs))
    assert not verdict.passed
    assert verdict.value < 0.5


def test_minilm_weight_loading_is_strict() -> None:
    with torch.random.fork_rng(devices=[]):
        with_pooler = BertModel(minilm_config(), add_pooling_layer=True)
    with pytest.raises(RuntimeError, match="pooler"):
        load_weights(with_pooler)


def test_minilm_text_is_truncated_to_the_size() -> None:
    workload = MiniLM()
    input_ids, mask = workload.encode_text("tiny", "word " * 100)
    assert input_ids.shape == mask.shape == (1, 32)
    assert input_ids[0, 0] == CLS_ID and input_ids[0, -1] == SEP_ID
    assert mask.all()
    short_ids, short_mask = workload.encode_text("standard", "Hello world.")
    assert short_mask.sum() == 5 and (short_ids[0, 5:] == PAD_ID).all()
