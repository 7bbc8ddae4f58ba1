"""accelbench.training: planning filter, olympic mean, data, a run to quality with its MLPerf log checked,
the declared precision (TF32 off unless declared) and the rule set named for what it is (``short``)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from accelbench import runner, training
from accelbench.cellspec import CellSpec, Folders, Refs
from accelbench.config import suite, with_overrides
from accelbench.errors import Unsupported, UserError
from accelbench.head import Head
from accelbench.registry import WORKLOADS
from accelbench.report.export import export_results
from accelbench.results import Cell, Result
from accelbench.sections import TrainingFigures
from accelbench.training import data, mllog, precision, rules, summary
from accelbench.training.body import TrainingBody
from accelbench.training.loop import STACKS, Group, RunRecord, Trainer
from accelbench.training.measure import measure
from accelbench.training.settings import TrainingSettings
from accelbench.training.workloads import DigitsResNet, Recipe, TopicsMiniLM


@pytest.fixture(autouse=True)
def _one_thread() -> object:
    """Training cells cap tiny models at one thread; do the same here (two threads crawl on a loaded VM)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def tf32_switches() -> object:
    """Torch's TF32 switches put back as they were after the test."""
    import torch

    before = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before[:2]
    torch.set_float32_matmul_precision(before[2])


def _run(seed: int, time_s: float, converged: bool = True) -> RunRecord:
    return RunRecord(seed, time_s, converged, 0.98 if converged else 0.5, 3, 100)


def test_training_workloads_are_planned_only_with_train_to_quality() -> None:
    config = with_overrides(suite("tiny"), {"scenarios": ("single-stream", "train-to-quality")})
    pairs = {(p.cell.workload, p.cell.scenario) for p in runner.plan(config)}
    assert ("digits-resnet", "train-to-quality") in pairs
    assert ("topics-minilm", "train-to-quality") in pairs
    assert ("resnet50", "single-stream") in pairs
    assert not {pair for pair in pairs if (pair[0] in training.WORKLOADS) != (pair[1] == training.SCENARIO)}
    drivers = {p.cell.workload: p.driver_ref for p in runner.plan(config)}
    assert drivers["digits-resnet"] == "accelbench.training.measure:measure"
    assert drivers["resnet50"] == "accelbench.cell.inference:measure"


def test_olympic_mean_drops_fastest_and_slowest_and_unconverged_counts_as_slowest() -> None:
    runs = [_run(0, 1.0), _run(1, 2.0), _run(2, 3.0), _run(3, 4.0), _run(4, 0.5, converged=False)]
    assert summary.olympic_mean_s(runs) == pytest.approx((2.0 + 3.0 + 4.0) / 3)
    two_failed = [*runs[:3], _run(3, 0.1, False), _run(4, 0.2, False)]
    assert summary.olympic_mean_s(two_failed) is None
    assert summary.olympic_mean_s([_run(0, 1.0), _run(1, 3.0)]) == pytest.approx(2.0)


def test_scaling_efficiency_is_per_process_throughput_over_the_baseline() -> None:
    runs = [RunRecord(0, 2.0, True, 0.98, 2, 1000), RunRecord(1, 2.0, True, 0.98, 2, 1000)]
    assert summary.samples_per_s_per_process(runs, 2) == pytest.approx(250.0)
    assert summary.scaling_efficiency(250.0, 400.0) == pytest.approx(0.625)


def test_held_out_split_is_fixed_stratified_and_disjoint() -> None:
    sentences, labels = data.topic_sentences()
    assert len(sentences) == 300 and len(set(sentences)) == 300
    assert Counter(labels) == dict.fromkeys(("food", "health", "sport", "technology", "weather"), 60)
    codes = __import__("numpy").asarray([sorted(set(labels)).index(label) for label in labels])
    train, held = data.stratified_split(codes, 0.2, data.SPLIT_SEED)
    again = data.stratified_split(codes, 0.2, data.SPLIT_SEED)
    assert (held == again[1]).all() and not set(train) & set(held) and len(held) == 60
    digits = data.digits()
    assert (digits.train_samples, digits.eval_samples) == (1438, 359)


def test_stacks_without_a_training_path_are_unsupported() -> None:
    with pytest.raises(Unsupported, match="onnxruntime has no training path"):
        Trainer(DigitsResNet(), "tiny", data.digits(), "onnxruntime", "cpu", Group())


def test_a_run_reaches_the_target_and_its_mlperf_log_passes_the_compliance_checker(tmp_path: Path) -> None:
    trainer = Trainer(DigitsResNet(), "tiny", data.digits(), "torch-eager", "cpu", Group())
    log = tmp_path / "result_0.txt"
    run = trainer.run(7, log, "test host", None)
    assert run.converged and run.quality >= 0.97 and run.seed == 7
    assert run.samples == run.epochs * (1438 // 32) * 32
    passed, output = mllog.check(log)
    assert passed, output
    broken = tmp_path / "broken.txt"  # the checker must reject a log without run_stop
    broken.write_text("".join(line for line in log.open() if '"run_stop"' not in line))
    assert not mllog.check(broken)[0]


class _Capped(DigitsResNet):
    def recipe(self, size: str) -> Recipe:
        return dataclasses.replace(super().recipe(size), target=1.01, max_epochs=1)


def test_max_epochs_stops_a_run_that_cannot_converge_and_logs_it_aborted(tmp_path: Path) -> None:
    trainer = Trainer(_Capped(), "tiny", data.digits(), "torch-eager", "cpu", Group())
    run = trainer.run(0, tmp_path / "result_0.txt", "test host", None)
    assert not run.converged and run.epochs == 1
    assert '"status": "aborted"' in (tmp_path / "result_0.txt").read_text()
    assert mllog.check(tmp_path / "result_0.txt")[0]


def test_topics_target_is_the_stated_fraction_of_the_reference() -> None:
    workload = TopicsMiniLM()
    for size in ("tiny", "standard"):
        expected = workload.TARGET_FRACTION[size] * workload.REFERENCE[size]
        assert workload.recipe(size).target == pytest.approx(expected, abs=1e-4)


def test_training_results_render_and_export(tmp_path: Path) -> None:
    from rich.console import Console

    from accelbench.report.training import training_table

    section = {
        "runs": [
            {
                "seed": 0,
                "time_to_quality_s": 1.5,
                "converged": True,
                "quality": 0.98,
                "epochs": 2,
                "samples": 100,
            }
        ],
        "olympic_mean_s": 1.5,
        "runs_converged": 1,
        "target": 0.97,
        "quality_reached": 0.98,
        "nproc": 2,
        "samples_per_s_per_process": 100.0,
        "scaling_efficiency": 0.5,
        "energy_j": 3.0,
    }
    cell = Cell("digits-resnet", "torch-eager", "train-to-quality", size="tiny")
    result = Result(
        "r1", cell, Head("ok"), TrainingBody(TrainingFigures.from_dict(section)), driver="train-to-quality"
    )
    console = Console(record=True, width=200)
    console.print(training_table([result]))
    text = console.export_text()
    assert "50%" in text and "1.5" in text and "1/1" in text
    for fmt in ("csv", "json"):
        export_results([result], fmt, tmp_path / f"out.{fmt}")
        assert (tmp_path / f"out.{fmt}").stat().st_size > 0


def test_training_precision_is_what_the_stack_declares_and_tf32_is_off(tf32_switches: object) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # an earlier cell's
    torch.set_float32_matmul_precision("high")
    trainer = Trainer(DigitsResNet(), "tiny", data.digits(), "torch-eager", "cpu", Group())
    assert trainer.precision == precision.TrainingPrecision("fp32", "torch-eager", False, False, "highest")
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert torch.get_float32_matmul_precision() == "highest"
    assert set(precision.DECLARED) == set(STACKS) == {"torch-eager", "torch-inductor"}


def test_tf32_is_its_own_class_only_when_declared(
    tf32_switches: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(precision.DECLARED, "torch-tf32", precision.TF32)
    record = precision.apply("torch-tf32")
    assert (record.name, record.matmul_allow_tf32, record.cudnn_allow_tf32) == ("tf32", True, True)
    assert record.float32_matmul_precision == "high"
    facts = mllog.header_facts("b", "p", 0, 32, 0.1, (10, 2), record.name)
    assert facts["lowest_numerical_precision_in_linear"] == "tf32"
    with pytest.raises(Unsupported, match=r"^openvino has no training path"):
        precision.apply("openvino")


def test_the_training_rule_set_is_short_and_mlperf_names_are_refused() -> None:
    assert rules.for_run("quick") is rules.for_run("standard") is rules.SHORT
    assert set(rules.RULES) == {"short"} and not rules.SHORT.follows_mlperf
    for name in ("official", "mlperf"):
        with pytest.raises(Unsupported, match=f"--rules {name} claims MLPerf's rules.*'short'"):
            rules.for_run(name)
    assert rules.stored({}) is rules.stored({"rules": "official"}) is rules.stored({"rules": "short"})
    with pytest.raises(UserError, match="unknown training rules 'mlperf'"):
        rules.stored({"rules": "mlperf"})


def _spec(tmp_path: Path, run_rules: str) -> CellSpec:
    cell = Cell("digits-resnet", "torch-eager", "train-to-quality", size="tiny")
    folders = Folders(
        cell_dir=str(tmp_path / "cell"),
        run_dir=str(tmp_path),
        cache_dir=str(tmp_path / "cache"),
        result_path=str(tmp_path / "cell" / "outcome.json"),
    )
    return CellSpec(
        run_id="r1",
        cell=cell,
        refs=Refs(WORKLOADS["digits-resnet"], "", "accelbench.training.measure:measure"),
        rules=run_rules,
        threads=1,
        seed=0,
        input_seed=1,
        samples=16,
        folders=folders,
        settings=TrainingSettings(runs=1),
    )


def test_a_cell_stores_its_rules_and_precision(tmp_path: Path, tf32_switches: object) -> None:
    outcome = measure(_spec(tmp_path, "quick")).to_dict()
    section = outcome["training"]
    assert outcome["status"] in ("ok", "unstable"), outcome["reason"]  # the guard's: the machine's load
    assert outcome["noise"] is not None and outcome["noise"]["threshold"] > 0
    assert outcome["latency"] is None and outcome["loadgen"] is None
    assert section["rules"] == "short" and "not MLPerf Training's rules" in section["rules_summary"]
    assert outcome["effective_precision"] == section["precision"]["name"] == "fp32"
    assert section["precision"]["matmul_allow_tf32"] is section["precision"]["cudnn_allow_tf32"] is False
    with pytest.raises(Unsupported, match="--rules official claims MLPerf's rules"):
        measure(_spec(tmp_path, "official"))
