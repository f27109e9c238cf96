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
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    try:
        for _ in range(300):
            if proc.poll() is not None:
                raise RuntimeError(f"moto_server exited: {log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto_server did not start on port {port}")
        req = urllib.request.Request(f"{endpoint}/mtr-test", method="PUT")
        urllib.request.urlopen(req, timeout=10).close()        # create the bucket
        yield "s3://mtr-test", env
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
