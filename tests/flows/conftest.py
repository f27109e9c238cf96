import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API for the flow tests of this session (~10 s start)."""
    from prefect.testing.utilities import prefect_test_harness
    with prefect_test_harness(server_startup_timeout=90):
        yield
