"""GPU layers asked for on a machine where ggml registered no GPU device are refused at start-up, in the
adapter (`semif serve`, the engine's model load), in the container's binding check (`IMAGE check`, which CodeBuild
runs), and cuda Batch Transform is refused while its AMIs' driver is below the DLC's CUDA.

This machine has no GPU and a CPU build of llama.cpp, so requesting GPU layers here must be refused; on a machine
with a GPU build and a GPU the first tests skip.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REFUSAL = "SEMIF_N_GPU_LAYERS=999 asks for GPU layers, but ggml registered no GPU device"


@pytest.fixture(scope="module")
def llama_cpp_without_gpu():
    from semif_lib.decision.backend import ensure_backend

    lib = ensure_backend()
    if lib.llama_supports_gpu_offload():
        pytest.skip("this llama.cpp registered a GPU device: nothing to refuse")
    return lib


def test_the_engine_refuses_gpu_layers_before_loading_the_model(llama_cpp_without_gpu, tmp_path):
    from semif_lib.decision.backend import LlamaBackend, NoGpuDeviceError
    from semif_lib.settings import Settings

    with pytest.raises(NoGpuDeviceError, match=REFUSAL) as refused:
        LlamaBackend(Settings(n_gpu_layers=999), tmp_path / "never-read.gguf")
    assert refused.value.status_code == 503 and refused.value.field == "n_gpu_layers"
    with pytest.raises(NoGpuDeviceError, match="SEMIF_N_GPU_LAYERS=-1 asks"):
        LlamaBackend(Settings(n_gpu_layers=-1), tmp_path / "never-read.gguf")  # -1: every layer, as in llama.cpp


@pytest.mark.server
def test_semif_serve_exits_with_one_line_when_gpu_layers_cannot_be_served(llama_cpp_without_gpu):
    """The model never loads and /ping never answers 200: exit 2 (the model could not load) with the refusal."""
    from support.servers import free_port

    env = {**os.environ, "SEMIF_N_GPU_LAYERS": "999", "SEMIF_PORT": str(free_port())}
    run = subprocess.run([sys.executable, "-m", "semif_lib.cli", "serve"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"semif serve: error: cannot load the model: {REFUSAL}" in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-2000:]


def test_the_containers_binding_check_refuses_gpu_layers_without_a_gpu(container_runtime, adapter_image):
    """What CodeBuild and SageMaker run (`IMAGE check`, `IMAGE serve`): exit 3 with one FATAL line, before any model."""
    done = container_runtime.run("run", "--rm", "-e", "SEMIF_N_GPU_LAYERS=999", adapter_image, "check", check=False, timeout_s=120)
    assert done.returncode == 3, done.stderr
    fatal = [line for line in done.stderr.splitlines() if line.startswith("semif: FATAL:")]
    assert len(fatal) == 1 and REFUSAL in fatal[0], done.stderr
    done = container_runtime.run("run", "--rm", adapter_image, "check", check=False, timeout_s=120)
    assert done.returncode == 0 and "'gpu_offload': False" in done.stderr, done.stderr


def test_cuda_batch_transform_refusal_rests_on_botocores_ami_list():
    """The refusal's reason, read from SageMaker's own model: only driver-470 and driver-535 batch AMIs exist. A newer
    one (driver >= 580) makes this fail: then try cuda Batch Transform on a real account and revisit dlc.py."""
    import re

    import botocore.session

    from semif_lib.aws import dlc

    shape = botocore.session.get_session().get_service_model("sagemaker").shape_for("TransformResources")
    amis = re.findall(r"<dt>([a-z0-9-]+)</dt>", shape.members["TransformAmiVersion"].documentation)
    drivers = [int(d) for d in re.findall(r"NVIDIA driver version: (\d+)", shape.members["TransformAmiVersion"].documentation)]
    assert amis == ["al2-ami-sagemaker-batch-gpu-470", "al2-ami-sagemaker-batch-gpu-535"] and dlc.GPU_TRANSFORM_AMI == amis[-1]
    assert max(drivers) == dlc.GPU_TRANSFORM_DRIVER < dlc.DLC_CUDA_MIN_DRIVER and not dlc.CUDA_TRANSFORM_VERIFIED
