"""The workshop's one picture: the two paths on AWS, from the GGUF to an answer.

The text path (notebook 02) serves `model.tar.gz` from S3 on AWS's llama.cpp DLC, which generates text. The decision
path (03, 04) builds a derived image `FROM` that DLC with CodeBuild into ECR and serves the same `model.tar.gz` on it,
which reads probabilities. `draw_paths` draws it with matplotlib; `semif workshop picture` writes the committed
`docs/images/paths.png`, which the README and notebook 00 show (a test holds the PNG no older than this module).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..paths import repo_root

__all__ = ["BOXES", "draw_paths", "picture_path", "write_picture"]

TEXT, DECISION, SHARED = "#dd8452", "#4c72b0", "#55a868"  # the text path, the decision path, what both use

# name: (x, y, label, colour); the figure is 13.1 x 8.1 units, arrows kept clear of the boxes they do not join
BOXES: dict[str, tuple[float, float, str, str]] = {
    "dlc": (1.6, 6.1, "text DLC image\nllama.cpp, llama-server\n(AWS's ECR)", TEXT),
    "text_ep": (8.2, 6.1, "text endpoint (02)\nml.c6i.xlarge", TEXT),
    "text_out": (11.5, 6.1, "generated\ntext", TEXT),
    "build": (1.6, 3.6, "CodeBuild (03)\ncontainer/Dockerfile\nFROM the DLC", DECISION),
    "ecr": (4.9, 3.6, "derived image in ECR\nDLC + semif serve\n(by digest)", DECISION),
    "dec_ep": (8.2, 3.6, "decision endpoint (04, 05)\nml.c6i.xlarge\n+ Batch Transform", DECISION),
    "dec_out": (11.5, 3.6, "a probability\nper option", DECISION),
    "gguf": (1.6, 1.1, "GGUF\n(SmolLM2-135M, or MODEL)", SHARED),
    "s3": (4.9, 1.1, "S3: model.tar.gz\nGGUF at its root (01)", SHARED),
    "studio": (11.5, 1.1, "Studio space kernel\ninvoke_endpoint\n(99 deletes it all)", SHARED),
}
# (from, to, label, where along the arrow the label sits)
ARROWS = [("gguf", "s3", "", 0.5), ("s3", "text_ep", "model data", 0.8), ("dlc", "text_ep", "image", 0.5),
          ("text_ep", "text_out", "", 0.5), ("dlc", "build", "FROM", 0.5), ("build", "ecr", "push", 0.5),
          ("s3", "dec_ep", "the same model data", 0.35), ("ecr", "dec_ep", "", 0.5), ("dec_ep", "dec_out", "", 0.5),
          ("studio", "dec_ep", "", 0.5), ("studio", "text_ep", "", 0.5)]
BOX_W, BOX_H = 2.5, 1.35


def _edge(start: tuple[float, float], end: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from a box's centre towards `end` leaves the box."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    scale = min(BOX_W / 2 / abs(dx) if dx else float("inf"), BOX_H / 2 / abs(dy) if dy else float("inf"))
    return start[0] + dx * scale, start[1] + dy * scale


def draw_paths() -> Any:
    """The figure: one box per resource, arrows for what flows, orange the text path, blue the decision path."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch, Patch

    fig, ax = plt.subplots(figsize=(11.5, 6.6))
    ax.set(xlim=(0, 13.1), ylim=(-0.9, 7.2))
    ax.axis("off")
    for x, y, label, colour in BOXES.values():
        ax.add_patch(FancyBboxPatch((x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H, boxstyle="round,pad=0.05",
                                    facecolor=colour, alpha=0.18, edgecolor=colour, linewidth=2))
        ax.text(x, y, label, ha="center", va="center", fontsize=9)
    for start, end, label, at in ARROWS:
        (x0, y0), (x1, y1) = BOXES[start][:2], BOXES[end][:2]
        tail, head = _edge((x0, y0), (x1, y1)), _edge((x1, y1), (x0, y0))
        ax.annotate("", head, tail, arrowprops={"arrowstyle": "-|>", "color": "#444444", "linewidth": 1.3})
        if label:
            ax.text(tail[0] + at * (head[0] - tail[0]) + 0.1, tail[1] + at * (head[1] - tail[1]) + 0.12, label, fontsize=8,
                    color="#444444", ha="left" if head[0] != tail[0] else "center")
    ax.legend(handles=[Patch(color=TEXT, alpha=0.5, label="text path: generates (02)"),
                       Patch(color=DECISION, alpha=0.5, label="decision path: reads probabilities (03-05)"),
                       Patch(color=SHARED, alpha=0.5, label="both paths")], loc="lower center", ncol=3, fontsize=9,
              frameon=False)
    ax.set_title("Two paths on SageMaker AI, one model.tar.gz", fontsize=12)
    fig.tight_layout()
    return fig


def picture_path() -> Path:
    return repo_root() / "docs" / "images" / "paths.png"


def write_picture(path: Path | None = None) -> Path:
    """Draw the picture and write it as a PNG (`semif workshop picture`)."""
    import matplotlib

    matplotlib.use("Agg")
    from ..measurement.plots import save_figure

    return save_figure(draw_paths(), path or picture_path())
