"""``accelbench bundle`` and ``verify`` as a user runs them: one real run (null and torch-eager stacks,
quick rules) bundled, verified, and tampered with three ways, each caught with its reason."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from accelbench.bundle.archive import read_archive, write_archive
from accelbench.store import open_store
from tests.e2e.cli import accelbench

RUN = ("run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", "null,torch-eager",
       "--scenarios", "single-stream", "--rules", "quick", "--no-probe", "--quiet")  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store holding two runs of the same cells, with 1 and 2 threads: (store, run ids oldest first)."""
    store = tmp_path_factory.mktemp("bundles") / "store"
    for threads in ("1", "2"):
        done = accelbench(*RUN, "--threads", threads, "--store", str(store))
        assert done.returncode == 0, done.stderr[-3000:]
    with open_store(store, read_only=True) as opened:
        return store, opened.run_ids()[::-1]


@pytest.fixture(scope="module")
def bundle(runs: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    store, ids = runs
    target = tmp_path_factory.mktemp("out") / "run.tar.gz"
    done = accelbench("bundle", ids[0], "-o", str(target), "--store", str(store))
    assert done.returncode == 0 and "UNSIGNED" in done.stdout, done.stderr
    return target


def _tampered(source: Path, target: Path, edit: Any) -> Path:
    """A copy of ``source`` with ``edit(files)`` applied and the MANIFEST hashed again."""
    files = dict(read_archive(source).files)
    files.pop("MANIFEST")
    edit(files)
    write_archive(target, files)
    return target


def _doc_of(files: dict[str, bytes], stack: str) -> tuple[str, dict[str, Any]]:
    for path, data in files.items():
        if path.startswith("results/"):
            doc = json.loads(data)
            if doc["cell"]["stack"] == stack:
                return path, doc
    raise AssertionError(stack)


def _differs(bundle_file: Path) -> list[str]:
    done = accelbench("verify", str(bundle_file))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NOT VERIFIED" in done.stdout.splitlines()[-1]
    return [line for line in done.stdout.splitlines() if line.startswith("DIFFERS")]


def test_a_fresh_bundle_verifies_and_holds_no_local_path(runs: tuple[Path, list[str]], bundle: Path) -> None:
    done = accelbench("verify", str(bundle))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith("; VERIFIED") and "(UNSIGNED)" in lines[-1]
    assert sum(line.startswith("match") and "figures: latency_p90_s" in line for line in lines) == 2
    assert sum("  audit " in line for line in lines) == 6 and sum(" status: " in line for line in lines) == 2
    files = read_archive(bundle).files
    manifest = files["MANIFEST"].decode().splitlines()
    assert len(manifest) == len(files) - 1 and json.loads(files["bundle.json"])["signed"] is False
    assert any(p.endswith("/mlperf_log_detail.txt") for p in files)
    assert isinstance(json.loads(files["run.json"])["config"]["input_seed"], int)
    store = str(runs[0].parent)
    leaked = [p for p, data in files.items() if store.encode() in data or str(Path.home()).encode() in data]
    assert leaked == [] and not any(p.endswith((".pt", ".onnx", ".bin")) for p in files)


def test_an_edited_figure_is_caught(bundle: Path, tmp_path: Path) -> None:
    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        doc["figures"]["value"] *= 0.5
        files[path] = json.dumps(doc).encode()

    (line,) = _differs(_tampered(bundle, tmp_path / "figure.tar.gz", edit))
    assert "torch-eager" in line and "figures: value " in line and "from the logs, stored" in line
    assert "trial_values" not in line  # only the edited figure differs


def test_an_edited_log_line_is_caught(bundle: Path, tmp_path: Path) -> None:
    def edit(files: dict[str, bytes]) -> None:
        # the last attempt's trial is the scored one (a disturbed first attempt is measured again)
        path = sorted(p for p in files if "torch-eager" in p and p.endswith("mlperf_log_summary.txt"))[-1]
        lines = files[path].decode().splitlines(keepends=True)
        (number,) = [n for n, line in enumerate(lines) if line.startswith("50.00 percentile latency")]
        lines[number] = "50.00 percentile latency (ns)   : 1000\n"
        files[path] = "".join(lines).encode()

    lines = _differs(_tampered(bundle, tmp_path / "log.tar.gz", edit))
    (line,) = [line for line in lines if "figures:" in line]
    assert "torch-eager" in line and "figures: p50_s 1e-06 from the logs, stored 0.0" in line


def test_a_claimed_rule_set_the_logs_do_not_meet_is_caught(bundle: Path, tmp_path: Path) -> None:
    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        doc["settings"]["rules"] = "official"
        files[path] = json.dumps(doc).encode()

    lines = _differs(_tampered(bundle, tmp_path / "rules.tar.gz", edit))
    (line,) = [line for line in lines if "  rules: " in line]  # the cell's logs against its rule set
    assert "torch-eager" in line and "min duration 1 s < 600 s" in line, line
    (run,) = [line for line in lines if "  run rules: " in line]  # and the result against run.json
    assert "'official'" in run and "run.json 'quick'" in run, run


def test_a_verdict_its_evidence_contradicts_is_caught(bundle: Path, tmp_path: Path) -> None:
    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        caching = doc["audit"]["caching"]
        caching.update(repeated_min_s=caching["unique_min_s"] / 10, repeats_faster_share=1.0, limit=100.0)
        files[path] = json.dumps(doc).encode()

    lines = _differs(_tampered(bundle, tmp_path / "verdict.tar.gz", edit))
    assert any("audit caching: fail from its evidence; stored pass" in line for line in lines), lines
    (status,) = [line for line in lines if "  status: " in line]
    # the status the evidence gives: disqualified, or unverified where the stored measurement says other
    # processes were busy beside it (times beside other work convict nobody: the fixture's run on a busy
    # machine; make test, 2026-12-08)
    disturbed = "unverified from the evidence (caching audit failed on a disturbed measurement" in status
    assert " status: disqualified from the evidence (caching audit" in status or disturbed, status


def test_an_edited_file_without_a_new_manifest_is_caught(bundle: Path, tmp_path: Path) -> None:
    files = dict(read_archive(bundle).files)  # the MANIFEST kept as written
    files["run.json"] = files["run.json"].replace(b'"status"', b'"status" ', 1)
    stale = tmp_path / "stale.zip"
    with zipfile.ZipFile(stale, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert _differs(stale) == ["DIFFERS  bundle  manifest: run.json: SHA-256 differs from the MANIFEST"]


def test_a_signed_bundle_names_its_key_and_a_rehashed_edit_breaks_it(
    runs: tuple[Path, list[str]], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = tmp_path / "id_ed25519"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    public = tmp_path / "id_ed25519.pub"
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    store, ids = runs
    signed = tmp_path / "signed.zip"
    done = accelbench("bundle", ids[0], "-o", str(signed), "--sign-key", str(private), "--store", str(store))
    assert done.returncode == 0, done.stderr
    checked = accelbench("verify", str(signed), "--trust-key", str(public))
    assert checked.returncode == 0, checked.stdout
    assert "signature: signed by SHA256:" in checked.stdout and "(trusted)" in checked.stdout

    def edit(files: dict[str, bytes]) -> None:
        files["run.json"] = files["run.json"].replace(b'"status"', b'"status" ', 1)
        files["SIGNATURE"] = read_archive(signed).files["SIGNATURE"]

    lines = _differs(_tampered(signed, tmp_path / "resigned.zip", edit))
    assert len(lines) == 1 and "signature: signature by SHA256:" in lines[0] and "does not match" in lines[0]


@pytest.mark.parametrize("content", [b"not an archive at all", b"\x1f\x8b\x08\x00truncated"])
def test_garbage_is_a_one_line_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(content)
    done = accelbench("verify", str(path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("accelbench: error: ") and "not a readable bundle archive" in done.stderr


def test_a_truncated_bundle_is_a_one_line_error(bundle: Path, tmp_path: Path) -> None:
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    done = accelbench("verify", str(path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_bad_bundle_requests_are_one_line_errors(runs: tuple[Path, list[str]], tmp_path: Path) -> None:
    store, ids = runs
    unknown = accelbench("bundle", "no-such-run", "-o", str(tmp_path / "a.tar.gz"), "--store", str(store))
    missing_folder = accelbench(
        "bundle", ids[0], "-o", str(tmp_path / "nope" / "a.tar.gz"), "--store", str(store)
    )
    suffix = accelbench("bundle", ids[0], "-o", str(tmp_path / "a.rar"), "--store", str(store))
    for done, fragment in (
        (unknown, "no-such-run"),
        (missing_folder, "missing or not writable"),
        (suffix, ".zip"),
    ):
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert fragment in done.stderr


def test_compare_explains_the_thread_ratio_as_factors_that_multiply_back(
    runs: tuple[Path, list[str]], bundle: Path, tmp_path: Path
) -> None:
    store, ids = runs
    done = accelbench("compare", str(bundle), ids[1], "--store", str(store), "--include-unverified", "--json")
    assert done.returncode == 0, done.stderr
    cells = {c["key"]: c for c in json.loads(done.stdout)["cells"]}
    with open_store(store, read_only=True) as opened:
        qps = [{r.cell.key: r.qps for r in opened.results(run_id)} for run_id in ids]
    assert set(cells) == set(qps[0]) and len(cells) == 2
    for key, cell in cells.items():
        assert cell["differences"] == ["threads 1 vs 2"] and cell["refused"] is None
        main = cell["explanation"]["decompositions"][0]
        ratio = cell["explanation"]["ratio"]["central"]
        assert ratio == pytest.approx(qps[1][key] / qps[0][key], rel=1e-12)
        assert main["product_of_central_values"] == pytest.approx(ratio, rel=1e-12)
        assert main["factors"][0]["name"] == "chips"
        assert cell["headline"]["a"]["metric"] == "latency_p90_s" and len(cell["headline"]["b"]["ci"]) == 2


def test_compare_refuses_what_does_not_compare(
    runs: tuple[Path, list[str]], bundle: Path, tmp_path: Path
) -> None:
    import dataclasses

    from accelbench.bundle.compare import compare, side_of
    from accelbench.errors import UserError
    from accelbench.hardware.chips import load_chips

    store, ids = runs
    a, b = side_of(ids[0], store), side_of(ids[1], store)
    with pytest.raises(UserError, match=r"ran rules 'quick'.*rules 'standard'"):
        compare(a, dataclasses.replace(b, rules="standard"), load_chips())
    other = {k.replace("resnet50", "bert-base"): r for k, r in b.results.items()}
    with pytest.raises(UserError, match=r"no shared cell \(.*: resnet50; .*: bert-base\)"):
        compare(a, dataclasses.replace(b, results=other), load_chips())
    lowered = {
        k: dataclasses.replace(r, head=dataclasses.replace(r.head, effective_precision="bf16"))
        for k, r in b.results.items()
    }
    pairings = compare(a, dataclasses.replace(b, results=lowered), load_chips(), include_unverified=True)
    refused = {p.key.split("/")[3]: p.refused for p in pairings}
    assert refused["torch-eager"] == "precision classes differ: fp32 vs bf16", refused
    assert all(why.startswith("precision classes differ") for why in refused.values()), refused
    assert all(p.explanation is None for p in pairings)

    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        doc["figures"]["value"] *= 0.5
        files[path] = json.dumps(doc).encode()

    tampered = _tampered(bundle, tmp_path / "tampered.tar.gz", edit)
    done = accelbench("compare", str(tampered), ids[1], "--store", str(store))
    assert done.returncode == 2 and "does not verify (1 claim(s) differ)" in done.stderr, done.stderr


def test_publish_three_bundles_opens_offline_with_working_filters(
    runs: tuple[Path, list[str]], bundle: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.test_html_report import chromium_path

    store, ids = runs
    folder = tmp_path / "bundles"
    folder.mkdir()
    (folder / "a.tar.gz").write_bytes(bundle.read_bytes())
    done = accelbench("bundle", ids[1], "-o", str(folder / "b.zip"), "--store", str(store))
    assert done.returncode == 0, done.stderr

    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        doc["figures"]["value"] *= 0.5
        files[path] = json.dumps(doc).encode()

    _tampered(bundle, folder / "c.tar.gz", edit)
    site = tmp_path / "site"
    done = accelbench("publish", str(folder), "-o", str(site))
    assert done.returncode == 0 and "3 bundle(s), 2 verified" in done.stdout, done.stdout + done.stderr
    expected_ranked = 0
    with open_store(store, read_only=True) as opened:
        expected_ranked = sum(r.head.status == "ok" for run_id in ids for r in opened.results(run_id))
    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page()
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on("request", lambda request: requests.append(request.url))
        page.goto((site / "index.html").resolve().as_uri(), wait_until="load")
        bundles = page.locator("#bundles tr").all_inner_texts()[1:]
        assert [line.split("\t")[:2] for line in bundles] == [
            ["a.tar.gz", "VERIFIED"], ["b.zip", "VERIFIED"], ["c.tar.gz", "NOT VERIFIED"],
        ]  # fmt: skip
        assert page.locator("table.leaderboard tr[data-rules]").count() == expected_ranked
        assert "c.tar.gz" not in " ".join(page.locator("table.leaderboard").all_inner_texts())
        assert page.locator("#cells tr[data-rules]:visible").count() == 6  # 2 cells x 3 bundles
        page.select_option("#filter-precision", "fp32")
        shown = page.locator("#cells tr[data-rules]:visible").all_inner_texts()
        assert len(shown) == 3 and all("torch-eager" in row for row in shown), shown
        page.select_option("#filter-precision", "all")
        page.select_option("#filter-rules", "quick")
        assert page.locator("#cells tr[data-rules]:visible").count() == 6
        browser.close()
    assert problems == [] and all(url.startswith("file://") for url in requests), (problems, requests)
    assert (site / "bundles" / "c.tar.gz").read_bytes() == (folder / "c.tar.gz").read_bytes()


def test_a_doubled_summary_with_its_result_and_manifest_rewritten_is_caught(
    bundle: Path, tmp_path: Path
) -> None:
    def edit(files: dict[str, bytes]) -> None:
        path, doc = _doc_of(files, "torch-eager")
        for name in ("value", "p50_s", "p90_s", "p99_s"):
            doc["figures"][name] *= 2
        doc["figures"]["trial_values"] = [2 * v for v in doc["figures"]["trial_values"]]
        files[path] = json.dumps(doc).encode()
        for log in [p for p in files if "torch-eager" in p and p.endswith("mlperf_log_summary.txt")]:
            lines = files[log].decode().splitlines(keepends=True)
            for number, line in enumerate(lines):
                head, _, tail = line.partition(":")
                if "latency (ns)" in head and tail.strip().isdigit():
                    lines[number] = f"{head}: {2 * int(tail)}\n"
            files[log] = "".join(lines).encode()

    lines = _differs(_tampered(bundle, tmp_path / "doubled.tar.gz", edit))
    (line,) = [line for line in lines if " logs: " in line]
    assert "torch-eager" in line and "mlperf_log_summary.txt vs mlperf_log_detail.txt" in line
    assert "p90 latency summary " in line and " s, detail " in line
