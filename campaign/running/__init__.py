"""Running: the parent side of cells -- the loop, each worker process, lock, status, telemetry."""
