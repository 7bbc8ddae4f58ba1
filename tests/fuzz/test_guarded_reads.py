"""Every place in ``accelbench/`` that opens a file for reading goes through the guarded reader
(``accelbench.files``), or is on ``ALLOWED`` with the reason it need not.

The scan is of the syntax tree, not of text: a call to ``open`` (no write mode), ``os.open`` (no write
flag), ``Path.open``, ``read_text``, ``read_bytes``, ``json.load``, ``tomllib.load``, ``tarfile.open``,
``zipfile.ZipFile``, ``sqlite3.connect``, ``numpy.load``/``fromfile`` or ``safetensors``' ``load_file``.
A new read site fails this test until it is routed through the reader or listed with a reason; a
listed site that is gone fails it too, so the list stays true.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "accelbench"
GUARDS = ("inputs.py", "outputs.py", "files/")
"""The guarded reader itself (``inputs`` holds its byte and nesting rules; ``outputs`` re-reads the
file it replaces, through ``O_NONBLOCK`` and a regular-file check of its own)."""
READ_CALLS = {"read_text", "read_bytes", "load_file", "fromfile", "ZipFile", "connect"}
QUALIFIED = {"json.load", "tomllib.load", "np.load", "numpy.load", "tarfile.open", "os.open"}
_KERNEL = "a kernel pseudo-file under /proc or /sys (or the test root standing in for it)"
_PACKAGE_DATA = "a data file installed with the package, not user input"
_OWN_CHILD = "written moments before by this run's own child process, into its private folder"
_OWN_PARENT = "the spec the parent wrote moments before for this child process"
_OWN_CACHE = "a cache this process's stack or model writes and reads back in the same cell folder"
ALLOWED: dict[str, str] = {
    "hardware/cpuinfo.py::path.read_text()": _KERNEL,
    "hardware/cpuinfo.py::read_text(root / 'proc/meminfo')": _KERNEL,
    "hardware/cpuinfo.py::read_text(root / 'proc/cpuinfo')": _KERNEL,
    "hardware/cpuinfo.py::read_text(topology / 'core_id')": _KERNEL,
    "hardware/cpuinfo.py::read_text(topology / 'physical_package_id')": _KERNEL,
    "hardware/cpuinfo.py::read_text(index / 'size')": _KERNEL,
    "hardware/cpuinfo.py::read_text(index / 'level')": _KERNEL,
    "hardware/cpuinfo.py::read_text(index / 'type')": _KERNEL,
    "hardware/cpuinfo.py::read_text(index / 'shared_cpu_list')": _KERNEL,
    "hardware/detect.py::read_text(Path(root) / 'proc/loadavg')": _KERNEL,
    "hardware/detect.py::read_text(root / 'sys/class/dmi/id' / name)": _KERNEL,
    "hardware/detect.py::read_text(root / 'sys/hypervisor/type')": _KERNEL,
    "meters/cputime.py::path.read_text()": _KERNEL,
    "meters/cputime.py::status.read_text()": _KERNEL,
    "meters/cputime.py::open(proc_stat)": _KERNEL,
    "meters/cputime.py::(proc / 'net' / name).read_text()": _KERNEL,
    "meters/rapl.py::energy_path.read_text()": _KERNEL,
    "meters/rapl.py::(zone / 'name').read_text()": _KERNEL,
    "meters/rapl.py::(zone / 'max_energy_range_uj').read_text()": _KERNEL,
    "meters/rapl.py::self.domain.energy_path.read_text()": _KERNEL,
    "serving/sessions.py::Path(f'/proc/{pid}/stat').read_text()": _KERNEL,
    "sut/environment.py::Path(f'/proc/{sut.pid}/status').read_text()": _KERNEL,
    "sut/hardening.py::open('/proc/self/status')": _KERNEL,
    "stacks/_opencl_devices.py::icd.read_text()": "an OpenCL ICD file of the system (/etc/OpenCL/vendors)",
    "hardware/chips.py::(resources.files('accelbench') / 'data' / name).read_text(encoding='utf-8')": (
        _PACKAGE_DATA
    ),
    "hardware/prices.py::(resources.files('accelbench') / 'data' / 'cloud_prices.csv')"
    ".read_text(encoding='utf-8')": (_PACKAGE_DATA),
    "mlperf/history.py::(resources.files('accelbench') / 'data' / 'mlperf_resnet_training.csv')"
    ".read_text('utf-8')": (_PACKAGE_DATA),
    "normalize/cmos.py::(resources.files('accelbench') / 'data' / name).read_text(encoding='utf-8')": (
        _PACKAGE_DATA
    ),
    "training/data.py::resources.files('accelbench.data').joinpath(TOPICS_FILE)"
    ".read_text(encoding='utf-8')": (_PACKAGE_DATA),
    "cell/isolation.py::stderr_path.read_text(errors='replace')": _OWN_CHILD,
    "cell/isolation.py::result_path.read_text()": _OWN_CHILD,
    "cell/process.py::Path(argv[0]).read_text()": _OWN_PARENT,
    "serving/ray_app.py::Path(argv[0]).read_text()": _OWN_PARENT,
    "serving/ray_app.py::Path(path).read_bytes()": _OWN_PARENT,
    "serving/torchserve_app.py::Path(argv[0]).read_text()": _OWN_PARENT,
    "serving/triton_app.py::Path(sys.argv[1]).read_text()": _OWN_PARENT,
    "serving/torchserve_handler.py::(folder / 'server.json').read_text()": _OWN_PARENT,
    "serving/process.py::path.read_text(errors='replace')": _OWN_CHILD,
    "serving/triton.py::(server_python().parent.parent / READY_MARK).read_text()": _OWN_CACHE,
    "fleet/local.py::log_path.read_text()": _OWN_CHILD,
    "training/distributed.py::result.read_bytes()": _OWN_CHILD,
    "scenarios/loadgen.py::(log_dir / SUMMARY_FILE).read_text()": _OWN_CHILD + " (LoadGen's logs)",
    "scenarios/loadgen.py::(log_dir / DETAIL_FILE).read_text()": _OWN_CHILD + " (LoadGen's logs)",
    "generation/loadgen_tokens.py::(log_dir / SUMMARY_FILE).read_text()": _OWN_CHILD + " (LoadGen's logs)",
    "generation/loadgen_tokens.py::(log_dir / DETAIL_FILE).read_text()": _OWN_CHILD + " (LoadGen's logs)",
    "stacks/tvm.py::(folder / _RECORDS_FILE).read_text()": _OWN_CACHE,
    "generation/gguf_writer.py::load_file(str(model.folder / 'model.safetensors'))": _OWN_CACHE,
    "workloads/minilm.py::load_file(str(model_dir() / 'model.safetensors'))": _OWN_CACHE,
    "store/schema.py::sqlite3.connect(':memory:', isolation_level=None)": "an in-memory database, no file",
    "store/schema.py::sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)": (
        "the store's database, read-only; open_store checked it is a regular file; SQLite bounds its reads"
    ),
    "store/schema.py::sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)": (
        "the store's database; open_store checked it is a regular file; SQLite bounds its reads"
    ),
    "store/schema.py::db_path.open('rb')": "the store database's 16-byte header, after a regular-file check",
    "store/locking.py::os.open(folder, os.O_RDONLY | os.O_DIRECTORY)": "the store folder, opened to flock it",
    "store/locking.py::Path('/proc/locks').read_text()": _KERNEL,
}


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        base = ast.unparse(func.value) if isinstance(func.value, ast.Name) else "()"
        return f"{base}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else ""


def _writes(call: ast.Call, name: str) -> bool:
    """A call that opens for writing only (a mode with w/a/x, or os.open with a write flag)."""
    if name == "os.open":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return "O_WRONLY" in flags or "O_CREAT" in flags
    given = [k.value for k in call.keywords if k.arg == "mode"] + call.args[1 : 2 if name == "open" else 1]
    if name.endswith(".open") and name != "tarfile.open":
        given = [k.value for k in call.keywords if k.arg == "mode"] + call.args[:1]
    if name in ("ZipFile", "zipfile.ZipFile", "tarfile.open"):
        given = [k.value for k in call.keywords if k.arg == "mode"] + call.args[1:2]
    mode = ast.literal_eval(given[0]) if given and isinstance(given[0], ast.Constant) else "r"
    return isinstance(mode, str) and any(flag in mode for flag in "wax")


def _is_read(call: ast.Call, guarded: set[str]) -> bool:
    """A call that opens a file for reading and is not the guarded reader (``guarded``: the names this
    module imported from ``accelbench.files``); an in-memory ``io.BytesIO`` is no file."""
    name = _name(call)
    if name in guarded or any(ast.unparse(a).startswith("io.BytesIO(") for a in _arguments(call)):
        return False
    short = name.rsplit(".", 1)[-1]
    opens = name == "open" or (short == "open" and name not in ("os.open",)) or name in QUALIFIED
    if short == "connect" and not name.startswith("sqlite3"):
        return False
    return (opens or short in READ_CALLS) and not _writes(call, name)


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _guarded_names(tree: ast.Module) -> set[str]:
    imported = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "accelbench.files"]
    return {alias.asname or alias.name for node in imported for alias in node.names}


def read_sites() -> list[str]:
    """``path::call`` of every read site in the package outside the guarded reader."""
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(GUARDS):
            continue
        tree = ast.parse(path.read_text())
        guarded = _guarded_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_read(node, guarded):
                sites.append(f"{relative}::{ast.unparse(node)}")
    return sites


def test_every_read_goes_through_the_guarded_reader() -> None:
    bypassing = sorted(set(read_sites()) - set(ALLOWED))
    assert not bypassing, "read through accelbench.files, or list with a reason:\n" + "\n".join(bypassing)


def test_the_allow_list_is_true() -> None:
    gone = sorted(set(ALLOWED) - set(read_sites()))
    assert not gone, gone


def test_a_planted_bypass_is_found(tmp_path: Path) -> None:
    """The scan finds the ways a new reader could slip past it."""
    planted = "import json, os\nfrom pathlib import Path\n" + "\n".join(
        [
            "a = open(p)",
            "b = Path(p).read_text()",
            "c = json.load(open(p, 'rb'))",
            "d = os.open(p, os.O_RDONLY)",
            "e = Path(p).open()",
        ]
    )
    calls = [n for n in ast.walk(ast.parse(planted)) if isinstance(n, ast.Call) and _is_read(n, set())]
    found = {ast.unparse(c) for c in calls}
    assert found >= {"open(p)", "Path(p).read_text()", "json.load(open(p, 'rb'))", "os.open(p, os.O_RDONLY)"}
    assert "Path(p).open()" in found
    guarded = _guarded_names(ast.parse("from accelbench.files import read_text"))
    assert not _is_read(ast.parse("read_text(p, 'log')").body[0].value, guarded)  # type: ignore[attr-defined]
    writes = "open(p, 'w')\nos.open(p, os.O_WRONLY | os.O_CREAT)\nPath(p).open('a')"
    assert not [n for n in ast.walk(ast.parse(writes)) if isinstance(n, ast.Call) and _is_read(n, set())]
