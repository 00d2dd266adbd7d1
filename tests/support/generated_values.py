"""What the generated-value tests of the command line, the configuration and
the server share (``tests/boundaries/test_command_line.py``,
``test_configuration.py``, ``test_server_requests.py``): their settings,
and any JSON or YAML value a careless or hostile user puts where a number
belongs."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# What a careless or hostile user puts where a number belongs, in JSON or YAML.
ANY_NUMBER = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=5),
)
