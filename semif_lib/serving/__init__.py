"""The serving wing: the decision path and the text path behind SageMaker's container contract.

`cli` (the flags of `semif serve` and `semif serve-text`, light: `semif --help` reads them without a server),
`app` (`semif serve`: the app), `routes` (its route groups), `bodies` (reading a request body: its limit
and its content coding, zstd or gzip), `wire` (parsing request bodies, response and error bodies, the OpenAPI
models), `modelnames` (which `model` names a request may send), `worker` (the one thread that owns the
engine), `work` (a submission's work, bounded: its token budget, its stop between rounds), `sessions` (SageMaker's
stateful sessions: a session's states held in the KV store), `sessionbook` (the open sessions and their limits), `runner`
(uvicorn with SageMaker's SIGTERM drain), `texttwin` (`semif serve-text`, the local twin of the llama.cpp DLC) and
`llamabinding` (the container's check that llama-cpp-python fits the DLC's libllama). The DLC's
`SM_LLAMA_CPP_*` rules are plumbing (`semif_lib.llama_flags`): the replica image runs that file too.

Its doors, exactly (tests/test_architecture.py holds this list to the code): `arguments`, `contract`, `decision`,
`errors`, `jsonlines`, `limits`, `llama_flags`, `llamabuilds`, `model`, `settings`.
Doors: serving imports the decision wing and the plumbing, never the AWS wing or measurement.
"""
