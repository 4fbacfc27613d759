"""The repository root: one rule (`semif_lib.paths.repo_root`), whatever the working directory."""

from __future__ import annotations

from pathlib import Path

from semif_lib import paths

HERE = Path(__file__).resolve().parents[1]


def test_the_checkout_is_found_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert paths.repo_root() == HERE
    assert paths.is_repo_root(HERE)


def test_without_an_editable_checkout_the_first_parent_with_our_pyproject_wins(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PACKAGE_DIR", tmp_path / "site-packages" / "semif_lib")
    (tmp_path / "checkout" / "notebooks").mkdir(parents=True)
    (tmp_path / "checkout" / "pyproject.toml").write_text(f'[project]\nname = "{paths.PROJECT_NAME}"\n')
    assert paths.repo_root(tmp_path / "checkout" / "notebooks") == tmp_path / "checkout"
    assert paths.repo_root(tmp_path) == tmp_path  # nothing above: the start itself
