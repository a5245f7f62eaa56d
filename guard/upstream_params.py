"""What a client may ask of the upstream model: OpenAI's chat-completions fields, allow-listed and validated.

litellm takes connection, credential, retry and timeout settings as ordinary keywords (`api_base`, `api_key`,
`timeout`, `mock_response`, callbacks...), so a request field spread into `litellm.acompletion` could send the
operator's provider key to any host. Only the fields below ever reach litellm from a client, each checked for type
and range; everything that decides where and how the call is made comes from the server's configuration
(`Upstream`), which is applied after these and cannot be overridden by them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# finite floats in the ranges OpenAI documents (named, so that type checkers read them as types)
Temperature = Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False, strict=False)]
UnitFloat = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=False)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0, allow_inf_nan=False, strict=False)]
Bias = Annotated[float, Field(ge=-100.0, le=100.0, allow_inf_nan=False, strict=False)]


MAX_STOP_SEQUENCES = 4  # OpenAI's own limit
MAX_STOP_CHARS = 256
MAX_TOOLS = 128
MAX_LOGIT_BIAS = 300


class UpstreamParams(BaseModel):
    """The OpenAI chat-completions request fields couchguard forwards. `model`, `messages`, `stream`, `n` and
    `stream_options` are handled by the proxy itself (see `ChatRequest`); the proxy asks for usage on streams."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: Temperature | None = None
    top_p: UnitFloat | None = None
    max_tokens: Annotated[int, Field(ge=1, le=1_000_000, strict=True)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1, le=1_000_000, strict=True)] | None = None
    stop: (
        Annotated[str, Field(min_length=1, max_length=MAX_STOP_CHARS)]
        | Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_STOP_CHARS)]], Field(max_length=MAX_STOP_SEQUENCES)
        ]
        | None
    ) = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    seed: Annotated[int, Field(strict=True, ge=-(2**63), le=2**63 - 1)] | None = None
    tools: Annotated[list[dict[str, Any]], Field(max_length=MAX_TOOLS)] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    user: Annotated[str, Field(max_length=256)] | None = None
    logit_bias: Annotated[dict[str, Bias], Field(max_length=MAX_LOGIT_BIAS)] | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, Field(ge=0, le=20, strict=True)] | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    service_tier: Literal["auto", "default", "flex", "priority", "scale"] | None = None
    # couchguard checks text: audio out would reach the user unchecked
    modalities: list[Literal["text"]] | None = None

    @field_validator("tools")
    @classmethod
    def _tools_are_typed(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for index, tool in enumerate(tools or []):
            if not isinstance(tool.get("type"), str):
                raise ValueError(f"tools[{index}] needs a string 'type' (e.g. 'function')")
        return tools

    @field_validator("response_format")
    @classmethod
    def _format_is_known(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type") not in ("text", "json_object", "json_schema"):
            raise ValueError("response_format.type must be 'text', 'json_object' or 'json_schema'")
        return value

    def forwarded(self) -> dict[str, Any]:
        """The fields the client set, ready to be spread into a litellm call."""
        return self.model_dump(exclude_none=True)


FORWARDED_FIELDS = frozenset(UpstreamParams.model_fields)

# litellm keywords that decide where, how and with which credentials a call is made. `couchguard serve` does not need
# this list (it forwards FORWARDED_FIELDS and nothing else); the LiteLLM guardrail does, because there LiteLLM owns
# the request and puts bookkeeping fields of its own (metadata, call ids) beside the client's.
CALL_SETTINGS = frozenset(
    {
        "api_base",
        "base_url",
        "api_key",
        "api_version",
        "api_type",
        "organization",
        "custom_llm_provider",
        "extra_headers",
        "headers",
        "extra_body",
        "timeout",
        "request_timeout",
        "stream_timeout",
        "num_retries",
        "max_retries",
        "mock_response",
        "mock_tool_calls",
        "mock_timeout",
        "litellm_params",
        "model_list",
        "callbacks",
        "success_callback",
        "failure_callback",
        "input_callback",
        "service_callback",
        "azure_ad_token",
        "azure_ad_token_provider",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_region_name",
        "aws_bedrock_runtime_endpoint",
        "vertex_credentials",
        "vertex_project",
        "vertex_location",
        "user_continue_message",
        "deployment_id",
        "client",
        "http_client",
        "ssl_verify",
    }
)


class ParamsError(ValueError):
    """A client field that may not reach the upstream, or one with a bad value; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def upstream_params(fields: dict[str, Any]) -> UpstreamParams:
    """Validate a client's upstream fields: ParamsError names the first field that is unknown or out of range."""
    try:
        return UpstreamParams.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "body"
        if first["type"] == "extra_forbidden":
            raise ParamsError(
                field,
                "is not a chat-completions field couchguard forwards to the model (see "
                "docs/proxy.md, 'What a client can set')",
            ) from None
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ParamsError(field, problems) from None


def refuse_call_settings(data: dict[str, Any]) -> None:
    """ParamsError for a request that carries a call setting at its top level or inside `litellm_params`, then the
    allow-listed fields it carries validated as in the proxy (the LiteLLM guardrail's check of client data)."""
    raw = data.get("litellm_params")
    nested: dict[str, Any] = raw if isinstance(raw, dict) else {}
    found = sorted(CALL_SETTINGS & set(data)) + [f"litellm_params.{key}" for key in sorted(CALL_SETTINGS & set(nested))]
    if found:
        raise ParamsError(found[0], "sets where or how the model is called; only the operator's configuration may")
    upstream_params({key: data[key] for key in FORWARDED_FIELDS if key in data})


def server_call_settings(*, api_base: str | None, api_key: str | None, timeout_s: float) -> dict[str, Any]:
    """Where and how a model is called, from the operator's configuration only: merged after any client fields, so
    that these win. No retries: a retry multiplies the user's wait, and the caller's fail mode answers instead."""
    settings: dict[str, Any] = {"timeout": timeout_s, "max_retries": 0, "num_retries": 0}
    if api_base:
        settings["api_base"] = api_base
    if api_key is not None:
        settings["api_key"] = api_key
    return settings


__all__ = [
    "CALL_SETTINGS",
    "FORWARDED_FIELDS",
    "ParamsError",
    "UpstreamParams",
    "refuse_call_settings",
    "server_call_settings",
    "upstream_params",
]
