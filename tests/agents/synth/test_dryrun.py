from agents.config import EndpointConfig, LLMConfig, ModelPrice
from agents.dryrun import dry_run
from agents.synth.config import SynthConfig
from agents.synth.run import ConvPlan
from agents.synth.workload import planned_workload

CORPUS = {f"p{i}": {"title": "T", "text": f"Passage number {i}. " * 40} for i in range(6)}


def test_planned_workload_counts_every_first_attempt_call():
    plans = [ConvPlan(conv_id=f"c{j}", seed=0, n_turns=4, cluster_id=j, topic_id=0, pool=tuple(CORPUS),
                      switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                      unanswerable_turns=()) for j in range(3)]
    cfg = SynthConfig(turns=4, uniqueness_k=5)
    work = {step.name: len(inputs) for step, inputs in planned_workload(plans, CORPUS, cfg)}
    assert work == {"questioner": 12, "answerer": 12, "verifier": 12, "uniqueness": 60, "humanizer": 9}
    llm = LLMConfig(endpoints={"e": EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m")},
                    prices={"m": ModelPrice(input_per_1m=1.0, output_per_1m=2.0)})
    report = dry_run(llm, planned_workload(plans, CORPUS, cfg))
    text = report.format()
    assert "105 calls" in text and "questioner" in text
    # later turns carry the growing history, so they cost more prompt tokens than turn 1
    (q, qin), *_ = planned_workload(plans[:1], CORPUS, cfg)
    assert len(str(q.messages(qin[-1]))) > len(str(q.messages(qin[0])))
