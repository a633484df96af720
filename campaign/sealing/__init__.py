"""Sealing: digests of a finished root, its receipt, verification and attestation."""
