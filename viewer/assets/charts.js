// Cohort charts: a comparison's rows (cohort compare --json) drawn as one
// chart per metric and case, the number of processes (or the rows' own x)
// across, each
// algorithm's measured figure a solid line with dots and the theory's a
// dashed line with hollow squares in the same colour.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("cohort-data").textContent);
  const COLORS = ["#2f6aa8", "#1b9e77", "#a6761d", "#d62728", "#7570b3", "#66a61e", "#1f3f8f", "#b8860b", "#6a3d9a", "#2e8b57", "#e7298a", "#5b6770"];
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const rows = DATA.rows || [];
  document.getElementById("title").textContent = DATA.title;
  document.title = DATA.title + " — Cohort charts";

  // Charts by metric and case, in the order the rows name them.
  const charts = new Map();
  const algos = [];
  rows.forEach((r) => {
    const key = r.metric + " · " + (r.case || "");
    if (!charts.has(key)) charts.set(key, { metric: r.metric, case: r.case, rows: [] });
    charts.get(key).rows.push(r);
    if (!algos.includes(r.algo)) algos.push(r.algo);
  });
  const color = (a) => COLORS[algos.indexOf(a) % COLORS.length];
  document.getElementById("info").textContent = ` · ${charts.size} charts · ${algos.length} algorithms · measured (solid) beside theory (dashed)`;

  const stats = { charts: 0, series: 0, measured: 0, theory: 0 };
  const W = 460, H = 260, L = 56, R = 12, T = 12, B = 40;
  const box = document.getElementById("charts");
  // Across: the number of processes, or the row's own x (a round, a
  // noise level) where it gives one.
  const xOf = (r) => (typeof r.x === "number" ? r.x : r.nodes);
  charts.forEach((c) => {
    const xs = [...new Set(c.rows.map(xOf))].sort((a, b) => a - b);
    const xLabel = c.rows[0].x_label || "processes";
    const logY = c.rows.every((r) => r.log_y);
    const vals = [];
    c.rows.forEach((r) => { if (r.measured !== null) vals.push(r.measured); if (r.theory !== null) vals.push(r.theory); });
    if (!vals.length || logY && vals.some((v) => !(v > 0))) return;
    let lo = Math.min(0, ...vals), hi = Math.max(...vals);
    if (logY) { lo = Math.floor(Math.log10(Math.min(...vals))); hi = Math.ceil(Math.log10(hi)); }
    if (hi <= lo) hi = lo + 1;
    if (!logY) hi += (hi - lo) * 0.08;
    const X = (n) => xs.length === 1 ? L + (W - L - R) / 2 : L + xs.indexOf(n) * (W - L - R) / (xs.length - 1);
    const Y = (v) => T + (H - T - B) * (1 - ((logY ? Math.log10(v) : v) - lo) / (hi - lo));
    const parts = [];
    // Axes and ticks: every power of ten on a logarithmic scale.
    const ticks = [];
    if (logY) for (let k = lo; k <= hi; k++) ticks.push(Math.pow(10, k));
    else { const step = niceStep((hi - lo) / 5); for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v); }
    ticks.forEach((v) => {
      parts.push(`<line x1="${L}" x2="${W - R}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eceef1"/>`,
        `<text x="${L - 5}" y="${Y(v) + 4}" text-anchor="end" font-size="10" fill="#666">${fmt(v)}</text>`);
    });
    xs.forEach((n) => parts.push(`<text x="${X(n)}" y="${H - B + 15}" text-anchor="middle" font-size="10" fill="#666">${fmt(n)}</text>`));
    parts.push(`<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#999"/>`, `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#999"/>`,
      `<text class="x-label" x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle" font-size="11" fill="#444">${esc(xLabel)}${logY ? " · log scale" : ""}</text>`);
    const notes = new Set();
    algos.forEach((a) => {
      const mine = c.rows.filter((r) => r.algo === a).sort((p, q) => xOf(p) - xOf(q));
      if (!mine.length) return;
      mine.forEach((r) => { if (r.note) notes.add(`${a}: ${r.note}`); });
      const line = (key, dash, cls) => {
        const pts = mine.filter((r) => r[key] !== null).map((r) => [X(xOf(r)), Y(r[key]), r]);
        if (!pts.length) return 0;
        if (pts.length > 1) parts.push(`<polyline class="${cls}" fill="none" stroke="${color(a)}" stroke-width="2" ${dash ? 'stroke-dasharray="6 4"' : ""} points="${pts.map((p) => p[0] + "," + p[1]).join(" ")}"/>`);
        pts.forEach(([x, y, r]) => {
          const tip = `<title>${esc(a)}, ${esc(xLabel)} ${fmt(xOf(r))}: ${key} ${fmt(r[key])}</title>`;
          parts.push(dash ? `<rect class="${cls}-pt" x="${x - 3.5}" y="${y - 3.5}" width="7" height="7" fill="#fff" stroke="${color(a)}" stroke-width="1.6">${tip}</rect>`
            : `<circle class="${cls}-pt" cx="${x}" cy="${y}" r="3.5" fill="${color(a)}">${tip}</circle>`);
        });
        return pts.length;
      };
      stats.measured += line("measured", false, "measured");
      stats.theory += line("theory", true, "theory");
      stats.series++;
    });
    const legend = algos.filter((a) => c.rows.some((r) => r.algo === a))
      .map((a) => `<span style="color:${color(a)}">■</span> ${esc(a)}`).join(" &nbsp; ");
    const div = document.createElement("div");
    div.className = "chart";
    div.dataset.metric = c.metric; div.dataset.case = c.case || "";
    div.innerHTML = `<h3>${esc(c.metric)}${c.case ? ` <span style="color:#777;font-weight:normal">(${esc(c.case)})</span>` : ""}</h3>` +
      `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${parts.join("")}</svg>` +
      `<div class="legend">${legend} &nbsp; <span style="color:#555">— measured · - - □ theory</span></div>` +
      [...notes].map((n) => `<div class="note">${esc(n)}</div>`).join("");
    box.appendChild(div);
    stats.charts++;
  });
  if (!stats.charts) box.textContent = "No figures to chart.";

  function niceStep(raw) {
    const base = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    for (const m of [1, 2, 5, 10]) if (m * base >= raw) return m * base;
    return 10 * base;
  }
  function fmt(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return (v / 1e3).toPrecision(3) + "k";
    return +v.toPrecision(4) + "";
  }

  // The test hook: what is drawn.
  window.cohortCharts = { stats: () => Object.assign({}, stats) };
})();
