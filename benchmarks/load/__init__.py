"""Load profiles: one module per profile, looked up by kind in a registry."""

from benchmarks.load.base import LoadProfile, SendFn, parse_levels, profile_kinds

__all__ = ["LoadProfile", "SendFn", "parse_levels", "profile_kinds"]
