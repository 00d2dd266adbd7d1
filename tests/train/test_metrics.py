"""``metrics.jsonl``: records kept up to a step, whatever a crash left."""

from rosetta.train.metrics import MetricsLog


def test_forgetting_after_a_step_drops_later_records_and_a_cut_off_line(tmp_path):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for step in (10, 20, 30):
        log.append("train", step, loss=1.0)
    with open(log.path, "a") as handle:  # a crash in the middle of a write
        handle.write('{"kind": "train", "st')
    log.forget_after(20)
    lines = log.path.read_text().splitlines()
    assert [line.count('"step": ') for line in lines] == [1, 1]
    assert '"step": 20' in lines[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl"]
