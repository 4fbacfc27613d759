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


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    conda, pip = [], []
    for dep in env["dependencies"]:
        (pip.extend(dep["pip"]) if isinstance(dep, dict) else conda.append(dep))
    python = [d for d in conda if d.startswith("python")]
    assert python == ["python" + project["requires-python"]]
    expected = {_normalise(d) for d in project["dependencies"] + project["optional-dependencies"]["dev"]}
    declared = {_normalise(d) for d in conda if not d.startswith("python") and d != "pip"}
    declared |= {_normalise(d) for d in pip if not d.startswith("-e")}
    assert declared == expected
    assert any(d.startswith("-e") for d in pip), "the pip section installs the package itself"


def test_ci_runs_the_readme_test_command():
    """`.ci/run` runs the README's second command verbatim, so the README's promise is what CI checks."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2 and commands[1].endswith("python -m pytest")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
