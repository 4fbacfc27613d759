"""target=container: the workshop's own calls, unchanged, on the two images run locally as SageMaker runs them.

The text image is the real llama.cpp DLC when AWS credentials can pull it; here they cannot (the AWS
endpoint is a closed local port), so the DLC replica stands in, and the adapter image is built FROM it.
"""

from __future__ import annotations

import pytest

from support.paths import DATA
from support.servers import free_port


@pytest.fixture
def container_settings(tmp_path, monkeypatch, container_runtime, replica_image):
    from semif_lib.settings import Settings

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing"}.items():
        monkeypatch.setenv(key, value)
    return Settings(target="container", state_file=tmp_path / "state.json", aws_region="us-east-1",
                    aws_endpoint_url=f"http://127.0.0.1:{free_port()}",  # nothing listens: the pull fails at once
                    local_decision_url=f"http://127.0.0.1:{free_port()}", local_text_url=f"http://127.0.0.1:{free_port()}")


@pytest.mark.model
def test_the_workshop_steps_run_on_the_images(container_settings, container_runtime, example_requests):
    from semif_lib import workshop
    from semif_lib.containers.images import ADAPTER_IMAGE, REPLICA_IMAGE

    settings, said = container_settings, []
    workshop.package_model(settings=settings, progress=False)
    text_url = workshop.deploy_text_model(settings=settings, llama_settings={"ctx_size": 2048, "threads": 2})
    assert text_url == settings.local_text_url
    reply = workshop.chat("Name one colour.", settings=settings, max_tokens=8, temperature=0)
    assert reply["choices"][0]["message"]["content"].strip()
    streamed = "".join(workshop.stream_chat("Name one colour.", settings=settings, max_tokens=8, temperature=0))
    assert streamed == reply["choices"][0]["message"]["content"]

    image = workshop.build_adapter_image(settings=settings, log=said.append)
    assert image == ADAPTER_IMAGE and any(f"BASE_IMAGE={REPLICA_IMAGE}" in line for line in said)
    assert workshop.deploy_decision_model(settings=settings) == settings.local_decision_url
    answer = workshop.invoke_decision(example_requests[0], settings=settings)
    assert set(answer["answers"]) == set(example_requests[0]["questions"])
    records = workshop.score_jsonlines(DATA / "examples.jsonl", settings=settings)
    assert [r["id"] for r in records] == [r["id"] for r in example_requests]

    state = workshop.load_state(settings)
    names = [e["name"] for e in state.find("local_container")]
    assert len(names) == 2 and state.get("text_image") == REPLICA_IMAGE
    report = workshop.cleanup(settings=settings)
    assert not report.failed and sorted(report.removed) == sorted(f"local_container {n}" for n in names)
    for name in names:  # stopped (SIGTERM) and removed
        assert container_runtime.run("container", "inspect", name, check=False).returncode != 0


def test_no_runtime_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    from semif_lib import workshop
    from semif_lib.settings import Settings

    monkeypatch.setenv("SEMIF_CONTAINER_RUNTIME", "none")
    settings = Settings(target="container", state_file=tmp_path / "state.json")
    workshop.package_model(settings=settings, progress=False)
    with pytest.raises(workshop.LocalServerError, match="target=container needs a working docker or podman CLI"):
        workshop.deploy_text_model(settings=settings)
