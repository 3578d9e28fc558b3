"""Pieces that two or more papers share (nothing paper-specific lives here)."""
