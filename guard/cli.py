"""The `couchguard` command line: one subcommand per module in guard.commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import offline

# Offline-first, before any third-party import: no model hub, no litellm cost-map fetch.
offline.apply()

COMMANDS = ("classify", "train", "check", "policy", "serve", "bench", "tune", "eval", "playground")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="couchguard", description="Runtime guardrails for mental-health chatbots.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"guard.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"guard.commands.{name}":
                continue  # a command not built into this installation
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
