"""What a step on AWS would send, printed by the targets on this machine (`local`, `container`): every request with every
field (`aws.apicalls`), `<placeholders>` where only an account knows the value. Nothing is sent.

The one door from the machine targets into the AWS wing: its request builders, which load no AWS SDK.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..aws.apicalls import ApiCall, print_calls
from ..registry import WorkshopState
from ..settings import Settings

__all__ = ["print_autoscaling_plan", "print_decision_plan", "print_text_plan", "print_transform_plan"]


def _print_plan(target: str, step: str, calls: Callable[[], list[ApiCall]]) -> None:
    print_calls(calls(), f"target={target}: on AWS, {step} sends these requests (nothing is sent from here):")


def print_text_plan(target: str, settings: Settings, state: WorkshopState, llama_settings: Mapping[str, Any] | None) -> None:
    from ..aws.deployment import plan_text_endpoint

    _print_plan(target, "deploy_text_model", lambda: plan_text_endpoint(settings, state, llama_settings))


def print_decision_plan(target: str, settings: Settings, state: WorkshopState) -> None:
    from ..aws.deployment import plan_decision_endpoint

    _print_plan(target, "deploy_decision_model", lambda: plan_decision_endpoint(settings, state))


def print_transform_plan(target: str, settings: Settings, state: WorkshopState, path: Path) -> None:
    """The CreateTransformJob `score_jsonlines` sends for `path`, with the run's names and `<time>` for the stamp."""
    from ..aws.packaging import plan_bucket
    from ..aws.scaling import batch_keys, plan_batch_transform

    bucket = plan_bucket(settings)
    key, output_prefix, _ = batch_keys(state.prefix(settings), "<time>", path.name)
    _print_plan(target, "score_jsonlines (Batch Transform)", lambda: [plan_batch_transform(
        f"{state.name('decision')}-<spec hash>", f"s3://{bucket}/{key}", f"s3://{bucket}/{output_prefix}",
        settings=settings, state=state, job_name=f"{state.name('batch')}-<time>")])


def print_autoscaling_plan(target: str, state: WorkshopState, min_instances: int, max_instances: int,
                           invocations_per_instance: float) -> None:
    from ..aws.scaling import plan_autoscaling

    _print_plan(target, "enable_autoscaling", lambda: plan_autoscaling(
        state.name("decision"), min_instances, max_instances, invocations_per_instance))
