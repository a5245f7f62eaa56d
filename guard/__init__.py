"""couchguard runtime: the guard pipeline, actions, proxy, audit log and CLI."""
