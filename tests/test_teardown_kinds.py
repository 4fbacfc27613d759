"""One table per AWS resource kind (`aws.teardown.KINDS`): every kind a run records anywhere has its row (how cleanup
deletes it, whether 99 asks if it still bills, the IAM actions those need), the machine's own kinds belong to the local
targets, and each row's actions are ones the permission table grants a run's cleanup."""

from __future__ import annotations

import re

from support.paths import ROOT

RECORD = re.compile(r"\.record\(\s*\"(\w+)\"")


def recorded_kinds() -> set[str]:
    """Every kind passed to `state.record("<kind>", ...)` in the package, read from the code."""
    return {kind for path in (ROOT / "semif_lib").rglob("*.py") for kind in RECORD.findall(path.read_text(encoding="utf-8"))}


def test_every_recorded_kind_has_one_owner_and_one_row():
    from semif_lib.aws.teardown import KINDS
    from semif_lib.targets import ContainerTarget, LocalTarget

    local = set(LocalTarget.kinds) | set(ContainerTarget.kinds)
    kinds = recorded_kinds()
    assert {"sagemaker_endpoint", "s3_object", "local_process"} <= kinds, "the reader finds the record calls"
    assert not local & set(KINDS), "a kind has one owner"
    assert sorted(kinds - local - set(KINDS)) == [], "a recorded kind cleanup would not know how to delete"
    assert sorted(set(KINDS) - kinds) == [], "a row no run records"


def test_each_rows_actions_are_granted_to_cleanup():
    from semif_lib.aws.permissions import NEEDS
    from semif_lib.aws.teardown import KINDS

    needed = {n.action for n in NEEDS}
    for name, kind in KINDS.items():
        assert kind.iam_actions, name
        assert set(kind.iam_actions) <= needed, (name, set(kind.iam_actions) - needed)


def test_a_kind_without_a_row_is_refused_by_name():
    import pytest

    from semif_lib.aws.teardown import delete_resource
    from semif_lib.settings import Settings

    with pytest.raises(ValueError, match="do not know how to delete a 'sagemaker_notebook'"):
        delete_resource({"kind": "sagemaker_notebook", "name": "x"}, Settings())
