import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")
# Prefect gives its temporary API server 20 s to start: a loaded 2-core machine needs more.
# Set here, it reaches in-process flows and every subprocess a test starts.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")

import pytest

# No test may leave a child process behind: the session fails listing (and killing) leftovers.
from tests.process_guard import pytest_sessionfinish, pytest_sessionstart  # noqa: E402,F401


@pytest.fixture
def fake_llm():
    """A started fake OpenAI-compatible server on 127.0.0.1
    (:class:`agents.testing.fake_server.FakeLLMServer`), stopped after the test."""
    from agents.testing.fake_server import FakeLLMServer
    srv = FakeLLMServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def shared_emb_cache(tmp_path_factory):
    """One embedding cache for the session: the example corpus is embedded once, not per test."""
    return tmp_path_factory.mktemp("emb-cache")


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API for every flow test of the session (~10 s start)."""
    from prefect.testing.utilities import prefect_test_harness
    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture(scope="session")
def s3_store(tmp_path_factory):
    """A real S3 server on localhost (moto's server mode, a child process on a free port) with
    one bucket, stopped after the session. Yields ``(bucket_url, env)``: ``s3://mtr-test`` and
    the variables that point the AWS clients at it (``AWS_ENDPOINT_URL``, fake credentials,
    region); the fixture does not set them, a test sets them with ``monkeypatch``."""
    from tests.moto_server import start_moto, stop
    proc, endpoint = start_moto(bucket="mtr-test", log=tmp_path_factory.mktemp("moto") / "server.log")
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    try:
        yield "s3://mtr-test", env
    finally:
        stop(proc)
