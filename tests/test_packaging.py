"""model.tar.gz layout (what the DLC's discovery finds), sha256, SSE, idempotent and multipart upload (moto)."""

from __future__ import annotations

import tarfile

from support.aws import make_fake_gguf


def test_tarball_has_the_gguf_at_its_root(tmp_path, fake_gguf):
    from semif_lib.aws.packaging import build_model_tarball, list_tarball
    from semif_lib.modelfile import find_gguf_in_dir, hash_file
    from semif_lib.workshop import extract_model_package

    package = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg")
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
    from semif_lib.aws.packaging import build_model_tarball

    first = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg")
    mtime = first.tarball.stat().st_mtime_ns
    second = build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg")
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

    package = packaging.build_model_tarball(fake_gguf, out_dir=tmp_path / "pkg")
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


def test_big_models_go_up_in_parts(state, aws_settings, tmp_path, monkeypatch):
    from semif_lib.aws import packaging
    from semif_lib.aws.clients import make_client

    monkeypatch.setattr(packaging, "MULTIPART_THRESHOLD", 5 << 20)
    monkeypatch.setattr(packaging, "MULTIPART_CHUNK", 5 << 20)
    gguf = make_fake_gguf(tmp_path / "big.gguf", size=11 << 20)
    package = packaging.build_model_tarball(gguf, out_dir=tmp_path / "pkg")
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
