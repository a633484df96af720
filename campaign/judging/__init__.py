"""Judging: a run root read once into evidence, and the verdicts derived from it."""
