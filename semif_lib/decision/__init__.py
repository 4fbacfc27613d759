"""The decision wing: option probabilities from one llama.cpp forward pass, a prefix prefilled once.

`schema` (the wire format), `prompt` (chat template, answer slots), `readout` (logits to
answers), `engine` (the llama.cpp context, modes, cross-request batches), `tokentree` (branch
tokens shared once), `prefix_cache` (resident prefixes), `calibrator` (applying a fitted file).

Doors: this wing imports only the plumbing below it (`settings`, `errors`, `modelfile`), never
serving, the AWS wing or measurement. Only `engine` (the context) and `prompt` (llama-cpp-python's
Jinja2 chat formatter) import llama_cpp, and only when they run; `schema` never does.
"""
