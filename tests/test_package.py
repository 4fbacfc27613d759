"""Packaging invariants: cheap import, settings in one place, environment.yml in sync."""

import os
import re
import tomllib

import yaml

from support.paths import ROOT


def test_settings_read_semif_environment(monkeypatch):
    from semif_lib.settings import Settings, env_names

    monkeypatch.setattr(os, "environ", {"SEMIF_N_CTX": "2048", "SEMIF_THREADS": "3", "SEMIF_MODE": "serial"})
    s = Settings()
    assert (s.n_ctx, s.threads, s.mode) == (2048, 3, "serial")
    assert env_names()["model_path"] == "SEMIF_MODEL_PATH"


def _normalise(spec: str) -> tuple[str, str]:
    name, version = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(.*)$", spec.strip()).groups()
    return name.lower().replace("_", "-"), version.replace(" ", "").replace("==", "=")


def _conda_declared(name: str) -> tuple[dict, set[tuple[str, str]], list[str]]:
    """A conda environment file: the document, the packages it declares (name, version; python and pip aside), and the
    Python lines."""
    env = yaml.safe_load((ROOT / name).read_text())
    conda, pip = [], []
    for dep in env["dependencies"]:
        (pip.extend(dep["pip"]) if isinstance(dep, dict) else conda.append(dep))
    declared = {_normalise(d) for d in conda if not d.startswith("python") and d != "pip"}
    declared |= {_normalise(d) for d in pip if not d.startswith("-e")}
    assert any(d.startswith("-e") for d in pip), f"{name}: the pip section installs the package itself"
    assert "conda-forge" in env["channels"]
    return env, declared, [d for d in conda if d.startswith("python")]


def test_environment_yml_matches_pyproject():
    """environment.yml, the attendees' (SageMaker Studio), declares exactly the package's dependencies: no test stack,
    no test models; environment-dev.yml adds exactly the `dev` extra. Both pin the same Python range."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {_normalise(d) for d in project["dependencies"]}
    dev = {_normalise(d) for d in project["optional-dependencies"]["dev"]}
    env, attendee, python = _conda_declared("environment.yml")
    assert python == ["python" + project["requires-python"]]
    assert attendee == runtime
    assert not attendee & dev, "the attendees' environment carries no development package"
    assert env["name"] == "semif-workshop", "the kernel the notebooks' guard names: Python (semif-workshop)"
    env_dev, development, python_dev = _conda_declared("environment-dev.yml")
    assert python_dev == python and development == runtime | dev
    assert env_dev["name"] != env["name"], "both can live side by side"


def test_ci_runs_the_readme_test_command():
    """`.ci/run` runs the README's second command verbatim, so the README's promise is what CI checks: the whole suite, in
    two workers pinned to their own CPUs (tests/support/workers.py)."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2 and commands[1].endswith("python -m pytest -n 2")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
