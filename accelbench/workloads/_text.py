"""Pieces shared by the text-embedding workloads (``bert-base``, ``minilm-l6``).

``PooledBert`` wraps a ``transformers.BertModel`` so that ``forward(input_ids, attention_mask)`` returns
ONE tensor: the masked mean of ``last_hidden_state`` (optionally L2-normalised, as sentence-transformers
does), shape ``[1, hidden]``. ``random_tokens`` draws seeded token ids and a padded attention mask.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from accelbench.errors import UserError
from accelbench.workloads.base import SIZES

CLS_ID = 101
SEP_ID = 102
PAD_ID = 0
FIRST_WORD_ID = 104
"""First id after BERT's special tokens ([PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103)."""


def check_size(size: str, workload: str) -> None:
    """Raise ``UserError`` when ``size`` is not one of ``SIZES``."""
    if size not in SIZES:
        raise UserError(f"{workload}: unknown size {size!r}; expected one of {', '.join(SIZES)}")


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden`` [batch, seq, dim] over the positions where ``attention_mask`` is 1."""
    weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
    total = (hidden * weights).sum(dim=1)
    count = weights.sum(dim=1).clamp(min=1e-9)
    return total / count


class PooledBert(nn.Module):
    """A BERT encoder whose single output is the masked mean-pooled last hidden state."""

    def __init__(self, bert: nn.Module, normalize: bool = False) -> None:
        super().__init__()
        self.bert = bert
        self.normalize = normalize

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Embeddings ``[batch, hidden]`` of ``input_ids`` (padding masked out)."""
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooled = masked_mean(hidden, attention_mask)
        if self.normalize:
            pooled = nn.functional.normalize(pooled, p=2.0, dim=-1)
        return pooled


def random_tokens(rng: np.random.Generator, seq_len: int, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded ``(input_ids, attention_mask)``, int64 ``[1, seq_len]``: [CLS] words [SEP] then padding.

    The real length (special tokens included) is drawn from ``[max(3, seq_len // 4), seq_len]``.
    """
    length = int(rng.integers(max(3, seq_len // 4), seq_len + 1))
    ids = np.full((1, seq_len), PAD_ID, dtype=np.int64)
    ids[0, 0] = CLS_ID
    ids[0, 1 : length - 1] = rng.integers(FIRST_WORD_ID, vocab_size, size=length - 2)
    ids[0, length - 1] = SEP_ID
    mask = np.zeros((1, seq_len), dtype=np.int64)
    mask[0, :length] = 1
    return ids, mask
