"""Applying a calibration file to answers: a position prior (`x_debias: "prior"`) or the stored content-free prior, then the
type's temperature.

The decision wing's half of calibration. The engine loads the file named by `SEMIF_CALIBRATION`
and applies it to every answer; fitting one is measurement's job (`measurement.quality.calibration`,
`semif eval --calibrate`), which writes the format read here.

The file is keyed by the model file's sha256 and `prompt.PROMPT_VERSION`; the probabilities it
corrects belong to that model and that prompt, so loading it for any other model is refused
with `CalibrationMismatchError`. A temperature divides the logits, so it never changes the argmax.

A file keeps a type's temperature, prior or rule only where it helped out of fold, and records the
identity (temperature 1, no prior) and the reason elsewhere (`verdicts`). An answer's `x_calibrated`
says whether a kept temperature or prior changed it. A `semif-calibration-v1` file kept every fitted
temperature unchecked, so it is refused with the command that refits it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InvalidRequestError, SemifError
from ..model.locate import hash_file
from .conformal import Abstention, ConformalThreshold, predict_set
from .prompt import PROMPT_VERSION, QuestionPlan
from .readout import build_answer, softmax

__all__ = [
    "CALIBRATION_FORMAT",
    "KINDS",
    "CalibrationError",
    "CalibrationMismatchError",
    "Calibrator",
    "apply_temperature",
    "check_default_prior",
    "check_prior_requests",
    "hash_question",
    "load_calibration",
    "read_calibration",
    "remove_prior",
]

CALIBRATION_FORMAT = "semif-calibration-v2"
_UNCHECKED_FORMATS = ("semif-calibration-v1",)  # kept every fitted temperature, even where it made answers worse
KINDS = ("noul", "choice", "score")
_EPS = 1e-12


class CalibrationError(SemifError):
    """A calibration file that is missing or malformed; the engine refuses to start with it."""

    status_code = 503
    error_type = "calibration_invalid"


class CalibrationMismatchError(CalibrationError):
    """A calibration file fitted for another model file or prompt version."""

    error_type = "calibration_mismatch"


def apply_temperature(logits: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T): T > 1 softens, T < 1 sharpens, the argmax stays put."""
    return softmax(np.asarray(logits, dtype=np.float64) / float(temperature))


def remove_prior(logits: Sequence[float] | np.ndarray, prior: Sequence[float] | np.ndarray) -> np.ndarray:
    """Contextual calibration (Zhao et al. 2021): p ∝ p_raw / p_content_free, done in log space."""
    z = np.asarray(logits, dtype=np.float64)
    log_prior = np.log(np.clip(np.asarray(prior, dtype=np.float64), _EPS, None))
    out = z - log_prior
    return out - out.max()


def hash_question(plan_block: str, kind: str) -> str:
    """Identifies a question by its rendered suffix text, so stored priors match the served question exactly."""
    return hashlib.sha256(f"{kind}\x00{plan_block}".encode("utf-8")).hexdigest()[:24]


def read_calibration(path: Path | str) -> dict[str, Any]:
    """Parse and check the shape of a calibration file (not yet which model it belongs to)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CalibrationError(f"calibration file {path} does not exist (SEMIF_CALIBRATION)", field="calibration") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"calibration file {path} is not readable JSON: {exc}", field="calibration") from exc
    if isinstance(doc, dict) and doc.get("format") in _UNCHECKED_FORMATS:
        raise CalibrationError(f"calibration file {path} is a {doc['format']} file, whose temperatures were kept without an out-of-fold "
                               f"check and can make answers worse; refit it as {CALIBRATION_FORMAT} with `semif eval --calibrate` "
                               "(or, from a stored report, `semif calibrate REPORT --calibration-out FILE`)", field="calibration")
    if not isinstance(doc, dict) or doc.get("format") != CALIBRATION_FORMAT:
        raise CalibrationError(f"calibration file {path} is not a {CALIBRATION_FORMAT} file", field="calibration")
    temps = doc.get("temperatures")
    if not isinstance(temps, dict) or any(k not in KINDS or not isinstance(v, (int, float)) or v <= 0 for k, v in temps.items()):
        raise CalibrationError(f"calibration file {path}: temperatures must map noul/choice/score to positive numbers", field="calibration")
    _check_rules(doc, path)
    _check_position_priors(doc, path)
    return doc


def _check_position_priors(doc: dict[str, Any], path: Path) -> None:
    """The optional `position_priors` ({"<option count>": [probability per displayed position]}, `semif bench debias`)."""
    priors = doc.get("position_priors") or {}
    for count, prior in (priors.items() if isinstance(priors, dict) else [("?", None)]):
        ok = (str(count).isdigit() and int(count) >= 2 and isinstance(prior, list) and len(prior) == int(count)
              and all(isinstance(p, (int, float)) and p > 0 for p in prior) and abs(sum(prior) - 1.0) < 1e-3)
        if not ok:
            raise CalibrationError(f"calibration file {path}: position_priors must map an option count (2 or more) to that many "
                                   "positive probabilities summing to 1 (refit with `semif bench debias --calibration-out`)",
                                   field="calibration")


def _check_rules(doc: dict[str, Any], path: Path) -> None:
    """The optional `prediction_sets` ({kind: {q, target_coverage}}) and `abstention` ({kind: {min_confidence, target_error}})."""
    for section, number, bound in (("prediction_sets", "q", "target_coverage"), ("abstention", "min_confidence", "target_error")):
        rules = doc.get(section) or {}
        for kind, rule in (rules.items() if isinstance(rules, dict) else [("?", None)]):
            if kind not in KINDS or not isinstance(rule, dict) or not all(isinstance(rule.get(k), (int, float)) for k in (number, bound)):
                raise CalibrationError(f"calibration file {path}: {section} must map noul/choice/score to "
                                       f"{{{number}, {bound}}} numbers (refit with `semif eval --calibrate`)", field="calibration")


@dataclass
class Calibrator:
    """Applies a calibration file to answers: optional stored content-free prior, then the type's temperature."""

    temperatures: dict[str, float]
    priors: dict[str, list[float]] = field(default_factory=dict)
    path: str = ""
    model_sha256: str = ""
    prediction_sets: dict[str, ConformalThreshold] = field(default_factory=dict)
    abstention: dict[str, Abstention] = field(default_factory=dict)
    position_priors: dict[int, list[float]] = field(default_factory=dict)  # option count -> prior per displayed position

    def remove_position_prior(self, plan: QuestionPlan, logits: np.ndarray) -> np.ndarray | None:
        """`x_debias: "prior"`: the logits with the position prior for this option count divided out (positions are the
        plan's display order), or None when the file holds none for it."""
        prior = self.position_priors.get(len(plan.keys))
        return None if prior is None else remove_prior(logits, prior)

    def apply(self, plan: QuestionPlan, logits: np.ndarray, probs: np.ndarray, mass: float, position_debiased: bool = False) -> Any:
        """The System One answer with calibrated probabilities; the raw ones ride in `x_raw_probabilities`. A question
        whose position prior was divided out (`position_debiased`) gets no stored content-free prior on top: both remove
        the same preference."""
        z = np.asarray(logits, dtype=np.float64)
        prior = self.priors.get(hash_question(plan.block, plan.kind)) if self.priors and not position_debiased else None
        if prior is not None and len(prior) == len(z):
            z = remove_prior(z, prior)
        temperature = float(self.temperatures.get(plan.kind, 1.0))
        calibrated = apply_temperature(z, temperature)
        answer = build_answer(plan, calibrated, mass)
        answer.x_raw_probabilities = dict(zip(plan.keys, (float(x) for x in probs), strict=True))
        answer.x_calibrated = prior is not None or temperature != 1.0  # the file records a type it left alone as T = 1, no prior
        answer.x_temperature = temperature
        answer.x_debiased = prior is not None
        self._add_rules(plan, calibrated, answer)
        return answer

    def _add_rules(self, plan: QuestionPlan, probs: np.ndarray, answer: Any) -> None:
        """`x_prediction_set` (and the coverage it was fitted for) and `x_abstain`, where the file has them."""
        threshold = self.prediction_sets.get(plan.kind)
        if threshold is not None:
            chosen = predict_set(probs, plan.kind, threshold.q)
            answer.x_prediction_set = [int(plan.keys[i]) if plan.kind == "score" else plan.keys[i] for i in chosen]
            answer.x_prediction_coverage = threshold.target_coverage
        rule = self.abstention.get(plan.kind)
        if rule is not None:
            answer.x_abstain = rule.abstains(probs)


PRIOR_HOW = "SEMIF_CALIBRATION naming a file with position priors: `semif bench debias --calibration-out FILE`"


def check_prior_requests(calibration: "Calibrator | None", questions: Mapping[str, Any]) -> None:
    """A choice question that asks `x_debias: "prior"` itself needs the file's prior for its option count: a 400 naming
    the field and the counts there are (a server default of "prior" is checked when the engine starts)."""
    counts = sorted(calibration.position_priors) if calibration is not None else []
    for qid, question in questions.items():
        if getattr(question, "debias", None) != "prior":  # only a choice question carries x_debias
            continue
        n = len(question.criteria)
        if n not in counts:
            have = f"the calibration file has priors for {counts} options" if counts else f"no position prior is loaded ({PRIOR_HOW})"
            raise InvalidRequestError(f"x_debias 'prior' needs a position prior for {n} options: {have}",
                                      field=f"questions.{qid}.x_debias")


def check_default_prior(calibration: "Calibrator | None", default_debias: str) -> None:
    """SEMIF_DEFAULT_DEBIAS=prior without position priors would answer every choice question undebiased: refused at start."""
    if default_debias == "prior" and (calibration is None or not calibration.position_priors):
        raise CalibrationError(f"SEMIF_DEFAULT_DEBIAS=prior needs {PRIOR_HOW}", field="default_debias")


def load_calibration(path: Path | str, model_path: Path | str | None = None, model_sha256: str | None = None) -> Calibrator:
    """Read a calibration file and refuse it unless it was fitted for this model file and prompt version.

    The model is named by its file (hashed here) or directly by its sha256.
    """
    doc = read_calibration(path)
    _check_fitted_for(doc, path, model_path, model_sha256)
    return _build_calibrator(doc, path)


def _check_fitted_for(doc: dict[str, Any], path: Path | str, model_path: Path | str | None, model_sha256: str | None) -> None:
    """Refuse a file fitted for another prompt version or another model: temperatures do not transfer."""
    if doc.get("prompt_version") != PROMPT_VERSION:
        raise CalibrationMismatchError(
            f"calibration file {path} was fitted with prompt {doc.get('prompt_version')!r}, but this engine renders "
            f"{PROMPT_VERSION!r}; refit it with `semif eval --calibrate`",
            field="calibration",
        )
    if model_sha256 is None and model_path is not None:
        model_sha256 = hash_file(Path(model_path))
    if model_sha256 is not None and doc.get("model_sha256") != model_sha256:
        name = f"{Path(model_path).name} " if model_path else ""
        raise CalibrationMismatchError(
            f"calibration file {path} was fitted for model {doc.get('model_file')!r} (sha256 {str(doc.get('model_sha256'))[:12]}…), "
            f"not the loaded model {name}(sha256 {model_sha256[:12]}…); "
            "temperatures do not transfer between models: refit with `semif eval --calibrate`",
            field="calibration",
        )


def _build_calibrator(doc: dict[str, Any], path: Path | str) -> Calibrator:
    """The checked file's numbers, typed: temperatures, priors, prediction sets, abstention rules, position priors."""
    return Calibrator(
        temperatures={k: float(v) for k, v in doc["temperatures"].items()},
        priors={k: list(v) for k, v in (doc.get("priors") or {}).items()},
        path=str(path),
        model_sha256=str(doc.get("model_sha256")),
        prediction_sets={k: ConformalThreshold(k, float(v["q"]), float(v["target_coverage"]), int(v.get("n", 0)))
                         for k, v in (doc.get("prediction_sets") or {}).items()},
        abstention={k: Abstention(k, float(v["min_confidence"]), float(v["target_error"]), float(v.get("answered_share", 0.0)),
                                  float(v.get("answered_error", 0.0)), int(v.get("n", 0)), float(v.get("confidence", 0.9)),
                                  bool(v.get("guaranteed", False)), int(v.get("min_decisions", 0)))
                    for k, v in (doc.get("abstention") or {}).items()},
        position_priors={int(k): [float(p) for p in v] for k, v in (doc.get("position_priors") or {}).items()},
    )
