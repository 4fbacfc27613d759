"""How good: decision quality on labeled workloads, and the calibration the decision wing applies.

`evaluate` (`semif eval`: `evaluate_decisions`, `evaluate_workload`, `command_eval`), `scoring` (the
model's raw readout of labeled questions, content-free priors, option rotations, the JSON-generation
baseline), `report` (the metrics table, the Markdown the README quotes, the reliability diagram),
`comparison` (`semif eval-compare`), `labeled` (labeled JSON Lines), `calibration` (`Decision`,
temperatures, out-of-fold fits), `verdicts` (which fitted values the calibration file keeps, and why),
`calibration_file` (the file written, and `semif calibrate` from a stored report), `metrics` (accuracy,
ECE, Brier, NLL, option mass, bootstrap intervals), `prediction_sets` (`semif sets`: sets and
abstention, fitted and checked out of fold), `debias` (`semif bench debias`: four ways to take the option order out
of a choice answer, side by side, and the position prior it fits) and `yardstick/` (`semif bench sys1bench`: the public
labeled generators of sys1bench against `semif serve`, llama-server and `majority_prior`).

Doors: the measurement wing's shared modules, the decision wing and the plumbing; never `bench`, never `cli`.
"""
