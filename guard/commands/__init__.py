"""Subcommands of the `couchguard` CLI; each module exposes add_parser(subparsers)."""
