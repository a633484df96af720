"""campaign: sealed, reviewable A/B campaigns of Triton compiler switches."""

__version__ = "0.1.0"
