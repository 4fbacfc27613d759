"""IAM identity-policy evaluation for the AWS walk tests: does this identity's set of policies allow this request?

moto enforces IAM for a few services only (S3, IAM, some others) and its evaluator reads an Allow whose
condition does not match as an explicit deny; the maintained Python IAM libraries (policyuniverse,
parliament, cloudsplaining, policy_sentry) parse, lint or expand policies but decide no request. So the
walk tests decide every call here, with the rules of AWS's documentation:

* "Policy evaluation logic" (IAM User Guide, policies_evaluation-logic): an explicit Deny in any statement
  wins; otherwise an Allow that applies allows; otherwise the request is implicitly denied.
* A statement applies when its Action (or NotAction) matches the action, case-insensitively, with `*` and
  `?` wildcards; its Resource (or NotResource) matches the resource ARN, case-sensitively; and every
  condition operator holds (operators AND, keys AND, the values of one key OR).
* "Condition operators" (reference_policies_elements_condition_operators): a key missing from the request
  context fails a condition, except the negated operators (StringNotEquals, StringNotLike, ArnNotLike...),
  which hold; `...IfExists` holds when the key is missing; `Null` tests presence; `ForAnyValue:` and
  `ForAllValues:` qualify multivalued keys (ForAllValues holds on a missing key).
* Policy variables (`${aws:PrincipalAccount}`) in Resource and condition values are replaced from the
  request context; a variable the context lacks leaves that value matching nothing.

* Permissions boundaries ("Policy evaluation logic", "Permissions boundaries for IAM entities"): with a
  boundary, a request is allowed only where the identity's policies and the boundary both allow it, and an
  explicit deny in either wins (`evaluate(..., boundary=[...])`).

Only identity-based policies and boundaries are evaluated: no SCPs, resource policies or session policies (the
walk's identities have none). An operator this module does not implement raises, so an unknown condition never
allows silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

__all__ = ["Decision", "evaluate", "for_action"]

ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY = "allowed", "explicitDeny", "implicitDeny"  # SimulatePrincipalPolicy's EvalDecision values
_STRING = {"StringEquals": ("equals", False, False), "StringNotEquals": ("equals", True, False),
           "StringEqualsIgnoreCase": ("equals", False, True), "StringNotEqualsIgnoreCase": ("equals", True, True),
           "StringLike": ("like", False, False), "StringNotLike": ("like", True, False),
           "ArnEquals": ("like", False, False), "ArnLike": ("like", False, False),  # ARN operators take wildcards, both of them
           "ArnNotEquals": ("like", True, False), "ArnNotLike": ("like", True, False),
           "Bool": ("equals", False, True)}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Decision:
    """`kind` as IAM's simulator names it; `statement` the Sid (or index) that decided, when one did."""

    kind: str
    statement: str | None = None

    @property
    def allowed(self) -> bool:
        return self.kind == ALLOWED


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@lru_cache(maxsize=4096)
def _compiled(patterns: tuple[str, ...], ignore_case: bool) -> re.Pattern:
    """One regex that a value matches whole when it matches any of `patterns` (`*` and `?` as IAM reads them): a
    statement's hundreds of actions are one match, not hundreds (an empty tuple matches nothing)."""
    regex = "|".join("(?:" + "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + ")"
                     for pattern in patterns) or "(?!)"
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


@lru_cache(maxsize=4096)
def _has_variables(patterns: tuple[str, ...]) -> bool:
    return any("${" in pattern for pattern in patterns)


def _substitute(value: str, context: dict[str, Any], lowered: dict[str, Any] | None = None) -> str | None:
    """`${key}` from the context (keys case-insensitive; `lowered`, its keys lowercased, if the caller has it); `${*}`,
    `${?}`, `${$}` are the literal characters; None if unresolvable."""
    if "${" not in value:
        return value
    lowered = {k.lower(): v for k, v in context.items()} if lowered is None else lowered
    missing = False

    def one(match: re.Match) -> str:
        nonlocal missing
        key = match.group(1)
        if key in ("*", "?", "$"):
            return key
        found = lowered.get(key.lower())
        if found is None or isinstance(found, list):
            missing = True
            return ""
        return str(found)

    text = _VARIABLE.sub(one, value)
    return None if missing else text


def _matches_any(patterns: Iterable[str], value: str, context: dict[str, Any], ignore_case: bool = False) -> bool:
    written = tuple(map(str, patterns))
    if _has_variables(written):  # a pattern whose variable the context lacks matches nothing
        lowered = {k.lower(): v for k, v in context.items()}
        written = tuple(resolved for pattern in written if (resolved := _substitute(pattern, context, lowered)) is not None)
    return _compiled(written, ignore_case).fullmatch(value) is not None


def _condition_holds(operator: str, key: str, expected: Any, context: dict[str, Any]) -> bool:
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists") and base != "IfExists"
    base = base.removesuffix("IfExists") if if_exists else base
    lowered = {k.lower(): v for k, v in context.items()}
    present = key.lower() in lowered
    actual = [str(v).lower() if isinstance(v, bool) else str(v) for v in _as_list(lowered.get(key.lower(), []))]
    if base == "Null":
        wants_absent = str(_as_list(expected)[0]).lower() == "true"
        return wants_absent != present
    if base not in _STRING:
        raise ValueError(f"condition operator {operator!r} is not implemented by tests/support/iam_policy.py")
    kind, negated, ignore_case = _STRING[base]
    values = [str(v).lower() if isinstance(v, bool) else str(v) for v in _as_list(expected)]
    if not present:
        return if_exists or negated or qualifier == "ForAllValues"

    def match(one: str) -> bool:
        if kind == "like":
            return _matches_any(values, one, context)
        resolved = [_substitute(v, context) for v in values]
        return any(r is not None and (r.lower() == one.lower() if ignore_case else r == one) for r in resolved)

    if qualifier == "ForAllValues":
        return all(match(a) != negated for a in actual)
    if qualifier not in ("", "ForAnyValue"):
        raise ValueError(f"condition qualifier {qualifier!r} is not an IAM set operator")
    hit = any(match(a) for a in actual)
    return not hit if negated else hit


def _applies(statement: dict[str, Any], action: str, resource: str, context: dict[str, Any]) -> bool:
    if not _names_action(statement, action):
        return False
    if "Resource" in statement:
        if not _matches_any(_as_list(statement["Resource"]), resource, context):
            return False
    elif "NotResource" in statement:
        if _matches_any(_as_list(statement["NotResource"]), resource, context):
            return False
    else:
        return False  # an identity policy's statement without a resource element applies to nothing
    return all(_condition_holds(op, key, expected, context)
               for op, keys in statement.get("Condition", {}).items() for key, expected in keys.items())


def _decide(policies: Iterable[dict[str, Any]], action: str, resource: str, context: dict[str, Any]) -> Decision:
    allowed_by: str | None = None
    for policy in policies:
        for index, statement in enumerate(_as_list(policy["Statement"])):
            if not _applies(statement, action, resource, context):
                continue
            name = statement.get("Sid") or f"statement {index}"
            if statement["Effect"] == "Deny":
                return Decision(EXPLICIT_DENY, name)
            allowed_by = allowed_by or name
    return Decision(ALLOWED, allowed_by) if allowed_by else Decision(IMPLICIT_DENY)


def _names_action(statement: dict[str, Any], action: str) -> bool:
    if "Action" in statement:
        return _matches_any(_as_list(statement["Action"]), action, {}, ignore_case=True)
    return not _matches_any(_as_list(statement.get("NotAction", [])), action, {}, ignore_case=True)


def for_action(policies: Iterable[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """`policies` cut to the statements whose Action (or NotAction) lets them apply to `action`, in order and under the
    names they decide with: `evaluate` gives every request of that action the same decision on these as on the whole
    policies, without matching each request's action against every statement (the operation tables evaluate an action
    on every resource and context)."""
    cut = []
    for policy in policies:
        statements = [{**statement, "Sid": statement.get("Sid") or f"statement {index}"}
                      for index, statement in enumerate(_as_list(policy["Statement"])) if _names_action(statement, action)]
        cut.append({**policy, "Statement": statements})
    return cut


def evaluate(policies: Iterable[dict[str, Any]], action: str, resource: str, context: dict[str, Any] | None = None,
             boundary: Iterable[dict[str, Any]] | None = None) -> Decision:
    """The decision for one request (`action` like "s3:PutObject", `resource` an ARN or "*") under identity `policies`,
    capped by a permissions `boundary` (its policy documents) when the identity has one."""
    context = context or {}
    decision = _decide(policies, action, resource, context)
    if boundary is None or decision.kind == EXPLICIT_DENY:
        return decision
    capped = _decide(boundary, action, resource, context)
    if capped.kind == EXPLICIT_DENY or not decision.allowed:
        return capped if capped.kind == EXPLICIT_DENY else decision
    return decision if capped.allowed else Decision(IMPLICIT_DENY, "permissions boundary")
