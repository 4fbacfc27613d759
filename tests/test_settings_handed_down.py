"""Each wing its settings (issue 44, item 4): the environment is read on the top floor and handed down.

`load_settings(` below the top floor (`cli`, `workshop`, `notebook`, `targets`) is allowed only in the entry points
named here, each a command or process that turns its own flags into settings once (its top floor).
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "semif_lib"
TOP_FLOOR = ("cli", "workshop", "notebook", "targets")
CALL = re.compile(r"\bload_settings\(")
DEF = re.compile(r"^\s*def (\w+)\(")

# (module, function): why it may read the environment
ENTRY_POINTS = {
    ("semif_lib.settings", "load_settings"): "the reader itself",
    ("semif_lib.decision.engine", "open_engine"): "public convenience (README, notebooks): builds settings from flags once",
    ("semif_lib.serving.app", "command_serve"): "`semif serve` / `python -m semif_lib.serving.app`: flags over the environment",
    ("semif_lib.serving.texttwin", "command_serve_text"): "`semif serve-text`: the twin's process reads its settings once",
    ("semif_lib.serving.llamabinding", "main"): "`python -m semif_lib.serving.llamabinding`: the adapter image's process",
    ("semif_lib.measurement.quality.debias", "command_debias"): "`semif bench debias`: its flags over the environment",
    ("semif_lib.measurement.quality.evaluate", "command_eval"): "`semif eval`: its flags over the environment",
    ("semif_lib.measurement.bench.preamble", "command_preamble"): "`semif bench preamble`",
    ("semif_lib.measurement.bench.rotations", "command_rotations"): "`semif bench rotations`",
    ("semif_lib.measurement.bench.invariance", "command_invariance"): "`semif bench invariance`",
    ("semif_lib.measurement.bench.coherence", "command_coherence"): "`semif bench coherence`",
    ("semif_lib.measurement.bench.workload", "describe_bench_run"): "the bench commands' flags over the environment",
    ("semif_lib.measurement.bench.peer.command", "command_peer"): "`semif bench peer`: this machine's llama-server and runtime",
    ("semif_lib.measurement.quality.yardstick.run", "command_yardstick"): "`semif bench sys1bench`: this machine's llama-server",
    ("semif_lib.measurement.bench.ubatch", "command_ubatch"): "`semif bench ubatch`: its flags over the environment",
    ("semif_lib.measurement.bench.gpu", "probe"): "the device check's own process (`python -m semif_lib.measurement.bench.gpu`)",
}
# Still reading the environment below the top floor: each to take its value as a parameter from its caller.
def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def readers() -> set[tuple[str, str]]:
    """(module, enclosing function) of every `load_settings(` below the top floor ("<module>" at module level)."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name.split(".")[1:2] and name.split(".")[1] in TOP_FLOOR or name == "semif_lib":
            continue
        function = "<module>"
        for line in path.read_text(encoding="utf-8").splitlines():
            if (match := DEF.match(line)) and not line.startswith((" " * 8)):
                function = match.group(1)
            if CALL.search(line.split("#")[0]):
                found.add((name, function))
    return found


def test_no_load_settings_below_the_top_floor():
    assert sorted(readers() - set(ENTRY_POINTS)) == []


def test_the_allowed_lists_name_real_readers():
    assert sorted(set(ENTRY_POINTS) - readers()) == [], "handed down: take it off the list"
