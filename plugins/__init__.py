"""pytest plugins a cell runs with, one concern per module, planned from backend capabilities."""
