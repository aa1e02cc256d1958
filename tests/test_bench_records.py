"""The bench arms' tables recompute from their committed per-problem records: the label-form, written-problem and
GRPO-lever summaries in bench/results agree with the records beside them."""
import gzip, json
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1]/'bench'/'results'


def _records(path: Path) -> list[dict]:
    return [json.loads(l) for l in gzip.open(path, 'rt', encoding='utf-8') if l.strip()]


@pytest.mark.parametrize('folder', ['label_format', 'label_written', 'label_sources', 'label_amount'])
def test_label_arms_recompute(folder):
    "Each arm's correct count, accuracy and execution rate in summary.json equal those of its records, on the same problems."
    summary = json.loads((RESULTS/folder/'summary.json').read_text())
    ids = None
    for arm, row in summary['forms'].items():
        recs = _records(RESULTS/folder/f'records_{arm}.jsonl.gz')
        assert len(recs) == summary['n'] and len({r['id'] for r in recs}) == len(recs)
        ids = ids or {r['id'] for r in recs}
        assert {r['id'] for r in recs} == ids, f'{folder}/{arm}: not the same problems as the first arm'
        k = sum(bool(r['correct']) for r in recs)
        assert (k, round(100 * k / len(recs), 1)) == (row['correct'], row['accuracy'])
        assert round(100 * sum(bool(r.get('executed')) for r in recs) / len(recs), 1) == row['executed']


def test_grpo_levers_recompute():
    "The levers' GRPO student: its accuracy in summary.json equals its records', and the SFT records it pairs with are the study's."
    summary = json.loads((RESULTS/'grpo_levers'/'summary.json').read_text())
    recs = _records(RESULTS/'grpo_levers'/'records_grpo_levers.jsonl.gz')
    grpo = [r for r in recs if r['phase'] == 'grpo']
    assert len(grpo) == summary['accuracy']['grpo_levers']['n'] == 250
    assert sum(bool(r['correct']) for r in grpo) == summary['accuracy']['grpo_levers']['correct']
    sft = [r for r in recs if r['phase'] == 'sft']
    assert sum(bool(r['correct']) for r in sft) == summary['accuracy']['sft']['correct']
    assert {r['id'] for r in sft} == {r['id'] for r in grpo}
