"""model.tar.gz layout (what the DLC's discovery finds), sha256, SSE, idempotent and multipart upload (moto)."""

from __future__ import annotations

import tarfile

import pytest

from semif_lib.settings import Settings

from support.aws import make_fake_gguf

SETTINGS = Settings(_env_file=None)  # the packaging step's settings, handed down as the workshop does


def test_tarball_has_the_gguf_at_its_root(tmp_path, fake_gguf):
    from semif_lib.model.locate import find_gguf_in_dir, hash_file
    from semif_lib.model.package import build_model_tarball, list_tarball
    from semif_lib.workshop import extract_model_package

    package = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    assert list_tarball(package.tarball) == [fake_gguf.name]  # nothing else, no folder: first *.gguf at root
    assert package.sha256 == hash_file(fake_gguf)
    with tarfile.open(package.tarball) as tar:
        member = tar.getmember(fake_gguf.name)
        assert member.isfile() and (member.uid, member.mode) == (0, 0o644)
    # SageMaker unpacks into /opt/ml/model; the DLC and our adapter take the first *.gguf there
    model_dir = extract_model_package(package.tarball, tmp_path / "opt-ml-model")
    assert find_gguf_in_dir(model_dir) == model_dir / fake_gguf.name
    assert (model_dir / fake_gguf.name).read_bytes() == fake_gguf.read_bytes()


def test_tarball_is_reused_for_the_same_model(tmp_path, fake_gguf):
    from semif_lib.model.package import build_model_tarball

    first = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    mtime = first.tarball.stat().st_mtime_ns
    second = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    assert second.tarball == first.tarball and second.tarball.stat().st_mtime_ns == mtime


def test_bucket_is_private_and_encrypted(state, aws_settings):
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.packaging import ensure_bucket

    bucket = ensure_bucket(aws_settings, state)
    s3 = make_client("s3", aws_settings)
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(block[k] for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"))
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags["semif-run-id"] == "t3st01"
    assert state.has("s3_bucket", bucket)


def test_upload_is_encrypted_and_idempotent(state, aws_settings, fake_gguf, tmp_path, monkeypatch):
    from semif_lib.aws import packaging
    from semif_lib.aws.clients import make_client
    from semif_lib.model.package import build_model_tarball

    package = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    first = packaging.upload_model(package, settings=aws_settings, state=state, progress=False)
    assert not first.skipped and first.uri.endswith(f"/models/{package.sha256[:12]}/model.tar.gz")
    head = make_client("s3", aws_settings).head_object(Bucket=first.bucket, Key=first.key)
    assert head["ServerSideEncryption"] == "AES256"
    assert head["Metadata"]["gguf-sha256"] == package.sha256

    def must_not_upload(*args, **kwargs):
        raise AssertionError("the same checksum is already in S3: the second upload must be skipped")

    monkeypatch.setattr(packaging, "upload_file", must_not_upload)
    second = packaging.upload_model(package, settings=aws_settings, state=state, progress=False)
    assert second.skipped and second.uri == first.uri


def test_big_models_go_up_in_parts(state, aws_settings, fake_gguf, tmp_path, monkeypatch):
    from semif_lib.aws import packaging
    from semif_lib.aws.clients import make_client
    from semif_lib.model.package import build_model_tarball

    monkeypatch.setattr(packaging, "MULTIPART_THRESHOLD", 5 << 20)
    monkeypatch.setattr(packaging, "MULTIPART_CHUNK", 5 << 20)
    package = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    big = tmp_path / "incompressible.bin"  # zeros compress to nothing: upload a random file the same way
    big.write_bytes(__import__("os").urandom(11 << 20))
    bucket = packaging.ensure_bucket(aws_settings, state)
    packaging.upload_file(big, bucket, "semif-workshop/models/big.bin", aws_settings, progress=False)
    etag = make_client("s3", aws_settings).head_object(Bucket=bucket, Key="semif-workshop/models/big.bin")["ETag"]
    assert etag.strip('"').endswith("-3")  # 5 + 5 + 1 MiB parts
    assert package.tarball.is_file()


def test_package_model_step_records_the_uri(state, aws_settings, fake_gguf):
    from semif_lib.workshop import package_model

    info = package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    # the bucket name contains "sagemaker" (Studio's default role may use only such buckets), the key the run id
    assert info["uploaded"] and info["model_data_url"].startswith("s3://semif-sagemaker-123456789012-us-east-1/semif-workshop/t3st01/")
    assert state.get("model_data_url") == info["model_data_url"]
    again = package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    assert not again["uploaded"]


def test_local_mode_packages_without_aws(tmp_path, fake_gguf):
    from semif_lib.settings import Settings
    from semif_lib.workshop import load_state, package_model

    settings = Settings(target="local", state_file=tmp_path / "s.json", run_id="loc4l1")
    info = package_model(fake_gguf, settings=settings, state=load_state(settings), progress=False)
    assert info["model_data_url"].startswith("file://") and not info["uploaded"]


# ------------------------------------------------------------------ inspected first, split GGUFs, big models
LLAMA3_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
                   "message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
                   "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")


def test_a_model_that_cannot_work_is_refused_before_anything_is_uploaded(state, aws_settings, fake_gguf, tmp_path):
    """llama.cpp's vocabulary load and the answer-slot check run on the file before a byte is written or sent: an
    architecture this llama.cpp lacks, and a template whose answer slots cannot verify on this tokenizer (Llama 3's
    blank-line header on SmolLM2's, see tests/test_templates.py), are each one line, and S3 stays empty."""
    from semif_lib.aws.clients import make_client
    from semif_lib.errors import ModelLoadError
    from semif_lib.workshop import package_model

    cases = {make_fake_gguf(tmp_path / "weird.gguf", arch="notarealarch"): "llama.cpp cannot load architecture 'notarealarch'",
             make_fake_gguf(tmp_path / "llama3.gguf", chat_template=LLAMA3_TEMPLATE): "the decision path's answer slots do not verify"}
    for bad, reason in cases.items():
        with pytest.raises(ModelLoadError) as info:
            package_model(bad, settings=aws_settings, state=state, progress=False)
        assert f"{bad.name} cannot serve decisions: {reason}" in info.value.message and "\n" not in info.value.message
    assert make_client("s3", aws_settings).list_buckets()["Buckets"] == [] and not state.find("s3_object")
    assert not list((aws_settings.state_file.parent / "packages").glob("*/model.tar.gz"))
    assert package_model(fake_gguf, settings=aws_settings, state=state, progress=False)["uploaded"]  # the original passes


def test_a_split_gguf_is_packaged_whole(tmp_path):
    """Every shard at the tarball's root, the first sorting first (what the DLC serves); one missing is refused by name."""
    from semif_lib.errors import ModelNotFoundError
    from semif_lib.model.locate import find_gguf_in_dir, hash_file
    from semif_lib.model.package import build_model_tarball, extract_model_package, list_tarball, model_identity

    first = make_fake_gguf(tmp_path / "models" / "split.gguf", shards=2)  # llama.cpp's loader opens both
    second = first.with_name("split-00002-of-00002.gguf")
    package = build_model_tarball(first, out_dir=tmp_path / "pkg", settings=SETTINGS)
    assert list_tarball(package.tarball) == [first.name, second.name] and package.files == (first, second)
    assert package.sha256 == model_identity([hash_file(first), hash_file(second)], [first.name, second.name])
    assert package.gguf_size == first.stat().st_size + second.stat().st_size
    model_dir = extract_model_package(package.tarball, tmp_path / "opt-ml-model")
    assert find_gguf_in_dir(model_dir) == model_dir / first.name and (model_dir / second.name).read_bytes() == second.read_bytes()
    second.unlink()
    with pytest.raises(ModelNotFoundError, match="split-00002-of-00002.gguf missing beside it"):
        build_model_tarball(first, out_dir=tmp_path / "pkg", settings=SETTINGS)


def test_packaging_checks_free_disk_first_and_names_the_size(tmp_path, fake_gguf, monkeypatch):
    import shutil

    from semif_lib.errors import InsufficientStorageError
    from semif_lib.model import package as model_package

    real = shutil.disk_usage
    monkeypatch.setattr(model_package.shutil, "disk_usage", lambda path: real(path)._replace(free=1000))  # a nearly full disk
    with pytest.raises(InsufficientStorageError) as info:
        model_package.build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS)
    need = fake_gguf.stat().st_size + model_package.TAR_OVERHEAD
    assert f"needs {need / 1e9:.2f} GB free in {tmp_path}, 0.00 GB are" in info.value.message
    assert "SEMIF_MODEL_DATA=uncompressed" in info.value.message and info.value.status_code == 507
    assert not (tmp_path / "pkg").exists()
    package = model_package.build_model_package(fake_gguf, out_dir=tmp_path / "pkg", settings=SETTINGS,
                                                uncompressed=True)  # no copy: no room needed
    assert package.tarball is None and package.files == (fake_gguf,) and package.record()["model_data_url"].endswith("/")


def test_sagemaker_ranges_are_botocores():
    """The settings' bounds are SageMaker's, read from botocore's service model (ProductionVariant)."""
    import botocore.session

    from semif_lib.model.package import settings_bounds

    members = botocore.session.get_session().get_service_model("sagemaker").shape_for("ProductionVariant").members
    for setting, member in {"volume_size_gb": "VolumeSizeInGB", "model_download_timeout_s": "ModelDataDownloadTimeoutInSeconds",
                            "startup_timeout_s": "ContainerStartupHealthCheckTimeoutInSeconds"}.items():
        assert settings_bounds(setting) == (members[member].metadata["min"], members[member].metadata["max"]), setting


def test_hosting_plan_grows_with_the_model():
    from semif_lib.aws.deployment import accepts_volume_size
    from semif_lib.model.package import GIB, plan_hosting
    from semif_lib.settings import Settings

    s = Settings()
    small = plan_hosting(100_000_000, s, compressed=True)
    assert (small.volume_size_gb, small.download_timeout_s, small.startup_timeout_s, small.notes) == (None, 602, 601, ())
    big = plan_hosting(20 * GIB, s, compressed=True)  # tarball and unpacked copy: 40 GiB + 2 on the volume
    assert (big.volume_size_gb, big.download_timeout_s, big.startup_timeout_s) == (42, 1029, 814)
    assert plan_hosting(20 * GIB, s, compressed=False).volume_size_gb is None  # 22 GiB: SageMaker's ~30 GB default holds it
    huge = plan_hosting(600 * GIB, s, compressed=False)
    assert (huge.volume_size_gb, huge.download_timeout_s, huge.startup_timeout_s) == (512, 3600, 3600) and len(huge.notes) == 3
    assert "SageMaker allows at most 3600" in huge.notes[1]
    nvme = plan_hosting(20 * GIB, s, compressed=True, accepts_volume=False)
    assert nvme.volume_size_gb is None and "NVMe" in nvme.notes[0] and "uncompressed halves" in nvme.notes[0]
    explicit = Settings(volume_size_gb=100, model_download_timeout_s=900, startup_timeout_s=1200)
    plan = plan_hosting(1, explicit, compressed=True)
    assert (plan.volume_size_gb, plan.download_timeout_s, plan.startup_timeout_s) == (100, 900, 1200)
    with pytest.raises(ValueError, match="refuses VolumeSizeInGB"):
        plan_hosting(1, explicit, compressed=True, accepts_volume=False)
    assert [accepts_volume_size(t) for t in ("ml.c6i.xlarge", "ml.m5.large", "ml.c7g.xlarge", "ml.r6i.xlarge")] == [True] * 4
    assert not any(accepts_volume_size(t) for t in ("ml.g5.xlarge", "ml.g6.xlarge", "ml.g4dn.xlarge", "ml.p4d.24xlarge",
                                                    "ml.m5d.large", "ml.c5d.xlarge", "ml.inf2.xlarge", "ml.trn1.2xlarge"))


def test_a_big_model_gets_its_volume_and_timeouts(state, aws_settings, fake_gguf):
    """The variant carries what `plan_hosting` derives from the packaged size (a 45 GB GGUF's record: moto's m5 has no NVMe)."""
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model, package_model

    package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    state.set("model_package", {**state.get("model_package"), "gguf_size": 45 * 10 ** 9})
    sm = make_client("sagemaker", aws_settings)
    name = deploy_text_model(settings=aws_settings, state=state)
    variant = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])[
        "ProductionVariants"][0]
    assert (variant["VolumeSizeInGB"], variant["ModelDataDownloadTimeoutInSeconds"],
            variant["ContainerStartupHealthCheckTimeoutInSeconds"]) == (86, 1500, 1050)


def test_uncompressed_model_data_skips_the_tarball(aws, aws_settings, fake_gguf):
    """SEMIF_MODEL_DATA=uncompressed: no tarball and no local copy; the GGUF goes up as it is under a prefix, and the model
    reads it through S3ModelDataSource (S3Prefix, CompressionType None) instead of ModelDataUrl."""
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import AwsSetupError
    from semif_lib.aws.scaling import run_batch_transform
    from semif_lib.workshop import deploy_text_model, load_state, package_model

    settings = aws_settings.model_copy(update={"model_data": "uncompressed"})
    st = load_state(settings)
    info = package_model(fake_gguf, settings=settings, state=st, progress=False)
    assert info["tarball"] is None and info["uploaded"] and info["model_data_url"].endswith(f"/models/{info['sha256'][:12]}/files/")
    assert not list((settings.state_file.parent / "packages").glob("*/model.tar.gz"))
    bucket, prefix = info["model_data_url"][len("s3://"):].split("/", 1)
    s3 = make_client("s3", settings)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]] == [prefix + fake_gguf.name]
    assert s3.head_object(Bucket=bucket, Key=prefix + fake_gguf.name)["ServerSideEncryption"] == "AES256"
    assert not package_model(fake_gguf, settings=settings, state=st, progress=False)["uploaded"]  # idempotent
    sm = make_client("sagemaker", settings)
    name = deploy_text_model(settings=settings, state=st)
    config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    container = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]
    assert "ModelDataUrl" not in container
    assert container["ModelDataSource"]["S3DataSource"] == {"S3Uri": info["model_data_url"], "S3DataType": "S3Prefix",
                                                            "CompressionType": "None"}
    with pytest.raises(AwsSetupError, match="Batch Transform cannot read uncompressed model data"):  # AWS: not for batch
        run_batch_transform(fake_gguf, settings=settings, state=st)


def test_uncompressed_model_data_is_for_sagemaker_only(tmp_path, fake_gguf):
    from semif_lib.settings import Settings
    from semif_lib.targets.machine import LocalServerError
    from semif_lib.workshop import load_state, package_model

    settings = Settings(target="local", state_file=tmp_path / "s.json", run_id="loc4l1", model_data="uncompressed")
    with pytest.raises(LocalServerError, match="SEMIF_MODEL_DATA=uncompressed is for target=aws"):
        package_model(fake_gguf, settings=settings, state=load_state(settings), progress=False)
