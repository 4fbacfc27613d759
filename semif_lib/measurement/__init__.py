"""The measurement wing: how fast and how good the decisions are, measured side by side.

Two rooms and what they share. Every benchmark exposes `run_<x>` (the measurement, a results document),
`format_<x>` (what its command prints; the Markdown the docs quote) and, where a notebook draws it,
`plot_<x>`; its `command_<x>` writes `results/bench/<x>.json`.

* `bench/`: how fast. `paths` (`semif bench modes`: every execution path on the 37 x 21 workload) with
  `bounds` (its fork ceiling and targets), `readout` (`semif bench readout-vs-generation`), `residency`
  (cached prefixes spilled against resident), `robustness` (`semif serve` under load and faults, over
  HTTP), `rotations` (`x_debias` rotations against plain choice questions), `invariance` (how far
  answers move with their neighbours, the default mode against `x_batch_invariant`), `preamble` (what
  `x_preamble` recovers), `coherence` (a yes/no question as a noul and as a choice) and `peer/` (`semif bench
  peer`: `semif serve` against the text DLC's llama-server). They share `workload` (the workload, the
  machine, results files) and `harness` (`semif serve` on loopback, timed calls, percentiles).
* `quality/`: how good. `evaluate` (`semif eval`), `scoring` (the model's answers to labeled
  questions), `report` (the report's tables and reliability diagram), `comparison` (`semif eval-compare`),
  `labeled` (labeled JSON Lines), `calibration` (fitting temperatures, the calibration file), `metrics`
  (accuracy, ECE, Brier, NLL) and `prediction_sets` (`semif sets`: sets and abstention).
* Shared by both: `options` (every name and default the commands' help shows), `answers` (an answer's
  probabilities and argmax: the one reader of responses, a noul's `x_probabilities` included),
  `agreement` (argmax agreement and max |Δp|, the one rule for every comparison), `baseline` (what a
  user of llama-cpp-python's chat API would do instead), `plots` (the notebooks' charts, `save_figure`) and
  `conditions` (what every `semif bench` results file records beside its figures: the machine, its load,
  a baseline of what it delivered, and a bootstrap interval on each ratio) with `machine` (reading the
  CPU, load and GPUs, and the baseline's own process).
* `cli`: every flag of the wing, light; a command's module is imported when that command runs.

Its doors, exactly (tests/test_architecture.py holds this list to the code): `arguments`, `containers`, `contract`,
`decision`, `errors`, `invocation`, `jsonlines`, `llama_flags`, `llamabuilds`, `model`, `paths`, `prices`,
`processes`, `settings`.
Doors: measurement imports the decision wing and the plumbing; nothing below it imports measurement,
and it never imports serving or the AWS wing. Inside it: the shared modules import neither room nor
`cli`; `quality` never imports `bench`; `bench` reads `quality.labeled` (the labeled sets) and nothing
else of `quality`; only `cli` (and the top floor's `semif_lib.cli`) imports `cli`.
"""
