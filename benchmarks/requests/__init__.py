"""Prompt sets: built-in seeded generators and user JSONL/CSV files."""

from benchmarks.requests.files import PromptFileError, load_prompt_file
from benchmarks.requests.plan import RequestList, build_request_list, canonical_sha256

__all__ = ["PromptFileError", "RequestList", "build_request_list", "canonical_sha256", "load_prompt_file"]
