"""The bundle package's pure parts: scrubbing, the archive and its manifest, the scored trials, and the
audit verdicts judged again from stored evidence with the code's own limits."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path

import pytest

from accelbench.audit_section import AuditEntry
from accelbench.bundle import rejudge
from accelbench.bundle.archive import manifest_text, parse_manifest, read_archive, write_archive
from accelbench.bundle.collect import Scrubber
from accelbench.bundle.rederive import scored_trials
from accelbench.errors import UserError
from accelbench.head import Quality

entry_of = AuditEntry.from_dict


def test_scrubber_replaces_whole_folders_only_and_drops_url_credentials() -> None:
    scrub = Scrubber.of({"store": Path("/data/me/store"), "home": Path("/data/me"), "root": Path("/")})
    text = "/data/me/store/runs/x /data/me/notes /data/meta http://user:pw@host:8000/v2 /"
    assert scrub.text(text) == "<store>/runs/x <home>/notes /data/meta http://host:8000/v2 /"


@pytest.mark.parametrize("name", ["out.tar.gz", "out.zip"])
def test_archive_round_trip_with_its_manifest(tmp_path: Path, name: str) -> None:
    files = {"bundle.json": b"{}", "cells/x/loadgen/a0-t0/mlperf_log_summary.txt": b"log\n"}
    write_archive(tmp_path / name, files, signature=b"sig")
    read = read_archive(tmp_path / name).files
    assert read == {**files, "MANIFEST": manifest_text(files).encode(), "SIGNATURE": b"sig"}
    hashes = parse_manifest(read["MANIFEST"].decode())
    assert hashes["bundle.json"] == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


@pytest.mark.parametrize("member", ["../evil", "/etc/passwd"])
def test_archive_refuses_members_that_climb_out(tmp_path: Path, member: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    path = tmp_path / "evil.tar.gz"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(UserError, match="unsafe or repeated path"):
        read_archive(path)


def test_scored_trials_are_the_last_attempt_and_back_off_round_with_reruns() -> None:
    root = "cells/c/loadgen/"
    names = ["a0-t0", "a0-t1", "a1-t0", "a1-t1", "a1-t0-b1", "a1-t1-b1", "a1-t1-b1-r", "a1-t0-search"]
    files = {f"{root}{n}/mlperf_log_summary.txt": b"" for n in names}
    assert scored_trials(files, "c") == [f"{root}a1-t0-b1", f"{root}a1-t1-b1-r"]


def test_caching_is_judged_by_the_code_limit_not_the_stored_one() -> None:
    entry = {"unique_min_s": 1.0, "repeated_min_s": 0.1, "repeats_faster_share": 1.0, "limit": 100.0}
    assert rejudge.verdict("caching", entry_of({**entry, "verdict": "pass"})).outcome == "fail"
    assert rejudge.verdict("caching", entry_of({"verdict": "pass"})).outcome == "inconclusive"


def test_repeat_output_and_precision_are_judged_from_their_evidence() -> None:
    window = {"ratio_low": 1.3, "limit": 9.0}
    assert rejudge.verdict("repeat", entry_of({"pairs": 16, "windows": [window]})).outcome == "fail"
    assert (
        rejudge.verdict("repeat", entry_of({"pairs": 16, "windows": [{"ratio_low": 1.1}]})).outcome == "pass"
    )
    assert rejudge.verdict("repeat", entry_of({"pairs": 3, "windows": []})).outcome == "inconclusive"
    assert rejudge.verdict("output", entry_of({"checked": 33})).outcome == "pass"
    assert rejudge.verdict("output", entry_of({})).outcome == "inconclusive"
    failed = {"checked": 33, "failed_check": {"problem": "x"}}
    assert rejudge.verdict("output", entry_of(failed)).outcome == "fail"
    bf16_error = {"declared": "fp32", "max_norm_abs_err": 4e-3, "samples": 45}
    judged = rejudge.verdict("precision", entry_of(bf16_error))
    assert judged.outcome == "fail" and judged.evidence["consistent_with"] == "bf16 or fp16"


def test_verify_turns_evidence_of_the_wrong_shape_into_findings_never_a_traceback(tmp_path: Path) -> None:
    import json

    from accelbench.bundle import verify
    from accelbench.bundle.collect import FORMAT

    golden = json.loads((Path(__file__).parents[1] / "golden" / "result_v7.json").read_text())
    golden["audit"]["repeat"]["windows"] = 5  # not a list of windows
    header = {"format": FORMAT, "run_id": "r", "cells": {}, "signed": False}
    files = {
        "bundle.json": json.dumps(header).encode(),
        "run.json": b'{"run_id": "r", "machine_fingerprint": "x", "config": {}}',
        "machine.json": b"{}",
        "results/000.json": json.dumps(golden).encode(),
        "results/001.json": b"[1, 2]",
    }
    write_archive(tmp_path / "b.zip", files)
    checked = verify(read_archive(tmp_path / "b.zip"))
    found = {(f.where, f.check): f for f in checked.findings}
    key = "resnet18/standard/v3-width97/onnxruntime/cpu/single-stream"
    assert found[("bundle", "manifest")].matched is True
    assert found[("bundle", "machine")].matched is False  # facts that do not load
    assert found[(key, "figures")].matched is False  # figures stored, no log to derive them from
    repeat = found[(key, "audit repeat")]
    assert repeat.matched is False and repeat.detail == "inconclusive from its evidence; stored pass"
    assert found[("results/001.json", "document")].matched is False and not checked.passed


def test_a_cell_folder_travels_as_its_logs_and_jsonl_records_only(tmp_path: Path) -> None:
    from accelbench.bundle.collect import _cell_files

    cell = tmp_path / "cells" / "c"
    (cell / "loadgen" / "a0-t0").mkdir(parents=True)
    (cell / "loadgen" / "a0-t0" / "mlperf_log_summary.txt").write_text(f"log at {tmp_path}/x\n")
    (cell / "loadgen" / "a0-t0" / "mlperf_log_trace.json").write_text("{}")
    (cell / "deep" / "er").mkdir(parents=True)
    (cell / "requests.jsonl").write_text('{"id": 1}\n')
    (cell / "deep" / "er" / "more.jsonl").write_text('{"id": 2}\n')
    for other in ("model.onnx", "spec.json", "stderr.txt", "weights.safetensors"):
        (cell / other).write_text(str(tmp_path))
    files = _cell_files(cell, "cells/c", Scrubber.of({"run": tmp_path}))
    assert files == {
        "cells/c/loadgen/a0-t0/mlperf_log_summary.txt": b"log at <run>/x\n",
        "cells/c/requests.jsonl": b'{"id": 1}\n',
        "cells/c/deep/er/more.jsonl": b'{"id": 2}\n',
    }


def test_quality_bars_are_this_codes_for_the_precision_not_the_stored_threshold() -> None:
    lowered = {"metric": "top1", "value": 0.95, "threshold": 0.5, "verdict": "pass"}
    assert rejudge.verdict("alternate_seed", entry_of(lowered), "fp32").outcome == "fail"
    assert rejudge.verdict("alternate_seed", entry_of(lowered), "bf16").outcome == "pass"  # bf16's bar: 0.9
    quality = Quality("top1", 0.95, threshold=0.5, passed=True, samples_checked=32)
    assert rejudge.quality_failures(quality, None, "fp32") == ["top1"]
    assert rejudge.quality_failures(dataclasses.replace(quality, value=0.995), None, "fp32") == []
    sanity = Quality("ranking", 0.4, threshold=0.5, passed=False, samples_checked=32)
    assert rejudge.quality_failures(None, sanity, "fp32") == ["ranking"]


def test_a_server_search_is_rebuilt_from_its_probe_logs_and_back_off_rounds() -> None:
    from accelbench.bundle.search import derived_search, search_differences
    from accelbench.scenarios.server_search import BACKOFF

    golden = Path(__file__).parents[1] / "golden" / "loadgen"
    valid = (golden / "server_summary.txt").read_bytes()  # VALID at 464.526 QPS
    invalid = (golden / "server_over_bound_summary.txt").read_bytes()  # INVALID at 461.924 QPS
    root = "cells/c/loadgen/"
    files = {
        f"{root}a0-t0-search/p0/mlperf_log_summary.txt": invalid,
        f"{root}a0-t0-search/p1/mlperf_log_summary.txt": valid,
        f"{root}a0-t0/mlperf_log_summary.txt": invalid,  # the scored round that backed off
        f"{root}a0-t0-b1/mlperf_log_summary.txt": valid,
    }
    found = derived_search(files, "c", [f"{root}a0-t0-b1"])
    assert found is not None
    assert found.max_qps == pytest.approx(461.924 * BACKOFF)
    assert [(p.target_qps, p.valid) for p in found.probes] == [(461.924, False), (464.526, True)]
    assert found.bracket == pytest.approx((461.924 * BACKOFF, 461.924))
    stored = found.record()
    assert search_differences(found, stored) == []
    claimed = dataclasses.replace(stored, max_qps=464.526)
    assert search_differences(found, claimed) == [("max_qps", found.max_qps, 464.526)]
    # the run stores its exact targets; LoadGen logs them with 6 significant digits (a fresh server bundle
    # failed to verify on that alone): the stored value is the logged one when it prints the same
    exact = dataclasses.replace(
        stored,
        probes=tuple(dataclasses.replace(p, target_qps=p.target_qps + 4e-4) for p in stored.probes),
    )
    assert search_differences(found, exact) == []
    off = dataclasses.replace(stored, probes=(dataclasses.replace(stored.probes[0], target_qps=461.93),))
    assert [field for field, *_ in search_differences(found, off)] == ["probes"]


@pytest.mark.parametrize(
    "shape", [{"windows": 5}, {"windows": [1]}, {"sighting_windows": "x"}, {"floor": [1]}, {"floor": 3}]
)
def test_repeat_evidence_of_the_wrong_shape_is_unreadable_never_lenient(shape: dict[str, object]) -> None:
    entry = entry_of({"pairs": 16, "windows": [{"ratio_low": 1.0}], **shape, "verdict": "pass"})
    with pytest.raises(TypeError, match="is not a"):
        rejudge.verdict("repeat", entry)
    honest = {"pairs": 16, "windows": [{"ratio_low": 1.0}], "floor": {}, "sighting_windows": []}
    assert rejudge.verdict("repeat", entry_of(honest)).outcome == "pass"


def test_publish_lists_each_cells_headline_with_its_interval_and_leaves_out_a_broken_document(
    tmp_path: Path,
) -> None:
    import json

    from accelbench.bundle.collect import FORMAT
    from accelbench.bundle.publish import entries_of
    from accelbench.hardware.chips import load_chips

    golden = json.loads((Path(__file__).parents[1] / "golden" / "result_v8.json").read_text())
    header = {"format": FORMAT, "run_id": "r", "cells": {}, "signed": False}
    files = {
        "bundle.json": json.dumps(header).encode(),
        "run.json": b'{"run_id": "r", "machine_fingerprint": "x", "config": {"rules": "quick"}}',
        "machine.json": b"{}",
        "results/000.json": json.dumps(golden).encode(),
        "results/001.json": json.dumps({**golden, "reason": 5}).encode(),  # a field of the wrong type
    }
    folder = tmp_path / "bundles"
    folder.mkdir()
    write_archive(folder / "b.zip", files)
    entries, listed = entries_of(folder, load_chips())
    assert [(item.name, item.verified) for item in listed] == [("b.zip", False)]
    (entry,) = entries
    assert entry.ci == tuple(golden["figures"]["ci"]) and entry.value == golden["figures"]["value"]
    assert entry.run_id == "r" and entry.machine == "? (None)" and entry.precision == "fp32"
