"""The decision wing: option probabilities from one llama.cpp forward pass, a prefix prefilled once.

`schema` (the request on the wire), `request` (the internal request: both wires' requests with the server's defaults
resolved once, the only type the preparer and engine take), `responses` (the response), `validation` (strict JSON,
errors naming the field), `prompt` (chat template, answer slots), `preparer` (limits, tokenization, slot checks),
`engine` (the scheduler: score, score_batch; `ask` takes JSON), `bookkeeping` (timings and usage in the response),
`backend` (the llama.cpp model, context and batch), `kvstore` (prefixes leased, spilled, restored; the KV invariant),
`prefix_cache` (the index it keeps), `planner` (rounds and waves), `modes` (fresh, serial, parallel, oneshot),
`tokentree` (branch tokens shared once), `readout` (logits to answers), `calibrator` (applying a fitted file),
`position_prior` (the preference for each displayed position, estimated from rotations), `conformal` (prediction sets
and abstention, fitted and served alike), `conditioning` (`x_after`: questions conditioned on earlier answers),
`openai_schema` (the OpenAI Decisions wire: its parser and answer builder), `inspection` (`semif model inspect`:
whether a GGUF's answer slots verify, before it is packaged) and `seam` (`DecisionWing`, all a server's worker may ask
of an engine).

Doors: this wing imports only the plumbing below it, never serving, the AWS wing or measurement.
Its doors, exactly (tests/test_architecture.py holds this list to the code): `contract`, `errors`, `jsonlines`,
`limits`, `model`, `settings`. Only `backend` (the context) and `prompt`
(llama-cpp-python's Jinja2 chat formatter) import llama_cpp, and only when they run; `schema`,
`responses` and `validation` never do.
"""
