"The data-flow page draws stage → file → figure: every committed figure and table of its profile has an arrow into it."
import re
from pathlib import Path
from dagger.pages import family, flow_mermaid

ROOT = Path(__file__).resolve().parents[1]
PROFILE = 'cpu-study'   # the profile docs/flow.md draws


def _drawn(mermaid: str) -> tuple[dict, set]:
    labels = dict(re.findall(r'^\s*(n\d+)\S*?"([^"]+)"', mermaid, re.M))
    return labels, {labels[t] for t in re.findall(r'-\.?-> (n\d+)', mermaid)}


def committed_figures() -> set:
    files = [*(ROOT/'figures').glob('*'), *(ROOT/'figures'/'tables').glob('*')]
    return {family(p.stem) for p in files if p.suffix in ('.png', '.pdf', '.csv', '.md')
            and re.search(rf'_(ours|compare)-{re.escape(PROFILE)}$', p.stem)}


def test_every_committed_figure_has_an_incoming_edge():
    page = (ROOT/'docs'/'flow.md').read_text(encoding='utf-8')
    labels, into = _drawn(page)
    figures = committed_figures()
    assert len(figures) >= 20, sorted(figures)
    assert not figures - set(labels.values()), f'figures missing from the page: {sorted(figures - set(labels.values()))}'
    assert not figures - into, f'figures without an incoming edge: {sorted(figures - into)}'


def test_the_page_is_what_flow_mermaid_draws():
    assert flow_mermaid(PROFILE) in (ROOT/'docs'/'flow.md').read_text(encoding='utf-8')
