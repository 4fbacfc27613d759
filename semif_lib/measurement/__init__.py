"""The measurement wing: how fast and how good the decisions are, measured side by side.

`bench` (`semif bench`: execution paths, readout against generation, prefix residency),
`baseline` (what a user of llama-cpp-python's chat API would do instead), `evaluation`
(`semif eval`: quality on labeled workloads), `calibration` (fitting temperatures and the file
the decision wing applies), `robustness` (`semif bench robustness`: a `semif serve` process under
load and faults, driven over HTTP), `peer` (`semif bench peer`: `semif serve` against the text
DLC's llama-server, both over HTTP), `workload` (the workload, machine description and results
files every benchmark shares) and `plots` (figures for the notebooks).

Doors: measurement imports the decision wing and the plumbing; nothing below it imports
measurement. It never imports serving or the AWS wing.
"""
