"""target=aws: the workshop's steps as SageMaker endpoints, CodeBuild, Batch Transform and S3.

Every method calls the AWS wing (`semif_lib.aws`), whose modules load boto3 and the SageMaker SDK only
inside the functions that call AWS: selecting this target loads neither. Each step runs inside
`aws_errors(step)`, so missing credentials or a denied action is one line that says what to do, naming
the notebook step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

from ..aws import asyncinference, deployment, imagebuild, invocations, packaging, preflight, scaling
from ..aws.clients import get_region, in_region
from ..aws.dlc import require_dlc_region
from ..aws.errors import AwsSetupError, aws_errors
from ..aws.quotas import check_quotas, describe_quotas
from ..aws.teardown import delete_resource, describe_still_billing
from ..registry import WorkshopState
from ..settings import Settings
from .container import ContainerTarget
from .local import LocalTarget

__all__ = ["AwsTarget", "settings_for_cleanup"]


class AwsTarget:
    """target=aws: the text DLC and the adapter image as SageMaker real-time endpoints.

    It removes every recorded kind the targets on this machine do not own (`aws.teardown.KINDS`
    knows each, and refuses a kind it does not know).
    """

    name: ClassVar[str] = "aws"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __repr__(self) -> str:
        return "AwsTarget(target='aws')"

    def region(self) -> str | None:
        return get_region(self.settings)

    def check_permissions(self, state: WorkshopState, log: Callable[[str], None]) -> Any:
        with aws_errors("check_permissions (01)"):
            check = preflight.check_permissions(self.settings, state)
            check.quotas = check_quotas(self.settings)
        log(check.summary())
        for line in ["quotas this run needs (Service Quotas):", *describe_quotas(check.quotas)]:
            log(line)
        return check

    def publish_model(self, package: Any, state: WorkshopState, progress: bool) -> dict[str, Any]:
        with aws_errors("package_model (01)"):
            require_dlc_region(get_region(self.settings))  # before the bucket: no DLC here, no endpoint later
            result = packaging.upload_model(package, settings=self.settings, state=state, progress=progress)
        return {"model_data_url": result.uri, "uploaded": not result.skipped}

    def deploy_text_model(self, state: WorkshopState, llama_settings: Mapping[str, Any] | None, wait: bool) -> str:
        with aws_errors("deploy_text_model (02)"):  # the variant's defaults merged with llama_settings (GPU offload stays)
            return deployment.deploy_text_endpoint(settings=self.settings, state=state, llama_settings=llama_settings, wait=wait)

    def build_adapter_image(self, state: WorkshopState, wait: bool, log: Callable[[str], None]) -> str:
        with aws_errors("build_adapter_image (03)"):
            return imagebuild.build_adapter_image(settings=self.settings, state=state, wait=wait, log=log)

    def deploy_decision_model(self, state: WorkshopState, wait: bool) -> str:
        with aws_errors("deploy_decision_model (04)"):
            return deployment.deploy_decision_endpoint(settings=self.settings, state=state, wait=wait)

    def invoke_decision(self, endpoint: str, body: bytes, mode: str | None, session: str | None = None) -> dict[str, Any]:
        with aws_errors("invoke_decision"):
            return invocations.invoke_decision_endpoint(endpoint, body, settings=self.settings, mode=mode, session=session)

    def open_session(self, endpoint: str) -> tuple[str, str]:
        with aws_errors("open_decision_session"):
            return invocations.open_endpoint_session(endpoint, settings=self.settings)

    def close_session(self, endpoint: str, session: str) -> str:
        with aws_errors("close_decision_session"):
            return invocations.close_endpoint_session(endpoint, session, settings=self.settings)

    def deploy_async_decision_model(self, state: WorkshopState, wait: bool) -> str:
        with aws_errors("deploy_async_decision_model (04, asynchronous inference)"):
            return asyncinference.deploy_async_decision_endpoint(settings=self.settings, state=state, wait=wait)

    def invoke_decision_async(self, state: WorkshopState, endpoint: str, body: bytes, wait: bool) -> dict[str, Any]:
        with aws_errors("invoke_decision_async"):
            return asyncinference.invoke_async(endpoint, body, settings=self.settings, state=state, wait=wait)

    def enable_async_autoscaling(self, state: WorkshopState, endpoint: str, max_instances: int) -> dict[str, Any]:
        with aws_errors("enable_async_autoscaling (04, asynchronous inference)"):
            return asyncinference.enable_async_autoscaling(endpoint, max_instances=max_instances, settings=self.settings, state=state)

    def chat(self, endpoint: str, body: bytes) -> dict[str, Any]:
        with aws_errors("chat"):
            return invocations.invoke_chat_endpoint(endpoint, body, settings=self.settings)

    def stream_chat(self, endpoint: str, body: bytes) -> Iterator[str]:
        with aws_errors("stream_chat"):
            yield from invocations.stream_chat_endpoint(endpoint, body, settings=self.settings)

    def score_jsonlines(self, state: WorkshopState, path: Path, body: bytes, wait: bool) -> list[dict[str, Any]] | str:
        with aws_errors("score_jsonlines (04, Batch Transform)"):
            output = scaling.run_batch_transform(path, settings=self.settings, state=state, wait=wait)
            if not wait:
                return output  # the job's name
            print(f"transform output: {output}")
            return scaling.read_transform_output(output, self.settings)

    def enable_autoscaling(self, state: WorkshopState, min_instances: int, max_instances: int,
                           invocations_per_instance: float) -> dict[str, Any]:
        endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
        with aws_errors("enable_autoscaling (04)"):
            return scaling.enable_autoscaling(endpoint, min_instances=min_instances, max_instances=max_instances,
                                              invocations_per_instance=invocations_per_instance, settings=self.settings, state=state)

    def delete_resource(self, entry: dict[str, Any]) -> bool:
        with aws_errors(f"cleanup of {entry['kind']} {entry['name']}"):
            return delete_resource(entry, self.settings)

    def still_billing(self, entry: dict[str, Any]) -> str | None:
        with aws_errors(f"checking {entry['kind']} {entry['name']} after cleanup"):
            return describe_still_billing(entry, self.settings)


def settings_for_cleanup(settings: Settings, state: WorkshopState) -> Settings:
    """Settings whose clients reach the region this run's AWS resources live in (the state file's).

    A session in another region would find nothing there, report everything "already gone" and
    delete the state file while the endpoints keep billing: that is refused, naming both regions.
    A state that records only servers on this machine needs no region (and no AWS session).
    """
    on_this_machine = LocalTarget.kinds | ContainerTarget.kinds
    if state.region is None or all(e["kind"] in on_this_machine for e in state.resources):
        return settings

    with aws_errors("cleanup (99)"):
        current = get_region(settings)
        if current != state.region:
            raise AwsSetupError(
                f"{state.path} records run {state.run_id}'s resources in {state.region}, but this session is in {current}: "
                f"set SEMIF_AWS_REGION={state.region} (or AWS_REGION) and run cleanup again. Nothing was deleted.")
        return in_region(settings, state.region)
