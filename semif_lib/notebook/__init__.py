"""What the workshop notebooks call besides `workshop`, one module per job:

- `display`: the notebook's settings for its `TARGET` (paths anchored at the repository root) and
  the line it prints first (`load_notebook_settings`, `show_target`, `show_errors_briefly`);
- `modelline`: the line under it, which model the notebook runs and its measured quality (`describe_model`, `show_model`);
- `data`: the repository's data files (`read_examples`, `load_workload_request`, `data_path`);
- `tables`: answers, JSON Lines records, two responses compared, the permission check, the `openai` SDK's typed answers
  one line each (`format_typed_answer`), benchmark ratios in words (`tabulate_ratios`), any table shown whole (`whole_table`);
- `generation`: 02's generated text beside 00's distribution (`record_distribution`, `chat_messages_for`,
  `tabulate_generation`);
- `slots`: notebook 00's look inside one forward pass: the prompt's end, the answer-slot tokens, their logits and
  softmax (`read_slots`, `tabulate_slots`);
- `kernel`: the guard every notebook opens with (`KERNEL_GUARD`, the cell's source; it cannot import this package);
- `rehearsal`: an event team's measured AWS run (`semif workshop rehearse`), which `budget` prefers to its estimates;
- `executed`: the notebooks' executed copies for readers who do not run them (`semif workshop render`);
- `picture`: the two paths on AWS, drawn (`semif workshop picture`, docs/images/paths.png);
- `budget`: each notebook's minutes with the local and the aws target, what bills, the list prices (`format_clock`, `estimate_run_cost`,
  `format_autoscaling`), and `clock`, which measures the local minutes (`semif workshop clock`);
- `form`: the ipywidgets form of notebook 00 (`DecisionForm`);
- `reference`: notebook 05's fresh reference, one question per call (`score_fresh_reference`, `describe_reference`),
  its token arithmetic and the fork drawn to scale (`tabulate_tokens`, `draw_fork`);
- `build_context`: notebook 03's static check of `container/` (`inspect_build_context`);
- `stop_local_servers` (from `semif_lib.targets`): stop the servers this run started here, keep the rest.

Notebooks use `from semif_lib import notebook` and call `notebook.<name>`. pandas, ipywidgets and
matplotlib are imported inside the functions that need them.
"""

from __future__ import annotations

from ..targets import stop_local_servers
from .budget import estimate_run_cost, format_autoscaling, format_clock
from .build_context import inspect_build_context
from .data import data_path, load_workload_request, read_examples
from .display import describe_target, find_repo_root, load_notebook_settings, show_errors_briefly, show_target
from .form import DecisionForm
from .generation import chat_messages_for, record_distribution, tabulate_generation
from .kernel import KERNEL_GUARD
from .modelline import describe_model, show_model
from .reference import describe_reference, draw_fork, score_fresh_reference, tabulate_tokens
from .slots import read_slots, tabulate_slots
from .tables import (
    compare_answers,
    format_typed_answer,
    tabulate_answers,
    tabulate_permissions,
    tabulate_ratios,
    tabulate_records,
    whole_table,
)

__all__ = [
    "DecisionForm",
    "KERNEL_GUARD",
    "compare_answers",
    "chat_messages_for",
    "data_path",
    "describe_model",
    "describe_reference",
    "describe_target",
    "draw_fork",
    "estimate_run_cost",
    "find_repo_root",
    "format_autoscaling",
    "format_clock",
    "format_typed_answer",
    "inspect_build_context",
    "load_notebook_settings",
    "load_workload_request",
    "read_examples",
    "read_slots",
    "record_distribution",
    "score_fresh_reference",
    "show_errors_briefly",
    "show_model",
    "show_target",
    "stop_local_servers",
    "tabulate_answers",
    "tabulate_generation",
    "tabulate_permissions",
    "tabulate_ratios",
    "tabulate_slots",
    "tabulate_records",
    "tabulate_tokens",
    "whole_table",
]
