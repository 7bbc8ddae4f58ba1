"""MLPerf history: bundled rows and ids, CSV import (incl. a property test), result logs and olympic means."""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench.errors import UserError
from accelbench.mlperf.history import COLUMNS, REQUIRED_COLUMNS, bundled_history
from accelbench.mlperf.importer import IMPORTED_FILE, LogImport, import_csv, import_logs, load_history
from accelbench.mlperf.logs import olympic_mean, read_run, score_directory
from accelbench.store import open_store

GOLDEN = Path(__file__).parent.parent / "golden" / "mlperf"
HEADER = (
    "round,submitter,division,availability,system_name,system_dir,chip_key,accelerator_count,"
    "time_min_from_logs,source"
)
ROW = "v4.0,Acme,closed,onprem,Acme Box 8,acme_box8,NVIDIA H100 SXM,8,12.5,https://example.org/acme-v4.0"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a folder, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    open_store(folder).close()
    return folder


# ------------------------------------------------------------------------------------------ bundled


def test_bundled_history_has_unique_ids_and_the_essay_entries() -> None:
    history = bundled_history()
    ids = [e.id.lower() for e in history]
    assert len(ids) == 68 and len(set(ids)) == 68
    v100 = history.require("v0.5/nvidia/dgx1_multi_ngc18.11_mxnet")
    assert (v100.accelerator_count, v100.time_s) == (640, pytest.approx(6.242 * 60))
    tpu = history.require("V1.0/Google/TPU-V4-6912-TF")  # case-insensitive
    assert (tpu.accelerator_count, tpu.time_s, tpu.availability) == (
        3456,
        pytest.approx(0.229 * 60),
        "preview",
    )
    assert history.get("v0.5/google/tpu~tpuv3-512-tpuv2-8") is not None  # four v0.5 Google rows share 'tpu'
    assert history.get("v0.5/google/tpu") is None


def test_entry_without_log_time_uses_the_official_score() -> None:
    entry = bundled_history().require("v0.7/nvidia/dgxa100_n230_ngc20.06_mxnet")
    assert entry.time_s == pytest.approx(0.76 * 60) and entry.time_basis == "official MLCommons score"
    assert bundled_history().require("v1.0/nvidia/dgxa100_n310_ngc21.05_mxnet").time_s is None


def test_unknown_entry_names_close_ids() -> None:
    with pytest.raises(UserError, match=re.escape("did you mean v0.5/nvidia/dgx1_multi_ngc18.11_mxnet")):
        bundled_history().require("v0.5/nvidia/dgx1_multi_ngc18.11")


# ------------------------------------------------------------------------------------------ CSV import


def test_csv_rows_are_imported_into_the_store(tmp_path: Path, store: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{ROW}\n")
    entries = import_csv(path, store)
    assert [e.id for e in entries] == ["v4.0/acme/acme_box8"]
    entry = load_history(store).require("v4.0/acme/acme_box8")
    assert entry.origin == "imported" and entry.time_s == pytest.approx(750.0) and entry.benchmark == "resnet"
    assert (store / IMPORTED_FILE).exists()
    with pytest.raises(UserError, match="already in the history"):  # importing again is refused
        import_csv(path, store)


def test_the_full_bundled_column_set_is_accepted(tmp_path: Path, store: Path) -> None:
    path = tmp_path / "full.csv"
    row = {c: "" for c in COLUMNS} | dict(zip(HEADER.split(","), ROW.split(","), strict=True))
    row["accelerator_minutes"] = "100"
    path.write_text(",".join(COLUMNS) + "\n" + ",".join(row[c] for c in COLUMNS) + "\n")
    assert import_csv(path, store)[0].id == "v4.0/acme/acme_box8"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        (f"{HEADER},colour\n{ROW},red\n", "unknown column 'colour'"),
        (HEADER.replace(",source", "") + "\n" + ROW.rsplit(",", 1)[0] + "\n", "missing column 'source'"),
        (f"{HEADER}\n{ROW.replace(',12.5,', ',fast,')}\n",
         "line 2 column 'time_min_from_logs': 'fast' is not a number"),
        (f"{HEADER}\n{ROW.replace('v4.0', 'round4')}\n", "column 'round'"),
        (f"{HEADER}\n{ROW.replace(',8,', ',-8,')}\n", "'accelerator_count': '-8' is not a whole number"),
        (f"{HEADER}\n{ROW},extra\n", "line 2: 11 fields, the header has 10"),
        (f"{HEADER}\n{ROW.replace('acme_box8', 'a/b')}\n", "may not contain '/'"),
        (f"{HEADER}\n{ROW.replace('https://example.org/acme-v4.0', '')}\n",
         "column 'source': a value is required"),
        (f"{HEADER}\n{ROW}\n{ROW}\n", "line 3: entry 'v4.0/acme/acme_box8' is already in the history"),
        (f"{HEADER}\nv0.5,nvidia,closed,x,y,dgx1_multi_ngc18.11_mxnet,NVIDIA V100,8,1,s\n",
         "already in the history"),
        (f'{HEADER}\n"unterminated,{ROW}\n', "not valid CSV"),
        (f"{HEADER},accelerator_minutes\n{ROW},500\n", "'accelerator_minutes': 500 contradicts"),
    ],
)  # fmt: skip
def test_bad_csv_is_a_one_line_error_and_changes_nothing(
    tmp_path: Path, store: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    before = snapshot(store)
    with pytest.raises(UserError, match=message) as caught:
        import_csv(path, store)
    assert "\n" not in str(caught.value)
    assert snapshot(store) == before


def test_non_utf8_csv_is_refused(tmp_path: Path, store: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(f"{HEADER}\n{ROW}\n".encode() + b"\xff\xfe")
    with pytest.raises(UserError, match="not UTF-8"):
        import_csv(path, store)


@pytest.fixture(scope="module")
def shared_store() -> Iterator[Path]:
    """One store (with one imported row) for the property test; hypothesis reuses it across examples."""
    folder = Path(tempfile.mkdtemp(prefix="accelbench-mlperf-"))
    (folder / "seed.csv").write_text(f"{HEADER}\n{ROW}\n")
    import_csv(folder / "seed.csv", folder / "store")
    yield folder
    shutil.rmtree(folder)


CELLS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
CSV_LIKE = st.lists(st.lists(CELLS, min_size=1, max_size=12), max_size=5).map(
    lambda rows: "\n".join(",".join(cells) for cells in [list(REQUIRED_COLUMNS), *rows])
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=300), CSV_LIKE, st.binary(max_size=200).map(repr)))
def test_arbitrary_csv_text_only_ever_raises_user_error_and_never_changes_the_store(
    shared_store: Path, text: str
) -> None:
    store = shared_store / "store"
    path = shared_store / "input.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    before = snapshot(store)
    try:
        import_csv(path, store)
    except UserError as error:
        assert "\n" not in str(error)
        assert snapshot(store) == before
    else:  # a valid row slipped through: it must load back
        load_history(store)
        (store / IMPORTED_FILE).write_bytes(before[IMPORTED_FILE])


# ------------------------------------------------------------------------------------------ logs


def test_olympic_mean_drops_fastest_and_slowest() -> None:
    assert olympic_mean([5.0, 1.0, 3.0, 2.0, 4.0]) == 3.0
    assert olympic_mean([5.0, math.inf, 3.0, 2.0, 4.0]) == 4.0  # unconverged counts as slowest
    assert olympic_mean([math.inf, math.inf, 3.0, 2.0, 4.0]) == math.inf
    with pytest.raises(ValueError, match="at least 3"):
        olympic_mean([1.0, 2.0])


@pytest.mark.parametrize(
    ("folder", "log_format", "time_s", "converged"),
    [("v0.5", "v0.5", 366.0, 5), ("v0.6", "v0.6", 120.0, 4), ("v0.7", "v0.7+", (60 + 61.5 + 62) / 3, 5)],
)
def test_golden_logs_of_every_format_score_as_computed_by_hand(
    folder: str, log_format: str, time_s: float, converged: int
) -> None:
    score = score_directory(GOLDEN / folder)
    assert score.log_format == log_format
    assert score.time_s == pytest.approx(time_s, abs=1e-3)
    assert score.converged == converged


def test_v06_and_v07_logs_say_who_submitted_them() -> None:
    assert read_run(GOLDEN / "v0.7" / "result_0.txt").submission["org"] == "Acme"
    run = read_run(GOLDEN / "v0.6" / "result_4.txt")
    assert run.submission["platform"] == "acme-box-8" and not run.converged


def test_malformed_log_is_a_one_line_error(store: Path) -> None:
    before = snapshot(store)
    with pytest.raises(UserError, match=re.escape("result_1.txt: unparsable v0.7+ line")):
        import_logs(GOLDEN / "malformed", store, LogImport("NVIDIA V100", 8, "v1.0"))
    assert snapshot(store) == before


def test_log_folder_is_imported_as_one_entry(store: Path) -> None:
    [entry] = import_logs(GOLDEN / "v0.7", store, LogImport("NVIDIA A100 SXM 40GB", 8, round="v0.7"))
    assert entry.id == "v0.7/acme/acme-box-8" and entry.runs_converged == 5
    assert entry.time_s == pytest.approx((60 + 61.5 + 62) / 3, abs=1e-3)
    assert load_history(store).require(entry.id).division == "closed"
    [v05] = import_logs(
        GOLDEN / "v0.5", store, LogImport("NVIDIA V100", 8, submitter="acme", system_name="box")
    )
    assert v05.round == "v0.5" and v05.time_s == pytest.approx(366.0)
    with pytest.raises(UserError, match="give it with --round"):
        import_logs(GOLDEN / "v0.7", store, LogImport("NVIDIA A100 SXM 40GB", 8))
