"""The response on the Jev / System One wire: answers, usage and our extras, as pydantic models.

Strict System One clients see exactly the fields they know; every extra is `x_`-prefixed (jevcompat
`response.extensions`), so such clients ignore it:

- on each answer `x_option_mass` (share of the full next-token distribution on the option tokens)
  and, on choice and score, `x_top_probability` (the top-1 probability over the shown options);
- on a noul answer `x_probabilities` (`{"true": p, "false": 1 - p}`);
- `usage.x_cached_tokens` (prefix tokens served from the prefix cache), `x_timing`, `x_model_info`;
- with a calibration file, `x_raw_probabilities`, `x_calibrated` (whether a kept temperature or prior changed
  this answer), `x_temperature`, `x_debiased`; with
  `include_logits`, `x_logits`.

The Python attributes keep their plain names (`answer.option_mass`, `response.timing`); only the
JSON says `x_` (`serialize_by_alias`), and both spellings validate.

`confidence` is Jev's reference formula (jevcompat `confidence.formula`): the normalised peak
`(m - 1/n) / (1 - 1/n)` for choice, `max(0, 1 - sum_i p_i |i - k| / D)` for score (k the top level,
D that spread under the uniform distribution). Both are conditional on the listed options, not a
calibrated chance of being right: fit a calibration file on your own workload before gating actions on it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

# Extensions are attributes with plain names and `x_` JSON names; both validate (a client can read a dump back).
_EXTENDED = ConfigDict(extra="allow", serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)


class _Answer(BaseModel):
    model_config = _EXTENDED
    option_mass: float = Field(..., alias="x_option_mass", description="Share of the full next-token distribution on the option tokens.")


class NoulAnswer(_Answer):
    type: Literal["noul"] = "noul"
    noul: float = Field(..., description="P(true) over {true, false}.")
    probabilities: dict[str, float] = Field(..., alias="x_probabilities", description="{true: P(true), false: P(false)}.")


class ChoiceAnswer(_Answer):
    type: Literal["choice"] = "choice"
    choice: str
    confidence: float = Field(..., description="Jev's reference confidence, the normalised peak (m - 1/n) / (1 - 1/n).")
    probabilities: dict[str, float]
    top_probability: float = Field(..., alias="x_top_probability", description="Top-1 probability over the shown options, m.")


class ScoreAnswer(_Answer):
    type: Literal["score"] = "score"
    score: float = Field(..., description="Expected level, sum(i * p_i).")
    confidence: float = Field(..., description="Jev's reference confidence, max(0, 1 - sum_i p_i |i - k| / D).")
    legend: dict[str, str]
    probabilities: dict[str, float]
    top_probability: float = Field(..., alias="x_top_probability", description="Top-1 probability over the levels.")


Answer = Annotated[Union[NoulAnswer, ChoiceAnswer, ScoreAnswer], Field(discriminator="type")]


class Usage(BaseModel):
    model_config = _EXTENDED
    input_tokens: int
    output_tokens: int = 0
    cached_tokens: int = Field(0, alias="x_cached_tokens", description="Input tokens served from the prefix cache.")


class DecisionResponse(BaseModel):
    """System One response plus our extras (`x_timing`, `x_model_info`, `usage.x_cached_tokens`)."""

    model_config = _EXTENDED

    model: str
    answers: dict[str, Answer]
    usage: Usage
    timing: dict[str, Any] = Field(default_factory=dict, alias="x_timing", description="Where the time went, and the tokens.")
    model_info: dict[str, Any] = Field(default_factory=dict, alias="x_model_info", description="The loaded GGUF and its settings.")
