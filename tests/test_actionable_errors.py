"""What a notebook cell shows when something outside the AWS wing is wrong: one line that says what to do.

A missing GGUF (`model.locate`) and a local server that cannot start (`workshop.start_local_server`: the
port is taken, or the server stops before answering) raise the library's own `SemifError`, with no
chained traceback from deep inside the library (`raise ... from None`).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from semif_lib.errors import ModelNotFoundError, SemifError


def assert_one_line(exc: BaseException, limit: int = 400) -> str:
    message = str(exc)
    assert "\n" not in message and len(message) <= limit, f"not one short line ({len(message)} chars):\n{message}"
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__), "a chained traceback would follow"
    return message


def test_missing_gguf_says_what_to_set(tmp_path):
    from semif_lib.model import locate

    with pytest.raises(ModelNotFoundError) as info:
        locate.find_model_path(tmp_path / "missing.gguf")
    message = assert_one_line(info.value)
    assert "missing.gguf does not exist" in message and "SEMIF_MODEL_PATH" in message and "MODEL" in message


def test_a_folder_given_as_the_model_file_points_to_model_dir(tmp_path):
    from semif_lib.model import locate

    with pytest.raises(ModelNotFoundError) as info:
        locate.find_model_path(tmp_path)
    message = assert_one_line(info.value)
    assert "is a folder" in message and f"SEMIF_MODEL_DIR={tmp_path}" in message


def _settings(tmp_path: Path, url: str):
    from semif_lib.settings import Settings

    return Settings(target="local", state_file=tmp_path / ".semif" / "state.json", run_id="err0r1",
                    local_decision_url=url, local_text_url=url)


def test_port_in_use_is_one_line_and_starts_nothing(tmp_path):
    from semif_lib import workshop

    with socket.socket() as holder:  # another program listening there, not a semif server
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        settings = _settings(tmp_path, f"http://127.0.0.1:{port}")
        state = workshop.load_state(settings)
        with pytest.raises(workshop.LocalServerError) as info:
            workshop.start_local_server("decision", settings=settings, state=state)
    message = assert_one_line(info.value)
    assert isinstance(info.value, SemifError)
    assert f"port {port} is in use" in message and "SEMIF_LOCAL_DECISION_URL=http://127.0.0.1:" in message
    assert state.find("local_process") == []


@pytest.mark.server  # `semif serve` on a missing model: it exits before answering
def test_a_server_that_stops_before_answering_says_why(tmp_path):
    from semif_lib import workshop

    from support.servers import free_port

    settings = _settings(tmp_path, f"http://127.0.0.1:{free_port()}")
    state = workshop.load_state(settings)
    with pytest.raises(workshop.LocalServerError) as info:
        workshop.start_local_server("decision", settings=settings, state=state,
                                    env={"SEMIF_MODEL_PATH": str(tmp_path / "nope.gguf")}, timeout_s=120)
    message = assert_one_line(info.value, limit=600)
    assert "stopped before answering" in message and "nope.gguf does not exist" in message and "decision-server.log" in message
    assert state.find("local_process") == []


@pytest.mark.notebook
def test_a_notebook_cell_shows_a_semif_error_as_its_message(tmp_path):
    """In a kernel, after `load_notebook_settings`: `ErrorName: message` and a hint, no library frames; the run stops there."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from semif_lib import notebook\nsettings = notebook.load_notebook_settings('local')"),
                nbformat.v4.new_code_cell("from semif_lib.model.locate import find_model_path\n"
                                          f"find_model_path({str(tmp_path / 'nowhere.gguf')!r})"),
                nbformat.v4.new_code_cell("print('not reached')")]
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        client.execute()
    errors = [out for out in nb.cells[1].outputs if out.output_type == "error"]
    assert [e.ename for e in errors] == ["ModelNotFoundError"]
    assert len(errors[0].traceback) == 2 and "nowhere.gguf does not exist" in errors[0].traceback[0], errors[0].traceback
    assert "%tb" in errors[0].traceback[1] and not nb.cells[2].outputs
