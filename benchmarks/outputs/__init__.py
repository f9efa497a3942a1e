"""Output writers: one module per format."""

__all__: list[str] = []
