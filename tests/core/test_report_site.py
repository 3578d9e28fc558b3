"""The report site: structure without a browser, then the real thing in headless Chromium."""

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iclr24.claims import Estimate
from iclr24.cli import app
from iclr24.store import Record, ResultStore

runner = CliRunner()


def _alpha_hash() -> str:
    from iclr24.provenance import code_hash

    return code_hash(Path(__file__).resolve().parent / "fakepapers" / "alpha")


def _record(claim, verdict, metrics, *, scale="small", seed=0, notes="", tables=None,
            figure=None, rule="gain > 0", started="2026-11-30T10:00:00+00:00", reason=""):
    return Record(paper="alpha", claim=claim, scale=scale, seed=seed, verdict=verdict,
                  metrics=metrics, rule=rule, reason=reason,
                  paper_reference={"text": "The paper says <b>3 & more</b>.",
                                   "numbers": {"gain": 3.0}},
                  duration_s=1.5, cpu_s=1.2, started_at=started, notes=notes,
                  tables=tables or {}, figure_png=figure, git_commit="abc123",
                  code_hash=_alpha_hash())


def _png() -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    import io

    fig = Figure(figsize=(2, 1.5))
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.fixture
def site(fake_registry, tmp_path):
    """A store with history (a verdict that flipped, an estimate, nasty text), rendered."""
    store = ResultStore(tmp_path / "r.sqlite")
    store.add(_record("holds_claim", "fails", {"gain": -1.0}, seed=1,
                      started="2026-11-29T09:00:00+00:00"))
    store.add(_record("holds_claim", "holds", {"gain": 2.0}, figure=_png(),
                      notes="x < y & z", tables={"t<1>": [{"a<b": "<script>", "n": 1}]}))
    store.add(_record("estimate_claim", "inconclusive",
                      {"gain": Estimate(0.1, -0.2, 0.4, 5)}, reason="interval <straddles>"))
    store.add(_record("raises_claim", "error", {}, rule="x > 0", scale="smoke"))
    store.add(_record("fails_claim", "holds", {"gain": 1.0}, scale="smoke"))
    out = tmp_path / "site"
    res = runner.invoke(app, ["report", "--out", str(out), "--store", str(tmp_path / "r.sqlite")])
    assert res.exit_code == 0, res.output
    return out


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.images, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data):
        self.text.append(data)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_one_page_per_paper_and_every_local_link_resolves(site):
    assert sorted(p.name for p in (site / "papers").iterdir()) == ["alpha.html", "beta.html",
                                                                   "gamma.html"]
    for page in [site / "index.html", *sorted((site / "papers").iterdir())]:
        parsed = _parse(page)
        for href in parsed.links + parsed.images:
            if href.startswith(("http://", "https://")):
                continue
            target = href.split("#")[0]
            if target:
                assert (page.parent / target).resolve().is_file(), (page.name, href)


def test_index_orders_implemented_first_and_marks_flips(site):
    html = (site / "index.html").read_text()
    assert html.index('href="papers/alpha.html"') < html.index('href="papers/beta.html"')
    assert "↺ fails → holds" in html
    assert 'class="badge inconclusive"' in html and "1 inconclusive" in html
    assert 'data-verdicts="holds|inconclusive|not measured"' in html
    # smoke results are checks, never headline badges: fails_claim "held" at smoke
    assert "fails_claim: not measured" in html and "fails_claim: holds" not in html
    assert "1 ran · 1 errors · 5 not run" in html


def test_paper_page_has_the_side_by_side_table_history_and_escapes_text(site):
    page = (site / "papers" / "alpha.html").read_text()
    assert "<b>3" not in page and "&lt;b&gt;3 &amp; more&lt;/b&gt;" in page
    assert "x &lt; y &amp; z" in page and "<script>" not in page.split("</style>")[1]
    assert "&lt;script&gt;" in page and "t&lt;1&gt;" in page
    assert "0.1 [\u22120.2, 0.4] (n=5)" in page and "0 (n=5)" in page
    assert "history__alpha__holds_claim.png" in page
    assert (site / "figures" / "history__alpha__holds_claim.png").read_bytes()[:4] == b"\x89PNG"
    assert "<pre>" in page  # the smoke error's traceback
    assert "Why inconclusive:</strong> interval &lt;straddles&gt;" in page
    assert "Five replicates around zero" in page  # the claim's docstring


def test_history_command(site, tmp_path):
    res = runner.invoke(app, ["history", "alpha.holds_claim", "--store", str(tmp_path / "r.sqlite"),
                              "--json"])
    assert res.exit_code == 0, res.output
    runs = json.loads(res.stdout)["runs"]
    assert [r["verdict"] for r in runs] == ["fails", "holds"]
    assert runs[1]["metric"] == "gain" and runs[1]["value"] == "2"
    table = runner.invoke(app, ["history", "alpha", "--store", str(tmp_path / "r.sqlite")])
    assert table.exit_code == 0 and "↺" in table.stdout and "History of alpha (5 runs)" in table.stdout
    bad = runner.invoke(app, ["history", "alpha.nosuch"])
    assert bad.exit_code == 2 and "has no claim 'nosuch'" in bad.stderr


def test_run_summary_fits_80_columns(fake_registry, tmp_path):
    res = runner.invoke(app, ["run", "alpha", "--scale", "smoke", "--store",
                              str(tmp_path / "r.sqlite")], terminal_width=80)
    lines = [line for line in res.stdout.splitlines() if line.startswith("alpha.")]
    assert len(lines) == 5 and all(len(line) <= 80 for line in lines), lines
    assert any(re.search(r"alpha\.estimate_claim ran gain=0\.1 \[", x) for x in lines)
    res = runner.invoke(app, ["run", "alpha", "--claim", "estimate_claim", "--store",
                              str(tmp_path / "r.sqlite")], terminal_width=80)
    lines = [line for line in res.stdout.splitlines() if line.startswith("alpha.")]
    assert len(lines) == 1 and len(lines[0]) <= 80
    assert lines[0].startswith("alpha.estimate_claim inconclusive interval straddles")


# --- in a real browser --------------------------------------------------------------------

def _browser():
    """Headless Chromium through Selenium; fails (never skips) with the reason if missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail("the report's browser tests need Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,900"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts)


@pytest.mark.serial
@pytest.mark.timeout(240)
def test_site_in_headless_chromium(site, tmp_path):
    from selenium.webdriver.common.by import By

    browser = _browser()
    try:
        browser.get((site / "index.html").as_uri())
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
        rows = browser.find_elements(By.CSS_SELECTOR, "#papers tbody tr")
        assert len(rows) == 3 and all(r.is_displayed() for r in rows)
        assert "smoke here" in browser.find_element(By.ID, "papers").text
        assert "estimate_claim: inconclusive (small, local)" in rows[0].text
        assert "fails_claim: not measured" in rows[0].text  # its smoke "holds" is no headline
        browser.find_element(By.ID, "q").send_keys("beta")
        assert [r.is_displayed() for r in rows] == [False, False, True]  # alpha, gamma, beta
        assert "1 of 3 papers" in browser.find_element(By.ID, "shown").text
        browser.find_element(By.ID, "q").clear()
        browser.execute_script("var s = document.getElementById('verdict');"
                               "s.value = 'inconclusive'; s.dispatchEvent(new Event('input'));")
        assert [r.is_displayed() for r in rows] == [True, False, False]
        browser.save_screenshot(str(tmp_path / "index.png"))
        hrefs = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR,
                                                                          "a[href*='papers/']")]
        for href in dict.fromkeys(h.split("#")[0] for h in hrefs):
            browser.get(href)
            assert browser.title.endswith("iclr24") and "404" not in browser.title
            for img in browser.find_elements(By.TAG_NAME, "img"):
                assert browser.execute_script("return arguments[0].complete && "
                                              "arguments[0].naturalWidth", img) > 0, \
                    img.get_attribute("src")
            assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
        browser.get((site / "papers" / "alpha.html").as_uri())
        browser.save_screenshot(str(tmp_path / "alpha.png"))
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 1280, "the paper page scrolls sideways"
    finally:
        browser.quit()
    assert (tmp_path / "index.png").stat().st_size > 1000
    assert (tmp_path / "alpha.png").stat().st_size > 1000
