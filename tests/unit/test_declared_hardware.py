"""A ``--serve-url`` server's chips, declared (issue 42 item 4): a chip and count or a machine-facts file
from ``accelbench hw --json``, stored with provenance, giving per-chip figures marked declared."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from rich.console import Console

from accelbench.config import suite, with_overrides
from accelbench.errors import UserError
from accelbench.hardware.declared import declared_match, resolve_declaration
from accelbench.hardware.detect import Gpu, machine_to_dict
from accelbench.report.documents import served_chips
from accelbench.report.endpoint import curve_table, per_chip_document
from tests.unit.test_chip_match import _machine
from tests.unit.test_report_endpoint import _result


def test_a_chip_and_count_resolves_with_its_provenance() -> None:
    chips, source = resolve_declaration("NVIDIA H100 SXM x8")
    assert chips == "NVIDIA H100 SXM x 8" and "declared by the user" in source and "not detected" in source
    assert resolve_declaration("nvidia h100 sxm")[0] == "NVIDIA H100 SXM x 1"
    match = declared_match(chips, source)
    assert (match.basis, match.count) == ("declared", 8.0) and match.chip is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [("NVIDIA H1000 x8", "unknown chip 'NVIDIA H1000'"), ("", "empty"), ("/nope/hw.json", "no such file")],
)
def test_a_bad_declaration_is_a_one_line_error(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        resolve_declaration(text)


def test_a_machine_facts_file_declares_its_gpus_or_its_cpu_share(tmp_path: Path) -> None:
    gpus = tuple(Gpu(i, "NVIDIA H100 80GB HBM3", 80 * 10**9, "550") for i in range(4))
    server = dataclasses.replace(_machine("AMD EPYC 9654 96-Core Processor", "unknown", vm=False), gpus=gpus)
    path = tmp_path / "hw.json"
    path.write_text(json.dumps({**machine_to_dict(server), "chip": {"key": "ignored"}}))
    chips, source = resolve_declaration(str(path))
    assert chips == "NVIDIA H100 SXM x 4" and "4 of the GPUs in the machine-facts file" in source
    cpu_only = dataclasses.replace(server, gpus=())
    path.write_text(json.dumps(machine_to_dict(cpu_only)))
    chips, source = resolve_declaration(str(path))
    assert chips == "CPU: AMD EPYC 9654 x 0.0208333" and "2 cores / 96 cores per socket" in source
    path.write_text("{not json")
    with pytest.raises(UserError, match="not a machine-facts file"):
        resolve_declaration(str(path))


def test_the_declaration_needs_a_serve_url() -> None:
    declared = {"serve_hardware": "NVIDIA H100 SXM x 8", "serve_hardware_source": "declared"}
    with pytest.raises(UserError, match="--serve-url was not given"):
        with_overrides(suite("tiny"), declared)
    config = with_overrides(suite("tiny"), {**declared, "serve_url": "http://127.0.0.1:9"})
    assert config.to_dict()["serve_hardware"] == "NVIDIA H100 SXM x 8"


def test_a_remote_servers_curve_has_per_chip_figures_marked_declared() -> None:
    """800 output tokens/s on 8 declared H100s: 100 per chip, marked ``decl`` in the table and
    ``declared`` in show --json; without a declaration the column stays empty."""
    result = _result([{"concurrency": 8, "requests": 16, "output_tokens_per_s": 800.0}])
    config = {"serve_hardware": "NVIDIA H100 SXM x 8", "serve_hardware_source": "declared by the user"}
    chips = served_chips([result], {}, None, config=config)
    assert chips[result.cell.key].count == 8.0
    document = per_chip_document([result], chips)["served_llm_per_chip"][0]
    assert document["declared"] and document["points"][0]["output_tokens_per_s_per_chip"] == 100.0
    table = curve_table([result], chips=chips)
    console = Console(width=300, record=True)
    console.print(table)
    text = console.export_text()
    assert "100 decl" in text and "declared: 8 x NVIDIA H100 SXM" in text
    assert served_chips([result], {}, None) == {}


def test_a_remote_servers_curve_has_per_watt_and_per_dollar_figures_with_their_source_class() -> None:
    """800 output tokens/s on 8 declared H100 SXM (700 W TDP, and no NVIDIA price: an analyst's $33.6k
    estimate): 800 / 5600 W = 0.143 tokens/s per TDP watt, 800 / 268.8 k$ = 2.98 per k$, each marked
    declared with the class of its chip fact."""
    result = _result([{"concurrency": 8, "requests": 16, "output_tokens_per_s": 800.0}])
    config = {"serve_hardware": "NVIDIA H100 SXM x 8", "serve_hardware_source": "declared by the user"}
    chips = served_chips([result], {}, None, config=config)
    document = per_chip_document([result], chips)["served_llm_per_chip"][0]
    watts, usd = document["denominators"]["tdp_w"], document["denominators"]["usd"]
    assert watts["value"]["central"] == 8 * 700.0 and watts["provenance"] == "declared; datasheet"
    assert watts["source_class"] == "review"  # chips.csv quotes NVIDIA's TDP through Epoch AI
    assert usd["value"]["central"] == 8 * 33600.0 and usd["source_class"] == "estimate"
    assert document["denominators"]["chip"]["provenance"] == "declared"
    point = document["points"][0]
    assert point["output_tokens_per_s_per_tdp_w"] == pytest.approx(800 / 5600)
    assert point["output_tokens_per_s_per_usd"] == pytest.approx(800 / 268800)
    console = Console(width=400, record=True)
    console.print(curve_table([result], chips=chips))
    text = console.export_text()
    assert "0.143" in text and "2.98" in text
    assert "output tok/s per TDP W (" in text and "source class: review" in text
