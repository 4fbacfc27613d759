"""`semif bench peer`: the decision path side by side with the text DLC's own server, llama-server.

`config` (`PeerConfig`: every default the command line has, light), `protocol` (what each server is sent
and how its answers are read: `Pass`, one path on one state), `run` (both servers up, every path on
every state, the 8-client phase: `run_peer`, `command_peer`), `report` (tallies across states,
summaries, targets, ceiling: `format_peer`, `plot_peer`) and `results` (the results as typed summaries,
serialized to `results/bench/peer*.json`).
"""
