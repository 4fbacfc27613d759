"""Answers as tables: one row per question, per request, or per question of two responses side by side;
and notebook 01's permission check. pandas is imported inside each function."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..errors import read_error
from ..measurement.agreement import compare_question
from ..measurement.answers import read_probabilities, read_response

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["compare_answers", "decision_of", "tabulate_answers", "tabulate_permissions", "tabulate_records"]


def _answers(response: Any) -> dict[str, Any]:
    return read_response(response).get("answers", {})


def decision_of(answer: Mapping[str, Any]) -> Any:
    """The decision an answer carries: P(yes) for a yes/no, the option for a choice, the expected level for a score."""
    return {"noul": answer.get("noul"), "choice": answer.get("choice"), "score": answer.get("score")}.get(answer.get("type"))


def tabulate_answers(response: Any) -> "pd.DataFrame":
    """One row per question: the decision, Jev's `confidence` (choice and score; a yes/no has none, so the cell is
    empty), `x_top_probability` (the top option's probability, any type: a yes/no's is max(P(true), P(false))), the
    option mass, and every P(option). The two are different numbers: confidence is the top probability normalised
    so that uniform is 0 and certain is 1."""
    import pandas as pd

    rows = []
    for qid, answer in _answers(response).items():
        probs = read_probabilities(answer)
        rows.append({"question": qid, "type": answer.get("type"), "answer": decision_of(answer),
                     "confidence": answer.get("confidence"),
                     "x_top_probability": answer.get("x_top_probability", max(probs.values())),
                     "option_mass": answer.get("x_option_mass"),
                     "probabilities": ", ".join(f"{k}={v:.3f}" for k, v in probs.items())})
    return pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows)


def tabulate_records(records: Any) -> "pd.DataFrame | str":
    """Responses of a JSON Lines run as one row per request id and one column per question
    (the decision); an S3 URI (what Batch Transform returns) is passed through."""
    import pandas as pd

    if isinstance(records, str):
        return records
    rows = {}
    for record in records:
        if "detail" in record:  # an error line (`jsonlines.error_record`)
            rows[record.get("id")] = {"error": read_error(record)["message"]}
        else:
            rows[record.get("id")] = {qid: decision_of(a) for qid, a in record.get("answers", {}).items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare_answers(reference: Any, other: Any) -> "pd.DataFrame":
    """Per question: both argmaxes, whether they agree, and max |Δp| between the two responses
    (`measurement.agreement.compare_question`, the rule the benchmarks use; a yes/no's probabilities read
    from its `x_probabilities`). A question the other response did not answer is refused by name."""
    import pandas as pd

    ref, oth = _answers(reference), _answers(other)
    rows = []
    for qid, answer in ref.items():
        if qid not in oth:
            raise ValueError(f"question {qid!r}: the other response has no answer to compare")
        result = compare_question(read_probabilities(answer), read_probabilities(oth[qid]))
        rows.append({"question": qid, "reference": result.reference, "other": result.other,
                     "same_argmax": result.same_argmax, "max_abs_dp": round(result.max_abs_dp, 4)})
    return pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows)


def tabulate_permissions(check: Any) -> "pd.DataFrame | None":
    """Notebook 01's permission check (`aws.preflight.PermissionCheck`) as one table: step, action,
    resource, allowed (yes / NO / ?; `no, optional` where the step goes on without it), how it was checked,
    and the container/iam/ file that grants it. The rows that need a look come first (in step order), so a
    table longer than pandas shows never hides a denial in its cut middle. None in local mode."""
    if check is None:
        return None
    import pandas as pd

    mark = {True: "yes", False: "NO", None: "?"}
    rows = [{**row, "allowed": "no, optional" if row.get("optional") and row["allowed"] is False else mark[row["allowed"]],
             "policy": f"{row['policy']}.json" if row.get("policy") else ""} for row in check.rows]
    rows.sort(key=lambda row: row["allowed"] == "yes")  # stable: denials and unknowns first, each group in step order
    return pd.DataFrame(rows, columns=["step", "action", "allowed", "how", "resource", "policy"])
