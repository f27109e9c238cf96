"""Worker process for the kill/resume tests: runs the qa step over N items in one run dir.

usage: python tests/agents/_worker.py BASE_URL RUN_DIR N CONCURRENCY
"""
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pydantic import BaseModel  # noqa: E402

from agents.config import EndpointConfig, LLMConfig, RetryConfig  # noqa: E402
from agents.session import LLMSession  # noqa: E402
from agents.steps import LLMStep  # noqa: E402


class Answer(BaseModel):
    answer: str
    confidence: int


def qa_step() -> LLMStep:
    return LLMStep(name="qa", prompt_version="qa-v1", output_model=Answer,
                   build_messages=lambda x: [{"role": "user", "content": f"Question: {x}"}])


async def main(base_url: str, run_dir: str, n: int, conc: int) -> None:
    cfg = LLMConfig(endpoints={"fake": EndpointConfig(base_url=base_url, model="fake-model", timeout_s=60,
                                                      max_concurrency=conc)},
                    max_concurrency=conc, retry=RetryConfig(backoff_base_s=0.001))
    async with LLMSession(cfg, store=run_dir) as llm:
        batch = await llm.map(qa_step(), [f"item-{i:03d}" for i in range(n)])
    print("done", batch.n_ok, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
