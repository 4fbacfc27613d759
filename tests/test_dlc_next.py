"""The next DLC before it lands: `semif dlc check --run` on a simulated image of an upstream release AWS has not shipped.

AWS moves `server-sagemaker-cpu-v1` to a new digest (moto's ECR, under the DLC's registry account, as in
tests/test_dlc_pin.py), and the image's own `llama-server --version` prints what that release's binary prints. The
container CLI is a stand-in named by SEMIF_CONTAINER_RUNTIME that answers `info`, and `run ... llama-server IMAGE
--version` with that line only for the digest the check read from the registry: the check must run exactly the image
the tag names. The image's creation date is not read (ecr:GetDownloadUrlForLayer denied, as in tests/test_dlc_pin.py:
moto does not implement it), so the build is the binary's word alone. Each release is named (no "unknown"), and the
binding line says which verified pair to use or that none is.
"""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

from support.aws import denied_on_the_dlc

DLC = "763104351884"
RUNTIME = textwrap.dedent('''\
    #!/bin/sh
    # A stand-in docker CLI: `info` answers; `run --rm --entrypoint llama-server IMAGE --version` prints the release's line.
    case "$1" in
      info) exit 0 ;;
      run) if [ "$5" = "{image}" ] && [ "$4" = "llama-server" ]; then
             echo '{line}' >&2; echo 'built with GNU 14.2.1 for x86_64-amazon-linux' >&2; exit 0
           fi
           echo "unexpected image $5" >&2; exit 125 ;;
    esac
    exit 2
''')


def _move_the_tag(ecr, line: str) -> str:
    """What AWS does when it ships a release under the floating tag: a new manifest, so a new digest."""
    config = "sha256:" + hashlib.sha256(line.encode()).hexdigest()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1, "digest": config},
                           "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1, "digest": config}]})
    return ecr.put_image(registryId=DLC, repositoryName="llama-cpp", imageManifest=manifest,
                         imageTag="server-sagemaker-cpu-v1")["image"]["imageId"]["imageDigest"]


def _check_moved_tag(aws_settings, tmp_path, monkeypatch, capsys, line: str) -> tuple[int, str, str]:
    from semif_lib.aws.clients import make_client
    from semif_lib.cli import main

    digest = _move_the_tag(make_client("ecr", aws_settings), line)
    pinned = f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@{digest}"
    runtime = tmp_path / "docker"
    runtime.write_text(RUNTIME.format(image=pinned, line=line))
    runtime.chmod(0o755)
    monkeypatch.setenv("SEMIF_CONTAINER_RUNTIME", str(runtime))
    with denied_on_the_dlc(tmp_path, "ecr:GetDownloadUrlForLayer"):  # moto lacks it; the date path is a real account's
        code = main(["dlc", "check", "--run", "--region", "us-east-1"])
    return code, capsys.readouterr().out, pinned


@pytest.mark.parametrize("line", ["version: 0.6.0 (build 11429, commit 9f8e7d6)",
                                  "version: 0.6.0 (build 0, commit unknown)"])  # built without git history: the version names it
def test_a_v060_image_is_named_and_takes_the_pair_verified_on_11434(aws, aws_settings, tmp_path, monkeypatch, capsys, line):
    code, out, pinned = _check_moved_tag(aws_settings, tmp_path, monkeypatch, capsys, line)
    assert code == 0, out
    assert f"digest   {pinned}" in out
    assert ("build    b11429 (v0.6.0, upstream's stable release of about 2026-10-06, which the DLC has not shipped), "
            "read from its llama-server --version") in out
    assert "binding  llama-cpp-python 0.3.36, the verified pair b11401-b11434 -> llama-cpp-python 0.3.36 (no stubs)" in out
    assert f"pin it   SEMIF_DLC_IMAGE={pinned}" in out
    assert "unknown" not in out


@pytest.mark.parametrize(("line", "build_line", "none_for"), [
    ("version: 0.5.0 (build 11146, commit 1a2b3c4)",
     "build    b11146 (v0.5.0, upstream's stable release of about 2026-09-23, which the DLC has not shipped)", "b11146"),
    ("version: 0.7.0 (build 0, commit unknown)",
     "build    version 0.7.0 (v0.7.0, upstream's stable release of about 2026-10-17, which the DLC has not shipped; "
     "its build number is not recorded here)", "version 0.7.0 (no build number recorded)"),
    ("version: 0.8.0 (build 11990, commit 5d6e7f8)",
     "build    b11990 (v0.8.0, upstream's stable release of about 2026-11-02, which the DLC has not shipped)", "b11990"),
])
def test_a_release_without_a_verified_pair_is_named_and_said_so(aws, aws_settings, tmp_path, monkeypatch, capsys, line, build_line,
                                                                none_for):
    """v0.5.0 (only its llama.h was diffed, no build checked), v0.7.0 and v0.8.0: named, no pin offered, exit 1."""
    code, out, pinned = _check_moved_tag(aws_settings, tmp_path, monkeypatch, capsys, line)
    assert code == 1, out
    assert build_line in out and f"binding  none verified for {none_for} (verified: " in out
    assert "b11401-b11434 -> llama-cpp-python 0.3.36 (no stubs)" in out and "`semif dlc newest`" in out
    assert "pin it" not in out and "unknown" not in out


def test_a_nightly_between_releases_is_named_by_the_release_it_follows():
    """The sdist nightlies (the replica's b10970, the pair's b11434) print `X-dev`: named by the release they follow."""
    from semif_lib.aws.dlc import DlcCheck
    from semif_lib.llamabuilds import read_llama_version

    found = read_llama_version("version: 0.6.0-dev (build 11434, commit unknown)")
    text = "\n".join(DlcCheck("img", None, None, found.build, True, "0.3.36", (), found.version).lines())
    assert "build    b11434, read from its llama-server --version; a nightly after v0.6.0 (b11429)" in text
    assert "binding  llama-cpp-python 0.3.36, the verified pair b11401-b11434" in text
