"""The ecosystem harness: PyTorch libraries measured by their own test suites, under PyTorch and under ember.

Each library in :data:`LIBRARIES` is installed with ``--no-deps`` (plus the non-PyTorch dependencies the main
environment lacks) into a private target directory, never into the environment's site-packages. Its test files come
from its source distribution on the package index (``pip download --no-binary :all: --no-deps``); nothing of a
library's test code is kept in ember's repository. The chosen subset then runs twice with pytest: once as it is
(``torch`` is PyTorch, the oracle) and once with ``ember.torch_compat.install()`` run by a ``sitecustomize`` module
ahead of everything else, so ``import torch`` is ember. Where a source distribution lacks its tests the row says so
and ember's own canonical-usage test of that library (``tests/ecosystem/canonical/``) runs instead.

>>> from ember.ecosystem import LIBRARIES
>>> LIBRARIES["einops"].version
'0.8.2'
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

from ..version import __version__ as _torch_version

__all__ = ["LIBRARIES", "Library", "Result", "add_snapshot_scripts", "add_snapshot_tests", "cache_dir", "compare",
           "prepare", "run_subset", "scripts_dir", "stored_results", "table"]

MODES = ("torch", "ember")
SNAPSHOT_MARK = ".tests-from-snapshot"  # in an unpacked sdist: its tests came from this repository snapshot
SCRIPTS_ENV = "EMBER_ECOSYSTEM_SCRIPTS"  # the folder of a library's scripts, for its canonical test
_SITECUSTOMIZE = "import ember.torch_compat\nember.torch_compat.install()\n"
_REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Library:
    """One library of the comparison: its pinned release, where its tests sit and which of them run.

    ``tests`` are pytest arguments relative to the unpacked source distribution (``full``: the whole subset the issue
    names; ``smoke``: the small subset for CI and busy machines). ``deps`` are its non-PyTorch requirements;
    ``canonical`` is ember's own test file of the library's canonical usage, run when the sdist has no tests;
    ``scripts`` are files of the library's repository that the canonical test runs and that neither the sdist nor the
    wheel ships (timm's ``train.py``), taken from a repository snapshot by :func:`add_snapshot_scripts`."""

    name: str
    dist: str
    version: str
    deps: tuple = ()
    full: tuple = ()
    smoke: tuple = ()
    canonical: str = ""
    env: tuple = ()  # (name, value) pairs its test suite reads
    oracle_prelude: str = ""  # code the oracle's run executes before the tests (its ``sitecustomize``)
    scripts: tuple = ()

    @property
    def spec(self) -> str:
        return f"{self.dist}=={self.version}"


# The package index's torchvision is the CUDA build, whose compiled operators do not load beside the CPU PyTorch;
# its import then stops at the fake kernel it registers for ``torchvision::nms``. The oracle declares the two
# operators it registers unconditionally, so torchvision imports as a build without its C++ operators (calling
# one raises torchvision's own error) and timm's tests, which use none of them, run.
_TORCHVISION_WITHOUT_OPS = """\
import torch.library
_TORCHVISION = torch.library.Library("torchvision", "DEF")
for _op in ("nms", "qnms"):
    _TORCHVISION.define(_op + "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
"""

# versions: current releases that support PyTorch 2.13's API (kept equal to the ``ecosystem`` extra in pyproject)
LIBRARIES = {lib.name: lib for lib in (
    Library("einops", "einops", "0.8.2", full=("einops/tests",), smoke=("einops/tests",),
            env=(("EINOPS_TEST_BACKENDS", "torch"),)),
    Library("skorch", "skorch", "1.4.0", deps=("scikit-learn", "scipy", "tabulate", "tqdm"),
            full=("skorch/tests", "--ignore=skorch/tests/llm", "--ignore=skorch/tests/test_hf.py",
                  "-m", "not cuda"),
            smoke=("skorch/tests/test_history.py", "skorch/tests/test_dataset.py", "skorch/tests/test_setter.py")),
    Library("pyro", "pyro-ppl", "1.9.2", deps=("opt-einsum", "pyro-api", "tqdm"),
            full=("tests/distributions/test_delta.py", "tests/distributions/test_unit.py",
                  "tests/infer/test_elbo_mapdata.py"),
            smoke=("tests/test_primitives.py", "tests/test_settings.py", "tests/test_util.py"),
            canonical="pyro"),
    Library("torchmetrics", "torchmetrics", "1.9.0",
            deps=("lightning-utilities", "packaging", "scikit-learn", "scipy", "cachier", "portalocker", "pympler",
                  "watchdog"),
            full=("tests/unittests/classification/test_accuracy.py",
                  "tests/unittests/classification/test_confusion_matrix.py", "-k", "binary and not ddp and not half"),
            canonical="torchmetrics"),
    Library("timm", "timm", "1.0.31", deps=("huggingface-hub", "safetensors", "pyyaml", "torchvision==0.28.0"),
            full=("tests/test_models.py", "-k",  # pretrained weights need the network
                  "(resnet18 or vit_tiny_patch16_224 or convnext_atto) and not pretrained"),
            smoke=("tests/test_layers.py",), canonical="timm", oracle_prelude=_TORCHVISION_WITHOUT_OPS,
            scripts=("train.py",)),
    Library("transformers", "transformers", "5.24.0",
            deps=("huggingface-hub", "safetensors", "tokenizers", "regex", "pyyaml", "filelock", "tqdm", "typer",
                  "shellingham", "rich", "markdown-it-py", "mdurl", "annotated-doc", "httpx2", "httpcore2", "h11",
                  "anyio", "truststore", "accelerate",
                  "parameterized", "httpx", "httpcore", "certifi", "idna"),  # what its model tests import
            full=("tests/models/gpt2/test_modeling_gpt2.py", "tests/models/llama/test_modeling_llama.py",
                  "tests/models/bert/test_modeling_bert.py", "tests/models/vit/test_modeling_vit.py"),
            canonical="transformers"),
    Library("lightning", "lightning", "2.6.6",  # jsonargparse as Lightning's extra pins it (its checkpoint tests)
            deps=("lightning-utilities", "torchmetrics", "fsspec", "pyyaml", "packaging", "tqdm",
                  "jsonargparse>=4.39.0,<4.46.0", "docstring-parser", "typeshed-client", "cloudpickle"),
            full=("tests/tests_pytorch/trainer/flags", "tests/tests_pytorch/trainer/test_states.py",
                  "tests/tests_pytorch/loops/test_training_loop.py",
                  "tests/tests_pytorch/loops/test_evaluation_loop.py", "tests/tests_pytorch/loops/test_progress.py",
                  "tests/tests_pytorch/checkpointing/test_checkpoint_callback_frequency.py",
                  "tests/tests_pytorch/checkpointing/test_model_checkpoint.py",
                  "tests/tests_pytorch/checkpointing/test_torch_saving.py",
                  "tests/tests_pytorch/checkpointing/test_trainer_checkpoint.py"),
            canonical="lightning"),
)}


@dataclasses.dataclass
class Result:
    """Counts of one pytest run: one library, one mode (``torch`` or ``ember``), one subset."""

    library: str
    mode: str
    source: str  # "sdist" or "canonical"
    subset: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    note: str = ""
    date: str = ""
    failures: list = dataclasses.field(default_factory=list)


def cache_dir() -> Path:
    """Where sdists, private installs and run directories live (``EMBER_ECOSYSTEM_DIR``, else the user cache)."""
    return Path(os.environ.get("EMBER_ECOSYSTEM_DIR", Path.home() / ".cache" / "ember" / "ecosystem"))


def _pip(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)


def _missing(deps) -> list:
    """The requirements the main environment does not already satisfy (those go to the private target)."""
    out = []
    for dep in deps:
        try:
            importlib.metadata.distribution(re.split("[=<>!~]", dep)[0])
        except importlib.metadata.PackageNotFoundError:
            out.append(dep)
    return out


def prepare(lib: Library, root: Path | None = None) -> tuple[Path, Path, bool]:
    """Install ``lib`` into its private site directory and unpack its sdist.

    Returns ``(site, source, has_tests)``; raises ``RuntimeError`` naming pip's message when the index is
    unreachable or the release is missing."""
    root = (root or cache_dir()) / f"{lib.name}-{lib.version}"
    site, source, sdists = root / "site", root / "src", root.parent / "sdist"
    deps = _missing(lib.deps + ("pytest-timeout",))
    if not (site / ".done").exists():
        shutil.rmtree(site, ignore_errors=True)
        for args in ([lib.spec], deps):
            _install(site, args)
        (site / ".done").touch()
    else:  # requirements added to the table since the private site was made
        _install(site, [d for d in deps if _dist_name(d) not in _installed(site)])
    if not source.exists():
        sdists.mkdir(parents=True, exist_ok=True)
        found = [p for p in sdists.glob("*.tar.gz") if _sdist_of(p, lib)]
        if not found:
            proc = _pip("download", "--quiet", "--no-binary", ":all:", "--no-deps", "-d", str(sdists), lib.spec)
            if proc.returncode:
                raise RuntimeError(f"ecosystem: pip download {lib.spec} failed:\n{proc.stderr[-2000:]}")
            found = [p for p in sdists.glob("*.tar.gz") if _sdist_of(p, lib)]
        tmp = root / "unpack"
        shutil.rmtree(tmp, ignore_errors=True)
        with tarfile.open(found[0]) as tar:
            tar.extractall(tmp, filter="data")
        (only,) = tmp.iterdir()
        only.rename(source)
        tmp.rmdir()
    return site, source, any(_exists(source, arg) for arg in lib.full + lib.smoke)


def _install(site: Path, args: list) -> None:
    if args:
        proc = _pip("install", "--quiet", "--no-deps", "--target", str(site), *args)
        if proc.returncode:
            raise RuntimeError(f"ecosystem: pip install {' '.join(args)} failed:\n{proc.stderr[-2000:]}")


def _dist_name(requirement: str) -> str:
    """The normalised distribution name of a requirement (``"jsonargparse>=4.39"`` -> ``"jsonargparse"``)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[=<>!~\[ ;]", requirement)[0]).lower()


def _installed(site: Path) -> set:
    """The normalised names of the distributions installed in a private site directory."""
    return {_dist_name(d.metadata["Name"]) for d in importlib.metadata.distributions(path=[str(site)])}


def _sdist_of(path: Path, lib: Library) -> bool:
    stem = path.name[: -len(".tar.gz")]
    return stem.replace("-", "_").lower() == f"{lib.dist}_{lib.version}".replace("-", "_").lower()


def _exists(source: Path, arg: str) -> bool:
    return not arg.startswith("-") and (source / arg.split("::")[0]).exists()


def _present(source: Path, subset) -> list:
    """The subset's pytest arguments whose paths the sdist has (options and their values are kept)."""
    out, value_next = [], False
    for arg in subset:
        if value_next or arg.startswith("-") or _exists(source, arg):
            out.append(arg)
        value_next = arg in ("-k", "-m")
    return out


def _option_values(subset) -> set:
    return {b for a, b in zip(subset, subset[1:]) if a in ("-k", "-m")}


def _env(lib: Library, mode: str, site: Path, inject: Path) -> dict:
    env = dict(os.environ, **dict(lib.env))
    if lib.scripts:  # where the canonical test finds the library's scripts (absent until a snapshot gave them)
        env[SCRIPTS_ENV] = str(scripts_dir(lib, site.parent.parent))
    paths = [str(inject), str(site), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _test_tops(lib: Library) -> list:
    """The top-level folders that ``lib``'s subsets name (``tests`` for ``tests/models/...``)."""
    return sorted({a.split("/")[0] for a in lib.full + lib.smoke if not a.startswith("-") and "/" in a})


def add_snapshot_tests(lib: Library, git_dir: Path, ref: str, root: Path | None = None) -> Path:
    """Put the test folders of ``lib``'s subsets from a repository snapshot (``git_dir`` at ``ref``) beside its
    unpacked sdist, for a library whose sdist lacks them; later runs say the tests came from that snapshot.

    ``git_dir`` may also be a plain folder laid out as the repository (its test files gathered one by one, with
    the helpers they import from other folders); all its folders are merged over the sdist's (a file the sdist has
    is replaced) and ``ref`` says where they came from, or, when empty, the folder's ``ORIGIN`` file does."""
    _, source, _ = prepare(lib, root)
    folder = Path(git_dir)
    git_ref, origin = _snapshot_source(folder, ref, "add_snapshot_tests")
    if git_ref is not None:
        with tarfile.open(fileobj=io.BytesIO(_git(folder, "archive", git_ref, *_test_tops(lib)))) as tar:
            tar.extractall(source, filter="data")
    else:
        for top in folder.iterdir():
            if top.is_dir():
                shutil.copytree(top, source / top.name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
    (source / SNAPSHOT_MARK).write_text(origin)
    return source


def scripts_dir(lib: Library, root: Path | None = None) -> Path:
    """The folder that holds ``lib.scripts`` once :func:`add_snapshot_scripts` has put them there (its ``ORIGIN``
    file says where they came from)."""
    return (root or cache_dir()) / f"{lib.name}-{lib.version}" / "scripts"


def add_snapshot_scripts(lib: Library, git_dir: Path, ref: str, root: Path | None = None) -> Path:
    """Put ``lib.scripts`` from a repository snapshot (a bare git directory at ``ref``, or a plain folder laid out
    as the repository) into :func:`scripts_dir`, for the canonical test that runs them; the library's sdist, its
    tests and its stored results are left as they are.

    >>> add_snapshot_scripts(LIBRARIES["einops"], Path("."), "HEAD")
    Traceback (most recent call last):
    ValueError: add_snapshot_scripts: einops runs no scripts of its repository"""
    if not lib.scripts:
        raise ValueError(f"add_snapshot_scripts: {lib.name} runs no scripts of its repository")
    folder, target = Path(git_dir), scripts_dir(lib, root)
    git_ref, origin = _snapshot_source(folder, ref, "add_snapshot_scripts")
    if git_ref is not None:
        texts = {name: _git(folder, "show", f"{git_ref}:{name}") for name in lib.scripts}
        origin += f" ({_git(folder, 'describe', '--tags', '--always', git_ref).decode().strip()})"
    else:
        texts = {name: (folder / name).read_bytes() for name in lib.scripts}
    target.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(text)
    (target / "ORIGIN").write_text(origin + "\n")
    return target


def _git(git_dir: Path, *args) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True).stdout


def _snapshot_source(folder: Path, ref: str, caller: str) -> tuple:
    """``(git ref, origin)`` of a repository snapshot. A bare git directory is read at ``ref`` (HEAD when empty),
    and came from the repository its mirror folder names (``owner+name``) at that ref; a plain folder laid out as
    the repository (git ref None) came from where ``ref`` says, else its ``ORIGIN`` file, else its path. Anything
    else raises FileNotFoundError naming ``caller``."""
    if (folder / "objects").is_dir() and (folder / "HEAD").exists():
        ref = ref or "HEAD"
        return ref, f"{folder.resolve().parent.name.replace('+', '/')} {ref}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{caller}: {folder} is neither a git directory nor a folder")
    mark = folder / "ORIGIN"
    return None, ref or (mark.read_text().strip() if mark.exists() else f"folder {folder.resolve()}")


def run_subset(lib: Library, mode: str, *, smoke: bool = False, timeout: int = 60, budget: int = 300,
               root: Path | None = None, canonical: bool = False, subset: tuple | None = None) -> Result:
    """Run ``lib``'s chosen tests once in ``mode`` ("torch": PyTorch itself; "ember": the alias) and count them
    (``canonical``: ember's canonical-usage test of the library instead; ``subset``: these pytest arguments instead
    of the library's own subset, e.g. one test file with ``-k``, to time-box a run on a busy machine)."""
    if mode not in MODES:
        raise ValueError(f"run_subset: mode must be one of {MODES}, got {mode!r}")
    site, source, has_tests = prepare(lib, root)
    kind = _kind(smoke, subset)  # (which stored result this run replaces: from the arguments as given)
    chosen = tuple(subset) if subset else lib.smoke if smoke and lib.smoke else lib.full
    args = _present(source, chosen)
    if has_tests and any(_exists(source, a) for a in args) and not canonical:
        cwd, origin = source, "snapshot" if (source / SNAPSHOT_MARK).exists() else "sdist"
    elif lib.canonical:
        cwd, args, origin = _REPO / "tests" / "ecosystem" / "canonical", [f"usage_{lib.canonical}.py"], "canonical"
    else:
        return Result(lib.name, mode, "none", "", note="the sdist has no tests and there is no canonical test")
    inject = site.parent / f"inject-{mode}"
    inject.mkdir(exist_ok=True)
    (inject / "sitecustomize.py").write_text(_SITECUSTOMIZE if mode == "ember" else lib.oracle_prelude)
    xml = site.parent / f"junit-{mode}-{origin}.xml"
    xml.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-o", "filterwarnings=",
           f"--rootdir={cwd}", f"--confcutdir={cwd}", "--continue-on-collection-errors", f"--timeout={timeout}",
           f"--junitxml={xml}", *(("-p", "no:ember") if mode == "torch" else ()), *args]  # the oracle: no ember
    result = Result(lib.name, mode, origin, " ".join(args))
    if origin == "snapshot":
        result.note = "tests from " + (source / SNAPSHOT_MARK).read_text().strip()
    if origin == "canonical" and not has_tests:
        result.note = "sdist lacks " + " ".join(a for a in chosen if not a.startswith("-") and not _exists(source, a)
                                                 and a not in _option_values(chosen))
    scripts_origin = scripts_dir(lib, site.parent.parent) / "ORIGIN"
    if origin == "canonical" and scripts_origin.exists():
        scripts = f"{' '.join(lib.scripts)} from {scripts_origin.read_text().strip()}"
        result.note = "; ".join(filter(None, [result.note, scripts]))
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(lib, mode, site, inject), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=budget)
        if not xml.exists():
            result.note = "; ".join(filter(None, [result.note, (out.strip().splitlines() or [""])[-1][:200]]))
    except subprocess.TimeoutExpired:  # as Ctrl-C: pytest stops and still writes the report of what ran
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        result.note = "; ".join(filter(None, [result.note, f"stopped after {budget}s"]))
    if xml.exists():
        _count(xml, result)
    result.date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (site.parent / f"result-{mode}-{kind}-{origin}.json").write_text(json.dumps(dataclasses.asdict(result)))
    return result


def _kind(smoke: bool, subset) -> str:
    """Which stored result a run replaces: ``full``, ``smoke``, or one per ``--subset`` (its arguments hashed)."""
    if subset:
        return "subset" + hashlib.sha1(" ".join(subset).encode()).hexdigest()[:8]
    return "smoke" if smoke else "full"


def stored_results(root: Path | None = None) -> list:
    """The latest result of every library, subset (full, smoke, each ``--subset``) and mode run so far (kept beside
    each private install)."""
    out = []
    for lib in LIBRARIES.values():
        folder = (root or cache_dir()) / f"{lib.name}-{lib.version}"
        kinds = sorted({p.name.split("-")[2] for p in folder.glob("result-*.json")} - {"full", "smoke"})
        for kind in ("full", "smoke", *kinds):
            for origin in ("sdist", "snapshot", "canonical"):
                for mode in MODES:
                    path = folder / f"result-{mode}-{kind}-{origin}.json"
                    if path.exists():
                        out.append(Result(**json.loads(path.read_text())))
    return out


def _count(xml: Path, result: Result) -> None:
    for case in ET.parse(xml).getroot().iter("testcase"):
        if case.get("name") is None:  # the test running when the budget ran out: not a result
            continue
        kinds = {child.tag for child in case}
        name = f"{case.get('classname')}::{case.get('name')}"
        if "skipped" in kinds:
            result.skipped += 1
        elif "error" in kinds:
            result.errors += 1
            result.failures.append((name, _message(case, "error")))
        elif "failure" in kinds:
            result.failed += 1
            result.failures.append((name, _message(case, "failure")))
        else:
            result.passed += 1


def _message(case, tag) -> str:
    node = case.find(tag)
    return (node.get("message") or "").splitlines()[0][:200] if node is not None else ""


def compare(names=None, *, smoke: bool = False, timeout: int = 60, budget: int = 300, canonical: bool = False,
            subset: tuple | None = None, log=print) -> list:
    """Run each named library (all of :data:`LIBRARIES` by default) under PyTorch and under ember (``subset``: see
    :func:`run_subset`)."""
    results = []
    for name in names or LIBRARIES:
        lib = LIBRARIES[name]
        for mode in MODES:
            try:
                res = run_subset(lib, mode, smoke=smoke, timeout=timeout, budget=budget, canonical=canonical,
                                 subset=subset)
            except RuntimeError as exc:
                res = Result(name, mode, "none", "", note=str(exc).splitlines()[0])
            log(f"{name:13s} {mode:6s} {res.source:9s} passed={res.passed} failed={res.failed} "
                f"errors={res.errors} skipped={res.skipped} {res.note}")
            results.append(res)
    return results


def table(results, *, date: str | None = None) -> str:
    """The comparison as a Markdown table: counts per library and mode, and ember's pass count over PyTorch's."""
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    torch_version = _version("torch")
    lines = [f"Table written {date}; PyTorch {torch_version} (oracle) vs ember {_version('ember')} under the alias "
             f"(torch.__version__ {_torch_version}).", "",
             "| library | version | tests from | subset | mode | run | passed | failed | errors | skipped | ratio "
             "| note |",
             "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    runs = {}  # (library, subset) -> {mode: result}
    for res in results:
        runs.setdefault((res.library, res.subset), {})[res.mode] = res
    for (name, _), modes in runs.items():
        base = modes.get("torch")
        for mode, res in modes.items():
            ratio = f"{res.passed / base.passed:.1%}" if mode == "ember" and base and base.passed else ""
            lines.append(f"| {name} | {LIBRARIES[name].version} | {res.source} | `{res.subset}` | {mode} | "
                         f"{res.date} | {res.passed} | {res.failed} | {res.errors} | {res.skipped} | {ratio} | "
                         f"{res.note} |")
    return "\n".join(lines) + "\n"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


