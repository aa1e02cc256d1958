"""lm-evaluation-harness hooks of the DistractMath-BN task: the splits from dagger's files, dagger's 5-shot Bangla CoT
prompt, dagger's answer extraction (Bangla digits, "উত্তর হল N") and dagger's notion of a correct answer."""
import datasets

from dagger.config import load_profile
from dagger.eval import load_splits
from dagger.answers import extract_answer
from dagger.graph import is_correct
from dagger.prompts import cot_messages


def load(split: str, n: int = 0, profile: str = 'cpu', **kwargs) -> datasets.DatasetDict:
    "A split as the harness's test set: a seeded sample of `n` problems (all when 0), the same ones `dagger-eval --n` draws."
    cfg = load_profile(profile)
    problems = load_splits([split], sample_n=n, seed=cfg.seed, cfg=cfg, verbose=False)[split][0]
    rows = [dict(id=p.id, question=p.question, answer=float(p.answer), lang=p.lang, aug_type=p.aug_type or '') for p in problems]
    return datasets.DatasetDict(test=datasets.Dataset.from_list(rows))


def doc_to_text(doc: dict) -> str:
    return cot_messages(doc['question'], doc['lang'])[0]['content']


def extract(resps, docs):
    "The number dagger reads from each response ('' when there is none)."
    return [[_number(extract_answer(r, d['lang'])) for r in rs] for rs, d in zip(resps, docs)]


def _number(x) -> str:
    return '' if x is None else repr(float(x))


def process_results(doc: dict, results: list) -> dict:
    pred = results[0]
    return dict(acc=float(pred != '' and bool(is_correct(float(pred), doc['answer']))))
