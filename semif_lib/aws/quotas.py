"""The account quotas a workshop run will hold at its peak, read from Service Quotas before anything bills.

New accounts often have 0 for "`<type>` for endpoint usage", and CodeBuild's concurrent builds can be 0 or 1;
AWS then refuses the step with `ResourceLimitExceeded` / `AccountLimitExceededException` minutes in.
`quota_needs(settings)` is what this run holds at once, for the chosen variant:

- endpoint instances: the text endpoint (1) + the decision endpoint at notebook 04's autoscaling maximum
  (2) = 3 at steady state; an in-place update is blue/green, so it provisions the updated variant's whole
  fleet again while it runs: + 2 for the scaled decision endpoint = 5 at the peak;
- transform instances: 1 (notebook 04's Batch Transform job);
- CodeBuild: 1 concurrently running build of the project's compute type.

`check_quotas(settings)` reads `ListServiceQuotas` (`sagemaker`, `codebuild`), matches by quota name and
compares: True, False, or None (`?`) where the identity may not read quotas or no quota of that name is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..settings import Settings
from .clients import make_client
from .errors import CREDENTIAL_ERRORS, DENIED_CODES, error_code

__all__ = ["QuotaNeed", "check_quotas", "quota_needs"]

AUTOSCALE_MAX = 2  # notebook 04's AUTOSCALE maximum (workshop.enable_autoscaling's default)
CODEBUILD_ENVIRONMENT = {"BUILD_GENERAL1_SMALL": "Linux/Small", "BUILD_GENERAL1_MEDIUM": "Linux/Medium",
                         "BUILD_GENERAL1_LARGE": "Linux/Large", "BUILD_GENERAL1_2XLARGE": "Linux/2XLarge"}


@dataclass(frozen=True)
class QuotaNeed:
    service: str  # Service Quotas' ServiceCode
    name: str  # QuotaName, as Service Quotas spells it
    steady: int
    peak: int


def endpoint_instance_type(settings: Settings) -> str:
    return {"cuda": settings.gpu_instance_type, "arm64": settings.arm_instance_type}.get(settings.dlc_variant, settings.instance_type)


def quota_needs(settings: Settings, autoscale_max: int = AUTOSCALE_MAX) -> list[QuotaNeed]:
    """What this run holds at once (see the module docstring), for `settings.dlc_variant`."""
    endpoint_type = endpoint_instance_type(settings)
    steady = 1 + autoscale_max
    needs = [QuotaNeed("sagemaker", f"{endpoint_type} for endpoint usage", steady, steady + autoscale_max)]
    if settings.dlc_variant != "arm64":  # Batch Transform refuses arm64 (no Graviton transform instances)
        transform_type = settings.gpu_transform_instance_type if settings.dlc_variant == "cuda" else settings.transform_instance_type
        needs.append(QuotaNeed("sagemaker", f"{transform_type} for transform job usage", 1, 1))
    environment = ("ARM/Large" if settings.dlc_variant == "arm64"
                   else CODEBUILD_ENVIRONMENT.get(settings.codebuild_compute_type, "Linux/Medium"))
    needs.append(QuotaNeed("codebuild", f"Concurrently running builds for {environment} environment", 1, 1))
    return needs


def _list_quotas(settings: Settings, service: str) -> dict[str, float]:
    client = make_client("service-quotas", settings, max_attempts=2)
    values: dict[str, float] = {}
    for page in client.get_paginator("list_service_quotas").paginate(ServiceCode=service):
        values.update({q["QuotaName"].lower(): float(q["Value"]) for q in page["Quotas"] if "Value" in q})
    return values


def check_quotas(settings: Settings, autoscale_max: int = AUTOSCALE_MAX) -> list[dict[str, Any]]:
    """One row per needed quota: its value, what the run needs (steady, peak) and `ok` (True / False / None: `?`)."""
    listed: dict[str, dict[str, float] | str] = {}
    rows = []
    for need in quota_needs(settings, autoscale_max):
        if need.service not in listed:
            try:
                listed[need.service] = _list_quotas(settings, need.service)
            except Exception as exc:  # a quota we cannot read is `?`, never a stop
                if type(exc).__name__ in CREDENTIAL_ERRORS:
                    raise
                denied = error_code(exc) in DENIED_CODES
                listed[need.service] = ("no servicequotas:ListServiceQuotas" if denied
                                        else f"Service Quotas unavailable ({error_code(exc) or type(exc).__name__})")
        values = listed[need.service]
        value = values.get(need.name.lower()) if isinstance(values, dict) else None
        how = values if isinstance(values, str) else ("listed" if value is not None else "no quota of this name listed")
        ok = None if value is None else value >= need.peak
        rows.append({"service": need.service, "quota": need.name, "value": value, "steady": need.steady, "peak": need.peak,
                     "ok": ok, "how": how})
    return rows


def describe_quotas(rows: list[dict[str, Any]]) -> list[str]:
    """One line per quota, for the notebook: what is needed, what the account has, and what to do when short."""
    lines = []
    for row in rows:
        have = "?" if row["value"] is None else f"{row['value']:g}"
        mark = {True: "yes", False: "NO", None: "?"}[row["ok"]]
        line = f"  {mark:>3}  {row['quota']}: {have} (this run holds {row['steady']}, {row['peak']} during a blue/green update)"
        if row["ok"] is False:
            line += "; request an increase in the Service Quotas console before the step that needs it"
        elif row["ok"] is None:
            line += f"; {row['how']}: check it in the Service Quotas console"
        lines.append(line)
    return lines
