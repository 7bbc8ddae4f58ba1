"""An endpoint stack's code runs in a SUT process of its own; the cell reads its facts as data."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from accelbench.cellspec import CellSpec, Folders, Refs
from accelbench.endpoint.facts import endpoint_facts, facts_of
from accelbench.endpoint.settings import EndpointSettings
from accelbench.results import Cell

NOTE = "planted-endpoint-import.json"
"""The note ``tests.e2e.planted_endpoint`` writes where it is imported (never imported here)."""


def _spec(tmp_path: Path, stack_ref: str) -> CellSpec:
    cell = Cell("tiny-llama", "llm@planted", "single-stream", "cpu", "standard", "canonical")
    return CellSpec(
        run_id="r1",
        cell=cell,
        refs=Refs("w", stack_ref, "endpoint"),
        rules="quick",
        threads=1,
        seed=0,
        input_seed=7,
        samples=1,
        folders=Folders(str(tmp_path / "cell"), str(tmp_path), str(tmp_path), str(tmp_path / "outcome.json")),
        settings=EndpointSettings(),
    )


def test_a_plugin_endpoint_stack_is_imported_in_its_sut_process_only(tmp_path: Path) -> None:
    facts = endpoint_facts(_spec(tmp_path, "tests.e2e.planted_endpoint:NotingEndpoint"))
    named = (facts.name, facts.server, facts.precision, facts.unavailable_reason)
    assert named == ("llm@planted-noting", "url", "bf16", None)
    assert facts.versions["accelbench"]
    (note,) = (tmp_path / "cell").glob(f"sut-describe/**/{NOTE}")
    imported = json.loads(note.read_text())
    assert imported["pid"] != os.getpid() and imported["harness_modules"] == []
    assert not [
        m for m in sys.modules if m.endswith("planted_endpoint") and m != "tests.e2e.planted_endpoint"
    ]


def test_a_stack_naming_a_server_accelbench_does_not_start_is_unavailable(tmp_path: Path) -> None:
    facts = endpoint_facts(_spec(tmp_path, "tests.e2e.planted_endpoint:OwnServerEndpoint"))
    assert facts.unavailable_reason is not None
    assert (
        "'my-caching-server'" in facts.unavailable_reason and "url, transformers" in facts.unavailable_reason
    )


def test_a_malformed_reply_reads_as_unavailable_never_as_a_crash() -> None:
    facts = facts_of({"ok": True, "server": 3, "versions": ["x"], "name": "n" * 999})
    assert facts.unavailable_reason is not None and facts.versions == {} and len(facts.name) == 200
