"""couchguard as a LiteLLM proxy custom guardrail: the same pipeline, run by LiteLLM's pre- and post-call hooks.

    guardrails:
      - guardrail_name: couchguard
        litellm_params:
          guardrail: guard.litellm_guardrail.CouchguardGuardrail
          mode: [pre_call, post_call]
          policy: mental-health

The pre-call hook runs the input rail (steer adds the safety instruction; block answers with the vetted template
without calling the model); the post-call hooks run the output rail on the model's answer and replace its content
with what the user should receive. See docs/litellm.md.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator

from . import offline

offline.apply()  # before litellm is imported: it fetches its cost map otherwise

import anyio  # noqa: E402
from litellm.integrations.custom_guardrail import CustomGuardrail  # noqa: E402

from classifiers.conversation import parse_conversation  # noqa: E402

from .actions import delivers  # noqa: E402
from .pipeline import Guard  # noqa: E402
from .policy import load_policy  # noqa: E402
from .upstream_params import refuse_call_settings  # noqa: E402

METADATA_KEY = "couchguard"


class CouchguardGuardrail(CustomGuardrail):
    def __init__(
        self,
        policy: str = "mental-health",
        locale: str | None = None,
        regenerate_model: str | None = None,
        regenerate_api_base: str | None = None,
        guard: Guard | None = None,
        **kwargs: Any,
    ) -> None:
        # LiteLLM passes every litellm_params entry as a keyword; the ones above are ours, the rest its own
        kwargs.setdefault("guardrail_name", "couchguard")
        super().__init__(**kwargs)
        self.guard = guard or Guard(load_policy(policy), locale=locale)
        # rewrites call a model directly through litellm; without one they fall back to removal or templates
        self.regenerate_model, self.regenerate_api_base = regenerate_model, regenerate_api_base

    # -- input -----------------------------------------------------------------------------------------------------
    async def async_pre_call_hook(self, user_api_key_dict, cache, data: dict, call_type) -> dict | None:
        # LiteLLM's proxy refuses client-side credentials itself; this is the second line, and it also holds where an
        # operator has allowed them: ParamsError is a ValueError, which LiteLLM answers with a 400
        refuse_call_settings(data)
        messages = data.get("messages")
        if not messages:
            return data
        conversation = parse_conversation(messages)  # ConversationError is a ValueError: LiteLLM answers 400
        context = {"product": "litellm", "stream": bool(data.get("stream"))}
        decision = await anyio.to_thread.run_sync(lambda: self.guard.input_rail(conversation, context=context))
        data.setdefault("metadata", {})[METADATA_KEY] = {
            "input": _info(decision),
            "messages": [dict(m) for m in messages],
        }
        if not delivers(decision.action, "input"):  # answered by the guard: the model is not called
            self.raise_passthrough_exception(decision.text or "", data, detection_info=_info(decision))
        if decision.upstream_messages is not None:  # an input action that changes what the model reads
            data["messages"] = decision.upstream_messages
        return data

    # -- output ----------------------------------------------------------------------------------------------------
    async def async_post_call_success_hook(self, data: dict, user_api_key_dict, response):
        choices = getattr(response, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None or not message.content:
            return response  # embeddings, tool calls without text: nothing for the user to read
        decision = await self._output(data, message.content)
        message.content = decision.text
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            hidden[METADATA_KEY] = _info(decision)
        return response

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict, response, request_data: dict
    ) -> AsyncGenerator[Any, None]:
        """Streams are held until checked: LiteLLM relays chunks as this yields them, so nothing unchecked is
        yielded. (`couchguard serve` releases checked sentence windows instead; here the whole answer is held.)"""
        chunks = [chunk async for chunk in response]
        text = "".join(_delta_text(chunk) for chunk in chunks)
        if not text:
            for chunk in chunks:
                yield chunk
            return
        decision = await self._output(request_data, text)
        replaced = False
        for chunk in chunks:  # in order: role and closing chunks as they came, the checked text in place of the first
            if not _delta_text(chunk):
                yield chunk
            elif not replaced:
                checked = chunk.model_copy(deep=True)
                checked.choices[0].delta.content = decision.text
                replaced = True
                yield checked

    async def _output(self, data: dict, text: str):
        stash = (data.get("metadata") or {}).get(METADATA_KEY) or {}
        messages = stash.get("messages") or data.get("messages") or []
        conversation = parse_conversation([*messages, {"role": "assistant", "content": text}])
        regenerate = self._regenerate if self.regenerate_model else None
        return await self.guard.output_rail(
            conversation, regenerate=regenerate, context={"product": "litellm", "stream": bool(data.get("stream"))}
        )

    async def _regenerate(self, messages: list[dict]) -> str:
        import litellm

        response = await litellm.acompletion(
            model=self.regenerate_model, messages=messages, api_base=self.regenerate_api_base
        )
        return response.choices[0].message.content or ""


def _info(decision) -> dict[str, Any]:
    return {"rail": decision.rail, "action": decision.action, "rules": decision.rules, "flagged": decision.flagged}


def _delta_text(chunk) -> str:
    choices = getattr(chunk, "choices", None) or []
    return (getattr(choices[0].delta, "content", None) or "") if choices else ""
