"""The planner's one error type."""

from __future__ import annotations

__all__ = ["PlanError"]


class PlanError(ValueError):
    """The model cannot be launched as asked; the message says what to change."""
