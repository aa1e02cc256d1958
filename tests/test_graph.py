"""Property tests of dagger.graph: random valid graphs against an independent exact evaluator, random corruptions,
hostile text for the reward, and the limits (long chains, huge powers)."""
import json, math, random
from pathlib import Path
from decimal import Decimal, localcontext
from fractions import Fraction
import pytest
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from dagger.graph import (OPS, ExecutionError, Graph, GraphError, ParseError, declared_distractors, execute,
                          format_graph, from_obj, is_correct, op_count, parse, reward, reward_parts, unreachable)
from dagger.graph import _fast_graph, _fenced
from dagger.graph_base import MAX_CHARS, decode
from dagger.repair import find_payload, loads

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
FMAX = 1.7976931348623157e308
TOL = Fraction(1, 10**9)
BIG = Fraction(10**200)

# ---------------------------------------------------------------------------------------------------------------
# An independent evaluator: exact rational arithmetic on the expression tree, plus a flag saying whether the
# executor's float arithmetic is exact there (IEEE operations are correctly rounded, so a float result is exact
# whenever its inputs are and the exact result is representable). Where a discontinuity (floor, a zero divisor,
# an integrality test) meets an inexact value close to it, float and exact answers may legitimately differ:
# those examples are rejected with assume().


class Expected(Exception):
    def __init__(self, kind): self.kind = kind


def representable(f: Fraction) -> bool:
    try: return Fraction(float(f)) == f
    except OverflowError: return False


def near(f: Fraction, target: Fraction, scale) -> bool:
    return abs(f - target) <= TOL * max(1, scale)


def exact_eval(obj) -> tuple[Fraction, bool, Fraction]:
    "Value of final_result as (Fraction, float-exact?, largest magnitude seen); raises Expected(kind)."
    nodes = {n['id']: n for n in obj['nodes']}
    memo, scale = {}, [Fraction(1)]

    def ev(i, path=()):
        if i in memo: return memo[i]
        if i in path: raise Expected('cycle')
        if i not in nodes: raise Expected('missing_node')
        n = nodes[i]; op = n.get('op', ''); args = n.get('args') or []
        if op not in OPS: raise Expected('unknown_op')
        lo, hi = OPS[op]
        if len(args) < lo or (hi is not None and len(args) > hi): raise Expected('arity')
        if op == 'const':
            v = n.get('val')
            if v is None: raise Expected('bad_const')
            r = (Fraction(v), True)
        else:
            xs = [ev(a, path + (i,)) for a in args]
            r = apply(op, [x[0] for x in xs], all(x[1] for x in xs), scale[0])
        assume(abs(r[0]) < BIG)  # overflow is tested separately
        scale[0] = max(scale[0], abs(r[0]))
        memo[i] = r
        return r

    v, ex = ev('final_result')
    return v, ex, scale[0]


def guard(exact, f, target, scale):
    "Reject the example when an inexact value sits at a discontinuity."
    if not exact: assume(not near(f, target, scale))


def apply(op, xs, exact, scale):
    if op == 'identity': return xs[0], exact
    if op in ('add', 'sum'):
        v = sum(xs, Fraction(0)); return v, exact and representable(v)
    if op == 'sub':
        v = xs[0] - xs[1]; return v, exact and representable(v)
    if op == 'mul':
        v, ok = Fraction(1), exact
        for x in xs: v *= x; ok = ok and representable(v)
        return v, ok
    if op in ('div', 'mod'):
        guard(exact, xs[1], Fraction(0), scale)
        if xs[1] == 0: raise Expected('division_by_zero' if op == 'div' else 'modulo_by_zero')
        v = xs[0] / xs[1] if op == 'div' else xs[0] - xs[1] * math.floor(xs[0] / xs[1])
        if op == 'mod' and not exact: guard(exact, xs[0] / xs[1], Fraction(round(xs[0] / xs[1])), scale)
        return v, exact and representable(v)
    if op == 'mean':
        s = sum(xs, Fraction(0)); v = s / len(xs); return v, exact and representable(s) and representable(v)
    if op == 'min': return min(xs), exact
    if op == 'max': return max(xs), exact
    if op == 'abs':
        v = abs(xs[0]) if len(xs) == 1 else abs(xs[0] - xs[1]); return v, exact and representable(v)
    if op in ('floor', 'ceil', 'round'):
        x = xs[0]
        if op == 'round':
            guard(exact, x - math.floor(x), Fraction(1, 2), scale)
            v = Fraction(math.floor(abs(x) + Fraction(1, 2))) * (1 if x >= 0 else -1)
        else:
            guard(exact, x, Fraction(round(x)), scale)
            v = Fraction(math.floor(x) if op == 'floor' else math.ceil(x))
        return v, exact
    if op == 'sqrt':
        x = xs[0]
        guard(exact, x, Fraction(0), scale)
        if x < 0: raise Expected('sqrt_negative')
        n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
        if n * n == x.numerator and d * d == x.denominator:
            v = Fraction(n, d); return v, exact and representable(v)
        with localcontext() as c:
            c.prec = 50; v = Fraction(Decimal(x.numerator).sqrt() / Decimal(x.denominator).sqrt())
        return v, False
    if op == 'pow':
        b, e = xs
        assume(exact and e.denominator == 1 and abs(e) <= 3)  # the generator only makes small integral exponents
        if b == 0 and e < 0: raise Expected('division_by_zero')
        v = b ** int(e); return v, representable(v)
    if op in ('gcd', 'lcm'):
        assume(exact)
        if any(x.denominator != 1 for x in xs): raise Expected('non_integral')
        ints = [int(x) for x in xs]
        v = math.gcd(*ints) if op == 'gcd' else math.lcm(*ints)
        return Fraction(v), representable(Fraction(v))
    raise AssertionError(op)


# ---------------------------------------------------------------------------------------------------------------
# Random graphs

VALUES = st.one_of(st.integers(-60, 60), st.integers(-240, 240).map(lambda k: k / 8), st.sampled_from([0.1, 2.5, 45.6, 1e6]))
OP_NAMES = [o for o in OPS if o != 'const']


@st.composite
def graphs(draw, shuffle=True):
    "A random graph object (usually valid; the exact evaluator says what it should give)."
    nodes, live = [], []
    for i in range(draw(st.integers(1, 6))):
        nodes.append({'id': f'c{i}', 'op': 'const', 'val': draw(VALUES), 'distractor': False, 'label': f'quantity {i}'})
        live.append(f'c{i}')
    for j in range(draw(st.integers(1, 10))):
        op = draw(st.sampled_from(OP_NAMES))
        lo, hi = OPS[op]
        k = draw(st.integers(lo, min(hi or 4, 4)))
        args = [draw(st.sampled_from(live)) for _ in range(k)]
        if op == 'pow':
            e = f'e{j}'
            nodes.append({'id': e, 'op': 'const', 'val': draw(st.integers(-2, 3)), 'distractor': False, 'label': 'exponent'})
            args[1] = e
        nodes.append({'id': f'x{j}', 'op': op, 'args': args, 'distractor': False, 'label': op})
        live.append(f'x{j}')
    nodes.append({'id': 'final_result', 'op': 'identity', 'args': [live[-1]], 'distractor': False, 'label': 'answer'})
    for d in range(draw(st.integers(0, 3))):  # distractors, some of which would fail if they were evaluated
        bad = draw(st.booleans())
        nodes.append({'id': f'd{d}', 'op': 'div' if bad else 'const', 'args': ['c0', 'zero'] if bad else [],
                      'val': None if bad else draw(VALUES), 'distractor': True, 'label': 'distractor'})
    if any(n['op'] == 'div' and n['distractor'] for n in nodes):
        nodes.append({'id': 'zero', 'op': 'const', 'val': 0, 'distractor': True, 'label': 'zero'})
    for n in nodes:
        if n.get('val') is None: n.pop('val', None)
    if shuffle and draw(st.booleans()): draw(st.randoms(use_true_random=False)).shuffle(nodes)
    return {'nodes': nodes}


def outcome(obj):
    try: return ('value',) + exact_eval(obj)
    except Expected as e: return ('error', e.kind)


def check_value(got: float, v: Fraction, exact: bool, scale: Fraction):
    if exact: assert got == float(v), (got, v)
    else: assert abs(Fraction(got) - v) <= Fraction(1, 10**9) * max(1, scale), (got, float(v))


@SETTINGS
@given(graphs())
def test_random_graphs_match_the_exact_evaluator(obj):
    want = outcome(obj)
    event(want[0] if want[0] == 'value' else want[1])
    g = from_obj(obj, strict=True)
    if want[0] == 'value':
        check_value(execute(g), *want[1:])
    else:
        with pytest.raises(ExecutionError) as e: execute(g)
        assert e.value.kind == want[1]


@SETTINGS
@given(graphs())
def test_text_round_trip_strict_and_lenient(obj):
    want = outcome(obj)
    assume(want[0] == 'value')
    text = 'Here is the graph.\n' + format_graph(obj) + '\nDone.'
    for strict in (True, False):
        g = parse(text, strict=strict)
        assert g.repairs == []
        check_value(execute(g), *want[1:])
    assert reward(text, float(want[1])) == (2.0 if len(obj['nodes']) >= 3 else 0.0)


ALIASES = {'mul': 'multiply', 'sub': 'subtract', 'div': 'divide', 'add': 'plus', 'mean': 'average', 'pow': 'power'}
BN = str.maketrans('0123456789', '০১২৩৪৫৬৭৮৯')


@SETTINGS
@given(graphs(shuffle=False), st.sets(st.sampled_from(['alias', 'case', 'bangla', 'units', 'trailing', 'quotes', 'no_final']), min_size=1))
def test_repairable_outputs_give_the_same_value_and_name_their_repairs(obj, kinds):
    want = outcome(obj)
    assume(want[0] == 'value')
    obj = json.loads(json.dumps(obj))
    nodes, expect = obj['nodes'], set()
    if 'no_final' in kinds:
        final = next(n for n in nodes if n['id'] == 'final_result')
        nodes.remove(final)
        answer = final['args'][0]
        assume(not any(answer in n.get('args', []) for n in nodes))  # the answer node must be a sink ...
        assume(all(n['distractor'] for n in nodes[[n['id'] for n in nodes].index(answer) + 1:]))  # ... and the last one
        expect.add('missing_final_result')
    for n in nodes:
        if 'alias' in kinds and n['op'] in ALIASES: n['op'] = ALIASES[n['op']]; expect.add('op_alias')
        elif 'case' in kinds and n['op'] != 'const': n['op'] = n['op'].upper(); expect.add('op_case')
        if n['op'] == 'const' and not n['distractor'] and float(n['val']).is_integer() and n['val'] >= 0:
            if 'bangla' in kinds: n['val'] = str(int(n['val'])).translate(BN); expect |= {'bangla_digits', 'val_string'}
            elif 'units' in kinds: n['val'] = f"{int(n['val'])} টাকা"; expect |= {'unit_suffix', 'val_string'}
    text = format_graph(obj)
    if 'trailing' in kinds: text = text.replace('}\n]}', '},\n]}'); expect.add('trailing_comma')
    if 'quotes' in kinds: text = text.replace('"id"', "'id'"); expect.add('single_quotes')
    g = parse(text)
    assert set(g.repairs) == expect
    check_value(execute(g), *want[1:])


# ---------------------------------------------------------------------------------------------------------------
# Corruptions: each must raise GraphError with the right kind, and nothing else.

def needed(obj):
    g = from_obj(obj)
    dead = set(unreachable(g))
    return [n for n in obj['nodes'] if n['id'] not in dead]


@SETTINGS
@given(graphs(), st.sampled_from(['missing', 'cycle', 'unknown', 'arity', 'bad_const', 'duplicate', 'no_final']), st.randoms(use_true_random=False))
def test_corruptions_raise_the_right_graph_error(obj, kind, rnd):
    assume(outcome(obj)[0] == 'value')
    obj = json.loads(json.dumps(obj))
    nodes, need = obj['nodes'], needed(obj)
    ops = [n for n in need if n['op'] != 'const']
    consts = [n for n in need if n['op'] == 'const']
    if kind == 'missing':
        victim = rnd.choice([n for n in need if n['id'] != 'final_result'])
        nodes.remove(victim); exc, want = ExecutionError, 'missing_node'
    elif kind == 'cycle':
        rnd.choice(ops)['args'][0] = 'final_result'; exc, want = ExecutionError, 'cycle'
    elif kind == 'unknown':
        rnd.choice(ops)['op'] = 'ratio_split'; exc, want = ExecutionError, 'unknown_op'
    elif kind == 'arity':
        rnd.choice(ops)['args'] = []; exc, want = ExecutionError, 'arity'
    elif kind == 'bad_const':
        assume(consts); rnd.choice(consts).pop('val'); exc, want = ExecutionError, 'bad_const'
    elif kind == 'duplicate':
        nodes.append(dict(rnd.choice(nodes))); exc, want = ParseError, 'duplicate_id'
    else:
        nodes.remove(next(n for n in nodes if n['id'] == 'final_result')); exc, want = ParseError, 'no_final_result'
    text = format_graph(obj)
    with pytest.raises(exc) as e: execute(parse(text, strict=True))
    assert e.value.kind == want
    if kind != 'no_final':  # lenient mode repairs a missing final_result
        with pytest.raises(exc) as e: execute(parse(text))
        assert e.value.kind == want


def full_path(text, strict):
    "parse without its fast path: the decoder and schema check (strict), or the finding, repairs and schema check."
    if strict: return from_obj(decode(_fenced(text)), strict=True)
    repairs = []
    return from_obj(loads(find_payload(text, repairs), repairs), repairs=repairs)


def fast_path_agrees(text):
    """What the fast path accepts, the full path reads (strict and lenient) into the same graph, without a repair;
    what it refuses outright (an id used twice), the full path refuses with the same error."""
    try: g = _fast_graph(text) if len(text) <= MAX_CHARS else None
    except GraphError as e:
        for strict in (False, True):
            with pytest.raises(GraphError) as f: full_path(text, strict)
            assert (f.value.kind, f.value.node, str(f.value)) == (e.kind, e.node, str(e)), (strict, text[:200])
        return True
    if g is None: return False
    v = evaluated(g)   # before the nodes are read: the value the fast path found, if it found one
    for strict in (False, True):
        h = full_path(text, strict)
        assert (repr(h.nodes), h.repairs, evaluated(h)) == (repr(g.nodes), [], v), (strict, text[:200])
    return True


def lenient_fast_path_agrees(text):
    """What the lenient fast path reads, repairs included, the full path reads into the same graph with the same
    repairs and the same value or execution error; what it refuses outright, the full path refuses the same way."""
    if len(text) > MAX_CHARS: return False
    try: g = _fast_graph(text, lenient=True)
    except GraphError as e:
        with pytest.raises(GraphError) as f: full_path(text, False)
        assert (f.value.kind, f.value.node, str(f.value)) == (e.kind, e.node, str(e)), text[:200]
        return True
    if g is None: return False
    v = evaluated(g)
    h = full_path(text, False)
    assert (repr(h.nodes), h.repairs, evaluated(h)) == (repr(g.nodes), g.repairs, v), text[:200]
    return True


def evaluated(g):
    "execute's value (repr: -0.0 is not 0.0), or its error kind and node."
    try: return repr(execute(g))
    except GraphError as e: return e.kind, e.node


def only_graph_errors(text):
    """parse+execute either give a finite float or raise GraphError; anything else propagates and fails the test. The
    fast path, strict and lenient, where it takes the text, agrees with the full path."""
    fast_path_agrees(text)
    lenient_fast_path_agrees(text)
    for strict in (False, True):
        try: v = execute(parse(text, strict=strict))
        except GraphError: continue
        assert isinstance(v, float) and math.isfinite(v)


@SETTINGS
@given(graphs(), st.randoms(use_true_random=False), st.integers(1, 8))
def test_mangled_text_raises_only_graph_errors(obj, rnd, n_edits):
    text = list(format_graph(obj))
    junk = list('{}[]",:\'0123456789.-eE ntrufalsএ০৫`\\') + ['null', 'true', 'NaN', '1e999', '```', '"nodes"', '"args"', '"op"']
    for _ in range(n_edits):
        i = rnd.randrange(len(text) + 1)
        r = rnd.random()
        if r < 0.4 and text: del text[min(i, len(text) - 1)]
        elif r < 0.8: text.insert(i, rnd.choice(junk))
        else: text = text[:i]
    only_graph_errors(''.join(text))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(['id', 'op', 'args', 'val', 'nodes', 'distractor', 'label', 'x']), c, max_size=5),
                           max_leaves=20)


@SETTINGS
@given(json_values)
def test_arbitrary_json_raises_only_graph_errors(value):
    body = json.dumps({'nodes': value} if not isinstance(value, dict) else value)
    only_graph_errors('```json\n' + body + '\n```')
    try: from_obj(value)
    except GraphError: pass


@SETTINGS
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode('utf-8', 'replace')), json_values.map(lambda v: '```json\n' + json.dumps(v) + '```')),
       st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(['42', '৪২', '1,000'])))
def test_reward_never_raises_and_stays_in_its_set(text, gold):
    parts = reward_parts(text, gold)
    assert parts['total'] in (0.0, 0.5, 1.0, 2.0)
    assert parts['total'] == parts['format'] + parts['execution'] + parts['accuracy']
    assert reward(text, gold) == parts['total']


# ---------------------------------------------------------------------------------------------------------------
# Worked cases and limits

PEN = {'nodes': [
    {'id': 'n1', 'op': 'const', 'val': 122195, 'distractor': False, 'label': 'মিনার কলম'},
    {'id': 'n2', 'op': 'const', 'val': 25084, 'distractor': True, 'label': 'রাজুর কলম'},
    {'id': 'n5', 'op': 'const', 'val': 45.6, 'distractor': False, 'label': 'প্রতিটি কলমের দাম'},
    {'id': 'total_money', 'op': 'mul', 'args': ['n1', 'n5'], 'distractor': False, 'label': 'মিনার মোট টাকা'},
    {'id': 'final_result', 'op': 'identity', 'args': ['total_money'], 'distractor': False, 'label': 'চূড়ান্ত উত্তর'}]}


def test_reward_with_a_gold_that_is_not_a_number_is_a_data_error():
    assert reward('no graph here', 'x') == 0.0  # never compared
    with pytest.raises(ValueError): reward(format_graph(PEN), 'x')


def test_reward_levels():
    text = format_graph(PEN)
    assert reward(text, 5572092) == 2.0 and reward(text, '৫৫,৭২,০৯২') == 2.0
    assert reward(text, 42) == 1.0
    assert reward(text.replace('"mul"', '"multiply"'), 5572092) == 0.5  # strict: the format is right, execution fails
    assert reward(text.replace('```json', '```'), 5572092) == 0.0
    assert reward_parts(text, 42) == {'format': 0.5, 'execution': 0.5, 'accuracy': 0.0, 'total': 1.0}
    assert reward([{'role': 'assistant', 'content': text}], 5572092) == 2.0


def test_inspection_helpers():
    g = from_obj(PEN)
    assert (op_count(g), declared_distractors(g), unreachable(g)) == (1, ['n2'], ['n2'])
    assert from_obj(PEN).to_obj() == PEN


def test_a_50000_node_chain():
    nodes = [{'id': 'n0', 'op': 'const', 'val': 0}, {'id': 'one', 'op': 'const', 'val': 1}]
    nodes += [{'id': f'n{i}', 'op': 'add', 'args': [f'n{i - 1}', 'one']} for i in range(1, 50_000)]
    nodes.append({'id': 'final_result', 'op': 'identity', 'args': ['n49999']})
    random.Random(0).shuffle(nodes)  # order does not matter
    assert execute(from_obj({'nodes': nodes})) == 49_999.0
    text = '```json\n' + json.dumps({'nodes': nodes}) + '\n```'
    with pytest.raises(ParseError, match='too_large'): parse(text, strict=True)  # text beyond MAX_CHARS is refused


@pytest.mark.timeout(20)
@pytest.mark.parametrize('base,exp,kind', [(10, 1e9, 'pow_bounds'), (1e10, 400, 'pow_bounds'), (9, 99999999999, 'pow_bounds'),
                                           (-8, 1 / 3, 'non_real'), (0, -1, 'division_by_zero')])
def test_pow_fails_fast(base, exp, kind):
    g = from_obj({'nodes': [{'id': 'b', 'op': 'const', 'val': base}, {'id': 'e', 'op': 'const', 'val': exp},
                            {'id': 'final_result', 'op': 'pow', 'args': ['b', 'e']}]})
    with pytest.raises(ExecutionError) as e: execute(g)
    assert (e.value.kind, e.value.node) == (kind, 'final_result')


@pytest.mark.timeout(20)
def test_huge_lcm_and_products_fail_fast():
    primes = [1e15 + k for k in (37, 91, 159, 187, 223, 241, 249, 259, 273, 279, 297, 313, 357, 391, 421, 489, 507, 519, 603, 613, 619)]
    nodes = [{'id': f'p{i}', 'op': 'const', 'val': p} for i, p in enumerate(primes * 500)]
    nodes.append({'id': 'final_result', 'op': 'lcm', 'args': [n['id'] for n in nodes]})
    with pytest.raises(ExecutionError) as e: execute(from_obj({'nodes': nodes}))
    assert e.value.kind == 'non_finite'
    nodes[-1]['op'] = 'mul'
    with pytest.raises(ExecutionError) as e: execute(from_obj({'nodes': nodes}))
    assert e.value.kind == 'non_finite'


@pytest.mark.timeout(20)
def test_hostile_text_is_a_parse_error():
    for text in ['```json\n' + '[' * 100_000 + ']' * 100_000 + '\n```', '{' * 100_000 + '"nodes"', '```json\n{"nodes": 1e999}\n```',
                 '```json\n{"nodes": [{"id": "final_result", "op": "const", "val": 1e999}]}\n```', '\ud800```json', '']:
        only_graph_errors(text)


def test_semantics_decided():
    def run(op, *vals):
        nodes = [{'id': f'a{i}', 'op': 'const', 'val': v} for i, v in enumerate(vals)]
        nodes.append({'id': 'final_result', 'op': op, 'args': [n['id'] for n in nodes]})
        return execute(from_obj({'nodes': nodes}))
    assert [run('round', x) for x in (2.5, -2.5, 3.5, 0.49999999999999994)] == [3.0, -3.0, 4.0, 0.0]
    assert run('mod', -7, 3) == 2.0 and run('abs', 3, 10) == 7.0 and run('abs', -4) == 4.0
    assert run('gcd', 12, 18, 27) == 3.0 and run('lcm', 4, 6) == 12.0 and run('mean', 1, 2) == 1.5
    with pytest.raises(ExecutionError, match='non_integral'): run('gcd', 2.5, 5)
    assert is_correct(5572092.000001, '৫৫,৭২,০৯২') and not is_correct(None, 1) and is_correct('1,000', 1000)
    with pytest.raises(ValueError): is_correct(1, 'one')


def test_strict_and_lenient_on_figure_one():
    fig1 = {'nodes': [{'id': 'mina', 'val': 122195}, {'id': 'price', 'val': 45.6},
                      {'id': 'asked', 'val': 1126, 'distractor': True},
                      {'id': 'total', 'op': 'mul', 'args': ['mina', 'price']}, {'id': 'final', 'op': 'identity', 'args': ['total']}]}
    text = 'Sure: ' + json.dumps(fig1)
    with pytest.raises(ParseError): parse(text, strict=True)
    g = parse(text)
    assert g.repairs == ['unfenced', 'missing_op_const', 'missing_final_result']
    assert is_correct(execute(g), 5572092)
    # strict mode keeps the op-less inputs as they are; execution then refuses them
    fenced = '```json\n' + json.dumps({'nodes': fig1['nodes'] + [{'id': 'final_result', 'op': 'identity', 'args': ['final']}]}) + '\n```'
    with pytest.raises(ExecutionError) as e: execute(parse(fenced, strict=True))
    assert e.value.kind == 'unknown_op'
    assert reward(fenced, 5572092) == 0.5


def test_plot_graph_draws_every_node():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from dagger.graph_plot import plot_graph
    ax = plot_graph(PEN)
    texts = [t.get_text() for t in ax.texts if t.get_text()]
    assert len(texts) == len(PEN['nodes']) and any('5,572,092' in t for t in texts)
    plt.close('all')


def test_bangla_labels_fall_back_to_ids_without_a_bengali_font(monkeypatch):
    import dagger.graph_plot as G
    node = from_obj(PEN).node('n1')
    monkeypatch.setattr(G, '_bn_font_cache', [None])
    assert G._show_label(node) == 'n1'
    monkeypatch.setattr(G, '_bn_font_cache', ['Noto Sans Bengali'])
    assert G._show_label(node) == 'মিনার কলম'
    assert G._show_label({'id': 'x', 'label': "Mina's pens"}) == "Mina's pens"


# ---------------------------------------------------------------------------------------------------------------
# Model-like outputs with fields of every type: only GraphError ever leaves, strict and lenient; and the text repair
# pass leaves text that is already JSON unchanged (so trying the decoder first changes nothing).

BIG_INTS = st.sampled_from([2**53 + 1, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64 - 1, 2**64, 10**30, -0])
NUMBER = st.one_of(VALUES, BIG_INTS, st.floats(allow_nan=False, allow_infinity=False))
ARG_TEXT = st.sampled_from(['c0', 'x0', 'zz', '7', '৫', ' 3 ', '1e3', '2.5 kg'])
TYPED = {  # values of the types the typed decoders accept, some of which lenient mode must still repair
    'op': st.sampled_from(OP_NAMES + ['const', 'MUL', 'Multiply', 'plus', 'average', 'ratio_split', ' add ']),
    'val': st.one_of(NUMBER, st.sampled_from(['১২২', '1,126', '45.6 টাকা', '-3', 'x', '1e999', ''])),
    'args': st.lists(st.one_of(ARG_TEXT, NUMBER), max_size=3),
    'distractor': st.booleans(),
    'label': st.sampled_from(['', 'মোট', 'x, "y"']),
}
UNTYPED = {  # anything else a model might write in a field
    'id': st.one_of(st.sampled_from(['c0', 'x0', 'final_result', 'zz']), st.integers(0, 3), st.none()),
    'op': st.one_of(st.sampled_from(['']), st.none(), st.integers(0, 2)),
    'val': st.one_of(st.none(), st.booleans()),
    'args': st.one_of(st.none(), st.sampled_from(['c0', 5, True, [True], [None]])),
    'distractor': st.one_of(st.none(), st.sampled_from(['true', 'no', 0, 1])),
    'label': st.one_of(st.none(), st.integers(0, 3)),
}


@st.composite
def outputs(draw):
    "A model-like output: a random graph, some of its nodes' fields replaced, dropped or added, then written as text."
    obj = json.loads(json.dumps(draw(graphs())))
    nodes = obj['nodes']
    menu = TYPED if draw(st.booleans()) else UNTYPED
    for n in draw(st.lists(st.sampled_from(nodes), max_size=3)):
        field = draw(st.sampled_from(sorted(menu) + ['drop', 'extra']))
        if field == 'drop': n.pop(draw(st.sampled_from(sorted(n))), None)
        elif field == 'extra': n['note'] = draw(st.one_of(TYPED['label'], UNTYPED['label']))
        else: n[field] = draw(menu[field])
    if draw(st.booleans()) and draw(st.booleans()):
        what = draw(st.sampled_from(['no_final', 'final_key', 'duplicate', 'empty']))
        if what == 'no_final': obj['nodes'] = [n for n in nodes if n.get('id') != 'final_result']
        elif what == 'final_key':
            for n in nodes:
                if n.get('id') == 'final_result': n['id'] = 'answer'
            obj['final_result'] = draw(st.sampled_from(['answer', 'zz', None]))
        elif what == 'duplicate': nodes.append(dict(draw(st.sampled_from(nodes))))
        else: obj['nodes'] = []
    text = format_graph(obj) if draw(st.booleans()) else '```json\n' + json.dumps(obj, ensure_ascii=False, indent=2) + '\n```'
    text = draw(st.sampled_from(['', 'Here it is:\n'])) + text + draw(st.sampled_from(['', '\nDone.', '\n```\nmore\n```']))
    edit = draw(st.sampled_from(['none'] * 6 + ['trailing', 'quotes', 'python', 'truncate', 'unfenced']))
    if edit == 'trailing': text = text.replace('}\n]', '},\n]', 1)
    elif edit == 'quotes': text = text.replace('"id"', "'id'")
    elif edit == 'python': text = text.replace('true', 'True').replace('null', 'None')
    elif edit == 'truncate': text = text[:draw(st.integers(0, len(text)))]
    elif edit == 'unfenced': text = text.replace('```json', '')
    return text



@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(outputs())
def test_model_like_outputs_raise_only_graph_errors(text):
    only_graph_errors(text)


from dagger.repair import _JSON_FIX, _fix_token  # noqa: E402


@SETTINGS
@given(json_values)
def test_the_text_repair_pass_leaves_json_unchanged(value):
    text = json.dumps({'nodes': value}, ensure_ascii=False)
    found = []
    assert _JSON_FIX.sub(lambda m: _fix_token(m, found), text) == text and found == []


# ---------------------------------------------------------------------------------------------------------------
# Hostile inputs: each is small enough to finish in milliseconds and would time out if a search went quadratic or
# worse; each must give its typed outcome. Timing itself is measured by bench/parse_worst_case.py.

import sys  # noqa: E402
from dagger.graph import MAX_CHARS, MAX_DEPTH  # noqa: E402

FENCED = lambda body: '```json\n' + body + '\n```'
HOSTILE = {
    'fence_spaces': ('```' + ' ' * 20_000 + 'x', 'no_graph'),
    'fence_space_tab': ('```' + ' \t' * 20_000 + 'x', 'no_graph'),
    'braces_before_key': ('{' * 64 + '"nodes": [' + 'x' * 90_000, 'no_graph'),
    'unclosed_single_quote': ("```json\n{'nodes': [{'id': 'a', 'label': '" + 'x' * 90_000, 'invalid_json'),
    'surrogate': ("{'nodes': ['\udcff']}", 'invalid_json'),
    'escaped_quotes': ('{"nodes": "' + '\\"' * 30_000, 'no_graph'),
    'too_large': (FENCED('{"nodes": []}') + ' ' * MAX_CHARS, 'too_large'),
    'too_deep': (FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": 1, "x": ' + '[' * (MAX_DEPTH + 5) + ']' * (MAX_DEPTH + 5) + '}]}'), 'too_deep'),
    'many_fences': ('```' * 30_000, 'no_graph'),
    'whitespace_commas': ('```json\n{"nodes": [' + ', ' * 20_000 + '\n```', 'invalid_json'),
    'huge_number': (FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": 1' + '0' * 5000 + '}]}'), 'invalid_json'),
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize('name', sorted(HOSTILE))
def test_hostile_inputs_give_typed_parse_errors(name):
    text, kind = HOSTILE[name]
    for strict in (False, True):
        with pytest.raises(ParseError) as e: parse(text, strict=strict)
        if not strict or kind not in ('no_graph',): assert e.value.kind in (kind, 'no_graph'), (strict, e.value.kind)
    with pytest.raises(ParseError) as e: parse(text)
    assert e.value.kind == kind


@pytest.mark.timeout(10)
def test_deep_nesting_in_an_unused_field_is_read():
    body = '{"nodes": [{"id": "a", "op": "const", "val": 2, "x": ' + '[' * 996 + ']' * 996 + '}, {"id": "b", "op": "const", "val": 3}, ' \
           '{"id": "final_result", "op": "add", "args": ["a", "b"]}]}'
    for strict in (False, True):
        assert execute(parse(FENCED(body), strict=strict)) == 5.0
    assert reward(FENCED(body), 5) == 2.0


def at_depth(depth, f, *args):
    "f(*args) called `depth` frames deeper than here."
    return f(*args) if depth <= 0 else at_depth(depth - 1, f, *args)


@pytest.mark.timeout(10)
def test_reward_does_not_depend_on_the_callers_stack():
    deep = '{"nodes": [{"id": "a", "op": "const", "val": 2, "x": ' + '[' * 996 + ']' * 996 + '}, {"id": "b", "op": "const", "val": 3}, ' \
           '{"id": "final_result", "op": "add", "args": ["a", "b"]}]}'
    texts = [format_graph(PEN), FENCED(deep), HOSTILE['too_deep'][0], HOSTILE['unclosed_single_quote'][0]]
    top = [reward(t, 5572092 if i == 0 else 5) for i, t in enumerate(texts)]
    room = sys.getrecursionlimit() - 60
    for depth in (room // 2, room):
        assert [at_depth(depth, reward, t, 5572092 if i == 0 else 5) for i, t in enumerate(texts)] == top
    assert top == [2.0, 2.0, 0.0, 0.0]


@pytest.mark.timeout(10)
def test_surrogates_and_odd_digits_in_values():
    for text in ["{'nodes': ['\udcff']}", FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": "\udcff"}]}'),
                 "```json\n{'nodes': [{'id': 'final_result', 'op': 'const', 'val': '\udcff'}]}\n```"]:
        only_graph_errors(text)
    g = parse(FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": "٣٤"}]}'))
    assert execute(g) == 34.0 and g.repairs == ['val_string', 'other_digits']


# The adversarial generator: fences, whitespace runs, quotes, brackets, surrogates, digits of other scripts, huge
# numbers and deep nesting, spliced into real outputs.
PIECES = ['```', '```json', '```json\n', "'", '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', 'True', 'None',
          '"nodes":', "'nodes':", '\udcff', '\ud800', '٣', '４', '০', '½', '%', '1/0', '1e999', '1e-400', '9' * 400,
          '-', '.', 'e', 'NaN', 'Infinity']


@st.composite
def adversarial_texts(draw):
    base = draw(st.one_of(st.just(''), graphs().map(format_graph), outputs()))
    out = list(base)
    for _ in range(draw(st.integers(1, 6))):
        piece = draw(st.sampled_from(PIECES))
        piece *= draw(st.sampled_from([1, 1, 2, 7, 100, 1100]))
        i = draw(st.integers(0, len(out)))
        out[i:i] = [piece]
    return ''.join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(adversarial_texts())
def test_adversarial_texts_raise_only_graph_errors(text):
    only_graph_errors(text)
    assert reward(text, 1) in (0.0, 0.5, 1.0, 2.0)


def test_corner_case_rules():
    def run(op, *vals):
        nodes = [{'id': f'a{i}', 'op': 'const', 'val': v} for i, v in enumerate(vals)]
        nodes.append({'id': 'final_result', 'op': op, 'args': [n['id'] for n in nodes]})
        return execute(from_obj({'nodes': nodes}))
    assert run('mul', 1e200, 1e200, 0) == run('mul', 1e200, 0, 1e200) == 0.0
    assert run('add', 1e308, 1e308, -1e308) == 1e308 == run('mean', 1e308, 1e308)
    assert math.copysign(1, run('sqrt', -0.0)) == 1.0
    vals = {t: parse(FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": "%s"}]}' % t)) for t in ('50%', '1/2', '½', '3 1/2', '１２')}
    assert {t: g.nodes[0]['val'] for t, g in vals.items()} == {'50%': 50.0, '1/2': 0.5, '½': 0.5, '3 1/2': 3.5, '１２': 12.0}
    assert [g.repairs[-1] for g in vals.values()] == ['percent', 'fraction', 'fraction', 'fraction', 'other_digits']
    for t in ('50%', '1/2'):
        with pytest.raises(ParseError): parse(FENCED('{"nodes": [{"id": "final_result", "op": "const", "val": "%s"}]}' % t), strict=True)


@SETTINGS
@given(st.lists(st.sampled_from([1e200, -1e200, 1e-200, 3.0, 0.5, 1e308, -1e308, 7.25]), min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_sums_and_products_do_not_depend_on_argument_order(xs, rnd):
    def run(op, vals):
        nodes = [{'id': f'a{i}', 'op': 'const', 'val': v} for i, v in enumerate(vals)]
        nodes.append({'id': 'final_result', 'op': op, 'args': [n['id'] for n in nodes]})
        try: return execute(from_obj({'nodes': nodes}))
        except ExecutionError as e: return e.kind
    ys = list(xs); rnd.shuffle(ys)
    for op in ('add', 'mul', 'mean'):
        assert run(op, xs) == run(op, ys)
    exact = sum(map(Fraction, xs))
    assert run('add', xs) == (float(exact) if abs(exact) <= Fraction(FMAX) else 'non_finite')


def test_the_fast_path_agrees_on_the_benchmark_corpus():
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'bench'))
    from graph_bench import corpus
    texts = corpus(3000, seed=7)
    taken = sum(fast_path_agrees(t) for t in texts)
    assert 0.6 * len(texts) < taken < len(texts)   # it takes the well-formed ones and leaves the rest
    assert taken < sum(lenient_fast_path_agrees(t) for t in texts) < len(texts)   # and lenient, most repaired ones


@SETTINGS
@given(graphs(), st.lists(st.one_of(st.integers(-2**80, 2**80), st.floats(allow_nan=False, allow_infinity=False),
                                    st.sampled_from([9007199254740993, -0.0, 5e-324, 1e308, 2**63, 2**64 + 1])), min_size=1, max_size=6),
       st.sampled_from(['{"x": [1, {"y": null}]}', '"text"', 'null']))
def test_the_fast_path_reads_values_and_extra_fields_like_the_full_path(obj, vals, extra):
    consts = [n for n in obj['nodes'] if n.get('op') == 'const']
    for n, v in zip(consts, vals): n['val'] = v
    text = format_graph(obj).replace('"id": ', f'"extra": {extra}, "id": ', 1)
    if not fast_path_agrees(text): assert any(abs(v) > 1.7e308 for v in vals if isinstance(v, int))   # only an overflowing int is refused


def test_the_fast_path_leaves_deep_nesting_to_the_decoder():
    import sys
    body = '{"nodes": [{"id": "a", "op": "const", "val": 2, "x": ' + '[' * 1100 + ']' * 1100 + '}, {"id": "final_result", "op": "identity", "args": ["a"]}]}'
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        assert _fast_graph(FENCED(body)) is None
        with pytest.raises(ParseError) as e: parse(FENCED(body))
        assert e.value.kind == 'too_deep'
    finally: sys.setrecursionlimit(old)
