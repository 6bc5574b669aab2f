"""Issue #23: chapters 10 and 12 embed the landing page's lab with the view they teach (in Chromium, the built
pages): chapter 10 the sampler (prompt, settings, the next-byte table, Generate; no head switches, lens or map),
chapter 12 the parts (head switches, the logit lens, the attention map, the snapshots), each with the hints of its
view. The numbers equal tinytf's in Python (the lens: tinytf.viz.lab.lens_view); no console error, nothing from
another host."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import book_browser
from conftest import book_url, require

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_figures import diff  # noqa: E402

import tinytf  # noqa: E402
from tinytf.generation import next_token_probs  # noqa: E402
from tinytf.lab import browser_lab as lab  # noqa: E402
from tinytf.viz import lab as lab_views  # noqa: E402
from tinytf.viz.templates import plain  # noqa: E402

LAB = ".tinytf-lab"
READY = "() => { const l = document.querySelector('.tinytf-lab').tinytfLab; return l && l.ready && !l.busy; }"
PROMPT = "Return the number of "


@pytest.fixture(scope="module")
def model():
    return tinytf.pretrained("text-4l")


def _open(browser, path):
    require("onnxruntime-web")
    page, errors, remote, loaded = book_browser.open_page(browser, book_url(path))
    book_browser.settle(page)
    assert not [u for u in loaded if "/_static/lab/" in u or "/_static/ort/" in u]  # nothing before use
    page.locator(f"{LAB} textarea").fill(PROMPT)
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
        return l.refresh().then(() => l.drawn).then(() => true); }}""")
    return page, errors, remote


def _lab(page, expr):
    return page.evaluate(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; return {expr}; }}")


def test_chapter_11_shows_the_sampler(book_server, browser, model):
    page, errors, remote = _open(browser, "chapters/10_generation_kv_cache.html")
    try:
        assert page.locator(f"{LAB} input[type=checkbox]").count() == 0  # the sampling view only
        assert page.locator(f"{LAB} .tinytf-lab-lens").count() == 0
        assert page.locator(f"{LAB} select").count() == 0
        hints = page.locator(f"{LAB} .tinytf-lab-hints button")
        assert [b.get_attribute("id").rsplit("-try-", 1)[1] for b in hints.all()] == ["greedy", "hot"]
        logits = lab.run_lab(model, list(PROMPT.encode()))["logits"][None]
        for t, k, p in [(1.0, None, None), (0.7, 10, 0.9)]:
            for name, v in (("temperature", t), ("top_k", k), ("top_p", p)):
                page.locator(f"{LAB} [id$='-{name}']").fill("" if v is None else str(v))
            got = np.array(_lab(page, "Array.from(l.probs)"))
            assert np.abs(got - next_token_probs(logits, t, k, p)[0].double().numpy()).max() < 1e-4
        page.locator(f"{LAB} [id$='-seed']").fill("3")
        page.locator(f"{LAB} [id$='-n_bytes']").fill("20")
        page.locator(f"{LAB} [id$='-generate']").click()
        page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                               "return !l.busy && l.generated.length === 20; }", timeout=60_000)
        assert _lab(page, "l.generated") == lab.sample_text(model, PROMPT, 20, seed=3, temperature=0.7, top_k=10,
                                                            top_p=0.9)
        page.wait_for_timeout(100)
        assert errors == [] and remote == []
    finally:
        page.context.close()


def test_chapter_12_shows_heads_lens_and_snapshots(book_server, browser, model):
    page, errors, remote = _open(browser, "chapters/12_misconceptions.html")
    try:
        assert page.locator(f"{LAB} input[type=checkbox]").count() == 24
        assert page.locator(f"{LAB} select[id$='-model'] option").count() == 5
        hints = page.locator(f"{LAB} .tinytf-lab-hints button")
        assert [b.get_attribute("id").rsplit("-try-", 1)[1] for b in hints.all()] == ["lens", "step0"]
        page.locator(f"{LAB} input[id$='-head-1-4']").click()
        page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
            return l.refresh().then(() => l.drawn).then(() => true); }}""")
        mask = lab.full_mask(model)
        mask[1, 4] = 0
        out = lab.run_lab(model, list(PROMPT.encode()), mask)
        labels = _lab(page, "l.labels")
        want = plain(lab_views.figure_of(lab_views.lens_view({"lens": out["lens"].numpy()}, labels,
                                                             last=_lab(page, "l.lensWindow"))))
        assert diff(_lab(page, "l.lensSpec"), want, "lens", tol=1e-4) is None  # Python's lens, bound on the page
        page.locator(f"{LAB} [id$='-temperature']").fill("1")
        page.locator(f"{LAB} [id$='-top_k']").fill("")
        page.locator(f"{LAB} [id$='-top_p']").fill("")
        got = np.array(_lab(page, "Array.from(l.probs)"))
        assert np.abs(got - next_token_probs(out["logits"][None], 1.0)[0].double().numpy()).max() < 1e-4
        assert page.locator(f"{LAB} .tinytf-lab-figure .main-svg").count() >= 1
        page.wait_for_timeout(100)
        assert errors == [] and remote == []
    finally:
        page.context.close()
