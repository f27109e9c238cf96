"""Container files, checked without a container engine: the image installs what the Makefile
installs (same pins, same order), compose parses with the expected services and holds no
literal secret, the deployments run this project's flows from the image's working directory."""
import re
import shlex
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY|_KEY$", re.I)
KEY_SHAPES = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}|\bhf_[A-Za-z0-9]{20,}|\bBearer\s+\S{8,}")


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined and comments dropped."""
    out, cur = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not cur:
            continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    return [x.strip() for x in out if x.strip()]


def _pip_targets(command: str) -> list[list[str]]:
    """The requirement arguments of each `pip install` in a shell command (options dropped)."""
    res = []
    for part in re.split(r"&&|;", command):
        words = shlex.split(part.replace("$(PIP)", "pip"))
        if len(words) >= 2 and words[0].endswith("pip") and words[1] == "install":
            args, skip = [], False
            for w in words[2:]:
                if skip:
                    skip = False
                elif w in ("--index-url", "--extra-index-url", "-i", "-c", "--constraint"):
                    skip = True
                elif w == "-e" or not w.startswith("-"):
                    args.append(w)
            res.append(args)
    return res


def _makefile_installs() -> list[list[str]]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("$(STAMP):"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return [t for line in recipe for t in _pip_targets(line)]


def _docker_installs() -> list[list[str]]:
    runs = [line[4:] for line in _logical_lines((ROOT / "Dockerfile").read_text()) if line.startswith("RUN ")]
    return [t for cmd in runs for t in _pip_targets(cmd)]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pin(name: str) -> str:
    deps = _pyproject()["project"]["dependencies"]
    return next(d.split("==", 1)[1] for d in deps if d.split("==")[0].strip().lower() == name)


def test_dockerfile_installs_like_the_makefile():
    make, docker = _makefile_installs(), _docker_installs()
    assert make == [["torch==2.13.0"], ["-e", ".[dev]"]]   # torch pin first, then the project
    assert docker == make
    assert f"torch=={_pin('torch')}" == docker[0][0]         # the image's torch is pyproject's pin
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\s*$", text, re.M)
    assert "https://download.pytorch.org/whl/cpu" in text    # CPU wheel off the project machines


def test_dockerfile_copies_every_package_and_starts_a_process_worker():
    lines = _logical_lines((ROOT / "Dockerfile").read_text())
    copied = {w.rstrip("/") for line in lines if line.startswith("COPY ") for w in line.split()[1:-1]}
    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.rstrip("*") for p in include}
    assert packages <= copied, packages - copied
    assert {"pyproject.toml", "examples"} <= copied
    assert not any(line.startswith("COPY . ") for line in lines)  # never the .venv or run dirs
    cmd = next(line for line in lines if line.startswith("CMD "))
    assert cmd.startswith('CMD ["prefect", "worker", "start", "--pool", "mtr-local"')
    assert not any(line.startswith("ENTRYPOINT") for line in lines)  # Kubernetes Jobs replace the command
    prefect_yaml = ROOT / "deploy" / "prefect.yaml"
    if prefect_yaml.exists():  # the pool the deployments target
        pools = {d["work_pool"]["name"] for d in yaml.safe_load(prefect_yaml.read_text())["deployments"]}
        assert pools == {"mtr-local"}


def test_every_checked_package_is_installed_and_copied():
    """The packages of the import contracts (.importlinter) are the project's: pyproject installs each and the
    image copies each (a new floor such as ``embedding/`` needs both)."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".importlinter")
    roots = set(cfg["importlinter"]["root_packages"].split())
    include = {p.rstrip("*") for p in _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]}
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    copied = {w.rstrip("/") for line in lines if line.startswith("COPY ") for w in line.split()[1:-1]}
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks"}
    assert roots == on_disk == include, (roots ^ on_disk, on_disk ^ include)
    assert roots <= copied, roots - copied


def test_compose_services_and_no_literal_secrets():
    text = (ROOT / "deploy" / "compose.yaml").read_text()
    data = yaml.safe_load(text)
    services = data["services"]
    assert set(services) == {"postgres", "prefect-server", "worker", "vllm"}
    assert services["prefect-server"]["image"].startswith(f"prefecthq/prefect:{_pin('prefect')}-python3.11")
    db_url = services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert db_url.startswith("postgresql+asyncpg://") and "${POSTGRES_PASSWORD" in db_url
    worker = services["worker"]
    assert (ROOT / "deploy" / worker["build"]["context"] / worker["build"]["dockerfile"]).resolve() == \
        ROOT / "Dockerfile"
    assert worker["environment"]["PREFECT_API_URL"] == "http://prefect-server:4200/api"
    assert worker["depends_on"]["prefect-server"]["condition"] == "service_healthy"
    assert services["vllm"]["profiles"] == ["llm"] and "vllm-openai" in services["vllm"]["image"]
    assert "worker" not in services["vllm"].get("depends_on", {})
    for name, svc in services.items():
        for key, value in (svc.get("environment") or {}).items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{[A-Z0-9_]+(:?[-?][^}]*)?\}", str(value)), f"{name}.{key} is a literal"
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert not KEY_SHAPES.search(text)
    assert not re.search(r"(?i)password\s*[:=]\s*['\"]?(?!\$\{)\w", text.replace("POSTGRES_PASSWORD:", ""))


def test_deployments_run_the_project_flows_from_the_image_workdir():
    """What `mtr serve`, compose and the Kubernetes work pool deploy: the pull step changes into
    $MTR_PROJECT_DIR, which the image sets to its WORKDIR; every entrypoint is a Prefect flow of
    this project that accepts the deployment's parameters as given (the scheduler passes them
    unchanged), names no secret, and the paths it names exist in the project."""
    import importlib
    import inspect

    from prefect.flows import Flow
    data = yaml.safe_load((ROOT / "deploy" / "prefect.yaml").read_text())
    assert data["pull"] == [{"prefect.deployments.steps.set_working_directory":
                             {"directory": "{{ $MTR_PROJECT_DIR }}"}}]
    lines = _logical_lines((ROOT / "Dockerfile").read_text())
    env = dict(w.split("=", 1) for line in lines if line.startswith("ENV ") for w in shlex.split(line[4:]))
    workdir = next(line.split()[1] for line in lines if line.startswith("WORKDIR "))
    assert env["MTR_PROJECT_DIR"] == workdir == "/app"
    assert len(data["deployments"]) == 3
    for d in data["deployments"]:
        path, name = d["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)
        assert isinstance(flow, Flow), d["entrypoint"]
        params = d.get("parameters") or {}
        inspect.signature(flow.fn).bind(**params)            # every required parameter given, no unknown one
        validated = flow.validate_parameters(params)           # the types fit (defaults are added)
        assert {k: validated[k] for k in params} == params
        assert not any(SECRET_NAME.search(k) for k in params), d["entrypoint"]
        for key in ("corpus", "config_file"):
            if params.get(key):
                assert (ROOT / params[key]).exists(), params[key]
