"""`couchguard playground --policy NAME|PATH [--host H] [--port P]`: the local page to try a policy by hand."""

from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    parser = sub.add_parser("playground", help="a local web page to try a policy, move thresholds, export an override")
    parser.add_argument(
        "--policy", default="mental-health", help="shipped policy name or path (default: mental-health)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: the page is for this machine only)",
    )
    parser.add_argument("--port", type=int, default=8077, help="port to listen on (default 8077)")
    parser.add_argument(
        "--moore-sample",
        type=int,
        default=None,
        metavar="N",
        help="judge thresholds on N evenly spaced Moore responses instead of all 1,880 (a faster first use)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="where Moore scores are kept between runs (default ~/.cache/couchguard/playground)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    import uvicorn

    from ..playground import create_app
    from ..playground.errors import BadRequest

    if args.moore_sample is not None and args.moore_sample <= 0:
        print("couchguard playground: --moore-sample must be positive", file=sys.stderr)
        return 2
    try:
        app = create_app(args.policy, moore_limit=args.moore_sample, cache_dir=args.cache_dir)
    except BadRequest as exc:
        print(f"couchguard playground: {exc}", file=sys.stderr)
        return 2
    print(
        f"couchguard playground: http://{args.host}:{args.port}/ (policy {args.policy}; Ctrl-C to stop)",
        file=sys.stderr,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            "couchguard playground: the page takes no key: anyone who can reach this address can use it",
            file=sys.stderr,
        )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
