"""The measurement wing: how fast and how good the decisions are, measured side by side.

`bench` is `semif bench`'s command line: `modes` (every execution path on the workload),
`readout_vs_generation`, `residency` (cached prefixes spilled against resident), `robustness`
(`semif serve` under load and faults, driven over HTTP) and `peer` (`semif serve` against the
text DLC's llama-server, both over HTTP: `peer_protocol`, `peer_run`, `peer_report`, and
`peer_types`, its results as typed summaries). They share `workload` (the workload, `QUICK_STATES`,
`first_questions`, the machine description and results files), `harness` (`semif serve` on
loopback, timed calls, percentiles) and `agreement` (argmax agreement and max |Δp|, the one rule).
`baseline` is what a user of llama-cpp-python's chat API would do instead; `evaluation`
(`semif eval`, with `labeled`, `evaluation_scoring`, `evaluation_report`) measures quality on
labeled workloads and `calibration` fits the temperatures the decision wing applies; `plots`
draws for the notebooks.

Doors: measurement imports the decision wing and the plumbing; nothing below it imports
measurement. It never imports serving or the AWS wing.
"""
