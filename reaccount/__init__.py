"""Re-derivation of verdicts from sealed artifacts, without running anything."""
