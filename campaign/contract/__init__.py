"""The contract: what a manifest and a run root are, shared by every stage and by the worker."""
