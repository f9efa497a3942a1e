"""The CPU thread policy of the in-process engines (hrm/threads.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from backends.base import create_backend
from hrm.server import ServerConfig, build_parser
from hrm.threads import configure_threads


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_cpu_defaults_to_one_thread_and_honours_an_explicit_count(restore_threads: None) -> None:
    torch.set_num_threads(2)
    assert configure_threads(None, "cpu") == 1
    assert configure_threads(2, torch.device("cpu")) == 2


def test_accelerators_keep_torch_default_unless_asked(restore_threads: None) -> None:
    torch.set_num_threads(2)
    assert configure_threads(None, "cuda:0") == 2
    assert configure_threads(1, "cuda") == 1


@pytest.mark.parametrize("kind", ["hrm", "hf"])
async def test_in_process_backends_apply_the_threads_setting(
    kind: str, hrm_tiny: Path, restore_threads: None
) -> None:
    for threads, expected in ((None, 1), (2, 2)):
        torch.set_num_threads(3)
        b = create_backend(
            {"name": kind, "kind": kind, "model": str(hrm_tiny), "device": "cpu", "threads": threads}
        )
        await b.start()
        try:
            assert torch.get_num_threads() == expected
        finally:
            await b.close()


def test_server_takes_threads_from_the_command_line() -> None:
    args = vars(build_parser().parse_args(["--model-path", "m", "--threads", "3"]))
    args.pop("dry_run"), args.pop("print_config")
    assert ServerConfig.from_env(**args).threads == 3
    assert ServerConfig.from_env(model_path="m").threads is None
