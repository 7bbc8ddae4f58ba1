"""Input seeds: the secret from which a cell draws every input it times or audits.

The weights of a model come from ``RunConfig.seed`` (``ModelSpec.seed``: a stack may rebuild the
model from it). The *inputs* come from another seed that no stack sees before its cell ends:

* the **run's input seed** is drawn with ``secrets`` when the run starts (or given with
  ``accelbench run --input-seed N`` to replay one) and written to the store only when the run ends (the
  store's folder is reachable by a stack through ``Folders.store_cache_dir``); a result never carries it;
* each **cell's input seed** is a keyed hash of the cell's key under the run's seed (``cell_seed``): no
  two cells share inputs, so a disk cache (``CellContext.cache_dir`` is shared by a run's cells) has
  nothing to carry from one cell to the next, and knowing one cell's seed tells nothing of another's.
  It reaches the cell process through the fork's arguments, never through a file of the cell's folder,
  and is stored in the result (``settings.input_seed``) once the cell ended;
* inside the cell, each attempt and trial slot gets its own seed (``sub_seed``), and each role (timed
  pool, calibration, example batch, audit samples) a random base index drawn from it (``bases``), so no
  index range has a fixed meaning and no trial's inputs were seen by another trial's process.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np

from accelbench.errors import UserError

SEED_LIMIT = 1 << 63
"""Input seeds are whole numbers in ``[0, SEED_LIMIT)``."""
ROLES = ("pool", "calibration", "example", "audit")
"""The sample roles of a trial, each at its own drawn base index."""
BASE_LIMIT = 1 << 62
"""Base indices are drawn in ``[1, BASE_LIMIT)``: ranges of a million samples overlap with a
probability near 2**-40 (index 0, the user-model workloads' example, is never drawn)."""


def draw() -> int:
    """A fresh run input seed from the operating system's secret source."""
    return secrets.randbits(63)


def checked(value: object) -> int:
    """``value`` as an input seed; a UserError (one line) unless it is a whole number in range."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise UserError(f"input seed must be a whole number in [0, 2**63), got {str(value)[:40]!r}")
    return value


def cell_seed(run_seed: int, cell_key: str) -> int:
    """The input seed of the cell ``cell_key``: a keyed BLAKE2b of the key under the run's seed."""
    return _keyed(run_seed, cell_key)


def sub_seed(input_seed: int, *parts: object) -> int:
    """A seed of its own for ``parts`` (a role, an attempt, a trial slot) under ``input_seed``."""
    return _keyed(input_seed, "|".join(map(str, parts)))


def bases(trial_seed: int) -> dict[str, int]:
    """The drawn base index of every role (``ROLES``) of a trial."""
    rng = np.random.default_rng(trial_seed)
    return {role: int(rng.integers(1, BASE_LIMIT)) for role in ROLES}


def _keyed(key_seed: int, message: str) -> int:
    digest = hashlib.blake2b(message.encode(), key=checked(key_seed).to_bytes(8, "big"), digest_size=8)
    return int.from_bytes(digest.digest(), "big") >> 1
