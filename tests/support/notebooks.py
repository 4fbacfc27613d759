"""What the notebook tests share: the smaller parameters they run notebooks with, and which ones the browser runs."""

from __future__ import annotations

# Smaller than the notebooks' defaults, so the suite fits a shared 2-core machine; same code paths.
SMALL_PARAMETERS: dict[str, dict[str, object]] = {
    "02_deploy_text_dlc.ipynb": {"MAX_TOKENS": 16},
    "05_score_decisions_prefix_forking.ipynb": {"STATE_INDEX": 26, "QUESTIONS": 3},
    "07_calibrate_decisions.ipynb": {"SAMPLE": 10, "SHOW": 3},
}

# tests/test_browser.py runs these top to bottom in JupyterLab (with SMALL_PARAMETERS) and fails on any
# cell's error: where it runs, tests/test_notebooks.py does not run them again with nbclient.
BROWSER_NOTEBOOKS = ("00_local_quickstart.ipynb", "05_score_decisions_prefix_forking.ipynb")


def browser_runs_notebooks(session) -> bool:
    """Whether this session runs tests/test_browser.py: chromium is there and `-m` did not deselect it."""
    return any(item.path.name == "test_browser.py" for item in session.items)
