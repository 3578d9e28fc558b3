"""Install one paper without the other 56: the extras table matches what the code imports, a
missing dependency is named with its install line, and a wheel built from this checkout
installs in a fresh virtual environment with the core and one light extra (lcot)."""

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iclr24 import extras, registry
from iclr24.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_every_third_party_module_a_paper_imports_is_in_its_extra():
    table = extras.build_table({p.slug: p.package_dir for p in registry.papers()
                                if p.implemented})
    committed = json.loads(extras.TABLE_PATH.read_text())
    assert committed == table, ("src/iclr24/extras.json is out of date with the imports: run "
                                "`.venv/bin/python -m iclr24.extras --write`")
    pyproject = ROOT / "pyproject.toml"
    assert extras.rewrite_pyproject(pyproject, table) == pyproject.read_text(), (
        "pyproject.toml's extras are out of date: run `.venv/bin/python -m iclr24.extras "
        "--write`")
    for slug, entry in table.items():
        for module in entry["modules"]:
            wanted = extras.distribution_of(slug, module).lower()
            names = [r.split(">")[0].split("=")[0].split("<")[0].split("[")[0].lower()
                     for r in entry["requirements"] + list(extras.CORE)]
            assert wanted in names, (slug, module)


def test_the_core_install_is_the_framework_only():
    import tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert sorted(doc["project"]["dependencies"]) == sorted(extras.CORE)
    optional = doc["project"]["optional-dependencies"]
    assert set(optional) >= {p.slug for p in registry.papers() if p.implemented} | {
        "all", "llm", "graphs", "fl"}
    assert "jax>=0.10,<0.11" in optional["autofd"]  # autofd hooks into JAX internals
    assert optional["lcot"] == ["pot>=0.9.4", "scikit-learn>=1.4"]
    assert "torch>=2.3" not in optional["lcot"]


def test_importing_a_paper_without_its_dependency_names_the_install_line(monkeypatch):
    for name in [m for m in sys.modules if m.startswith("iclr24.papers.lcot")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ot", None)  # POT "not installed"
    from iclr24.papers import MissingPaperDependency

    with pytest.raises(MissingPaperDependency) as info:
        import iclr24.papers.lcot.baselines  # noqa: F401 (ot is imported lazily, in a function)
    assert str(info.value) == ("the paper 'lcot' needs the package 'pot' (module 'ot' is not "
                               'installed): pip install "iclr24[lcot]"')
    assert isinstance(info.value, ImportError)
    assert registry.get("lcot").missing_modules() == ["ot"]
    res = runner.invoke(app, ["run", "lcot", "--scale", "smoke"])
    assert res.exit_code == 2 and 'pip install "iclr24[lcot]"' in res.output
    res = runner.invoke(app, ["list", "--json"])
    (lcot,) = [p for p in json.loads(res.stdout)["papers"] if p["slug"] == "lcot"]
    assert lcot["missing"] == ["ot"] and lcot["install"] == 'pip install "iclr24[lcot]"'


def test_an_installed_paper_imports_as_before():
    import inspect

    import iclr24.papers.lcot as lcot

    assert callable(lcot.lcot_embedding) and inspect.getsource(lcot)
    assert registry.get("lcot").missing_modules() == []


@pytest.mark.serial
@pytest.mark.timeout(900)
def test_wheel_and_sdist_install_one_paper_in_a_fresh_venv(tmp_path):
    """python -m build; the wheel holds the catalogue, templates, results and extras table and
    no tests; core + lcot in a fresh venv runs list, show and lcot's smoke claims, and names
    the install line for a paper that is not installed."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                    str(ROOT)], check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("iclr24/catalog.toml", "iclr24/extras.json", "iclr24/results/lcot.jsonl",
                   "iclr24/report/templates/index.html.j2", "iclr24/papers/lcot/claims.py"):
        assert needed in names, needed
    assert not any(n.startswith("tests/") for n in names)
    members = tarfile.open(sdist).getnames()
    assert not any("/tests/" in m for m in members)
    assert any(m.endswith("iclr24/catalog.toml") for m in members)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICLR24_STORE", "VIRTUAL"))}
    env["ICLR24_STORE"] = str(tmp_path / "store.sqlite")
    install = subprocess.run([str(py), "-m", "pip", "install", "--quiet",
                              "-c", str(ROOT / "constraints.txt"), f"{wheel}[lcot]"],
                             capture_output=True, text=True, timeout=900, env=env)
    assert install.returncode == 0, install.stderr[-3000:]
    exe = env_dir / "bin" / "iclr24"

    def run(*args):
        return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env,
                              timeout=300, cwd=tmp_path)

    listed = run("list", "--json")
    assert listed.returncode == 0, listed.stderr
    papers = {p["slug"]: p for p in json.loads(listed.stdout)["papers"]}
    assert papers["lcot"]["missing"] == [] and "torch" in papers["zeropp"]["missing"]
    lcot = {r["claim"]: r for r in papers["lcot"]["results"]}
    assert lcot["speedup"]["headline"]["scale"] == "small"  # the shipped reference results
    shown = run("show", "lcot")
    assert shown.returncode == 0 and "Linear circular optimal transport" in shown.stdout
    smoke = run("run", "lcot", "--scale", "smoke")
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "3/3 claims ran at smoke here" in smoke.stdout
    refused = run("run", "zeropp", "--scale", "smoke")
    assert refused.returncode == 2 and 'pip install "iclr24[zeropp]"' in refused.stderr
    imported = subprocess.run([str(py), "-c", "import iclr24.papers.zeropp.claims"],
                              capture_output=True, text=True, env=env, timeout=120)
    assert imported.returncode == 1
    assert "MissingPaperDependency: the paper 'zeropp' needs the package" in imported.stderr
    assert 'pip install "iclr24[zeropp]"' in imported.stderr
