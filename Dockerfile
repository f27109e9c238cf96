# MTR-Suite worker image: the project installed the way the Makefile installs it, running a
# Prefect *process* worker on the pool `mtr-local` that deploy/prefect.yaml deploys to.
#
#   docker build -t mtr-suite-worker .            # from the project root
#   docker run --rm -e PREFECT_API_URL=http://HOST:4200/api mtr-suite-worker
#
# deploy/compose.yaml runs it next to a Prefect server (PostgreSQL) and an optional vLLM server;
# docs/how-to/kubernetes.md uses the same image as the job image of a Kubernetes work pool.
# No secret is baked in: API keys arrive as environment variables at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    MTR_PROJECT_DIR=/app

WORKDIR /app

# 1. torch first, exact pin (same as the Makefile). Off the project machines there is no local
#    CPU wheel and PyPI's torch is the multi-GB CUDA build, so take it from the PyTorch CPU index.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --quiet --index-url "${TORCH_INDEX_URL}" "torch==2.13.0"

# 2. the project with its pinned dependencies (same command as the Makefile). Only the source
#    is copied (no .venv, no run directories); the deployments' pull step cds to MTR_PROJECT_DIR.
COPY pyproject.toml README.md Makefile ./
COPY common/ common/
COPY flows/ flows/
COPY agents/ agents/
COPY clustering/ clustering/
COPY embedding/ embedding/
COPY corpus/ corpus/
COPY storage/ storage/
COPY retrieval/ retrieval/
COPY evaluation/ evaluation/
COPY benchmarks/ benchmarks/
COPY examples/ examples/
COPY deploy/ deploy/
RUN pip install --quiet -e ".[dev]"

# Runs and benchmark versions are written under /app (mount volumes there); run as non-root.
RUN useradd --create-home --uid 1000 mtr \
    && mkdir -p /app/mtr-runs /app/mtr-benchmarks \
    && chown -R mtr /app/mtr-runs /app/mtr-benchmarks
USER mtr

# Default command: a Prefect process worker. CMD, not ENTRYPOINT, so that a Kubernetes Job
# (whose `args` are `prefect flow-run execute`) or a Dask worker can run the same image.
CMD ["prefect", "worker", "start", "--pool", "mtr-local", "--type", "process"]
