"""Helpers the tests share: toy configurations, fake models, the chaos test
and its tamperer, the kill harness, the read-back checks, the bad-input
cases, the generated values and the repository root."""
