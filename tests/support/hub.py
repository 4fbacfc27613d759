"""A loopback server that speaks the Hugging Face Hub's file-resolution protocol, for `huggingface_hub` to download from.

What `hf_hub_download` relies on, as the hub serves an LFS file: `HEAD|GET /{repo}/resolve/{revision}/{path}`
answers 302 with `X-Repo-Commit`, `X-Linked-Etag` (the LFS sha256) and `X-Linked-Size`, and a `Location`
on another origin (the CDN) that serves the bytes, honouring `Range` so a broken download resumes.
An unknown repository or file is a 404 with the hub's `X-Error-Code`. Point `HF_ENDPOINT` at `url`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubRepo:
    files: dict[str, Path]                                   # path in repo -> local file
    commit: str = COMMIT
    branches: tuple[str, ...] = ("main",)
    sha256: dict[str, str] = field(default_factory=dict)     # filled on start; a test may corrupt one


class LoopbackHub:
    """`with LoopbackHub({"org/repo": HubRepo({...})}) as hub:` serves until the block ends; `hub.requests` logs each GET."""

    def __init__(self, repos: dict[str, HubRepo]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_once: dict[str, int] = {}  # sha256 -> bytes sent before the connection drops, on that blob's first GET
        for repo in repos.values():
            for name, path in repo.files.items():
                repo.sha256.setdefault(name, _sha256(path))
        self.blobs = {sha: path for repo in repos.values() for name, path in repo.files.items() for sha in [repo.sha256[name]]}
        # The hub and its CDN on two ports: huggingface_hub follows a redirect only while it stays on the hub's origin.
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), HubHandler) for _ in range(2)]
        for server in self.servers:
            server.hub = self  # type: ignore[attr-defined]
        self.url, self.cdn_url = (f"http://127.0.0.1:{server.server_address[1]}" for server in self.servers)
        self.threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in self.servers]

    def __enter__(self) -> LoopbackHub:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


class HubHandler(BaseHTTPRequestHandler):
    """One request to the hub or its CDN; `self.server.hub` is the LoopbackHub."""
    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        hub = self.server.hub  # type: ignore[attr-defined]
        hub.requests.append((self.command, self.path, self.headers.get("Range")))
        if self.path.startswith("/cdn/"):
            return self._serve_blob(self.path.removeprefix("/cdn/"), body)
        parts = self.path.lstrip("/").split("/")
        repo_id, rest = "/".join(parts[:2]), parts[2:]
        repo = hub.repos.get(repo_id)
        if repo is None or len(rest) < 3 or rest[0] != "resolve":
            return self._error(404, "RepositoryNotFound", "Repository not found")
        revision, name = rest[1], "/".join(rest[2:])
        if revision not in (repo.commit, *repo.branches):
            return self._error(404, "RevisionNotFound", "Invalid rev id")
        if name not in repo.files:
            return self._error(404, "EntryNotFound", "Entry not found", commit=repo.commit)
        sha = repo.sha256[name]
        self.send_response(302)
        self.send_header("Location", f"{hub.cdn_url}/cdn/{sha}")
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("X-Linked-Etag", f'"{sha}"')
        self.send_header("X-Linked-Size", str(repo.files[name].stat().st_size))
        self.send_header("ETag", '"git-oid-of-the-pointer"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve_blob(self, sha: str, body: bool) -> None:
        hub = self.server.hub  # type: ignore[attr-defined]
        path = hub.blobs.get(sha)
        if path is None:
            return self._error(404, "EntryNotFound", "no such blob")
        size = path.stat().st_size
        start = 0
        if (rng := self.headers.get("Range")) and rng.startswith("bytes="):
            start = int(rng.removeprefix("bytes=").split("-")[0] or 0)
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{sha}"')
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.end_headers()
        if body:
            cut = hub.cut_once.pop(sha, None)
            with open(path, "rb") as fh:
                fh.seek(start)
                if cut is not None:  # a network drop mid-download: part of the body, then a closed connection
                    self.wfile.write(fh.read(cut))
                    self.close_connection = True
                    return
                while chunk := fh.read(1 << 20):
                    self.wfile.write(chunk)

    def _error(self, status: int, code: str, message: str, commit: str | None = None) -> None:
        payload = ('{"error": "%s"}' % message).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def hub_env(hub: LoopbackHub, hf_home: Path, offline: bool = False) -> dict[str, str]:
    """os.environ for a process that downloads from `hub` into its own cache (no token, no telemetry, no xet)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1" if offline else "0",
                "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_XET": "1", "PYTHONUNBUFFERED": "1"})
    return env
