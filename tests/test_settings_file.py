"""The settings file a notebook kernel reads: a terminal's `export SEMIF_TARGET=aws` never reaches a
Studio kernel, so `load_settings` also reads `~/.semif/settings.env` (or `SEMIF_SETTINGS_FILE`), the environment
winning over it, and the notebook's first line says where the target came from."""

from __future__ import annotations

import json
import subprocess
import sys


def _isolate(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SEMIF_SETTINGS_FILE", raising=False)
    for name in ("SEMIF_TARGET", "SEMIF_DLC_VARIANT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / ".semif" / "settings.env"
    path.parent.mkdir()
    return path


def test_the_settings_file_is_read_and_the_environment_wins(monkeypatch, tmp_path):
    from semif_lib.notebook.display import describe_target
    from semif_lib.settings import Settings, load_settings, setting_source

    path = _isolate(monkeypatch, tmp_path)
    assert (load_settings().target, setting_source("target")) == ("local", "default")
    path.write_text("# written by the event team's Studio lifecycle configuration\nSEMIF_TARGET=aws\nSEMIF_DLC_VARIANT=cuda\nOTHER=x\n")
    settings = load_settings()
    assert (settings.target, settings.dlc_variant) == ("aws", "cuda")
    assert setting_source("target") == f"SEMIF_TARGET in {path}"
    assert describe_target(settings).endswith(f"(target from SEMIF_TARGET in {path})")
    assert describe_target(settings, target="local").endswith("(target from TARGET parameter)")
    assert Settings().target == "local", "an explicit Settings() (tests, servers given their settings) reads no file"

    monkeypatch.setenv("SEMIF_TARGET", "container")
    assert (load_settings().target, setting_source("target")) == ("container", "SEMIF_TARGET")
    monkeypatch.delenv("SEMIF_TARGET")
    other = tmp_path / "elsewhere.env"
    other.write_text("SEMIF_TARGET=container\n")
    monkeypatch.setenv("SEMIF_SETTINGS_FILE", str(other))
    assert (load_settings().target, setting_source("target")) == ("container", f"SEMIF_TARGET in {other}")


def test_a_bad_value_in_the_file_names_the_variable(monkeypatch, tmp_path):
    import pytest

    from semif_lib.errors import InvalidRequestError
    from semif_lib.settings import load_settings

    _isolate(monkeypatch, tmp_path).write_text("SEMIF_TARGET=cloud\n")
    with pytest.raises(InvalidRequestError, match="SEMIF_TARGET='cloud'"):
        load_settings()


def test_a_kernel_started_without_the_variable_reads_the_file(monkeypatch, tmp_path):
    """A fresh interpreter (as a Jupyter kernel is) with no SEMIF_TARGET in its environment: the file's target."""
    path = _isolate(monkeypatch, tmp_path)
    path.write_text("SEMIF_TARGET=aws\n")
    code = ("import json; from semif_lib.settings import load_settings, setting_source; "
            "print(json.dumps([load_settings().target, setting_source('target')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert json.loads(out) == ["aws", f"SEMIF_TARGET in {path}"]


def test_settings_are_composed_by_concern_with_the_same_names():
    """One class per concern (engine, server, workshop, AWS, containers, test-only faults), composed into `Settings`:
    every field lives in exactly one of them, and each is still read from `SEMIF_<NAME>`."""
    from semif_lib import settings

    concerns = (settings.EngineSettings, settings.ServerSettings, settings.WorkshopSettings, settings.AwsSettings,
                settings.ContainerSettings, settings.FaultSettings)
    owned = [name for concern in concerns for name in concern.model_fields]
    assert len(owned) == len(set(owned)) and set(owned) == set(settings.Settings.model_fields)
    assert set(settings.FaultSettings.model_fields) == {"fault_decodes", "fault_rate", "fault_seed", "check_invariants"}
    assert settings.AwsSettings(_env_file=None, aws_region="eu-west-1").aws_region == "eu-west-1"  # a concern stands alone too
    assert settings.env_names()["role_arn"] == "SEMIF_ROLE_ARN" and settings.env_names()["n_ctx"] == "SEMIF_N_CTX"


def test_every_variable_is_written_once_on_the_field_that_reads_it():
    """`grep SEMIF_N_CTX semif_lib` finds its reader: each field names its variable literally (`validation_alias`), once,
    in its concern's module, and `env_names` (errors, docs) reads the same names."""
    import ast
    from pathlib import Path

    from semif_lib import settings

    aliases: dict[str, list[tuple[str, str]]] = {}  # variable -> [(module, field)]
    for path in Path(settings.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call):
                for keyword in node.value.keywords:
                    if keyword.arg == "validation_alias" and isinstance(keyword.value, ast.Constant):
                        aliases.setdefault(keyword.value.value, []).append((path.name, node.target.id))
    for field, variable in settings.env_names().items():
        if not variable.startswith(settings.ENV_PREFIX):
            continue  # SageMaker's own names: constants in contract.py, where SageMaker's contract is written
        assert [f for _, f in aliases.get(variable, [])] == [field], f"{variable}: written on {aliases.get(variable)}, not once on {field}"
