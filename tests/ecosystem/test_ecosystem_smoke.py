"""CI's smoke subset of the ecosystem comparison: einops' whole suite, from its sdist, under PyTorch and under ember.

The full comparison is ``python -m ember.ecosystem`` (``bash scripts/ecosystem.sh``); see docs/ecosystem.md. This
test skips when the package index cannot be reached or PyTorch (the oracle) is absent."""
import json
import subprocess
import sys

import pytest

from ember import ecosystem


def _index_reachable(dist: str) -> bool:
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", dist], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


@pytest.fixture(scope="module")
def einops_results():
    pytest.importorskip("torch")
    lib = ecosystem.LIBRARIES["einops"]
    if not _index_reachable(lib.dist):
        pytest.skip("the package index is unreachable")
    try:
        return {mode: ecosystem.run_subset(lib, mode, smoke=True, timeout=60, budget=240) for mode in ecosystem.MODES}
    except RuntimeError as exc:
        pytest.skip(f"einops could not be fetched: {exc}")


def test_einops_suite_passes_under_ember_as_under_pytorch(einops_results):
    base, ours = einops_results["torch"], einops_results["ember"]
    assert base.source == ours.source == "sdist"
    assert base.passed >= 50, base
    assert ours.passed >= 0.99 * base.passed, ours.failures


def test_table_reports_both_modes(einops_results):
    text = ecosystem.table(list(einops_results.values()), date="today")
    rows = [line for line in text.splitlines() if line.startswith("| einops")]
    assert [row.split(" | ")[4] for row in rows] == ["torch", "ember"]
    assert rows[1].split(" | ")[10].endswith("%")


def test_stored_results_keep_each_origin(tmp_path):
    """A library's snapshot run and its canonical run are kept side by side, and the table shows both with their
    ratios (offline: the results are written as run_subset writes them)."""
    import dataclasses
    import json

    lib = ecosystem.LIBRARIES["lightning"]
    folder = tmp_path / f"{lib.name}-{lib.version}"
    folder.mkdir()
    for origin, passed in (("snapshot", 150), ("canonical", 1)):
        for mode, got in (("torch", passed), ("ember", passed - 1)):
            res = ecosystem.Result(lib.name, mode, origin, f"subset-{origin}", passed=got, date="today")
            (folder / f"result-{mode}-full-{origin}.json").write_text(json.dumps(dataclasses.asdict(res)))
    results = ecosystem.stored_results(tmp_path)
    assert [(r.source, r.mode) for r in results] == [("snapshot", "torch"), ("snapshot", "ember"),
                                                     ("canonical", "torch"), ("canonical", "ember")]
    rows = [line.split(" | ") for line in ecosystem.table(results, date="today").splitlines()
            if line.startswith("| lightning")]
    assert [(row[2], row[4], row[10]) for row in rows] == [("snapshot", "torch", ""), ("snapshot", "ember", "99.3%"),
                                                           ("canonical", "torch", ""), ("canonical", "ember", "0.0%")]


def test_prepare_installs_requirements_added_later(tmp_path, monkeypatch):
    """A requirement added to a library's row after its private site was made (Lightning's jsonargparse) is
    installed into that site on the next run, and only the missing ones are (offline: pip is recorded)."""
    lib = ecosystem.Library("demo", "demo", "1.0", deps=("jsonargparse>=4.39.0,<4.46.0", "already-here",
                                                         "pytest-timeout"))
    site = tmp_path / "demo-1.0" / "site"
    (site / "already_here-2.0.dist-info").mkdir(parents=True)
    (site / "already_here-2.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Already_Here\n"
                                                                  "Version: 2.0\n")
    (site / ".done").touch()
    (tmp_path / "demo-1.0" / "src").mkdir()
    calls = []
    monkeypatch.setattr(ecosystem, "_pip", lambda *args, **kw: calls.append(args) or subprocess.CompletedProcess(
        args, 0, "", ""))
    monkeypatch.setattr(ecosystem, "_missing", lambda deps: [d for d in deps if d != "pytest-timeout"])
    ecosystem.prepare(lib, tmp_path)
    assert calls == [("install", "--quiet", "--no-deps", "--target", str(site), "jsonargparse>=4.39.0,<4.46.0")]
    assert ecosystem._dist_name("PyYAML>=5; python_version>'3'") == "pyyaml"


def test_tests_from_a_plain_folder(tmp_path, monkeypatch):
    """Test files gathered into a plain folder (laid out as the repository, helper folders included) are merged over
    the unpacked sdist's, which keeps its own files, and the runs name the folder's ORIGIN (offline: the sdist is
    already unpacked)."""
    lib = ecosystem.Library("demo", "demo", "1.0", full=("tests/models/a/test_a.py",))
    root = tmp_path / "cache"
    (root / "demo-1.0" / "site").mkdir(parents=True)
    (root / "demo-1.0" / "site" / ".done").touch()
    (root / "demo-1.0" / "src" / "tests").mkdir(parents=True)
    (root / "demo-1.0" / "src" / "tests" / "test_common.py").write_text("COMMON = 1\n")
    monkeypatch.setattr(ecosystem, "_missing", lambda deps: [])
    gathered = tmp_path / "gathered"
    (gathered / "tests" / "models" / "a").mkdir(parents=True)
    (gathered / "tests" / "models" / "a" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (gathered / "utils").mkdir()  # a helper folder the tests put on sys.path
    (gathered / "utils" / "helper.py").write_text("X = 1\n")
    (gathered / "ORIGIN").write_text("owner/demo at abc123\n")
    source = ecosystem.add_snapshot_tests(lib, gathered, "", root)
    assert (source / "tests" / "models" / "a" / "test_a.py").exists()
    assert (source / "tests" / "test_common.py").read_text() == "COMMON = 1\n"
    assert (source / "utils" / "helper.py").exists()
    assert (source / ecosystem.SNAPSHOT_MARK).read_text() == "owner/demo at abc123"
    assert ecosystem.prepare(lib, root)[2]
    with pytest.raises(FileNotFoundError, match="neither a git directory nor a folder"):
        ecosystem.add_snapshot_tests(lib, tmp_path / "missing", "", root)


def test_scripts_from_a_snapshot(tmp_path):
    """A library's repository scripts (timm's train.py) come from a git snapshot at a ref, or from a plain folder,
    into their own folder, which the canonical run names in EMBER_ECOSYSTEM_SCRIPTS (offline: a local repository)."""
    lib = ecosystem.Library("demo", "demo", "1.0", scripts=("train.py",))
    repo, bare = tmp_path / "work", tmp_path / "owner+demo" / "repo"  # laid out as the fetched snapshots are
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for text in ("print('first')\n", "print('second')\n"):
        (repo / "train.py").write_text(text)
        subprocess.run([*git, "add", "train.py"], check=True)
        subprocess.run([*git, "commit", "-qm", text], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    root = tmp_path / "cache"
    folder = ecosystem.add_snapshot_scripts(lib, bare, "HEAD~1", root)
    assert folder == ecosystem.scripts_dir(lib, root)
    assert (folder / "train.py").read_text() == "print('first')\n"
    assert (folder / "ORIGIN").read_text().startswith("owner/demo HEAD~1 (")
    ecosystem.add_snapshot_scripts(lib, repo, "", root)  # the work tree as a plain folder
    assert (folder / "train.py").read_text() == "print('second')\n"
    env = ecosystem._env(lib, "ember", root / "demo-1.0" / "site", tmp_path)
    assert env[ecosystem.SCRIPTS_ENV] == str(folder)
    with pytest.raises(ValueError, match="einops runs no scripts"):
        ecosystem.add_snapshot_scripts(ecosystem.LIBRARIES["einops"], repo, "", root)


def test_each_subset_run_is_kept(tmp_path):
    """Runs of other pytest arguments (``--subset``) are stored apart from the library's own subsets, one per
    arguments, and the table shows each beside the others."""
    import dataclasses
    import json

    lib = ecosystem.LIBRARIES["transformers"]
    folder = tmp_path / f"{lib.name}-{lib.version}"
    folder.mkdir()
    runs = [(None, "usage"), (("tests/a.py",), "tests/a.py"), (("tests/b.py", "-k", "x"), "tests/b.py -k x")]
    for subset, text in runs:
        kind = ecosystem._kind(False, subset)
        for mode in ecosystem.MODES:
            res = ecosystem.Result(lib.name, mode, "snapshot", text, passed=3, date="today")
            (folder / f"result-{mode}-{kind}-snapshot.json").write_text(json.dumps(dataclasses.asdict(res)))
    assert len({ecosystem._kind(False, s) for s, _ in runs}) == 3
    subsets = [r.subset for r in ecosystem.stored_results(tmp_path)]
    assert sorted(set(subsets)) == ["tests/a.py", "tests/b.py -k x", "usage"] and len(subsets) == 6


def test_a_smoke_run_replaces_the_stored_smoke_result(einops_results):
    """A run of the library's own subset is stored as its ``smoke`` (or ``full``) result, which the next such run
    replaces; only ``--subset`` runs are stored apart."""
    site, _, _ = ecosystem.prepare(ecosystem.LIBRARIES["einops"])
    for mode, res in einops_results.items():
        stored = json.loads((site.parent / f"result-{mode}-smoke-sdist.json").read_text())
        assert stored["date"] == res.date and stored["passed"] == res.passed
