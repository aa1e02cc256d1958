"Every DAGGER arm is named once, in dagger.arms; the rest of the package reads the table."
import re
from pathlib import Path
from dagger.arms import ARMS, record_arm, family_arm
from dagger.config import load_profile, EVAL_PHASES
from dagger import layout, roster

ROOT = Path(__file__).resolve().parents[1]


def test_arm_names_are_spelled_only_in_the_arms_table():
    "`grep -r grpo_base dagger/` finds the arms table alone (the package reads names from it)."
    for a in ARMS:
        if a.name in ('untrained', 'sft', 'grpo'): continue   # also plain words (stages, methods)
        spelled = sorted(f.name for f in (ROOT/'dagger').glob('*.py')
                         if f.name not in ('arms.py', '_modidx.py') and re.search(rf'\b\w*{a.name}\w*\b', f.read_text()))
        assert not spelled, f'{a.name} spelled outside dagger/arms.py in {spelled}'


def test_every_arm_reaches_layout_roster_and_profiles():
    for a in ARMS:
        if a.trained: assert a.folder in layout.RESULT_FOLDERS and a.folder in layout.WRITERS
        assert a.family in roster.FAMILIES and family_arm(a.family, a.annotations) is a
    assert set(EVAL_PHASES) == {a.name for a in ARMS if record_arm(a.phase, a.init) is a}
    study = load_profile('cpu-study')
    assert set(study.eval.phases) <= set(EVAL_PHASES)


def test_old_names_still_read():
    assert record_arm('grpo_base').name == 'grpo_base' and record_arm('grpo').name == 'grpo'
    assert family_arm('base_grpo').name == 'grpo_base'
    s = roster.parse_system('x', 'model=m; family=base_grpo; tables=table6')
    assert s.arm.name == 'grpo_base' and [a.name for a in s.trains] == ['grpo_base']
