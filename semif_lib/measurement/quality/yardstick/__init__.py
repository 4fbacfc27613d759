"""The public yardstick: sys1bench's labeled generators against `semif serve`, llama-server and `majority_prior`.

`run` (`semif bench sys1bench`: one model's scorecard, the results file), `systems` (the three systems started,
asked and stopped), `bridge` (sys1bench's `llm_constrained` reading llama-server's log-probabilities; the entry
point `llamacpp_constrained`) and `scores` (accuracy with intervals, the gap to `majority_prior`, the refusal rule,
calibration transfer). sys1bench is imported by these modules only, when a command or a test loads them.
"""
