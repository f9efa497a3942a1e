"""Rich rendering of `abtest backends check` results."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from backends.check import CheckResult

__all__ = ["render_checks"]


def render_checks(console: Console, results: list[CheckResult]) -> None:
    table = Table(title="backends check", show_lines=True)
    for col in ("backend", "kind", "status", "model", "capabilities", "1-token generation", "loglikelihood"):
        table.add_column(col)
    for r in results:
        caps = "-"
        if r.info is not None:
            c = r.info.capabilities
            flags = [n for n, on in (("stream", c.streaming), ("batch", c.batch_prompts),
                                     ("token_logprobs", c.token_logprobs), ("ll", c.loglikelihood)) if on]
            caps = f"{', '.join(flags) or 'none'}; ctx {c.max_context or '?'}"
        status = "[green]up[/green]" if r.up else f"[red]down[/red]\n{r.error or ''}"
        gen = "-" if r.generation is None else f"{r.generation!r} in {(r.latency_s or 0) * 1000:.0f} ms"
        model = r.info.model if r.info else "-"
        table.add_row(r.name, r.kind, status, model, caps, gen, r.loglikelihood)
    console.print(table)
    for r in results:
        if r.normalizations:
            console.print(f"[bold]{r.name}[/bold] normalizations:")
            for note in r.normalizations:
                console.print(f"  - {note}")
