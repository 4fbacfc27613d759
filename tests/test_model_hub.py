"""Hub references through the real `huggingface_hub` client, against a loopback server speaking the hub's protocol.

Each download runs in a fresh interpreter with `HF_ENDPOINT` pointed at the loopback hub and its own
`HF_HOME`, because huggingface_hub reads both when it is imported: what runs is exactly what a user runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from semif_lib.errors import ModelNotFoundError
from semif_lib.model.hub import HubReference, hub_origin, parse_hub_reference, split_shards

from support.aws import make_fake_gguf
from support.hub import COMMIT, HubRepo, LoopbackHub, hub_env
from support.paths import DATA, ROOT

DOWNLOAD = """
import json, sys
from semif_lib.errors import SemifError
from semif_lib.model.locate import find_model_path
try:
    path = find_model_path(sys.argv[1])
except SemifError as exc:
    print(json.dumps({"error": exc.message})); raise SystemExit(0)
print(json.dumps({"path": str(path), "siblings": sorted(p.name for p in path.parent.iterdir())}))
"""

PACKAGE = """
import json, sys
from pathlib import Path
from semif_lib import workshop
from semif_lib.model.package import list_tarball
from semif_lib.settings import Settings
root = Path(sys.argv[2])
settings = Settings(target="local", state_file=root / "state.json", run_id="hub0pk", model_dir=root / "none")
info = workshop.package_model(sys.argv[1], settings=settings, state=workshop.load_state(settings), progress=False)
print(json.dumps({**info, "members": list_tarball(info["tarball"]),
                  "manifest": json.loads((Path(info["tarball"]).parent / "manifest.json").read_text())}))
"""


def download(reference: str, hub: LoopbackHub, hf_home, offline: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", DOWNLOAD, reference], env=hub_env(hub, hf_home, offline), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


@pytest.mark.parametrize(("text", "expected"), [
    ("hf://org/repo/file.gguf", ("org/repo", "file.gguf", None)),
    ("hf:/org/repo/sub/file.gguf@v1.0", ("org/repo", "sub/file.gguf", "v1.0")),  # what pathlib makes of hf://
    ("hf://org/repo@" + COMMIT + "/file.gguf", ("org/repo", "file.gguf", COMMIT)),  # huggingface_hub's own spelling
    ("https://huggingface.co/org/repo/blob/main/file.gguf", ("org/repo", "file.gguf", "main")),
])
def test_hub_references_parse(text, expected):
    ref = parse_hub_reference(text)
    assert (ref.repo_id, ref.filename, ref.revision) == expected


@pytest.mark.parametrize("text", ["hf://org/file.gguf", "hf://org/repo/README.md", "hf://datasets/org/repo/file.gguf"])
def test_a_reference_that_names_no_gguf_says_how_to_write_one(text):
    with pytest.raises(ModelNotFoundError, match=r"hf://org/repo/file.gguf\[@revision\]"):
        parse_hub_reference(text)


def test_split_gguf_is_named_by_its_first_shard():
    assert split_shards("q4-00001-of-00003.gguf") == ("q4-00001-of-00003.gguf", "q4-00002-of-00003.gguf", "q4-00003-of-00003.gguf")
    assert split_shards("model.gguf") == ("model.gguf",)
    with pytest.raises(ModelNotFoundError, match="name the first shard, q4-00001-of-00003.gguf"):
        split_shards("q4-00002-of-00003.gguf")


def test_hub_origin_reads_repository_and_commit_from_the_cache_layout(tmp_path):
    cached = tmp_path / "hub" / "models--org--repo" / "snapshots" / COMMIT / "gguf" / "m-00001-of-00002.gguf"
    assert hub_origin(cached) == HubReference("org/repo", "gguf/m-00001-of-00002.gguf", COMMIT)
    assert str(hub_origin(cached)) == f"hf://org/repo/gguf/m-00001-of-00002.gguf@{COMMIT}"
    assert hub_origin(tmp_path / "models" / "m.gguf") is None


@pytest.fixture()
def shard_files(tmp_path):
    files = {}
    for i in (1, 2, 3):
        path = tmp_path / "src" / f"q4-0000{i}-of-00003.gguf"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"GGUF" + bytes([i]) * (300_000 * i))
        files[f"gguf/{path.name}"] = path
    return files


def test_split_gguf_downloads_every_shard_into_one_snapshot_then_serves_offline(tmp_path, shard_files):
    with LoopbackHub({"org/big": HubRepo(shard_files)}) as hub:
        got = download("hf://org/big/gguf/q4-00001-of-00003.gguf@main", hub, tmp_path / "hf")
        assert got["path"].endswith(f"snapshots/{COMMIT}/gguf/q4-00001-of-00003.gguf"), got
        assert got["siblings"] == sorted(p.name for p in shard_files.values())
        assert f"at commit {COMMIT}: 3 file(s)" in got["stderr"] and "sha256 checked" in got["stderr"]
        served = len(hub.requests)
        again = download("hf://org/big/gguf/q4-00001-of-00003.gguf@main", hub, tmp_path / "hf", offline=True)
        assert again["path"] == got["path"] and len(hub.requests) == served  # HF_HUB_OFFLINE: the cache, no request


def test_interrupted_download_resumes_with_a_range_request(tmp_path, shard_files):
    path = tmp_path / "src" / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 100_000)  # 25.6 MB: huggingface_hub writes 10 MB chunks
    with LoopbackHub({"org/one": HubRepo({"model.gguf": path})}) as hub:
        sha = hub.repos["org/one"].sha256["model.gguf"]
        hub.cut_once[sha] = 15_000_000  # the connection drops after 15 MB
        got = download("hf://org/one/model.gguf", hub, tmp_path / "hf")
        assert "error" not in got, got
        ranges = [r for method, p, r in hub.requests if method == "GET" and r]
        assert ranges == ["bytes=10485760-"]  # it asked only for what it had not written: the rest after one whole chunk
        assert (tmp_path / "hf" / "hub" / "models--org--one" / "blobs" / sha).read_bytes() == path.read_bytes()


def test_corrupt_download_is_refused_and_removed(tmp_path, shard_files):
    path = shard_files["gguf/q4-00001-of-00003.gguf"]
    repo = HubRepo({"model.gguf": path}, sha256={"model.gguf": "f" * 64})  # the hub's LFS sha256 is not the bytes'
    with LoopbackHub({"org/bad": repo}) as hub:
        got = download("hf://org/bad/model.gguf", hub, tmp_path / "hf")
        assert "differs from the hub's ffff" in got["error"] and "rerun to download it again" in got["error"]
        assert not (tmp_path / "hf" / "hub" / "models--org--bad" / "blobs" / ("f" * 64)).exists()


def test_missing_file_and_offline_without_cache_are_one_line_each(tmp_path, shard_files):
    with LoopbackHub({"org/one": HubRepo({"model.gguf": shard_files["gguf/q4-00001-of-00003.gguf"]})}) as hub:
        missing = download("hf://org/one/other.gguf", hub, tmp_path / "hf")
        assert "the hub answered 404" in missing["error"]
        unknown_rev = download("hf://org/one/model.gguf@v9", hub, tmp_path / "hf")
        assert "the hub answered 404" in unknown_rev["error"]
        offline = download("hf://org/one/model.gguf", hub, tmp_path / "hf", offline=True)
        assert "not in the local cache" in offline["error"] and "HF_HUB_OFFLINE" in offline["error"]


def test_packaging_takes_a_hub_reference_and_every_shard(tmp_path):
    """`package_model("hf://...")`: downloaded through the real client, inspected (llama.cpp opens both shards of this
    weightless split GGUF), every shard at the tarball's root, the repository and resolved commit recorded."""
    first = make_fake_gguf(tmp_path / "src" / "tiny.gguf", shards=2)
    names = [first.name, first.name.replace("00001-of", "00002-of")]
    with LoopbackHub({"org/split": HubRepo({f"gguf/{n}": first.with_name(n) for n in names})}) as hub:
        run = subprocess.run([sys.executable, "-c", PACKAGE, f"hf://org/split/gguf/{names[0]}@main", str(tmp_path / "pkg")],
                             env=hub_env(hub, tmp_path / "hf"), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["members"] == names and got["source"] == f"hf://org/split/gguf/{names[0]}@{COMMIT}"
    assert all(f"/snapshots/{COMMIT}/gguf/" in f for f in got["files"])  # packaged from the cache: no third copy
    assert got["manifest"]["source"] == got["source"] and got["manifest"]["inspection"]["architecture"] == "llama"


@pytest.mark.model
def test_semif_score_runs_a_model_named_by_hub_reference(tmp_path):
    """The README's Studio command, end to end: `semif score ... --model hf://...` through the real client."""
    from semif_lib.model.locate import find_embedded_model

    gguf = find_embedded_model()
    out = tmp_path / "out.jsonl"
    with LoopbackHub({"HuggingFaceTB/SmolLM2-135M-Instruct-GGUF": HubRepo({gguf.name: gguf})}) as hub:
        env = hub_env(hub, tmp_path / "hf") | {"SEMIF_THREADS": "2", "SEMIF_N_CTX": "4096", "SEMIF_MODEL_DIR": str(tmp_path / "none")}
        run = subprocess.run([sys.executable, "-m", "semif_lib.cli", "score", str(DATA / "examples.jsonl"), "--output", str(out),
                              "--model", f"hf://HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/{gguf.name}@main"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"at commit {COMMIT}" in run.stderr and "model SmolLM2-135M-Instruct.Q4_1," in run.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 5 and all("answers" in r for r in records)
    info = records[0]["x_model_info"]  # which model answered, down to the commit the revision resolved to
    assert info["revision"] == COMMIT and info["source"] == f"hf://HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/{gguf.name}@{COMMIT}"
