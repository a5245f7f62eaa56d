"""`couchguard serve --policy NAME|PATH --model LITELLM_MODEL [--api-base URL] [--host H] [--port P] [--config FILE]`."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    parser = sub.add_parser("serve", help="run the OpenAI-compatible guard proxy in front of any LLM (litellm)")
    parser.add_argument("--policy", default=None, help="shipped policy name or path (default: mental-health)")
    parser.add_argument("--model", default=None, help="upstream litellm model, e.g. openai/gpt-4o-mini")
    parser.add_argument("--api-base", default=None, help="upstream base URL (OpenAI-compatible servers, local models)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument("--config", default=None, help="YAML config: products, keys, limits, audit, escalation")
    parser.add_argument("--locale", default=None, help="crisis resources for this locale (default: the policy's)")
    parser.add_argument("--audit-url", default=None, help="audit database URL (default sqlite:///couchguard-audit.db)")
    parser.add_argument(
        "--max-in-flight",
        type=_positive_int,
        default=None,
        metavar="N",
        help="chat requests answered at once by this replica, a stream until it ends; beyond it 429 with "
        "Retry-After (default 64, or concurrency.max_in_flight in --config)",
    )
    parser.add_argument(
        "--playground",
        action="store_true",
        help="also serve the playground page at /playground/ (off by default: it takes no API key, "
        "so only on a trusted network)",
    )
    parser.set_defaults(run=run)


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def run(args) -> int:
    import uvicorn

    from ..policy import PolicyError
    from ..proxy import ConfigError, create_app, load_config

    try:
        config = load_config(
            args.config,
            policy=args.policy,
            model=args.model,
            api_base=args.api_base,
            locale=args.locale,
            audit_url=args.audit_url,
            max_in_flight=args.max_in_flight,
        )
        app = create_app(config)
        if args.playground:
            _mount_playground(app, args.policy or "mental-health")
    except (ConfigError, PolicyError) as exc:
        print(f"couchguard serve: invalid configuration\n{exc}", file=sys.stderr)
        return 2
    if not any(p.upstream.model or p.models for p in app.state.couchguard.products.products.values()):
        print(
            "couchguard serve: no upstream model: give --model or upstream.model / models in --config", file=sys.stderr
        )
        return 2
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def _mount_playground(app, policy: str) -> None:
    """Added before the server starts, so the proxy's routes are still fixed once it serves."""
    from starlette.routing import Mount

    from ..playground import create_app as create_playground
    from ..playground.errors import BadRequest
    from ..proxy import ConfigError

    try:
        playground = create_playground(policy)
    except BadRequest as exc:
        raise ConfigError(f"--playground: {exc}") from None
    app.router.routes.append(Mount("/playground", app=playground))
