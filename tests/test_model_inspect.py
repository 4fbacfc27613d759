"""`semif model inspect` on both real model families, and a GGUF that cannot work refused in one line.

The unworkable GGUF is a copy of the embedded one with its architecture renamed in the metadata, written by
llama.cpp's own `gguf` package: the weights are real, only the fact under test is changed.
"""

from __future__ import annotations

import pytest

from semif_lib.cli import main
from semif_lib.decision.inspection import inspect_model, refuse_unworkable
from semif_lib.errors import ModelLoadError
from semif_lib.model.locate import find_embedded_model
from semif_lib.settings import Settings

from support.models import copy_with_metadata

pytestmark = pytest.mark.model  # llama.cpp loads each file's vocabulary


def test_inspect_smollm2_prints_the_facts(capsys):
    assert main(["model", "inspect", str(find_embedded_model())]) == 0
    out = capsys.readouterr().out
    for fact in ("architecture:    llama (llama.cpp here loads it: yes)", "quantization Q4_1", "context length:  8192",
                 "vocabulary 49152", "chat template:   present", "ml.c6i.large", "Yes/No, score digits and"):
        assert fact in out, (fact, out)
    assert "refused" not in out


def test_inspect_qwen_reports_its_own_family(qwen_model_path):
    report = inspect_model(qwen_model_path, Settings(n_ctx=8192))
    assert (report.architecture, report.quantization, report.context_length, report.vocab_size) == ("qwen2", "Q4_K_M", 32768, 151936)
    assert report.name == "Qwen2.5 Coder 0.5B Instruct AWQ" and report.architecture_loads and report.problems == []
    assert 0.4e9 < report.parameters < 0.7e9 and report.letter_slots >= 255
    assert 1.0 < report.memory_bytes / 1024 ** 3 < 1.5 and "ml.c6i.large" in report.fits


def test_an_architecture_llama_cpp_lacks_is_refused_before_packaging(tmp_path, capsys):
    bad = copy_with_metadata(find_embedded_model(), tmp_path / "weird.gguf", arch="notarealarch")
    with pytest.raises(ModelLoadError) as info:
        refuse_unworkable(bad)
    assert "weird.gguf cannot serve decisions: llama.cpp cannot load architecture 'notarealarch'" in info.value.message
    assert "pick an instruct GGUF" in info.value.message and "\n" not in info.value.message
    assert main(["model", "inspect", str(bad)]) == 2
    assert "refused:         llama.cpp cannot load architecture 'notarealarch'" in capsys.readouterr().out
