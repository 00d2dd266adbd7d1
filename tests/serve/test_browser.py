"""The web page in a real browser: headless Chromium, driven by Playwright.

The test starts ``rosetta serve`` itself, types a sentence, submits, and checks
the translation, the alternatives and the attention heatmap against the API's
answer for the same request. ``make test`` installs Debian's Chromium and sets
ROSETTA_REQUIRE_BROWSER, so there a missing browser fails instead of skipping.
"""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.serve.test_app import start_server

CHROMIUM = os.environ.get("ROSETTA_CHROMIUM") or shutil.which("chromium")
# A closed network and no screen: no background requests, no GPU, no sandbox
# (the tests may run as root), a fresh profile.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(os.environ.get("ROSETTA_SCREENSHOTS", "test-artifacts"))


def require_browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        if os.environ.get("ROSETTA_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed (make setup installs it)")
        pytest.skip("chromium is not installed")
    return playwright


@contextmanager
def page_at(playwright, address: str, shows: str = "→"):
    """The server's page in headless Chromium, once its model information
    (which holds ``shows``) has loaded."""
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.goto(f"{address}/")
            page.wait_for_function(
                f"document.getElementById('model-info').textContent.includes('{shows}')"
            )
            yield page
        finally:
            browser.close()


@pytest.fixture(scope="module", params=["transformer", "rnn-attention", "ctranslate2"])
def server(request, toy_run):
    if request.param == "ctranslate2":
        pytest.importorskip("ctranslate2", reason="pip install rosetta-nmt[ct2]")
        run = toy_run("transformer")
        process, address = start_server(run, "--engine", "ctranslate2")
    else:
        process, address = start_server(toy_run(request.param))
    yield address, request.param
    process.terminate()
    process.wait(30)


@pytest.mark.slow
def test_page_translates_lists_alternatives_and_draws_the_heatmap(server):
    playwright = require_browser()
    address, kind = server
    sentence = "alpha beta gamma delta"
    request = {
        "sentences": [sentence],
        "beam_size": 4,
        "nbest": 3,
        "alpha": 0.75,
        "attention": True,
    }
    if kind == "ctranslate2":  # the page asks for its beam, the refilling one
        request |= {"refill": True, "stopping": "k_finished"}
    expected = httpx.post(f"{address}/translate", json=request, timeout=30).json()
    hypotheses = expected["translations"][0]["hypotheses"]
    best = hypotheses[0]
    rows, columns = len(best["attention"]), len(best["source_tokens"])

    with page_at(playwright, address, shows="→") as page:
        page.fill("#source", sentence)
        page.fill("#beam", "4")
        page.fill("#nbest", "3")
        page.click("#submit")
        page.wait_for_selector("#heatmap svg rect.cell")

        assert page.inner_text("#translation").strip() == best["text"]
        items = page.locator("#nbest-list li .text")
        assert items.all_inner_texts() == [h["text"] for h in hypotheses]
        cells = page.locator("#heatmap rect.cell")
        assert cells.count() == rows * columns
        labels = page.locator("#heatmap text.source-token").all_text_contents()
        assert labels == best["source_tokens"]
        # The drawn weights are the API's (last layer, mean over its heads).
        drawn = [
            float(w)
            for w in cells.evaluate_all("cells => cells.map(c => c.dataset.weight)")
        ]
        for t in range(rows):
            layer = best["attention"][t][-1]
            for s in range(columns):
                mean = sum(head[s] for head in layer) / len(layer)
                assert drawn[t * columns + s] == pytest.approx(mean, abs=1e-3)
        # Colours span this map's own range, shown on its legend: the
        # largest weight gets the scale's darkest colour.
        fills = cells.evaluate_all("cells => cells.map(c => c.getAttribute('fill'))")
        largest = max(drawn)
        assert fills[drawn.index(largest)] == "rgb(68,1,84)"
        top, bottom = page.locator("#heatmap text.legend-label").all_text_contents()
        assert float(top) == pytest.approx(largest, abs=0.006) and bottom == "0"
        # one name for the end token: rows as columns
        targets = page.locator("#heatmap text.target-token").all_text_contents()
        assert targets[: len(best["tokens"])] == best["tokens"]
        if rows > len(best["tokens"]):
            assert targets[-1] == best["source_tokens"][-1] == "<eos>"
        heads = page.locator("#head option").count()
        # the mean and the toy Transformer's 2 heads; one summary otherwise
        assert heads == (3 if kind == "transformer" else 1)

        # Choosing another alternative redraws the map for it.
        page.locator("#nbest-list li").nth(1).click()
        page.wait_for_selector("#nbest-list li.selected >> nth=0")
        second = hypotheses[1]
        assert page.locator("#heatmap rect.cell").count() == len(
            second["attention"]
        ) * len(second["source_tokens"])

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"page-{kind}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000

        # An error from the server is shown, not swallowed.
        page.fill("#source", "alpha " * 400)  # over the 2,000 characters
        page.click("#submit")
        page.wait_for_selector("#error:not([hidden])")
        assert "at most" in page.inner_text("#error")


@pytest.mark.slow
def test_page_completes_the_start_the_user_types(server):
    """The prefix box: completions as the user types, best first, each
    starting with the prefix, as the API gives them; one click takes one,
    and Translate keeps the prefix."""
    playwright = require_browser()
    address, kind = server
    sentence = "alpha beta gamma delta"
    free = httpx.post(
        f"{address}/translate", json={"sentences": [sentence]}, timeout=30
    ).json()["translations"][0]["hypotheses"][0]["text"]
    prefix = "iota" if free.split()[:1] != ["iota"] else "eta"
    beam = 1 if kind == "ctranslate2" else 3  # the page's nbest, 3 by default
    request = {
        "sentences": [sentence],
        "beam_size": beam,
        "nbest": beam,
        "alpha": 0.75,
        "constraints": [{"prefix": prefix}],
    }
    expected = httpx.post(f"{address}/translate", json=request, timeout=30).json()
    hypotheses = [h["text"] for h in expected["translations"][0]["hypotheses"]]
    assert all(text.startswith(prefix) for text in hypotheses)
    with page_at(playwright, address, shows="→") as page:
        page.fill("#source", sentence)
        page.locator("#prefix").press_sequentially(prefix, delay=30)
        page.wait_for_selector("#completions li")
        shown = page.locator("#completions li").all_inner_texts()
        assert shown == hypotheses
        page.locator("#completions li").nth(len(shown) - 1).click()
        assert page.input_value("#prefix") == hypotheses[-1]
        page.click("#submit")
        page.wait_for_selector("#results:not([hidden])")
        assert page.inner_text("#translation").strip().startswith(hypotheses[-1])


@pytest.mark.slow
def test_page_shows_a_nat_models_fertilities_under_its_source_tokens(toy_run):
    playwright = require_browser()
    teacher = str(toy_run("transformer"))
    process, address = start_server(toy_run("nat"), "--npd", "4", "--teacher", teacher)
    try:
        sentence = "alpha beta gamma"
        request = {"sentences": [sentence], "attention": True}
        expected = httpx.post(f"{address}/translate", json=request, timeout=30).json()
        best = expected["translations"][0]["hypotheses"][0]
        assert sum(best["fertilities"]) == len(best["tokens"])
        with page_at(playwright, address, shows="nat") as page:
            assert not page.locator("#beam").is_visible()  # no beam to size
            assert not page.locator("#prefix").is_visible()  # nothing to steer
            page.fill("#source", sentence)
            page.click("#submit")
            page.wait_for_selector("#fertilities .fertility")
            assert page.inner_text("#translation").strip() == best["text"]
            tokens = page.locator("#fertilities .token").all_text_contents()
            counts = page.locator("#fertilities .count").all_text_contents()
            assert tokens == best["source_tokens"]
            assert [int(c) for c in counts] == best["fertilities"]
            assert page.locator("#heatmap rect.cell").count() == len(
                best["attention"]
            ) * len(best["source_tokens"])
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "page-nat.png"), full_page=True)
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.slow
def test_page_sends_the_search_controls_filled_in(server):
    """Never write / at least N tokens / no repeated n-grams: the page asks
    what the API does for the same fields, and shows that translation; for
    CTranslate2, which has no such controls, the fields are hidden."""
    playwright = require_browser()
    address, kind = server
    sentence = "alpha beta gamma delta"
    with page_at(playwright, address, shows="→") as page:
        if kind == "ctranslate2":
            assert not page.is_visible("#ban")
            return
        free = {"sentences": [sentence], "beam": 3}
        answer = httpx.post(f"{address}/translate", json=free, timeout=30)
        [found] = answer.json()["translations"]
        banned = found["hypotheses"][0]["text"].split()[0]
        request = free | {
            "nbest": 3,
            "alpha": 0.75,
            "ban": [banned],
            "ban_forms": True,
            "min_len": 2,
            "no_repeat_ngram": 2,
        }
        expected = httpx.post(f"{address}/translate", json=request, timeout=30)
        best = expected.json()["translations"][0]["hypotheses"][0]["text"]
        assert banned not in best.split()
        page.fill("#source", sentence)
        page.fill("#beam", "3")
        page.fill("#ban", f" {banned} ")
        page.check("#ban-forms")
        page.fill("#min-len", "2")
        page.fill("#no-repeat", "2")
        page.click("#submit")
        page.wait_for_selector("#results:not([hidden])")
        assert page.inner_text("#translation").strip() == best


def test_page_offers_a_multilingual_models_languages(tmp_path):
    """An NLLB-200 model (tiny, made offline) served with no default
    language: the page lists its codes with "choose…" first, and the
    languages chosen go with the request, translated as the API does."""
    playwright = require_browser()
    pytest.importorskip("transformers")
    from benchmarks.multilingual_model import make_multilingual

    from rosetta.families import all_importers
    from rosetta.jobs.importers import import_run

    hf = next(importer for importer in all_importers() if importer.name == "hf")
    made = make_multilingual("nllb", tmp_path / "model")
    import_run(hf, str(made), tmp_path / "run", log=lambda *_: None)
    process, address = start_server(tmp_path / "run")
    sentence = "Ein Hund läuft durch den Schnee."
    try:
        with page_at(playwright, address) as page:
            assert page.is_visible("#languages")
            options = page.eval_on_selector_all(
                "#target-lang option", "nodes => nodes.map(n => n.value)"
            )
            assert options[0] == "" and "fra_Latn" in options and len(options) == 203
            page.fill("#source", sentence)
            page.select_option("#source-lang", "deu_Latn")
            page.select_option("#target-lang", "fra_Latn")
            page.fill("#beam", "1")
            page.click("#submit")
            page.wait_for_selector("#results:not([hidden])")
            shown = page.inner_text("#translation")
        asked = {
            "sentences": [sentence],
            "source_lang": "deu_Latn",
            "target_lang": "fra_Latn",
            "beam": 1,
        }
        answer = httpx.post(f"{address}/translate", json=asked, timeout=30)
        assert answer.status_code == 200
        expected = answer.json()["translations"][0]["hypotheses"][0]["text"]
        assert shown.strip() == expected.strip()
    finally:
        process.terminate()
        process.wait(timeout=30)
