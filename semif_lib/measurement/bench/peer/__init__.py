"""`semif bench peer`: the decision path side by side with the text DLC's own server, llama-server.

`config` (`PeerConfig`: every default the command line has, light), `protocol` (what each server is sent
and how its answers are read: `Pass`, one path on one state), `run` (both servers up, every path on
every state, the 8-client phase: `opened_peer`, `run_peer`), `report` (tallies across states,
summaries, targets, ceiling: `format_peer`, `plot_peer`), `results` (the results as typed summaries,
serialized to `results/bench/peer*.json`), `builds` (`--builds A,B`: the prefill gap on two llama.cpp
builds, paired per state) and `command` (`command_peer`: the flags, then `run` or `builds`).
"""
