"""Exporting trained models to other inference engines."""
