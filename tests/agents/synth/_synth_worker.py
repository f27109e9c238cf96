"""Subprocess used by the kill/resume test: synthesize against a fake endpoint."""
import sys

from agents.config import EndpointConfig, LLMConfig, RetryConfig
from agents.synth.config import SynthConfig
from agents.synth.run import assemble, load_plan_inputs, plan_conversations, synthesize_batch
from storage.store import RunStore

run_dir, base_url, n_conv, n_turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = RunStore(run_dir)
clusters, cvecs, corpus = load_plan_inputs(store)
cfg = SynthConfig(conversations=n_conv, turns=n_turns, concurrency=2)
plans = plan_conversations(clusters, cvecs, cfg)
llm = LLMConfig(endpoints={"fake": EndpointConfig(base_url=base_url, model="fake-model", timeout_s=60)},
                retry=RetryConfig(backoff_base_s=0.002, backoff_max_s=0.02))
out = synthesize_batch(store, plans, corpus, llm, cfg, lambda q, k: [])
assemble(store, plans, out["states"], cfg)
print("done")
