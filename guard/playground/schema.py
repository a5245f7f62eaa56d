"""What the page sends, as pydantic models: anything else is a 400 that says which field is wrong."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import BadRequest

Threshold = Annotated[float, Field(ge=0.0, le=1.0)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str | None = None  # default: the policy the playground was started with
    thresholds: dict[str, Threshold] = Field(default_factory=dict)  # laid over the policy's own


class DecideRequest(_Request):
    # raw OpenAI-style messages: classifiers.parse_conversation validates them and says what is wrong
    messages: list[Any]


class MooreRequest(_Request):
    pass


class ExportRequest(_Request):
    name: str | None = Field(default=None, min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")


Model = TypeVar("Model", bound=BaseModel)


def parse(model: type[Model], body: Any) -> Model:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(step) for step in first["loc"]) or "body"
        raise BadRequest(f"{where}: {first['msg']}") from None
