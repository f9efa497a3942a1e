"""Shared fixtures. Sample models are built once per machine (cached in the models dir)."""

from __future__ import annotations
