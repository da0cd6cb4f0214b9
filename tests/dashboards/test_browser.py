"""The pages in a real headless Chromium: figures drawn, no console errors, hover, URL state.

Screenshots go to test-artifacts/ (KERNELWATCH_TEST_ARTIFACTS overrides it). The browser tests
run on SQLite only: the pages' data on PostgreSQL is covered by test_pages.py.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, update

from service.models import Alert
from tests.conftest import ADMIN_TOKEN
from tests.dashboards.conftest import BrowserPage, History, post_rich_history
from tests.service.evaluation.alerts.test_groups import regress

pytestmark = [
    pytest.mark.browser,
    pytest.mark.parametrize("db_url", ["sqlite"], indirect=True),
]

MEDIAN_POINT = """(which) => {
  const gd = document.getElementById('figure-trend');
  const trace = gd._fullData[gd.layout.meta.median_traces[0]];
  const n = which === 'first' ? 0 : trace.x.length - 1;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
  return {x: box.left + xa.l2p(xa.d2l(trace.x[n])), y: box.top + ya.l2p(ya.d2l(trace.y[n])),
          sha: trace.customdata[n][7], author: trace.customdata[n][1]};
}"""


def assert_figures_drawn(bp: BrowserPage, expected: int) -> None:
    figures = bp.page.locator("div.figure[data-figure]")
    assert figures.count() == expected
    for i in range(expected):
        figure = figures.nth(i)
        assert figure.get_attribute("data-rendered") == "true"
        assert figure.locator("svg.main-svg").count() >= 1
    assert bp.console_errors == []


@pytest.fixture
def history(admin: httpx.Client, engine: Engine) -> History:
    posted = post_rich_history(admin)
    with engine.begin() as conn:  # as if the confirmation had reproduced the regression
        conn.execute(update(Alert).values(state="open"))
    return posted


def test_every_page_draws_its_figures_without_console_errors(
    browser_page: BrowserPage, history: History
) -> None:
    sha, base = history.sha(history.regressed_at), history.sha(history.regressed_at - 1)
    pages = {
        "overview": ("/", 1),
        "trends": ("/trends", 1),
        "commit": (f"/commits/{sha}", 2),  # changes + the training step's breakdown
        "compare": (f"/compare?base={base}&head={sha}", 1),
        "alerts": ("/alerts", 0),
    }
    for name, (path, figures) in pages.items():
        browser_page.open(path)
        assert_figures_drawn(browser_page, figures)
        assert browser_page.screenshot(name).stat().st_size > 10_000


def test_the_landing_trend_shows_changes_by_commit_with_both_markers_visible(
    browser_page: BrowserPage, history: History
) -> None:
    """/trends as the navigation opens it: every series as its change, one step per commit,
    and where an alert and a change point share a commit, the ✕ drawn clear of the ◇."""
    page = browser_page.page
    browser_page.open("/trends")
    layout = "document.getElementById('figure-trend').layout"
    assert page.evaluate(f"{layout}.meta.scale") == "change"
    assert page.evaluate(f"{layout}.xaxis.ticktext[0]") == history.sha(0)[:10]
    marks = page.evaluate("""() => {
      const gd = document.getElementById('figure-trend');
      const ya = gd._fullLayout.yaxis, xa = gd._fullLayout.xaxis;
      const at = (name) => gd._fullData.filter((t) => t.name === name)
        .flatMap((t) => t.x.map((x, i) => [xa.l2p(x), ya.l2p(t.y[i])]));
      return {diamonds: at('change points'), crosses: at('alerts')};
    }""")
    (cross,) = marks["crosses"]
    diamond = next(d for d in marks["diamonds"] if abs(d[0] - cross[0]) < 1)
    assert diamond[1] - cross[1] >= 8  # pixels: the ✕ above the ◇, neither covering the other
    browser_page.screenshot("trends-landing")


def test_the_commit_table_fits_1400_px_and_its_change_chart_reads_against_the_target(
    browser_page: BrowserPage, history: History
) -> None:
    """Every column of the results table (the error and the trend link last) on a 1,400 px
    screen; the change chart's axis reaches past the 2% target of its smallest change."""
    page = browser_page.page
    browser_page.open(f"/commits/{history.sha(history.regressed_at)}")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    right = page.evaluate(
        "Math.max(...Array.from(document.querySelectorAll('table.results tr > :last-child'),"
        " (c) => c.getBoundingClientRect().right))"
    )
    assert right <= 1400
    axis = page.evaluate("document.getElementById('figure-changes')._fullLayout.xaxis.range")
    assert axis[0] < -0.02 and axis[1] > 0.02
    ticks = page.evaluate(
        "Array.from(document.querySelectorAll('#figure-changes .xtick text'), (t) => t.textContent)"
    )
    assert len(ticks) == len(set(ticks)) >= 3, ticks
    browser_page.screenshot("commit-1400")


def test_empty_pages_render_without_console_errors(browser_page: BrowserPage) -> None:
    for path in ("/", "/trends", "/compare", "/alerts", "/commits/abcd1234"):
        browser_page.page.goto(browser_page.base_url + path)
        browser_page.page.wait_for_selector("body[data-figures-ready='true']")
        assert browser_page.page.locator("p.empty, p.error-detail").count() >= 1, path
    browser_page.screenshot("empty-overview")
    # The 404 page itself is logged by Chromium as a failed resource load; nothing else may be.
    assert [e for e in browser_page.console_errors if "404" not in e] == []


def test_trend_hover_shows_commit_author_and_value(
    browser_page: BrowserPage, history: History
) -> None:
    page = browser_page.page
    browser_page.open("/trends?workload=train_step")
    point = page.evaluate(MEDIAN_POINT, "last")
    assert point["sha"] == history.sha(9)
    page.mouse.move(point["x"], point["y"])
    hover = page.locator(".hoverlayer .hovertext").first
    hover.wait_for(timeout=5000)
    text = hover.text_content() or ""
    assert history.sha(9)[:10] in text and point["author"] in text
    assert "r9: tune the kernels" in text and " us" in text and "median" in text
    browser_page.screenshot("trends-hover")
    assert browser_page.console_errors == []


def test_trend_choices_live_in_the_url(browser_page: BrowserPage, history: History) -> None:
    page = browser_page.page
    browser_page.open("/trends?workload=train_step&points=8")
    assert page.evaluate("document.getElementById('figure-trend').layout.yaxis.type") == "linear"
    page.check("#log-toggle")
    page.wait_for_function("location.search.includes('log=1')")
    assert page.evaluate("document.getElementById('figure-trend').layout.yaxis.type") == "log"
    assert "log=1" in (page.get_attribute("#csv-link", "href") or "")
    page.reload()
    page.wait_for_selector("body[data-figures-ready='true']")
    assert page.is_checked("#log-toggle")
    assert page.evaluate("document.getElementById('figure-trend').layout.yaxis.type") == "log"
    medians = "document.getElementById('figure-trend').layout.meta.median_traces.length"
    assert page.evaluate(medians) == 1

    page.select_option("select[name=workload]", ["gemm_fwd", "train_step"])
    page.click("form#trend-form button[type=submit]")
    page.wait_for_selector("body[data-figures-ready='true']")
    assert "workload=gemm_fwd" in page.url and "workload=train_step" in page.url
    assert "points=8" in page.url and "log=1" in page.url
    assert page.evaluate(medians) == 3
    browser_page.screenshot("trends-log")
    assert browser_page.console_errors == []


def test_triage_from_the_alerts_page(
    browser_page: BrowserPage, history: History, admin: httpx.Client
) -> None:
    page = browser_page.page
    browser_page.open("/alerts")
    (alert,) = admin.get("/alerts.json").json()["alerts"]
    form = page.locator(f"form.triage[data-alert-id='{alert['id']}']")
    form.locator("select[name=state]").select_option("acknowledged")
    form.locator("input[name=note]").fill("bisecting")
    form.locator("button").click()
    result = form.locator(".triage-result")
    result.wait_for(state="visible")
    page.wait_for_function("document.querySelector('.triage-result').textContent !== 'saving…'")
    assert (
        "admin token" in (result.text_content() or "")
        or "bearer" in (result.text_content() or "").lower()
    )  # no token given yet: the API's own message is shown
    page.fill("#admin-token", ADMIN_TOKEN)
    page.dispatch_event("#admin-token", "change")
    form.locator("button").click()
    page.wait_for_function("document.querySelector('.triage-result').textContent.startsWith('now')")
    assert result.text_content() == "now acknowledged"
    assert page.locator(f"#alert-{alert['id']} h2 .state").text_content() == "acknowledged"
    assert admin.get(f"/api/v1/alerts/{alert['id']}").json()["note"] == "bisecting"
    browser_page.screenshot("alerts-triaged")


def test_a_group_triaged_together_from_the_alerts_page(
    browser_page: BrowserPage, admin: httpx.Client, engine: Engine
) -> None:
    regress(admin)  # two workloads slowed by one kernel's one cause, and one of its own
    with engine.begin() as conn:  # as if the confirmation had reproduced them
        conn.execute(update(Alert).values(state="open"))
    group = next(g for g in admin.get("/alerts.json").json()["groups"] if len(g["alert_ids"]) > 1)
    page = browser_page.page
    browser_page.open("/alerts")
    page.fill("#admin-token", ADMIN_TOKEN)
    page.dispatch_event("#admin-token", "change")
    form = page.locator("form.group-triage")
    form.locator("select[name=state]").select_option("acknowledged")
    form.locator("input[name=note]").fill("one change: the split-K epilogue")
    form.locator("button").click()
    result = form.locator(".group-triage-result")
    page.wait_for_function(
        "document.querySelector('.group-triage-result').textContent.startsWith('now')"
    )
    assert result.text_content() == "now acknowledged: all 2"
    for alert_id in group["alert_ids"]:
        assert page.locator(f"#alert-{alert_id} h2 .state").text_content() == "acknowledged"
        answer = admin.get(f"/api/v1/alerts/{alert_id}").json()
        assert answer["state"] == "acknowledged" and answer["note"].startswith("one change")
    assert page.locator("h2.group-headline .state").all_text_contents() == ["acknowledged"]
    assert browser_page.console_errors == []
    browser_page.screenshot("alerts-group-triaged")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_phone_wide_page_fits_and_a_dark_page_draws_dark_figures(
    browser: object, server: object, history: History, scheme: str
) -> None:
    """390 px wide (a phone): no page is wider than the screen (tables scroll in their box);
    in dark mode the figures take the page's panel colour, not plotly's white."""
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        for path in ("/", "/trends", "/alerts", f"/commits/{history.sha(history.regressed_at)}"):
            page.goto(server.url + path)
            page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{path} is {width} px wide at 390"
        page.goto(server.url + "/trends")
        page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
        paper = page.evaluate("document.getElementById('figure-trend')._fullLayout.paper_bgcolor")
        panel = page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--panel').trim()"
        )
        if scheme == "dark":
            assert panel.lower() == "#1b1b21" and paper.lower() in ("#1b1b21", "rgb(27, 27, 33)")
        else:
            assert paper == "#fff" and panel == "#fff"
        assert errors == []
    finally:
        context.close()


def test_every_page_fits_a_1280_px_screen(
    browser: object, server: object, history: History
) -> None:
    """A laptop's 1280 px: no page is wider than the screen, the commit's results table shows
    its last column (the trend link) without scrolling the page."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        commit = f"/commits/{history.sha(history.regressed_at)}"
        compare = f"/compare?base={history.sha(0)}&head={history.sha(history.regressed_at)}"
        for path in ("/", "/trends", "/alerts", commit, compare):
            page.goto(server.url + path)
            page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 1280, f"{path} is {width} px wide at 1280"
        page.goto(server.url + commit)
        page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
        right = page.evaluate(
            "Math.max(...Array.from(document.querySelectorAll('table.results tr > :last-child'),"
            " (c) => c.getBoundingClientRect().right))"
        )
        assert right <= 1280
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_trend_hover_at_the_left_edge_stays_on_the_screen(
    browser: object, server: object, history: History, width: int
) -> None:
    """The oldest commit's tooltip (the plot's left edge) is read whole: not cut by the
    screen's left edge or right edge."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    try:
        page.goto(server.url + "/trends?workload=train_step")
        page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
        page.evaluate("document.getElementById('figure-trend').scrollIntoView()")
        point = page.evaluate(MEDIAN_POINT, "first")
        page.mouse.move(point["x"], point["y"])
        hover = page.locator(".hoverlayer .hovertext").first
        hover.wait_for(timeout=5000)
        box = hover.bounding_box()
        assert box is not None and box["x"] >= 0, box
        assert box["x"] + box["width"] <= width, (box, width)
        # and the y axis's title is whole on the screen too
        title = page.locator("#figure-trend .g-ytitle text").first.bounding_box()
        assert title is not None and title["x"] >= 0 and title["y"] >= 0, title
    finally:
        context.close()
