"Intervals and paired tests (dagger.stats): known values, edge cases (n = 0, all correct, no discordant pairs)."
import math
import numpy as np
import pytest
from dagger import stats as S


def test_wilson_known_values():
    lo, hi = S.wilson(2, 8)
    assert math.isclose(lo, 0.0715, abs_tol=5e-4) and math.isclose(hi, 0.5907, abs_tol=5e-4)      # [7.1%, 59.1%]
    lo, hi = S.wilson(5, 10)
    assert math.isclose(lo, 0.2366, abs_tol=1e-4) and math.isclose(hi, 0.7634, abs_tol=1e-4)


def test_wilson_edges():
    assert all(math.isnan(v) for v in S.wilson(0, 0))
    lo, hi = S.wilson(8, 8)                                     # all correct: upper bound 1, lower n/(n+z²)
    assert hi == 1.0 and math.isclose(lo, 8 / (8 + 1.96 ** 2), rel_tol=1e-9)
    lo, hi = S.wilson(0, 8)
    assert lo == 0.0 and math.isclose(hi, 1.96 ** 2 / (8 + 1.96 ** 2), rel_tol=1e-9)
    for k in range(0, 31):                                      # always inside [0, 1] and around k/n
        lo, hi = S.wilson(k, 30)
        assert 0 <= lo <= k / 30 <= hi <= 1


def test_bootstrap_mean_ci():
    x = [50, 60, 55, 320, 58, 52, 61, 57]
    lo, hi = S.bootstrap_mean_ci(x)
    assert lo < np.mean(x) < hi and (lo, hi) == S.bootstrap_mean_ci(x) != S.bootstrap_mean_ci(x, seed=1)
    assert S.bootstrap_mean_ci([7, 7, 7]) == (7.0, 7.0) and S.bootstrap_mean_ci([5]) == (5.0, 5.0)
    assert all(math.isnan(v) for v in S.bootstrap_mean_ci([])) and all(math.isnan(v) for v in S.bootstrap_mean_ci([np.nan]))


def test_mcnemar_known_values():
    t = S.mcnemar([False] * 6, [True] * 6)
    assert (t.b, t.c) == (0, 6) and math.isclose(t.p, 0.03125) and math.isclose(t.p_mid, 0.015625)
    b, c, p = S.mcnemar([1, 1, 1, 0, 0, 1, 0], [0, 0, 1, 1, 0, 1, 0])          # b=2, c=1: 2·P(X<=1 | 3) = 1
    assert (b, c, p) == (2, 1, 1.0)
    t = S.mcnemar([True] * 10 + [False] * 2, [False] * 10 + [True] * 2)        # b=10, c=2: 2·P(X<=2 | 12)
    assert math.isclose(t.p, 2 * (1 + 12 + 66) / 4096)


def test_mcnemar_edges():
    assert S.mcnemar([True, False, True], [True, False, True]) == (0, 0, 1.0)  # no discordant pairs
    assert S.mcnemar([], []).p == 1.0 and S.mcnemar([], []).p_mid == 1.0
    assert S.mcnemar([True] * 5, [True] * 5).p == 1.0                         # both all correct
    with pytest.raises(ValueError): S.mcnemar([1, 0], [1])


def test_paired_bootstrap_diff():
    r = S.paired_bootstrap_diff([1] * 30 + [0] * 10, [1] * 12 + [0] * 28)
    assert r['n'] == 40 and math.isclose(r['diff'], 0.45) and 0.2 < r['lo'] < 0.45 < r['hi'] and r['p'] < 0.01
    same = S.paired_bootstrap_diff([1, 0, 1], [1, 0, 1])
    assert (same['diff'], same['lo'], same['hi'], same['p']) == (0.0, 0.0, 0.0, 1.0)
    allc = S.paired_bootstrap_diff([1] * 6, [1] * 6)                          # all correct on both sides
    assert allc['diff'] == 0 and allc['p'] == 1.0
    assert math.isnan(S.paired_bootstrap_diff([], [])['diff'])
    with pytest.raises(ValueError): S.paired_bootstrap_diff([1, 2], [1])
    rng = np.random.default_rng(0)                                            # no true difference: p is not small
    a = rng.random(200) < 0.5
    assert S.paired_bootstrap_diff(a, np.roll(a, 1))['p'] > 0.05


def test_delta_and_delta_diff():
    ids = [f'q{i}' for i in range(40)]
    xo = [1] * 20 + [0] * 20
    yo, ya = [1] * 32 + [0] * 8, [1] * 16 + [0] * 24
    r = S.delta_diff(xo, yo, xo, ya, orig_ids=ids, aug_original_ids=ids)
    assert math.isclose(r['delta'], -0.4) and r['delta_x'] == 0 and math.isclose(r['delta_y'], 0.4) and r['hi'] < 0 and r['p'] < 0.01
    assert math.isclose(S.delta_diff(xo, yo, xo, ya)['delta'], -0.4)         # ids optional: same estimate
    d = S.delta_ci(yo, ya, ids, ids)
    assert math.isclose(d['delta'], 0.4) and d['lo'] > 0 and (d['n_original'], d['n_augmented']) == (40, 40)
    assert S.delta_ci(xo, xo, ids, ids)['p'] == 1.0
    aug_ids = [f'q{i // 2}' for i in range(40)]                               # two +D versions per original, unknown originals kept
    assert math.isclose(S.delta_ci(yo, ya, ids, aug_ids[:-1] + [None])['delta'], 0.4)
    assert math.isnan(S.delta_ci([], [1])['delta'])
    with pytest.raises(ValueError): S.delta_diff([1], [1, 0], [1], [1])


def test_smoke_label():
    assert S.SMOKE_N == 30 and S.is_smoke(29) and not S.is_smoke(30) and S.is_smoke(0) and S.is_smoke(float('nan'))
    assert S.label(8) == 'n=8, smoke' and S.label(250) == 'n=250'


def test_stats_imports_nothing_of_dagger():
    src = open(S.__file__).read()
    assert 'from dagger' not in src and 'from .' not in src and 'import dagger' not in src
