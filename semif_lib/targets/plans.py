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


def _print_deploy_plan(target: str, step: str, state: WorkshopState, calls: list[ApiCall]) -> None:
    """A deploy's plan in full the first time, then one line while it is unchanged: on AWS that rerun would send nothing
    (its model and config exist), and notebook 05 redeploying 04's endpoint should not print 04's lesson again."""
    model = calls[0].request["ModelName"]
    if state.get(f"aws_plan_{step}") == model:
        print(f"target={target}: on AWS, {step} would now send nothing: its requests, printed before, are unchanged "
              f"(model {model} and its config would exist)")
        return
    _print_plan(target, step, lambda: calls)
    state.set(f"aws_plan_{step}", model)


def print_text_plan(target: str, settings: Settings, state: WorkshopState, llama_settings: Mapping[str, Any] | None) -> None:
    from ..aws.deployment import plan_text_endpoint

    _print_deploy_plan(target, "deploy_text_model", state, plan_text_endpoint(settings, state, llama_settings))


def print_decision_plan(target: str, settings: Settings, state: WorkshopState) -> None:
    from ..aws.deployment import plan_decision_endpoint

    _print_deploy_plan(target, "deploy_decision_model", state, plan_decision_endpoint(settings, state))


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
