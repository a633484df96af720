"""Reporting: verdicts and costs rendered for people and scripts."""
