"""How fast: the benchmarks behind `semif bench`, each a `run_<x>`, a `format_<x>`, a `command_<x>`.

`paths` (`semif bench modes`) with `bounds` (the fork ceiling and targets it is held to), `readout`
(`semif bench readout-vs-generation`), `residency`, `robustness`, `rotations`, `invariance`
(`x_batch_invariant` against the default mode), `preamble` (`x_preamble` against the plain slot readout),
`coherence` (a yes/no question as a noul and as a two-option choice), `scale` (instances behind
`router`, which routes as a SageMaker endpoint does), `ubatch` (the micro-batch rule against none), `gpu`
(the GPU run, prepared), `intervals` (`semif intervals`: an older results file's intervals) and `peer/`
(`semif bench peer`); `workload` (the
workload, the machine, results files) and `harness` (`semif serve` on loopback, timed calls, percentiles)
are what they share.

Doors: the measurement wing's shared modules, the decision wing, the plumbing, and of the quality room
only `quality.labeled` (`rotations` reads the labeled sets). Never `cli`.
"""
