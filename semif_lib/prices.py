"""AWS list prices the workshop quotes, in one place: the notebooks' clock and bill (`notebook.budget`) and the cost per
million decisions (`measurement.bench.scale`) both read them.

On-Demand list prices in US East (N. Virginia) from AWS's pricing pages (`PRICE_SOURCES`), as known on `PRICES_AS_OF`;
this machine has no route to those pages, so recheck them before an event. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INSTANCE_VCPUS", "PRICES", "PRICES_AS_OF", "PRICE_SOURCES", "Price"]

PRICES_AS_OF = "2026-12-03"
PRICE_SOURCES = {"sagemaker": "https://aws.amazon.com/sagemaker/ai/pricing/", "codebuild": "https://aws.amazon.com/codebuild/pricing/"}


@dataclass(frozen=True)
class Price:
    """One list price: what it buys, the unit, US dollars per unit, and which page says so."""

    item: str
    unit: str
    usd: float
    source: str


PRICES = {
    "endpoint": Price("ml.c6i.xlarge real-time endpoint instance (notebooks 02 and 04)", "hour", 0.204, "sagemaker"),
    "transform": Price("ml.c6i.xlarge Batch Transform instance (notebook 04)", "hour", 0.204, "sagemaker"),
    "studio": Price("ml.t3.medium JupyterLab space in SageMaker Studio (the kernels)", "hour", 0.05, "sagemaker"),
    "codebuild": Price("CodeBuild BUILD_GENERAL1_MEDIUM, Linux (notebook 03)", "minute", 0.01, "codebuild"),
}

# vCPUs of the instance types a price above is for (EC2's instance-type pages): what a CPU measurement scales by
INSTANCE_VCPUS = {"ml.c6i.xlarge": 4, "ml.t3.medium": 2}
