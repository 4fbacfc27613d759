"""`semif bench gpu`, the GPU run prepared to the last command: its plan, its device check, and its dry run end to end.

This machine has no GPU, so the dry run must say every step and stop at the device check with the refusal, and a real
run must refuse before any benchmark; on a machine whose llama.cpp registers a GPU those two tests skip. How the check
reads llama.cpp's log is tested on logs written here: a CUDA device with every layer passes, anything less fails.
"""

from __future__ import annotations

import json
import sys

import pytest

from semif_lib.measurement.bench import gpu

FULL_LOG = ("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H100 80GB HBM3) - 80000 MiB free\n"
            "load_tensors: offloading 30 repeating layers to GPU\nload_tensors: offloaded 31/31 layers to GPU\n")


def fake_check(stderr: str, found: dict, code: int = 0) -> gpu.Step:
    """A device check's subprocess that writes `stderr` as llama.cpp's log and `found` as its JSON line."""
    script = f"import sys; sys.stderr.write({stderr!r}); print({json.dumps(found)!r}); sys.exit({code})"
    return gpu.Step("device check", [sys.executable, "-c", script])


@pytest.fixture
def no_baseline(monkeypatch):
    from semif_lib.measurement import conditions

    monkeypatch.setattr(conditions, "measure_baseline", lambda threads, env=None, module=None: {"error": "not measured in tests"})


@pytest.fixture
def without_gpu():
    if gpu.environment_has_cuda():
        pytest.skip("this environment's llama.cpp registers a GPU: nothing to refuse")


def test_the_check_passes_only_with_every_layer_on_a_cuda_device():
    assert gpu.parse_offload(FULL_LOG) == {"offloaded_layers": 31, "layers": 31, "devices": ["CUDA0 (NVIDIA H100 80GB HBM3)"]}
    passed = gpu.check_device(fake_check(FULL_LOG, {"gpu_offload": True}))
    assert passed["ok"] and gpu.device_label(passed) == "nvidia-h100-80gb-hbm3"
    partial = gpu.check_device(fake_check(FULL_LOG.replace("31/31", "20/31"), {"gpu_offload": True}))
    assert not partial["ok"] and "offloaded 20/31 layers" in partial["refused"]
    no_cuda = gpu.check_device(fake_check("load_tensors: offloaded 31/31 layers to GPU\n", {"gpu_offload": True}))
    assert not no_cuda["ok"] and "not every layer is on a CUDA GPU" in no_cuda["refused"]  # no device named: not believed
    none = gpu.check_device(fake_check("", {"gpu_offload": False}, code=3))
    assert not none["ok"] and "ggml registered no GPU device" in none["refused"]
    fatal = gpu.check_device(fake_check("semif: FATAL: SEMIF_N_GPU_LAYERS=-1 asks for GPU layers\n", {}, code=3))
    assert fatal["refused"] == "semif: FATAL: SEMIF_N_GPU_LAYERS=-1 asks for GPU layers"


def test_the_plan_builds_when_needed_and_runs_every_step_on_the_gpu(tmp_path):
    lib = tmp_path / "llama-cpp-b10970-cuda"
    steps = gpu.plan_gpu_run(lib, 10970, tmp_path / "out", "m.gguf", needs_build=True)
    assert [s.name for s in steps] == ["library", "device check", "modes-quick", "readout-vs-generation", "invariance"]
    assert steps[0].env["CUDA"] == "1" and steps[0].argv[-2:] == ["10970", str(lib)]
    for step in steps[1:]:
        assert step.env["SEMIF_N_GPU_LAYERS"] == "-1" and step.env["LLAMA_CPP_LIB_PATH"] == str(lib)
        assert step.argv[1:4] == ["-m", gpu.BINDING, "run"] and "--model" in step.argv  # the backends load, as in the image
    assert steps[2].argv[-6:] == ["modes", "--quick", "--model", "m.gguf", "--output", str(tmp_path / "out" / "modes-quick.json")]
    venv = gpu.plan_gpu_run(None, 10970, tmp_path, None, needs_build=False)
    assert [s.name for s in venv][0] == "device check" and "LLAMA_CPP_LIB_PATH" not in venv[0].env and gpu.BINDING not in venv[0].argv


def test_the_dry_run_says_every_step_and_stops_at_the_device_check(no_baseline, without_gpu, tmp_path, capsys):
    from semif_lib.cli import main

    out = tmp_path / "results"
    assert main(["bench", "gpu", "--dry-run", "--output-dir", str(out)]) == 0
    err = capsys.readouterr().err
    for said in ("1. library: CUDA=1", "build_libllama.sh", "device check: SEMIF_N_GPU_LAYERS=-1", "bench modes --quick",
                 "bench readout-vs-generation --runs 3", "bench invariance"):
        assert said in err, said
    assert "device check: refused: ggml registered no GPU device" in err and "dry run: stopping at the device check" in err
    assert not out.exists()  # nothing written


def test_a_real_run_without_a_gpu_refuses_before_any_benchmark(no_baseline, without_gpu, tmp_path, capsys):
    from semif_lib.cli import main

    out = tmp_path / "results"
    assert main(["bench", "gpu", "--library", "venv", "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "device check failed, stopping before any benchmark" in err and "ggml registered no GPU device" in err
    assert not out.exists() and "$ " not in err  # no step ran
