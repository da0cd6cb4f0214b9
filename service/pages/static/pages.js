// kernelwatch dashboards: draw the figures embedded in the page, keep the trend page's choices
// in the URL, and send triage to the API. No framework, no network beyond this service.
"use strict";

function figureData(key) {
  const node = document.getElementById("figure-data-" + key);
  return node ? JSON.parse(node.textContent) : null;
}

// The figures are built light (plotly_white); on a dark page their paper, grid and text follow
// the page's colours instead.
const DARK = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;

function themed(layout) {
  if (!DARK) return layout;
  const css = getComputedStyle(document.documentElement);
  const panel = css.getPropertyValue("--panel").trim(), fg = css.getPropertyValue("--fg").trim();
  const grid = css.getPropertyValue("--line").trim();
  const axis = (a) => ({ ...(a || {}), gridcolor: grid, linecolor: grid, zerolinecolor: grid });
  return {
    ...layout, paper_bgcolor: panel, plot_bgcolor: panel,
    font: { ...(layout.font || {}), color: fg },
    xaxis: axis(layout.xaxis), yaxis: axis(layout.yaxis),
    legend: { ...(layout.legend || {}), font: { color: fg } },
  };
}

async function drawFigures() {
  const divs = document.querySelectorAll("div.figure[data-figure]");
  await Promise.all(Array.from(divs).map(async (div) => {
    const fig = figureData(div.dataset.figure);
    if (!fig) return;
    const layout = themed(fig.layout);
    await Plotly.newPlot(div, fig.data, layout, { responsive: true, displaylogo: false });
    div.dataset.rendered = "true";
    if (div.dataset.figure === "trend") wireTrend(div);
  }));
  document.body.dataset.figuresReady = "true";
}

// Clicking a point of a trend opens the commit it was measured at.
function wireTrend(div) {
  div.on("plotly_click", (event) => {
    const point = event.points && event.points[0];
    const sha = point && point.customdata && point.customdata[7];
    if (sha) window.location.assign("/commits/" + sha);
  });
  // The axis choices redraw from the server: a change axis holds fractions, a log one values.
  const toggle = document.getElementById("log-toggle");
  const scale = document.getElementById("scale-choice");
  const form = document.getElementById("trend-form");
  if (!toggle || !scale || !form) return;
  toggle.addEventListener("change", () => {
    if (toggle.checked) scale.value = "value";
    form.requestSubmit();
  });
  scale.addEventListener("change", () => {
    if (scale.value === "change") toggle.checked = false;
    form.requestSubmit();
  });
}

// Triage with the admin token through PATCH /api/v1/alerts/{id}, or a group's alerts together
// through POST /api/v1/alerts/groups/triage (all or none); the token stays in this tab.
function wireTriage() {
  const tokenInput = document.getElementById("admin-token");
  if (!tokenInput) return;
  tokenInput.value = sessionStorage.getItem("kernelwatch-admin-token") || "";
  tokenInput.addEventListener("change", () => sessionStorage.setItem("kernelwatch-admin-token", tokenInput.value));
  const showState = (badge, state) => {
    if (badge) { badge.textContent = state; badge.className = "state state-" + state; }
  };
  // On submit: the request `send` makes of the form's choice; the alerts answered go to
  // `done`, the API's own words on a refusal to `result`.
  const wire = (form, result, send, done) => {
    const resultClass = result.className;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { state: form.state.value, note: form.note.value };
      if (form.actor.value) body.actor = form.actor.value;
      result.className = resultClass;
      result.textContent = "saving…";
      try {
        const [url, method, payload] = send(body);
        const response = await fetch(url, {
          method,
          headers: { "Content-Type": "application/json", "Authorization": "Bearer " + tokenInput.value },
          body: JSON.stringify(payload),
        });
        const answer = await response.json();
        if (!response.ok) throw new Error(answer.detail || response.statusText);
        result.classList.add("ok");
        result.textContent = done(answer);
      } catch (error) {
        result.classList.add("error");
        result.textContent = error.message;
      }
    });
  };
  document.querySelectorAll("form.triage").forEach((form) => {
    wire(form, form.querySelector(".triage-result"),
      (body) => ["/api/v1/alerts/" + form.dataset.alertId, "PATCH", body],
      (alert) => {
        showState(form.closest("article").querySelector("h2 .state"), alert.state);
        return "now " + alert.state;
      });
  });
  document.querySelectorAll("form.group-triage").forEach((form) => {
    const ids = form.dataset.alertIds.split(",").map(Number);
    wire(form, form.querySelector(".group-triage-result"),
      (body) => ["/api/v1/alerts/groups/triage", "POST", { ...body, alert_ids: ids }],
      (alerts) => {
        alerts.forEach((a) => showState(document.querySelector("#alert-" + a.id + " h2 .state"), a.state));
        const badges = form.closest("section").querySelectorAll("h2.group-headline .state");
        badges.forEach((badge, i) => (i ? badge.remove() : showState(badge, alerts[0].state)));
        return "now " + alerts[0].state + ": all " + alerts.length;
      });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  wireTriage();
  if (window.Plotly) drawFigures(); else document.body.dataset.figuresReady = "true";
});
