"""Snapshot the signatures dagger's GPU path calls, at the versions pinned in pyproject.toml's `gpu` extra.

The GPU stages call TRL, PEFT, unsloth and vLLM with keyword arguments, but this machine has other versions of them
installed (or none: vLLM and unsloth do not import here). This script reads the pins from pyproject.toml, downloads
those wheels with `pip download --no-deps`, reads their source with `ast` (never importing them) and writes, for each
function or class in TARGETS, its parameter names, whether it takes **kwargs and which names its body reads from
them, to tests/pins/gpu_signatures.json. A dataclass (or msgspec Struct) contributes the init fields of its whole base
chain, the bases found in the same wheels. It also records the keywords TRL's colocated vLLM engine is built with and
the vLLM versions TRL declares supported. tests/test_pins.py checks dagger's keywords against that file offline.
Rerun it whenever a `gpu` pin moves:

    .venv/bin/python tests/pins/regenerate.py            # --wheels DIR keeps the downloads in DIR for the next run
"""
import argparse, ast, json, re, subprocess, sys, tempfile, tomllib, zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name('gpu_signatures.json')
PACKAGES = ('trl', 'peft', 'unsloth', 'unsloth_zoo', 'vllm', 'transformers')
TARGETS = (  # what dagger calls, as `package.[module.]Class[.method]`; a class means calling it (its __init__ or fields)
    'trl.SFTConfig', 'trl.GRPOConfig', 'trl.SFTTrainer', 'trl.GRPOTrainer',
    'peft.LoraConfig', 'peft.PeftModel.from_pretrained', 'peft.AutoPeftModelForCausalLM.from_pretrained',
    'unsloth.FastLanguageModel.from_pretrained', 'unsloth.FastLanguageModel.get_peft_model',
    'unsloth.FastModel.from_pretrained', 'unsloth.FastModel.get_peft_model',
    'unsloth.FastLlamaModel.get_peft_model', 'unsloth.FastBaseModel.get_peft_model',   # where those two forward
    'vllm.LLM', 'vllm.LLM.chat', 'vllm.EngineArgs', 'vllm.SamplingParams',
    'vllm.distributed.parallel_state.cleanup_dist_env_and_memory',
    'transformers.PreTrainedModel.from_pretrained')   # where peft's AutoPeftModel*.from_pretrained(**kwargs) sends its kwargs
UPSTREAM = {'trl.colocate_llm': ('trl/generation/vllm_generation.py', 'LLM', 'vllm.LLM')}  # calls the pinned code makes


def gpu_pins(pyproject: Path = ROOT/'pyproject.toml') -> dict:
    "{package: version} of the PACKAGES pinned with == in pyproject's `gpu` extra."
    extra = tomllib.loads(pyproject.read_text())['project']['optional-dependencies']['gpu']
    pins = dict(re.match(r'\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;,]+)', s).groups() for s in extra if '==' in s)
    pins = {re.sub(r'[-_.]+', '_', k).lower(): v for k, v in pins.items()}
    return {p: pins[p] for p in PACKAGES}


def unpack(pins: dict, wheels: Path, src: Path):
    "Download the pinned wheels into `wheels` (unless there) and extract their .py files into `src`."
    specs = [f'{p}=={v}' for p, v in pins.items()]
    cmd = [sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--platform', 'manylinux_2_28_x86_64',
           '--python-version', '3.11', '-q', '-d', str(wheels), *specs]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode: sys.exit(f'pip download failed:\n{r.stdout}{r.stderr}')
    for p, v in pins.items():
        whl, = [w for w in wheels.glob('*.whl') if w.name.startswith(f"{p.replace('-', '_')}-{v}-")]
        with zipfile.ZipFile(whl) as z: z.extractall(src, [n for n in z.namelist() if n.endswith('.py')])


class Source:
    "The unpacked packages, parsed lazily; finds definitions by following imports, else by a unique name."
    def __init__(self, root: Path): self.root, self.trees = root, {}

    def tree(self, rel: str):
        if rel not in self.trees: self.trees[rel] = ast.parse((self.root/rel).read_text(encoding='utf-8'), rel)
        return self.trees[rel]

    def module(self, dotted: str):
        "The file of module `dotted`, or None."
        base = Path(*dotted.split('.'))
        for rel in (base.with_suffix('.py'), base/'__init__.py'):
            if (self.root/rel).is_file(): return rel.as_posix()

    def find(self, rel: str, name: str, seen=None):
        "(file, node) of top-level class or function `name` as module `rel` sees it: defined there or imported."
        seen = seen if seen is not None else set()
        if (rel, name) in seen: return None
        seen.add((rel, name))
        for n in self.tree(rel).body:
            if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name: return rel, n
        pkg = rel.removesuffix('.py').removesuffix('/__init__').split('/')
        if not rel.endswith('__init__.py'): pkg = pkg[:-1]
        imports = [(n, a) for n in ast.walk(self.tree(rel)) if isinstance(n, ast.ImportFrom) for a in n.names]
        for n, a in [x for x in imports if (x[1].asname or x[1].name) == name] + [x for x in imports if x[1].name == '*']:
            mod = '.'.join((pkg[:len(pkg) - n.level + 1] if n.level else []) + ([n.module] if n.module else []))
            if (m := self.module(mod)) and (hit := self.find(m, name if a.name == '*' else a.name, seen)): return hit

    def anywhere(self, package: str, name: str):
        "(file, node) of the one top-level definition of `name` in `package` (error when none or several)."
        pat = re.compile(rf'^(class|def) {name}\b', re.M)
        hits = [(f.relative_to(self.root).as_posix(), n) for f in sorted((self.root/package).rglob('*.py'))
                if pat.search(f.read_text(encoding='utf-8', errors='replace'))
                for n in self.tree(f.relative_to(self.root).as_posix()).body if getattr(n, 'name', None) == name]
        if len(hits) != 1: raise LookupError(f'{name} in {package}: {len(hits)} top-level definitions {[h[0] for h in hits]}')
        return hits[0]

    def resolve(self, rel: str, name: str, package: str):
        return self.find(rel, name) or self.anywhere(package, name)

    def bases(self, rel: str, cls: ast.ClassDef) -> list:
        "[(file, ClassDef) or dotted name of a base outside the wheels] in MRO order (depth first, left to right)."
        out = []
        for b in cls.bases:
            b = b.value if isinstance(b, ast.Subscript) else b
            dotted = ast.unparse(b)
            package = dotted.split('.')[0] if isinstance(b, ast.Attribute) else rel.split('/')[0]
            try: f, node = self.resolve(rel, dotted.split('.')[-1], package) if (self.root/package).is_dir() else (None, None)
            except LookupError: f, node = None, None
            out += [(f, node)] + self.bases(f, node) if isinstance(node, ast.ClassDef) else [dotted]
        return out


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(d.func if isinstance(d, ast.Call) else d).split('.')[-1] == 'dataclass' for d in cls.decorator_list)

def _fields(cls: ast.ClassDef) -> list:
    "Init fields of a dataclass body: annotated names, less ClassVars and field(init=False)."
    out = []
    for n in cls.body:
        if not (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)) or 'ClassVar' in ast.unparse(n.annotation): continue
        if isinstance(n.value, ast.Call) and any(k.arg == 'init' and getattr(k.value, 'value', True) is False for k in n.value.keywords): continue
        out.append(n.target.id)
    return out

def _function(fn, method: bool) -> dict:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args][1 if method and not _decorated(fn, 'staticmethod') else 0:] + [x.arg for x in a.kwonlyargs]
    wraps = [ast.unparse(d.args[0]) for d in fn.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func).endswith('wraps')]
    return dict(params=sorted(names), var_kwargs=a.kwarg is not None) | (dict(wraps=wraps[0]) if wraps else {}) | \
           (dict(kwargs_read=_kwargs_read(fn, a.kwarg.arg)) if a.kwarg else {})

def _kwargs_read(fn, kw: str) -> list:
    "The names the body reads out of its **`kw`: kw.pop/get/setdefault('x'), kw['x'], 'x' in kw."
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and ast.unparse(n.func) in (f'{kw}.pop', f'{kw}.get', f'{kw}.setdefault') and n.args: key = n.args[0]
        elif isinstance(n, ast.Subscript) and ast.unparse(n.value) == kw: key = n.slice
        elif isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn)) and ast.unparse(n.comparators[0]) == kw: key = n.left
        else: continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str): out.add(key.value)
    return sorted(out)

def _decorated(fn, name: str) -> bool:
    return any(ast.unparse(d).split('.')[-1] == name for d in fn.decorator_list)

def _method(src: Source, rel: str, cls: ast.ClassDef, name: str):
    for f, c in [(rel, cls)] + [b for b in src.bases(rel, cls) if isinstance(b, tuple)]:
        for n in c.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name: return f, n

def signature(src: Source, target: str) -> dict:
    "{params, var_kwargs, source} of `target`, e.g. 'trl.GRPOConfig' or 'unsloth.FastModel.get_peft_model'."
    parts = target.split('.')
    i = max(k for k in range(1, len(parts)) if src.module('.'.join(parts[:k])))   # the longest module prefix
    rel, node = src.resolve(src.module('.'.join(parts[:i])), parts[i], parts[0])
    if len(parts) > i + 1: rel, node = _method(src, rel, node, parts[i + 1])
    if isinstance(node, ast.ClassDef):
        chain = [(rel, node)] + src.bases(rel, node)
        struct = any(b in ('msgspec.Struct', 'Struct') for b in chain if isinstance(b, str))
        if own := (None if _is_dataclass(node) or struct else _method(src, rel, node, "__init__")):
            return _function(own[1], True) | dict(source=own[0])
        fields = {f for b in chain if isinstance(b, tuple) and (_is_dataclass(b[1]) or struct) for f in _fields(b[1])}
        external = sorted({b for b in chain if isinstance(b, str) and b != 'object'})
        return dict(params=sorted(fields), var_kwargs=False, source=rel) | (dict(external_bases=external) if external else {})
    return _function(node, len(parts) > i + 1) | dict(source=rel)


def call_keywords(src: Source, rel: str, callee: str) -> dict:
    "The literal keywords of every call to `callee` in file `rel` (and whether one also passes **kwargs)."
    calls = [n for n in ast.walk(src.tree(rel)) if isinstance(n, ast.Call) and ast.unparse(n.func) == callee]
    return dict(keywords=sorted({k.arg for c in calls for k in c.keywords if k.arg}),
                var_kwargs=any(k.arg is None for c in calls for k in c.keywords), calls=len(calls))


def trl_vllm_range(src: Source) -> list:
    "The vLLM versions trl's is_vllm_available() declares supported: [lowest, highest]."
    _, fn = src.find('trl/import_utils.py', 'is_vllm_available')
    return [n.args[0].value for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == 'Version'
            and n.args and isinstance(n.args[0], ast.Constant)][:2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--wheels', type=Path, help='download into (and reuse) this folder instead of a temporary one')
    a = ap.parse_args(argv)
    pins = gpu_pins()
    with tempfile.TemporaryDirectory() as tmp:
        wheels = a.wheels or Path(tmp, 'wheels'); wheels.mkdir(parents=True, exist_ok=True)
        unpack(pins, wheels, Path(tmp, 'src'))
        src = Source(Path(tmp, 'src'))
        snap = dict(pins=pins, signatures={t: signature(src, t) for t in sorted(TARGETS)},
                    upstream_calls={k: dict(source=f, callee=c, target=t) | call_keywords(src, f, c) for k, (f, c, t) in UPSTREAM.items()},
                    trl_supported_vllm=trl_vllm_range(src))
    OUT.write_text(json.dumps(snap, indent=1, sort_keys=True) + '\n')
    print(f'wrote {OUT.relative_to(ROOT)}: {len(snap["signatures"])} signatures at {pins}')


if __name__ == '__main__': main()
